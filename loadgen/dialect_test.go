package loadgen

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDialects replays each recorded stream through a real HTTP server and
// checks the record against DESIGN.md's definitions.
func TestDialects(t *testing.T) {
	t.Parallel()
	type want struct {
		state       State
		events      int
		reasoning   int // how many of the events are reasoning
		outTokens   int
		source      string
		mismatch    bool
		finish      string
		errContains string
		e2eDefined  bool
		// tokens are the events' token counts when checked (nil: 1 each).
		tokens []int
	}
	ok := func(events, out int, finish string) want {
		return want{state: StateOK, events: events, outTokens: out, source: SourceUsage, finish: finish, e2eDefined: true}
	}
	cases := []struct {
		name     string
		file     string
		endpoint Endpoint
		oneWrite bool // all events in one write (several events per read)
		want     want
	}{
		{name: "vLLM completions", file: "vllm_completions.txt", want: ok(3, 3, "length")},
		{name: "vLLM chat with role-only first chunk and reasoning", file: "vllm_chat_reasoning.txt", endpoint: EndpointChat,
			want: want{state: StateOK, events: 4, reasoning: 2, outTokens: 4, source: SourceUsage, finish: "length", e2eDefined: true}},
		{name: "SGLang completions, empty final text", file: "sglang_completions.txt", want: ok(2, 2, "length")},
		{name: "TGI chat, data: without space", file: "tgi_chat.txt", endpoint: EndpointChat, want: ok(3, 3, "length")},
		{name: "llama.cpp usage in last chunk", file: "llamacpp_completions.txt", want: ok(2, 2, "length")},
		{name: "Ollama chat", file: "ollama_chat.txt", endpoint: EndpointChat, want: ok(2, 2, "length")},
		{name: "keep-alive comments and CRLF", file: "keepalive_crlf.txt", want: ok(2, 2, "length")},
		{name: "empty and null content chunks", file: "empty_content.txt", endpoint: EndpointChat, want: ok(2, 2, "length")},
		{name: "several events in one read", file: "vllm_completions.txt", oneWrite: true, want: ok(3, 3, "length")},
		{name: "multi-line data, id and retry fields", file: "multiline_data.txt", want: ok(1, 1, "")},
		{name: "server stops at 50 of 200, usage with empty text", file: "stop_at_50_usage_empty_text.txt", want: ok(50, 50, "stop")},
		{name: "no usage: counted from events and flagged", file: "no_usage.txt",
			want: want{state: StateOK, events: 3, outTokens: 3, source: SourceEvents, finish: "length", e2eDefined: true}},
		{name: "usage then EOF without [DONE] or blank line", file: "no_done_after_usage.txt", want: ok(2, 2, "length")},
		{name: "vLLM continuous_usage_stats: tokens per event from usage deltas", file: "vllm_continuous_usage.txt",
			want: want{state: StateOK, events: 3, outTokens: 7, source: SourceUsage, finish: "length", e2eDefined: true, tokens: []int{1, 3, 3}}},
		{name: "no usage: tokens per event from token_ids and choices", file: "bundled_no_usage.txt",
			want: want{state: StateOK, events: 3, outTokens: 5, source: SourceEvents, finish: "length", e2eDefined: true, tokens: []int{2, 2, 1}}},
		{name: "per-chunk usage, cut short after 10 of 40 tokens", file: "cut_short_continuous_usage.txt",
			want: want{state: StateStreamError, events: 10, outTokens: 10, source: SourceUsage, errContains: "cut short"}},
		{name: "usage-only chunk without finish_reason, then EOF", file: "usage_without_finish_eof.txt",
			want: want{state: StateStreamError, events: 2, outTokens: 2, source: SourceUsage, errContains: "cut short"}},
		{name: "vLLM error object mid-stream", file: "vllm_error_midstream.txt",
			want: want{state: StateStreamError, events: 2, outTokens: 2, source: SourceEvents, errContains: "engine died"}},
		{name: "SSE error event", file: "error_event.txt",
			want: want{state: StateStreamError, events: 1, outTokens: 1, source: SourceEvents, errContains: "out of memory"}},
		{name: "TGI error data", file: "tgi_error_data.txt", endpoint: EndpointChat,
			want: want{state: StateStreamError, events: 1, outTokens: 1, source: SourceEvents, errContains: "validation error"}},
		{name: "stream cut before any text", file: "cut_before_text.txt", endpoint: EndpointChat,
			want: want{state: StateStreamError, events: 0, outTokens: 0, source: SourceEvents, errContains: "without [DONE]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := readSSE(t, tc.file)
			parts := splitEvents(body)
			if tc.oneWrite || bytes.Contains(body, []byte("\r\n")) {
				parts = [][]byte{body}
			}
			srv := scriptedServer(t, script{parts: parts, gaps: []time.Duration{0, 2 * time.Millisecond, 2 * time.Millisecond}})
			ep := tc.endpoint
			if ep == "" {
				ep = EndpointCompletions
			}
			rec, sum := replayOne(t, srv.URL, 200, WithEndpoint(ep))
			w := tc.want
			if rec.State != w.state {
				t.Fatalf("state = %s (%s), want %s", rec.State, rec.Error, w.state)
			}
			if len(rec.Events) != w.events {
				t.Errorf("token events = %d, want %d", len(rec.Events), w.events)
			}
			tokens, multi := make([]int, len(rec.Events)), 0
			for i, e := range rec.Events {
				tokens[i] = e.Tokens
				if w.tokens == nil && e.Tokens != 1 || w.tokens != nil && (i >= len(w.tokens) || e.Tokens != w.tokens[i]) {
					t.Errorf("event tokens = %v, want %v (nil: 1 each)", tokens, w.tokens)
					break
				}
				if e.Tokens > 1 {
					multi++
				}
			}
			if rec.MultiTokenEvents() != multi || sum.MultiTokenEvents != multi {
				t.Errorf("multi-token events: record %d, summary %d, want %d", rec.MultiTokenEvents(), sum.MultiTokenEvents, multi)
			}
			nr := 0
			for _, e := range rec.Events {
				if e.Reasoning {
					nr++
				}
			}
			if nr != w.reasoning {
				t.Errorf("reasoning events = %d, want %d", nr, w.reasoning)
			}
			if rec.OutputTokens != w.outTokens || rec.OutputTokensSource != w.source {
				t.Errorf("output tokens = %d from %s, want %d from %s", rec.OutputTokens, rec.OutputTokensSource, w.outTokens, w.source)
			}
			if rec.UsageMismatch != w.mismatch {
				t.Errorf("usage mismatch = %t, want %t", rec.UsageMismatch, w.mismatch)
			}
			if w.finish != "" && rec.FinishReason != w.finish {
				t.Errorf("finish reason = %q, want %q", rec.FinishReason, w.finish)
			}
			if w.errContains != "" && !strings.Contains(rec.Error, w.errContains) {
				t.Errorf("error = %q, want it to contain %q", rec.Error, w.errContains)
			}
			if _, ok := rec.E2E(); ok != w.e2eDefined {
				t.Errorf("E2E defined = %t, want %t (%s)", ok, w.e2eDefined, rec.Undefined(MetricE2E))
			}
			if rec.FirstMessageAt == 0 || rec.FirstMessageAt < rec.SentAt {
				t.Errorf("first message at %v, sent at %v", rec.FirstMessageAt, rec.SentAt)
			}
			if w.events > 0 {
				ttft, ok := rec.TTFT()
				if !ok || ttft <= 0 || rec.Events[0].At < rec.FirstMessageAt {
					t.Errorf("TTFT = %v, %t; first event %v before first message %v", ttft, ok, rec.Events[0].At, rec.FirstMessageAt)
				}
			} else if why := rec.Undefined(MetricTTFT); why == "" {
				t.Errorf("TTFT undefined without a reason")
			}
			if w.source == SourceEvents && w.state == StateOK && (!rec.MissingUsage() || sum.MissingUsage != 1) {
				t.Errorf("missing usage not flagged: record %t, summary %d", rec.MissingUsage(), sum.MissingUsage)
			}
			if sum.States[w.state] != 1 {
				t.Errorf("summary states = %v", sum.States)
			}
		})
	}
}

