package loadgentest

import (
	"bytes"
	"context"
	"fmt"
	"net"
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
	// EventsPerWrite, when ITL is 0, writes a stream's token events after
	// the first this many to one Write (one TCP segment on loopback) instead
	// of one each. Default 0 or 1: one Write per event, as a server that
	// flushes every token does. Over loopback the kernel's per-segment cost
	// (the receiver's side included) is most of the server's CPU per event,
	// so 8 cuts it about threefold (BenchmarkServer); the client then gets
	// back-to-back events in fewer reads. At most maxEventsPerWrite.
	EventsPerWrite int
	// LongLineEvery, when > 0, makes every stream whose request id
	// (loadgen.RequestIDHeader) is a multiple of LongLineEvery send one SSE
	// line of LongLineBytes bytes (a comment, or a data event with
	// LongLineData), with one Write, right after its
	// first token event: a large event for head-of-line measurements (the
	// other streams' token gaps must not stretch while a client reads it).
	LongLineEvery int
	// LongLineBytes is the long line's length (bytes, its ": " or "data: "
	// and line end included; at least 4, or LongDataMin with LongLineData).
	LongLineBytes int
	// LongLineData makes the long line one data event instead of a comment:
	// a completion chunk whose "text" fills it, carrying one more token
	// (counted in the stream's usage), for measuring what parsing a large
	// event costs the other streams.
	LongLineData bool
}

// LongDataMin is the shortest long data line (bytes): the JSON around its
// text.
const LongDataMin = len(longDataHead) + len(longDataTail) + len("data: \n\n")

// The long data line's JSON around its text.
const (
	longDataHead = `{"id":"cmpl-0","object":"text_completion","model":"fast","choices":[{"index":0,"text":"`
	longDataTail = `","finish_reason":null}]}`
)

// maxEventsPerWrite bounds Config.EventsPerWrite (a group is pre-encoded once).
const maxEventsPerWrite = 1024

// headTimeout bounds reading one request head, and then its body, from the
// first byte (as net/http's ReadHeaderTimeout): a slowloris client is cut off.
const headTimeout = 10 * time.Second

// acceptBackoffMax caps the pause after a failed Accept (too many open files).
const acceptBackoffMax = time.Second

// Server is a running fast server. It satisfies loadgen.Server.
//
// It is a raw-TCP HTTP/1.1 server (conn.go), not net/http: one goroutine per
// connection, the head parsed by hand, and each token event written with one
// Write of a pre-encoded chunk, so that serving costs its client as little
// CPU as possible when both share a machine.
type Server struct {
	cfg         Config
	ln          net.Listener
	base        string
	headTimeout time.Duration

	wg       sync.WaitGroup // the accept loop and every connection
	mu       sync.Mutex
	conns    map[*conn]struct{} // under mu
	closing  bool               // under mu: Close began, no new requests
	stopping chan struct{}      // closed when Close begins
	killed   chan struct{}      // closed when Close's ctx ends: streams are cut
	stopOnce sync.Once
	killOnce sync.Once

	groups [2][2][]byte // [chat][chunked]: EventsPerWrite token events, pre-encoded
	long   [2][]byte    // [chunked]: the LongLineEvery line, pre-encoded

	seen       sync.Map // request id → struct{}
	Duplicates atomic.Int64
	NoUsageAsk atomic.Int64
	Requests   atomic.Int64
	Open       atomic.Int64
	Events     atomic.Int64
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves.
func Start(addr string, cfg Config) (*Server, error) {
	return start(addr, cfg, headTimeout)
}

// start is Start with the head timeout as a parameter (tests shorten it).
func start(addr string, cfg Config, headTO time.Duration) (*Server, error) {
	if cfg.EventsPerWrite < 0 || cfg.EventsPerWrite > maxEventsPerWrite {
		return nil, fmt.Errorf("loadgentest: Config.EventsPerWrite %d: want 0 to %d", cfg.EventsPerWrite, maxEventsPerWrite)
	}
	if cfg.LongLineEvery > 0 && cfg.LongLineBytes < 4 {
		return nil, fmt.Errorf("loadgentest: Config.LongLineBytes %d: want at least 4 with LongLineEvery", cfg.LongLineBytes)
	}
	if cfg.LongLineEvery > 0 && cfg.LongLineData && cfg.LongLineBytes < LongDataMin {
		return nil, fmt.Errorf("loadgentest: Config.LongLineBytes %d: want at least %d with LongLineData", cfg.LongLineBytes, LongDataMin)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("loadgentest: listen %s: %w", addr, err)
	}
	s := &Server{
		cfg: cfg, ln: ln, base: "http://" + ln.Addr().String(), headTimeout: headTO,
		conns: map[*conn]struct{}{}, stopping: make(chan struct{}), killed: make(chan struct{}),
	}
	if g := cfg.EventsPerWrite; g > 1 {
		for i, ev := range []event{compEvent, chatEvent} {
			s.groups[i][0] = bytes.Repeat(ev.raw, g)
			s.groups[i][1] = bytes.Repeat(ev.chunk, g)
		}
	}
	if cfg.LongLineEvery > 0 {
		raw := bytes.Repeat([]byte{'x'}, cfg.LongLineBytes)
		raw[0], raw[1], raw[len(raw)-2], raw[len(raw)-1] = ':', ' ', '\n', '\n'
		if cfg.LongLineData {
			copy(raw, "data: "+longDataHead)
			copy(raw[len(raw)-2-len(longDataTail):], longDataTail)
		}
		s.long[0], s.long[1] = raw, appendChunk(nil, raw)
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// BaseURL implements loadgen.Server.
func (s *Server) BaseURL() string { return s.base }

// Ready implements loadgen.Server: the listener is up once Start returned.
func (s *Server) Ready(ctx context.Context) error { return ctx.Err() }

// Close stops accepting, closes idle connections, and lets requests in
// progress (streams included) finish until ctx ends; then it closes every
// connection, waits for their goroutines and returns ctx's error. Nil when
// everything finished in time.
func (s *Server) Close(ctx context.Context) error {
	s.stopOnce.Do(func() {
		close(s.stopping)
		_ = s.ln.Close()
		s.mu.Lock()
		s.closing = true
		for c := range s.conns {
			if c.idle {
				_ = c.nc.Close()
			}
		}
		s.mu.Unlock()
	})
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.killOnce.Do(func() {
		close(s.killed)
		s.mu.Lock()
		for c := range s.conns {
			_ = c.nc.Close()
		}
		s.mu.Unlock()
	})
	<-done
	return ctx.Err()
}

// accept runs until the listener is closed, one goroutine per connection.
func (s *Server) accept() {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.stopping:
				return
			default:
			}
			// Out of file descriptors or another transient failure: pause
			// and retry, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), acceptBackoffMax)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.stopping:
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		c := newConn(s, nc)
		if !s.track(c) {
			_ = nc.Close()
			continue
		}
		go c.serve()
	}
}

// track registers c (counted in wg); false once Close began.
func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

// untrack forgets c; its goroutine is ending.
func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// setIdle marks c idle (waiting for a request: Close closes it) or busy;
// false once Close began (no new request is read).
func (s *Server) setIdle(c *conn, idle bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.idle = idle
	return !s.closing
}

// isClosing reports whether Close began.
func (s *Server) isClosing() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}
