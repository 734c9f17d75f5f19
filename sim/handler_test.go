package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// flushRecorder is a ResponseRecorder that remembers the body length at each
// Flush, so a test can check that every event was flushed on its own.
type flushRecorder struct {
	*httptest.ResponseRecorder
	mu      sync.Mutex
	flushes []int
}

func (f *flushRecorder) Flush() {
	f.mu.Lock()
	f.flushes = append(f.flushes, f.Body.Len())
	f.mu.Unlock()
	f.ResponseRecorder.Flush()
}

func newHandlerServer(t *testing.T) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Scheduler.CPUOverheadMs = 0.5
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestHandlerStreaming(t *testing.T) {
	t.Parallel()
	s := newHandlerServer(t)
	cases := []struct {
		name  string
		path  string
		body  map[string]any
		chat  bool
		usage bool
	}{
		{"completions with usage", "/v1/completions", map[string]any{"prompt": idPrompt(50), "max_tokens": 5, "stream": true, "stream_options": map[string]any{"include_usage": true}}, false, true},
		{"completions without usage", "/v1/completions", map[string]any{"prompt": idPrompt(50), "max_tokens": 5, "stream": true}, false, false},
		{"completions string prompt", "/v1/completions", map[string]any{"prompt": "one two  three\nfour", "max_tokens": 5, "stream": true, "stream_options": map[string]any{"include_usage": true}}, false, true},
		{"chat with usage", "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "a b c"}}, "max_completion_tokens": 5, "stream": true, "stream_options": map[string]any{"include_usage": true}}, true, true},
		{"single token", "/v1/completions", map[string]any{"prompt": []int{1}, "max_tokens": 1, "stream": true, "stream_options": map[string]any{"include_usage": true}}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := "h-" + tc.name
			body, _ := json.Marshal(tc.body)
			req := httptest.NewRequest(http.MethodPost, tc.path, bytes.NewReader(body))
			req.Header.Set(requestIDHeader, id)
			rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d content-type %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			maxTokens := 5
			if tc.name == "single token" {
				maxTokens = 1
			}
			raw := rec.Body.String()
			res, err := readSSE(rec.Code, bufio.NewScanner(strings.NewReader(raw)))
			if err != nil {
				t.Fatal(err)
			}
			if res.tokenEvents != maxTokens || !res.done || res.events[len(res.events)-1] != "[DONE]" {
				t.Fatalf("token events %d (want %d), done %v:\n%s", res.tokenEvents, maxTokens, res.done, raw)
			}
			wantEvents := maxTokens + 1
			if tc.chat {
				wantEvents++
				if !strings.Contains(res.events[0], `"delta":{"role":"assistant","content":""}`) {
					t.Errorf("first chat chunk is not role-only: %s", res.events[0])
				}
			}
			if tc.usage {
				wantEvents++
				u := res.events[len(res.events)-2]
				if !strings.Contains(u, `"choices":[]`) || res.usage == nil || res.usage.CompletionTokens != maxTokens {
					t.Errorf("usage chunk %s (parsed %+v)", u, res.usage)
				}
				if tc.name == "completions string prompt" && res.usage.PromptTokens != 4 {
					t.Errorf("string prompt counted %d tokens, want 4 words", res.usage.PromptTokens)
				}
			} else if res.usage != nil {
				t.Errorf("usage sent without include_usage")
			}
			if len(res.events) != wantEvents {
				t.Errorf("%d events, want %d", len(res.events), wantEvents)
			}
			last := res.events[len(res.events)-2]
			if tc.usage {
				last = res.events[len(res.events)-3]
			}
			if !strings.Contains(last, `"finish_reason":"length"`) || strings.Count(raw, `"finish_reason":"length"`) != 1 {
				t.Errorf("last token event lacks finish_reason length: %s", last)
			}
			// Flushed per event: between successive flushes there is exactly one event.
			rec.mu.Lock()
			flushes := append([]int(nil), rec.flushes...)
			rec.mu.Unlock()
			prev, events := 0, 0
			for _, at := range flushes {
				seg := raw[prev:at]
				prev = at
				if seg == "" {
					continue // the headers
				}
				events++
				if strings.Count(seg, "data: ") != 1 || !strings.HasSuffix(seg, "\n\n") {
					t.Errorf("flush carried %q, want exactly one event", seg)
				}
			}
			if prev != len(raw) || events != len(res.events) {
				t.Errorf("%d flushed events covering %d of %d bytes, want %d events", events, prev, len(raw), len(res.events))
			}
			tr, ok := s.Truth(id)
			if !ok || len(tr.TokenFlushedAt) != maxTokens || len(tr.TokenGeneratedAt) != maxTokens || tr.DoneAt.IsZero() || tr.Aborted {
				t.Errorf("truth %+v (found %v)", tr, ok)
			}
		})
	}
}

