package sim_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/transferlab/transferlab/sim"
)

// The saturation throughput of the default engine (Llama-3-8B on an H200-like
// GPU) for the Azure conversation trace's median lengths, in virtual time.
func ExampleConfig_Capacity() {
	c, err := sim.DefaultConfig().Capacity([]sim.Lengths{{InputTokens: 1020, OutputTokens: 130}}, 2000)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.0f output tok/s, %.1f req/s (simulated)\n", c.OutputTokPerS, c.RequestsPerS)
	// Output: 3759 output tok/s, 28.9 req/s (simulated)
}

// A server on a free port, one streamed completion with a token-id prompt,
// then the request's ground truth.
func ExampleServer() {
	cfg := sim.DefaultConfig()
	cfg.Overrides = map[string]float64{"rmsnorm": 2.5}
	srv, err := sim.New(cfg)
	if err != nil {
		panic(err)
	}
	defer srv.Close(context.Background())
	if err := srv.Start("127.0.0.1:0"); err != nil {
		panic(err)
	}
	req, _ := http.NewRequest("POST", srv.BaseURL()+"/v1/completions",
		strings.NewReader(`{"prompt":[1,2,3,4],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`))
	req.Header.Set("X-Request-Id", "42")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(strings.Count(string(body), `"text":" tok"`), "token events;", strings.HasSuffix(string(body), "data: [DONE]\n\n"))
	truth, _ := srv.Truth("42")
	fmt.Println(truth.InputTokens, "prompt tokens;", len(truth.TokenFlushedAt), "tokens flushed")
	// Output:
	// 2 token events; true
	// 4 prompt tokens; 2 tokens flushed
}
