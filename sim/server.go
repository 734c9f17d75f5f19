package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// maxBodyBytes bounds a request body (a 8192-token id array is ~60 KiB).
const maxBodyBytes = 8 << 20

// Server satisfies loadgen.Server's shape (written out: sim imports no transferlab package).
var _ interface {
	BaseURL() string
	Ready(ctx context.Context) error
} = (*Server)(nil)

// Server is the simulated OpenAI-compatible server. It satisfies
// loadgen.Server (BaseURL, Ready). Create it with New; it must be Closed.
type Server struct {
	cfg     Config
	cm      *CostModel
	eng     *engine
	truth   *truthStore
	created int64 // unix seconds, the "created" field of responses
	ids     atomic.Uint64
	closing atomic.Bool
	handler http.Handler

	mu        sync.Mutex
	httpSrv   *http.Server
	baseURL   string
	serveDone chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Option changes how New builds a Server.
type Option func(*options)

type options struct {
	stepHook func(StepRecord)
}

// WithStepHook calls fn after every engine step, from the engine goroutine
// (fn must be fast and must not call back into the Server). Default: none.
func WithStepHook(fn func(StepRecord)) Option {
	return func(o *options) { o.stepHook = fn }
}

// New validates cfg and starts the engine. Serve with Handler or Start; stop with Close.
func New(cfg Config, opts ...Option) (*Server, error) {
	cm, err := NewCostModel(cfg)
	if err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s := &Server{
		cfg:     cloneConfig(cfg),
		cm:      cm,
		truth:   newTruthStore(cfg.TruthCapacity),
		created: time.Now().Unix(),
	}
	s.eng = newEngine(&s.cfg, cm, o.stepHook)
	s.handler = http.HandlerFunc(s.serveHTTP)
	return s, nil
}

func cloneConfig(c Config) Config {
	if c.Overrides != nil {
		m := make(map[string]float64, len(c.Overrides))
		for k, v := range c.Overrides {
			m[k] = v
		}
		c.Overrides = m
	}
	c.Ceilings = slices.Clone(c.Ceilings)
	return c
}

// Config returns the effective configuration (a copy).
func (s *Server) Config() Config { return cloneConfig(s.cfg) }

// CostModel returns the cost model the engine prices steps with.
func (s *Server) CostModel() *CostModel { return s.cm }

// Handler serves the OpenAI-compatible API; usable with httptest.NewServer.
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves in the
// background until Close.
func (s *Server) Start(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpSrv != nil {
		return fmt.Errorf("sim: already started at %s", s.baseURL)
	}
	if s.closing.Load() {
		return errClosed
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sim: listen %s: %w", addr, err)
	}
	s.httpSrv = &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	s.baseURL = "http://" + ln.Addr().String()
	s.serveDone = make(chan struct{})
	srv, done := s.httpSrv, s.serveDone
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // returns http.ErrServerClosed after Shutdown/Close
	}()
	return nil
}

// BaseURL is the server's root, e.g. "http://127.0.0.1:8000" (no trailing
// slash); "" before Start.
func (s *Server) BaseURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.baseURL
}

// Ready returns once GET /health answers 200, or ctx ends. Before Start it
// returns an error at once.
func (s *Server) Ready(ctx context.Context) error {
	base := s.BaseURL()
	if base == "" {
		return errors.New("sim: Ready: server not started (use Start, or serve Handler yourself)")
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
		if err != nil {
			return fmt.Errorf("sim: Ready: %w", err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sim: Ready %s: %w", base, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Close stops the engine (in-flight responses end without [DONE]), then shuts
// the listener down within ctx and waits for its goroutines. Safe to call twice.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		s.eng.close()
		s.mu.Lock()
		srv, done := s.httpSrv, s.serveDone
		s.mu.Unlock()
		if srv == nil {
			return
		}
		if err := srv.Shutdown(ctx); err != nil {
			s.closeErr = fmt.Errorf("sim: shutdown: %w", err)
			_ = srv.Close()
		}
		<-done
	})
	return s.closeErr
}

// ServeChild is a started server's life as another process's child (a
// script or a benchmark holding its stdin): it prints the base URL as the
// first line of out, serves until in closes (the parent is done with it) or
// ctx ends, then closes the server within 10 s.
func (s *Server) ServeChild(ctx context.Context, out io.Writer, in io.Reader) error {
	fmt.Fprintln(out, s.BaseURL())
	closed := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, in); close(closed) }()
	select {
	case <-closed:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Close(sctx)
}

