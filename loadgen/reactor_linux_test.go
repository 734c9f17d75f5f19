//go:build linux

package loadgen

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/transferlab/transferlab/traces"
)

// TestReactorNoGoroutinePerStream holds streams open and counts the
// goroutines of loadgen: the reactor runs its loop and its finisher, none per
// request or connection, whatever the number of streams.
func TestReactorNoGoroutinePerStream(t *testing.T) {
	const n = 40
	hold := make(chan struct{})
	var open sync.WaitGroup
	open.Add(n)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseTwoTokens[:strings.Index(sseTwoTokens, "\n\n")+2])
		w.(http.Flusher).Flush()
		open.Done()
		<-hold
		_, _ = io.WriteString(w, sseTwoTokens[strings.Index(sseTwoTokens, "\n\n")+2:])
	}))
	t.Cleanup(srv.Close)
	done := make(chan Summary)
	go func() {
		sum, _ := Replay(context.Background(), urlServer{srv.URL}, schedule(n, 0, 4, 2), nil, &SliceSink{}, WithTransport(TransportReactor))
		done <- sum
	}()
	open.Wait()
	time.Sleep(50 * time.Millisecond) // let the first events be read
	buf := make([]byte, 1<<22)
	stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
	close(hold)
	var loops, finishers, other int
	for _, s := range stacks {
		switch {
		case strings.Contains(s, "loadgen.(*reactor).loop"):
			loops++
		case strings.Contains(s, "loadgen.(*finisher).run"):
			finishers++
		case strings.Contains(s, "loadgen.(*client).") || strings.Contains(s, "loadgen.(*reactor)."):
			other++
		}
	}
	sum := <-done
	if sum.States[StateOK] != n {
		t.Errorf("states %v", sum.States)
	}
	if loops != 1 || finishers != 1 || other != 0 {
		t.Errorf("%d streams open: %d loops, %d finishers (want 1, 1), %d other client goroutines (want 0)", n, loops, finishers, other)
	}
}

// TestReactorLargeRequest sends a request far larger than a socket buffer to
// a server that reads it slowly: the dispatcher's non-blocking write stops
// at EAGAIN and the loop finishes it on EPOLLOUT; the server must receive
// every byte and the record be ok.
func TestReactorLargeRequest(t *testing.T) {
	t.Parallel()
	const inTokens = 3_000_000 // ~17 MB of token ids: more than the socket buffers hold
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 64<<10)
		for {
			n, err := r.Body.Read(buf)
			got.Add(int64(n))
			if err != nil {
				break
			}
			time.Sleep(time.Millisecond) // a slow reader: the client's socket buffer fills
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseTwoTokens)
	}))
	t.Cleanup(srv.Close)
	var sink SliceSink
	if _, err := Replay(context.Background(), urlServer{srv.URL}, schedule(1, 0, inTokens, 2), nil, &sink, WithTransport(TransportReactor)); err != nil || len(sink.Records) != 1 {
		t.Fatalf("Replay: %v, %d records", err, len(sink.Records))
	}
	rec := sink.Records[0]
	if rec.State != StateOK || rec.OutputTokens != 2 {
		t.Fatalf("state %s (%s), %d output tokens", rec.State, rec.Error, rec.OutputTokens)
	}
	if n := got.Load(); n < 5*inTokens {
		t.Errorf("server read %d body bytes, want ≥ %d (every token id)", n, 5*inTokens)
	}
}

// TestReactorAddresses: the reactor tries the server's addresses in order
// until one connects (a name resolving to an address where nothing listens
// and then to the server's), fails with the last refusal when none does,
// and fails every request, as a record, when the name did not resolve.
func TestReactorAddresses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseTwoTokens)
	}))
	t.Cleanup(srv.Close)
	good := netip.MustParseAddrPort(srv.Listener.Addr().String())
	refused := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), good.Port()) // loopback, nothing listens there
	for _, tc := range []struct {
		name       string
		addrs      []netip.AddrPort
		resolveErr error
		state      State
		errHas     string
	}{
		{"refused then the server", []netip.AddrPort{refused, good}, nil, StateOK, ""},
		{"refused only", []netip.AddrPort{refused}, nil, StateHTTPError, "connection refused"},
		{"no address", nil, errors.New("dial tcp: lookup nosuch.invalid: no such host"), StateHTTPError, "no such host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultConfig()
			WithTransport(TransportReactor)(&cfg)
			start := time.Now()
			c, err := newClient(context.Background(), &cfg, srv.URL, func() time.Duration { return time.Since(start) })
			if err != nil {
				t.Fatal(err)
			}
			defer c.close()
			c.reactor.addrs, c.reactor.resolveErr = tc.addrs, tc.resolveErr // before any request: no race
			req := traces.Request{ID: 1, InputTokens: 4, OutputTokens: 2}
			var rec Record
			c.do(context.Background(), &req, &rec)
			if rec.State != tc.state || !strings.Contains(rec.Error, tc.errHas) {
				t.Errorf("state %s (%q), want %s with %q", rec.State, rec.Error, tc.state, tc.errHas)
			}
		})
	}
}