// TestHTTPFailures covers responses that are not SSE streams.
func TestHTTPFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		sc     script
		state  State
		status int
		errHas string
	}{
		{name: "HTTP error with OpenAI JSON body", sc: script{status: http.StatusServiceUnavailable, contentType: "application/json",
			parts: [][]byte{[]byte(`{"error":{"message":"server overloaded","type":"overloaded_error","code":503}}`)}},
			state: StateHTTPError, status: 503, errHas: "HTTP 503: server overloaded"},
		{name: "HTTP 400 with vLLM error object", sc: script{status: http.StatusBadRequest, contentType: "application/json",
			parts: [][]byte{[]byte(`{"object":"error","message":"max_tokens is too large","type":"BadRequestError","param":null,"code":400}`)}},
			state: StateHTTPError, status: 400, errHas: "max_tokens is too large"},
		{name: "200 with a non-SSE body", sc: script{contentType: "text/html", parts: [][]byte{[]byte("<html>proxy login</html>")}},
			state: StateStreamError, status: 200, errHas: "not text/event-stream"},
		{name: "200 SSE with invalid JSON", sc: script{parts: [][]byte{[]byte("data: {not json\n\n")}},
			state: StateStreamError, status: 200, errHas: "invalid JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := scriptedServer(t, tc.sc)
			rec, _ := replayOne(t, srv.URL, 8)
			if rec.State != tc.state || rec.HTTPStatus != tc.status || !strings.Contains(rec.Error, tc.errHas) {
				t.Errorf("got state %s status %d error %q; want %s %d containing %q", rec.State, rec.HTTPStatus, rec.Error, tc.state, tc.status, tc.errHas)
			}
			if _, ok := rec.TTFT(); ok {
				t.Errorf("TTFT defined for a failed request")
			}
		})
	}
}

// TestEventSplitAcrossReads writes one event in two parts 30 ms apart: the
// event must be parsed whole and stamped no earlier than its second part.
func TestEventSplitAcrossReads(t *testing.T) {
	t.Parallel()
	ev := []byte(`data: {"choices":[{"index":0,"text":"hello","finish_reason":"length"}]}` + "\n\n")
	tail := []byte(`data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5}}` + "\n\ndata: [DONE]\n\n")
	srv := scriptedServer(t, script{parts: [][]byte{ev[:17], ev[17:], tail}, gaps: []time.Duration{0, 30 * time.Millisecond}})
	rec, _ := replayOne(t, srv.URL, 1)
	if rec.State != StateOK || len(rec.Events) != 1 {
		t.Fatalf("state %s (%s), %d events", rec.State, rec.Error, len(rec.Events))
	}
	// Causality: the second half was written ≥ 30 ms after the first, which
	// follows the send, so the event cannot be stamped before SentAt + 30 ms.
	if ttft, _ := rec.TTFT(); ttft < 30*time.Millisecond {
		t.Errorf("TTFT %v: event stamped before its second part could have arrived", ttft)
	}
	if rec.FirstMessageAt != rec.Events[0].At {
		t.Errorf("first message %v != first token event %v", rec.FirstMessageAt, rec.Events[0].At)
	}
}
