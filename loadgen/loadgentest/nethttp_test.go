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

// netHTTPServer is the fast server as it was before the raw-TCP rewrite
// (net/http, one Write and Flush per token event), kept as the reference
// the new server is compared with: same answers (TestSameAnswersAsNetHTTP)
// and its CPU cost per event (BenchmarkServer).
type netHTTPServer struct {
	cfg    Config
	srv    *http.Server
	base   string
	wg     sync.WaitGroup
	seen   sync.Map
	events atomic.Int64
}

func startNetHTTP(addr string, cfg Config) (*netHTTPServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("loadgentest: listen %s: %w", addr, err)
	}
	s := &netHTTPServer{cfg: cfg, base: "http://" + ln.Addr().String()}
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

func (s *netHTTPServer) BaseURL() string { return s.base }

func (s *netHTTPServer) Close(ctx context.Context) error {
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

func (s *netHTTPServer) complete(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get("X-Request-Id"); id != "" {
		s.seen.LoadOrStore(id, struct{}{})
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
		s.events.Add(1)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	ev := compEvent.raw
	if chat {
		ev = chatEvent.raw
		_, _ = w.Write(chatRole.raw)
	}
	for k := 0; k < n; k++ {
		if k > 0 && !sleepCtx(r.Context(), s.cfg.ITL) {
			return
		}
		if _, err := w.Write(ev); err != nil {
			return
		}
		fl.Flush()
		s.events.Add(1)
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
	_, _ = w.Write(doneEvent.raw)
	fl.Flush()
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