// Profile returns the engine's accounting since the last reset.
func (s *Server) Profile() Profile { return s.eng.profile() }

// ResetProfile starts a new profile window and returns the one it closed;
// the noise model (Config.Noise) draws a new run factor for the new window.
func (s *Server) ResetProfile() Profile { return s.eng.resetProfile() }

// StallLost is the time the engine's busy steps have lost to host stalls
// since the server started: each step planned more than
// scheduler.max_catch_up_ms after its due start starts late by that much,
// and the time is not made up (StepRecord.Lost, summed). A simulator sharing
// a loaded host's CPUs serves less than its model while it grows; the
// difference of two readings is what a window lost. Safe to call at any time.
func (s *Server) StallLost() time.Duration { return time.Duration(s.eng.lost.Load()) }

// NoiseRunFactor is the noise model's current F_run, the factor on every
// step time since the server started or its profile was last reset
// (Config.Noise; 1 when off): the per-cell part of the ground truth
// (StepRecord.NoiseFactor has each step's F_run · F_step).
func (s *Server) NoiseRunFactor() float64 { return s.eng.noiseRunFactor() }

// Truth returns the ground truth of the latest request sent with X-Request-Id
// id (a copy; it may still be in flight, see DoneAt).
func (s *Server) Truth(id string) (RequestTruth, bool) { return s.truth.get(id) }

