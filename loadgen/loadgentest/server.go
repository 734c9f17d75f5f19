package loadgentest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Config scripts the server's answers.
type Config struct {
	// TTFT is the delay from reading the request to the first token event (default 0).
	TTFT time.Duration
	// ITL is the gap between successive token events (default 0: back to back).
	ITL time.Duration
	// Tokens, when > 0, overrides max_tokens as the number of tokens generated.
	Tokens int
	// Hold, when non-nil, is waited on after the first token event: streams
	// stay open (for memory-per-in-flight measurements) until it is closed.
	Hold <-chan struct{}
}

// Server is a running fast server. It satisfies loadgen.Server.
type Server struct {
	cfg  Config
	ln   net.Listener
	srv  *http.Server
	base string
	wg   sync.WaitGroup

	seen       sync.Map // request id → struct{}
	Duplicates atomic.Int64
	NoUsageAsk atomic.Int64
	Requests   atomic.Int64
	Open       atomic.Int64
	Events     atomic.Int64
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves.
func Start(addr string, cfg Config) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("loadgentest: listen %s: %w", addr, err)
	}
	s := &Server{cfg: cfg, ln: ln, base: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", s.complete)
	mux.HandleFunc("POST /v1/chat/completions", s.complete)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// BaseURL implements loadgen.Server.
func (s *Server) BaseURL() string { return s.base }

// Ready implements loadgen.Server: the listener is up once Start returned.
func (s *Server) Ready(ctx context.Context) error { return ctx.Err() }

// Close stops the server, waiting for handlers up to ctx.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	s.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

type request struct {
	MaxTokens     int  `json:"max_tokens"`
	Stream        bool `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Prompt   json.RawMessage `json:"prompt"`
	Messages json.RawMessage `json:"messages"`
}

// Pre-encoded pieces of the response.
var (
	compEvent = []byte(`data: {"id":"cmpl-0","object":"text_completion","model":"fast","choices":[{"index":0,"text":" tok","finish_reason":null}]}` + "\n\n")
	chatRole  = []byte(`data: {"id":"chatcmpl-0","object":"chat.completion.chunk","model":"fast","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	chatEvent = []byte(`data: {"id":"chatcmpl-0","object":"chat.completion.chunk","model":"fast","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}` + "\n\n")
	doneEvent = []byte("data: [DONE]\n\n")
)

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	if id := r.Header.Get("X-Request-Id"); id != "" {
		if _, dup := s.seen.LoadOrStore(id, struct{}{}); dup {
			s.Duplicates.Add(1)
		}
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad JSON: `+strconv.Quote(err.Error())+`"}}`, http.StatusBadRequest)
		return
	}
	n := req.MaxTokens
	if s.cfg.Tokens > 0 {
		n = s.cfg.Tokens
	}
	if n < 1 {
		http.Error(w, `{"error":{"message":"max_tokens must be ≥ 1"}}`, http.StatusBadRequest)
		return
	}
	prompt := promptLen(req.Prompt)
	chat := r.URL.Path == "/v1/chat/completions"
	if !sleepCtx(r.Context(), s.cfg.TTFT) {
		return
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		choice := `{"index":0,"text":" tok","finish_reason":"length"}`
		if chat {
			choice = `{"index":0,"message":{"role":"assistant","content":" tok"},"finish_reason":"length"}`
		}
		body := fmt.Sprintf(`{"id":"x","choices":[%s],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			choice, prompt, n, prompt+n)
		_, _ = w.Write([]byte(body))
		s.Events.Add(1)
		return
	}
	if !req.StreamOptions.IncludeUsage {
		s.NoUsageAsk.Add(1)
	}
	s.Open.Add(1)
	defer s.Open.Add(-1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	ev := compEvent
	if chat {
		ev = chatEvent
		_, _ = w.Write(chatRole)
	}
	for k := 0; k < n; k++ {
		if k > 0 && !sleepCtx(r.Context(), s.cfg.ITL) {
			return
		}
		if _, err := w.Write(ev); err != nil {
			return
		}
		fl.Flush()
		s.Events.Add(1)
		if k == 0 && s.cfg.Hold != nil {
			select {
			case <-s.cfg.Hold:
			case <-r.Context().Done():
				return
			}
		}
	}
	if req.StreamOptions.IncludeUsage {
		fmt.Fprintf(w, "data: {\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", prompt, n, prompt+n)
	}
	_, _ = w.Write(doneEvent)
	fl.Flush()
}

// promptLen counts a token-id array's elements, or the words of a string prompt.
func promptLen(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	if raw[0] == '[' {
		n := 0
		depth := 0
		empty := true
		for _, c := range raw {
			switch c {
			case '[':
				depth++
			case ']':
				depth--
			case ',':
				if depth == 1 {
					n++
				}
			case ' ', '\n', '\t', '\r':
			default:
				empty = false
			}
		}
		if empty {
			return 0
		}
		return n + 1
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	n := 0
	in := false
	for _, c := range s {
		if c == ' ' {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}

// sleepCtx sleeps d (nothing when d ≤ 0); false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
