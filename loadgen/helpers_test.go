package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/transferlab/transferlab/traces"
)

// urlServer adapts an httptest server to Server.
type urlServer struct{ url string }

func (u urlServer) BaseURL() string                 { return u.url }
func (u urlServer) Ready(ctx context.Context) error { return ctx.Err() }

// readSSE loads a recorded stream from testdata/sse.
func readSSE(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sse", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// script is one scripted response: parts written and flushed in order, with
// gaps[i] slept before part i (gaps may be shorter than parts).
type script struct {
	status      int
	contentType string
	parts       [][]byte
	gaps        []time.Duration
}

// scriptedServer answers every request with sc and fails the test if a
// request id arrives twice.
func scriptedServer(t *testing.T, sc script) *httptest.Server {
	t.Helper()
	seen := make(chan string, 1024)
	ids := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get(RequestIDHeader)
		ct := sc.contentType
		if ct == "" {
			ct = "text/event-stream"
		}
		w.Header().Set("Content-Type", ct)
		st := sc.status
		if st == 0 {
			st = http.StatusOK
		}
		w.WriteHeader(st)
		fl := w.(http.Flusher)
		for i, p := range sc.parts {
			if i < len(sc.gaps) && sc.gaps[i] > 0 {
				time.Sleep(sc.gaps[i])
			}
			_, _ = w.Write(p)
			fl.Flush()
		}
	}))
	t.Cleanup(func() {
		srv.Close()
		close(seen)
		for id := range seen {
			if id == "" {
				t.Errorf("a request came without %s", RequestIDHeader)
			}
			if ids[id] {
				t.Errorf("request id %s arrived twice", id)
			}
			ids[id] = true
		}
	})
	return srv
}

// schedule returns n requests due every gap, each asking for out tokens.
func schedule(n int, gap time.Duration, in, out int) traces.Schedule {
	s := traces.Schedule{Source: "test", Format: "synthetic"}
	for i := 0; i < n; i++ {
		s.Requests = append(s.Requests, traces.Request{ID: i, Offset: time.Duration(i) * gap, InputTokens: in, OutputTokens: out})
	}
	return s
}

// replayOne sends one request to url and returns its record and the summary.
func replayOne(t *testing.T, url string, out int, opts ...Option) (Record, Summary) {
	t.Helper()
	var sink SliceSink
	sum, err := Replay(context.Background(), urlServer{url}, schedule(1, 0, 4, out), nil, &sink, opts...)
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if len(sink.Records) != 1 {
		t.Fatalf("got %d records, want 1", len(sink.Records))
	}
	return sink.Records[0], sum
}

// splitEvents splits an SSE body after each blank line (one part per event).
func splitEvents(b []byte) [][]byte {
	var parts [][]byte
	start := 0
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\n' && b[i+1] == '\n' {
			parts = append(parts, b[start:i+2])
			start = i + 2
			i++
		}
	}
	if start < len(b) {
		parts = append(parts, b[start:])
	}
	return parts
}

// within fails unless |got − want| ≤ tol; the one tolerance helper of the package.
func within(t *testing.T, what string, got, want, tol time.Duration) bool {
	t.Helper()
	d := got - want
	if d < 0 {
		d = -d
	}
	if d > tol {
		t.Errorf("%s = %v, want %v ± %v", what, got, want, tol)
		return false
	}
	return true
}
