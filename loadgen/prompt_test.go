package loadgen

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/traces"
)

// promptOf builds req's body through c and returns its prompt as tokens:
// token ids, or the words of a text prompt (one token each by design).
func promptOf(t *testing.T, c *client, req *traces.Request) []string {
	t.Helper()
	var body struct {
		Prompt   json.RawMessage `json:"prompt"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(c.body(nil, req), &body); err != nil {
		t.Fatalf("request %d: body is not JSON: %v", req.ID, err)
	}
	if len(body.Messages) == 1 {
		return strings.Split(body.Messages[0].Content, " ")
	}
	var ids []int
	if json.Unmarshal(body.Prompt, &ids) == nil {
		out := make([]string, len(ids))
		for i, id := range ids {
			if id < tokenIDBase || id >= tokenIDBase+tokenIDAlphabet {
				t.Fatalf("request %d: token id %d outside [%d, %d)", req.ID, id, tokenIDBase, tokenIDBase+tokenIDAlphabet)
			}
			out[i] = string(rune(id))
		}
		return out
	}
	var s string
	if err := json.Unmarshal(body.Prompt, &s); err != nil {
		t.Fatalf("request %d: prompt %s", req.ID, clip(body.Prompt, 80))
	}
	return strings.Split(s, " ")
}

// sharedBlocks is how many leading prefix-block ids a and b have in common.
func sharedBlocks(a, b traces.Request) int {
	x, y := strings.Split(a.PrefixBlocks, ","), strings.Split(b.PrefixBlocks, ",")
	if a.PrefixBlocks == "" || b.PrefixBlocks == "" {
		return 0
	}
	n := 0
	for n < len(x) && n < len(y) && x[n] == y[n] {
		n++
	}
	return n
}

// TestPromptsSharePrefixBlocks: two prompts share the leading tokens of the
// prefix blocks their requests share (block size from the schedule), and
// nothing when they share no block, but for fewer than a segment header's
// tokens that may agree by chance where their next segments start, for token-id, text and chat prompts,
// on hand-made requests and on Mooncake's conversation trace.
func TestPromptsSharePrefixBlocks(t *testing.T) {
	t.Parallel()
	hand := traces.Schedule{Source: "hand-made", PrefixBlockTokens: 16, Requests: []traces.Request{
		{ID: 0, InputTokens: 40, PrefixBlocks: "0,1,2"},
		{ID: 1, InputTokens: 44, PrefixBlocks: "0,1,5"},
		{ID: 2, InputTokens: 20, PrefixBlocks: "0,7"},
		{ID: 3, InputTokens: 70, PrefixBlocks: "0,1,2"}, // longer than its blocks: the tail is its own
		{ID: 4, InputTokens: 30, PrefixBlocks: "9"},
		{ID: 5, InputTokens: 30},
		{ID: 6, InputTokens: 30},
		{ID: 30006, InputTokens: 30}, // ids 30,000 apart shared every token before
		{ID: 7, InputTokens: 2, PrefixBlocks: "0,1,2"},
	}}
	moon, err := traces.ReadFile(filepath.Join("..", "traces", "testdata", "mooncake_conv_50.jsonl"), traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if moon.PrefixBlockTokens != 512 {
		t.Fatalf("Mooncake block size %d, want 512", moon.PrefixBlockTokens)
	}
	for _, s := range []traces.Schedule{hand, moon} {
		for _, kind := range []struct {
			name string
			opts func(*config)
		}{{"token ids", func(*config) {}}, {"text", WithPromptText(true)}, {"chat", WithEndpoint(EndpointChat)}} {
			cfg := defaultConfig()
			kind.opts(&cfg)
			cfg.blockTokens = s.PrefixBlockTokens
			c := &client{cfg: &cfg}
			slack := idAlphabet.header
			if kind.name != "token ids" {
				slack = wordAlphabet.header
			}
			prompts := make([][]string, len(s.Requests))
			for i := range s.Requests {
				prompts[i] = promptOf(t, c, &s.Requests[i])
				if len(prompts[i]) != s.Requests[i].InputTokens {
					t.Fatalf("%s, %s: request %d has %d prompt tokens, want %d", s.Source, kind.name, s.Requests[i].ID, len(prompts[i]), s.Requests[i].InputTokens)
				}
			}
			for i, a := range s.Requests {
				for j := i + 1; j < len(s.Requests); j++ {
					b := s.Requests[j]
					want := min(sharedBlocks(a, b)*s.PrefixBlockTokens, a.InputTokens, b.InputTokens)
					got := 0
					for got < len(prompts[i]) && got < len(prompts[j]) && prompts[i][got] == prompts[j][got] {
						got++
					}
					// Past the shared blocks the next segments differ
					// within their headers: a few more tokens may agree
					// by chance, never a block's worth.
					if got < want || got > want && got >= min(want+slack, a.InputTokens, b.InputTokens) {
						t.Errorf("%s, %s: requests %d (%q) and %d (%q) share %d leading tokens, want %d (+ < %d by chance)",
							s.Source, kind.name, a.ID, a.PrefixBlocks, b.ID, b.PrefixBlocks, got, want, slack)
					}
				}
			}
			if t.Failed() {
				return
			}
		}
	}
}

// TestReplaySendsPrefixBlocks: Replay builds prompts with the schedule's
// block size, so what reaches the server shares the blocks' tokens.
func TestReplaySendsPrefixBlocks(t *testing.T) {
	t.Parallel()
	prompts := make(chan []int, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt []int `json:"prompt"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("request body: %v", err)
		}
		prompts <- body.Prompt
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	s := schedule(2, 0, 40, 1)
	s.PrefixBlockTokens = 16
	s.Requests[0].PrefixBlocks, s.Requests[1].PrefixBlocks = "3,4", "3,5"
	var sink SliceSink
	if _, err := Replay(context.Background(), urlServer{srv.URL}, s, nil, &sink); err != nil {
		t.Fatal(err)
	}
	a, b := <-prompts, <-prompts
	if len(a) != 40 || len(b) != 40 || !slices.Equal(a[:16], b[:16]) || slices.Equal(a[:17], b[:17]) && slices.Equal(a[:16+idAlphabet.header], b[:16+idAlphabet.header]) {
		t.Errorf("prompts sharing block 3 of 16 tokens:\n%v\n%v", a, b)
	}
}

// TestReplayRefusesBadPrefixBlocks: block ids that are not integers, or
// blocks without a block size, are a schedule error naming the request.
func TestReplayRefusesBadPrefixBlocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		blocks string
		size   int
	}{{"1,x", 16}, {"1,2", 0}} {
		s := schedule(1, 0, 8, 1)
		s.PrefixBlockTokens = tc.size
		s.Requests[0].PrefixBlocks = tc.blocks
		_, err := Replay(context.Background(), urlServer{"http://127.0.0.1:1"}, s, nil, &SliceSink{})
		if err == nil || !strings.Contains(err.Error(), "prefix_blocks") {
			t.Errorf("blocks %q, size %d: error %v, want one naming prefix_blocks", tc.blocks, tc.size, err)
		}
	}
}