func TestHandlerNonStreaming(t *testing.T) {
	t.Parallel()
	s := newHandlerServer(t)
	for _, tc := range []struct {
		name, path, body, want string
	}{
		{"completions", "/v1/completions", `{"prompt":[1,2,3],"max_tokens":3}`, `"text":" tok tok tok"`},
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"x y"}]}],"max_tokens":2}`, `"message":{"role":"assistant","content":" tok tok"}`},
		{"default max_tokens is 16", "/v1/completions", `{"prompt":"hi"}`, `"completion_tokens":16`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body)))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), tc.want) || !strings.Contains(rec.Body.String(), `"finish_reason":"length"`) {
				t.Errorf("status %d body %s, want %s", rec.Code, rec.Body, tc.want)
			}
		})
	}
}

func TestHandlerErrors(t *testing.T) {
	t.Parallel()
	s := newHandlerServer(t)
	long, _ := json.Marshal(map[string]any{"prompt": idPrompt(8192), "max_tokens": 1})
	fits, _ := json.Marshal(map[string]any{"prompt": idPrompt(8000), "max_tokens": 193})
	cases := []struct {
		name, method, path, body string
		status                   int
		param                    string
	}{
		{"bad JSON", "POST", "/v1/completions", `{"prompt":`, 400, ""},
		{"missing prompt", "POST", "/v1/completions", `{"max_tokens":3}`, 400, "prompt"},
		{"empty prompt array", "POST", "/v1/completions", `{"prompt":[]}`, 400, "prompt"},
		{"blank string prompt", "POST", "/v1/completions", `{"prompt":"   "}`, 400, "prompt"},
		{"batched prompt", "POST", "/v1/completions", `{"prompt":[[1,2],[3]]}`, 400, "prompt"},
		{"token id out of vocab", "POST", "/v1/completions", `{"prompt":[1,128256]}`, 400, "prompt"},
		{"max_tokens 0", "POST", "/v1/completions", `{"prompt":[1],"max_tokens":0}`, 400, "max_tokens"},
		{"max_tokens negative", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":-1}`, 400, "max_tokens"},
		{"prompt longer than context", "POST", "/v1/completions", string(long), 400, "max_tokens"},
		{"prompt + completion over context", "POST", "/v1/completions", string(fits), 400, "max_tokens"},
		{"n > 1", "POST", "/v1/completions", `{"prompt":[1],"n":2}`, 400, "n"},
		{"missing messages", "POST", "/v1/chat/completions", `{"max_tokens":3}`, 400, "messages"},
		{"unknown model", "POST", "/v1/completions", `{"model":"gpt-9","prompt":[1]}`, 404, "model"},
		{"wrong method", "GET", "/v1/completions", ``, 405, ""},
		{"unknown path", "GET", "/v2/nothing", ``, 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Param   string `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
				t.Fatalf("error body is not JSON: %q", rec.Body)
			}
			if rec.Code != tc.status || e.Error.Message == "" || e.Error.Type == "" || e.Error.Param != tc.param {
				t.Errorf("status %d (want %d), error %+v (want param %q)", rec.Code, tc.status, e.Error, tc.param)
			}
		})
	}
	if p := s.Profile(); p.Steps != 0 || p.InFlight != 0 {
		t.Errorf("rejected requests reached the engine: %+v", p)
	}
}

func TestHandlerInfoEndpoints(t *testing.T) {
	t.Parallel()
	s := newHandlerServer(t)
	get := func(method, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec
	}
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(get("GET", "/v1/models").Body.Bytes(), &models); err != nil || len(models.Data) != 1 || models.Data[0].ID != "sim-llama-3-8b" {
		t.Errorf("models %+v %v", models, err)
	}
	get("GET", "/health")

	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/completions", strings.NewReader(`{"prompt":[1,2],"max_tokens":2}`)))
	var p Profile
	if err := json.Unmarshal(get("GET", "/v1/profile").Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if !p.Simulated || p.Steps != 2 || len(p.Ops) != int(numOps) || p.Ops[OpRMSNorm].Op != "rmsnorm" || p.GPUBusy <= 0 || p.ActiveWall <= 0 {
		t.Errorf("profile %+v", p)
	}
	var closed Profile
	if err := json.Unmarshal(get("POST", "/v1/profile/reset").Body.Bytes(), &closed); err != nil || closed.Steps != 2 {
		t.Errorf("reset returned %+v %v", closed, err)
	}
	if err := json.Unmarshal(get("GET", "/v1/profile").Body.Bytes(), &p); err != nil || p.Steps != 0 || p.GPUBusy != 0 || p.ActiveWall != 0 {
		t.Errorf("after reset %+v %v", p, err)
	}
}