// ClearTruth forgets all ground truth (in-flight requests keep recording into
// records that are no longer reachable).
func (s *Server) ClearTruth() { s.truth.clear() }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	route := func(method string, fn func()) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeError(w, &apiError{status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
				Msg: fmt.Sprintf("%s %s: method not allowed (use %s)", r.Method, r.URL.Path, method)})
			return
		}
		fn()
	}
	switch r.URL.Path {
	case "/v1/completions":
		route(http.MethodPost, func() { s.serveCompletion(w, r, arrived, false) })
	case "/v1/chat/completions":
		route(http.MethodPost, func() { s.serveCompletion(w, r, arrived, true) })
	case "/v1/models":
		route(http.MethodGet, func() { s.serveModels(w) })
	case "/health":
		route(http.MethodGet, func() {
			if s.closing.Load() {
				writeError(w, &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Msg: "server is closing"})
				return
			}
			writeJSON(w, map[string]string{"status": "ok"})
		})
	case "/v1/profile":
		route(http.MethodGet, func() { writeJSON(w, s.Profile()) })
	case TruthPath:
		route(http.MethodGet, func() { s.serveTruth(w) })
	case "/v1/profile/reset":
		route(http.MethodPost, func() { writeJSON(w, s.ResetProfile()) })
	default:
		writeError(w, &apiError{status: http.StatusNotFound, Type: "invalid_request_error",
			Msg: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)})
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, &apiError{status: http.StatusInternalServerError, Type: "server_error", Msg: err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

func (s *Server) serveModels(w http.ResponseWriter) {
	type model struct {
		ID          string `json:"id"`
		Object      string `json:"object"`
		Created     int64  `json:"created"`
		OwnedBy     string `json:"owned_by"`
		MaxModelLen int    `json:"max_model_len"`
	}
	writeJSON(w, struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", []model{{s.cfg.Model.Name, "model", s.created, "transferlab-sim", s.cfg.Model.MaxModelLen}}})
}

func (s *Server) serveCompletion(w http.ResponseWriter, r *http.Request, arrived time.Time, chat bool) {
	if s.closing.Load() {
		writeError(w, &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Msg: "server is closing"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		status := http.StatusBadRequest
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			status = http.StatusRequestEntityTooLarge
		}
		writeError(w, &apiError{status: status, Type: "invalid_request_error", Msg: fmt.Sprintf("reading body: %v", err)})
		return
	}
	p, apiErr := parseRequest(body, chat, &s.cfg)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	rid := r.Header.Get(requestIDHeader)
	respID := rid
	if respID == "" {
		respID = strconv.FormatUint(s.ids.Add(1), 10)
	}
	if chat {
		respID = "chatcmpl-" + respID
	} else {
		respID = "cmpl-" + respID
	}
	tr := s.truth.add(rid, RequestTruth{ID: rid, InputTokens: p.inputTokens, MaxTokens: p.maxTokens, Stream: p.stream, ArrivedAt: arrived})
	q := &seq{inputTokens: p.inputTokens, maxTokens: p.maxTokens, stream: newTokenStream(tr)}
	if err := s.eng.submit(q, arrived); err != nil {
		tr.done(time.Now(), true)
		writeError(w, &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Msg: err.Error()})
		return
	}
	if rid != "" {
		w.Header().Set(requestIDHeader, rid)
	}
	if p.stream {
		s.stream(w, r, q, p, respID)
	} else {
		s.respond(w, r, q, p, respID)
	}
}

// end records the request's end for the profile, then for truth (in that
// order: once DoneAt is visible the request is out of flight).
func (s *Server) end(q *seq, aborted bool) {
	now := time.Now()
	s.eng.finish(q, now)
	q.stream.truth.done(now, aborted)
}

// stream writes one SSE event per token, flushing each and stamping the
// truth right after the flush.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, q *seq, p parsedRequest, id string) {
	ev := newSSEEvents(p.chat, p.includeUsage, id, s.cfg.Model.Name, s.created, p.inputTokens, p.maxTokens)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		return flushed(rc.Flush())
	}
	if p.chat && !write(ev.role) {
		s.end(q, true)
		return
	}
	if !p.chat {
		_ = rc.Flush() // send the headers now
	}
	ctx := r.Context()
	ts := q.stream
	written := 0
	for written < p.maxTokens {
		select {
		case <-ts.notify:
		case <-ctx.Done():
			s.end(q, true)
			return
		}
		var ok bool
		written, ok = writeTokens(w, rc, ev, ts.truth, written, int(ts.produced.Load()), p.maxTokens)
		if !ok || (written < p.maxTokens && ts.aborted.Load()) {
			s.end(q, true)
			return
		}
	}
	if p.includeUsage && !write(ev.usage) {
		s.end(q, true)
		return
	}
	ok := write(ev.done)
	s.end(q, !ok)
}

// writeTokens writes the events of tokens from+1 … to (of max), flushing
// each and recording its flush time; it returns the count written so far and
// false when the client is gone. It allocates nothing per token.
func writeTokens(w http.ResponseWriter, rc *http.ResponseController, ev *sseEvents, tr *truthRecord, from, to, max int) (int, bool) {
	for ; from < to; from++ {
		b := ev.token
		if from+1 == max {
			b = ev.last
		}
		if _, err := w.Write(b); err != nil || !flushed(rc.Flush()) {
			return from, false
		}
		tr.flushed(time.Now())
	}
	return from, true
}

// respond waits for every token, then writes one JSON body.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, q *seq, p parsedRequest, id string) {
	ts := q.stream
	for int(ts.produced.Load()) < p.maxTokens {
		select {
		case <-ts.notify:
		case <-r.Context().Done():
			s.end(q, true)
			return
		}
		if int(ts.produced.Load()) < p.maxTokens && ts.aborted.Load() {
			s.end(q, true)
			writeError(w, &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Msg: "server closed before the completion finished"})
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(completeBody(p.chat, id, s.cfg.Model.Name, s.created, p.inputTokens, p.maxTokens))
	if err == nil && !flushed(http.NewResponseController(w).Flush()) {
		err = errors.New("flush failed")
	}
	at := time.Now()
	for range p.maxTokens {
		ts.truth.flushed(at)
	}
	s.end(q, err != nil)
}

// flushed reports whether a Flush succeeded; a writer that cannot flush
// (http.ErrNotSupported) still delivers the bytes, later.
func flushed(err error) bool { return err == nil || errors.Is(err, http.ErrNotSupported) }
