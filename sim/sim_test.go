package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newTestServer starts a Server on a free loopback port and closes it when the test ends.
func newTestServer(t *testing.T, cfg Config, opts ...Option) *Server {
	t.Helper()
	s, err := New(cfg, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	// The listener is bound before Start returns; the limit only bounds a
	// host so loaded (-race, other test binaries) that the first /health
	// round trip waits for a CPU: generous, it is not a measurement.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	return s
}

// newTestClient returns a client whose idle connections are closed at test end (goleak).
func newTestClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 512}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// streamResult is what a test client saw of one streamed completion.
type streamResult struct {
	status      int
	tokenEvents int
	usage       *usage
	done        bool
	events      []string // raw data payloads, [DONE] included
}

// idPrompt is a token-id prompt of n tokens.
func idPrompt(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = (i * 7919) % 128000
	}
	return p
}

// postStream sends a streaming /v1/completions request and reads it to the end.
func postStream(ctx context.Context, c *http.Client, base, id string, input, maxTokens int) (streamResult, error) {
	resp, err := startStream(ctx, c, base, id, input, maxTokens)
	if err != nil {
		return streamResult{}, err
	}
	defer resp.Body.Close()
	return readSSE(resp.StatusCode, bufio.NewScanner(resp.Body))
}

// startStream sends a streaming /v1/completions request and returns once its
// response headers are in: the server has then stamped its arrival and queued
// it (the handler sends the headers after submitting to the engine).
func startStream(ctx context.Context, c *http.Client, base, id string, input, maxTokens int) (*http.Response, error) {
	body, _ := json.Marshal(map[string]any{
		"model": "sim-llama-3-8b", "prompt": idPrompt(input), "max_tokens": maxTokens, "ignore_eos": true,
		"stream": true, "stream_options": map[string]any{"include_usage": true},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if id != "" {
		req.Header.Set(requestIDHeader, id)
	}
	return c.Do(req)
}

// readSSE parses "data: ..." lines into a streamResult.
func readSSE(status int, sc *bufio.Scanner) (streamResult, error) {
	res := streamResult{status: status}
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			return res, fmt.Errorf("not an SSE data line: %q", line)
		}
		res.events = append(res.events, data)
		if data == "[DONE]" {
			res.done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Text  *string `json:"text"`
				Delta *struct {
					Content *string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *usage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return res, fmt.Errorf("event %q: %w", data, err)
		}
		if chunk.Usage != nil {
			res.usage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			if (ch.Text != nil && *ch.Text != "") || (ch.Delta != nil && ch.Delta.Content != nil && *ch.Delta.Content != "") {
				res.tokenEvents++
			}
		}
	}
	return res, sc.Err()
}

// stepLog collects StepRecords from WithStepHook.
type stepLog struct {
	mu    sync.Mutex
	steps []StepRecord
}

func (l *stepLog) add(r StepRecord) {
	l.mu.Lock()
	l.steps = append(l.steps, r)
	l.mu.Unlock()
}

func (l *stepLog) all() []StepRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]StepRecord(nil), l.steps...)
}

// waitDone polls Truth until the request's DoneAt is set (the handler stamps
// it right after the final flush, which can be just after the client read it).
func waitDone(t *testing.T, s *Server, id string) RequestTruth {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr, ok := s.Truth(id)
		if ok && !tr.DoneAt.IsZero() {
			return tr
		}
		if time.Now().After(deadline) {
			t.Fatalf("truth of %q not done after 10s (found=%v)", id, ok)
		}
		time.Sleep(time.Millisecond)
	}
}

// within reports whether got is within tol of want (the package's one tolerance helper).
func within(got, want, tol float64) bool {
	d := got - want
	return d <= tol && -d <= tol
}
