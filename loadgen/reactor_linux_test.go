//go:build linux

package loadgen

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/transferlab/transferlab/traces"
)

// TestReactorNoGoroutinePerStream holds streams open and counts the
// goroutines of loadgen: the reactor runs its loop and its finisher, none per
// request or connection, whatever the number of streams.
func TestReactorNoGoroutinePerStream(t *testing.T) {
	const n = 40
	stacks, sum := heldStacks(t, n, WithTransport(TransportReactor))
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

// twoTokenServer answers every request with the two-token stream.
func twoTokenServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseTwoTokens)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// reactorClient is a reactor client for url with the given request
// timeout, closed at the test's end; tests may set its addresses before the
// first request.
func reactorClient(t *testing.T, url string, timeout time.Duration) *client {
	t.Helper()
	cfg := defaultConfig()
	WithTransport(TransportReactor)(&cfg)
	WithTimeout(timeout)(&cfg)
	start := time.Now()
	c, err := newClient(context.Background(), &cfg, url, start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	return c
}

// TestReactorAddresses: the reactor tries the server's addresses in order
// until one connects (a name resolving to an address where nothing listens
// and then to the server's), fails with the last refusal when none does,
// and fails every request, as a record, when the name did not resolve.
func TestReactorAddresses(t *testing.T) {
	t.Parallel()
	srv := twoTokenServer(t)
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
			c := reactorClient(t, srv.URL, DefaultTimeout)
			c.tr.(*reactor).addrs, c.tr.(*reactor).resolveErr = tc.addrs, tc.resolveErr // before any request: no race
			var rec Record
			c.do(context.Background(), &traces.Request{ID: 1, InputTokens: 4, OutputTokens: 2}, &rec)
			if rec.State != tc.state || !strings.Contains(rec.Error, tc.errHas) {
				t.Errorf("state %s (%q), want %s with %q", rec.State, rec.Error, tc.state, tc.errHas)
			}
		})
	}
}

// hangingAddr returns a loopback address whose listener never accepts and
// whose accept queue is full, so a connect to it hangs (SYNs dropped).
func hangingAddr(t *testing.T) netip.AddrPort {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 3}}); err != nil {
		t.Skipf("binding 127.0.0.3: %v", err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 3}), uint16(sa.(*unix.SockaddrInet4).Port))
	// Fill the queue: connections that complete but are never accepted.
	for i := 0; i < 8; i++ {
		d := net.Dialer{Timeout: 200 * time.Millisecond}
		if c, err := d.Dial("tcp", a.String()); err == nil {
			t.Cleanup(func() { _ = c.Close() })
		}
	}
	d := net.Dialer{Timeout: 300 * time.Millisecond}
	if c, err := d.Dial("tcp", a.String()); err == nil {
		_ = c.Close()
		t.Skip("this kernel completes connects to a full accept queue: no hanging address to test with")
	}
	return a
}

// TestReactorConnectHangsNextAddress: a first address whose connect hangs
// gets a share of the request's time (as net.Dialer gives it), then the
// next address is tried.
func TestReactorConnectHangsNextAddress(t *testing.T) {
	t.Parallel()
	srv := twoTokenServer(t)
	hang := hangingAddr(t)
	c := reactorClient(t, srv.URL, 4*time.Second) // 2 s for the hanging address, then the server
	c.tr.(*reactor).addrs = []netip.AddrPort{hang, netip.MustParseAddrPort(srv.Listener.Addr().String())}
	t0 := time.Now()
	var rec Record
	c.do(context.Background(), &traces.Request{ID: 1, InputTokens: 4, OutputTokens: 2}, &rec)
	if rec.State != StateOK {
		t.Fatalf("state %s (%q): the next address was not tried", rec.State, rec.Error)
	}
	t.Logf("ok after %v (the hanging address's share: 2 s)", time.Since(t0).Round(time.Millisecond))
	// Only the hanging address, on a client without an idle connection: it
	// times out, saying dial.
	c2 := reactorClient(t, srv.URL, time.Second)
	c2.tr.(*reactor).addrs = []netip.AddrPort{hang}
	rec = Record{}
	c2.do(context.Background(), &traces.Request{ID: 2, InputTokens: 4, OutputTokens: 2}, &rec)
	if rec.State != StateTimeout || !strings.Contains(rec.Error, "dial tcp") {
		t.Errorf("state %s (%q), want a timeout while dialling", rec.State, rec.Error)
	}
}

// TestResolveKeepsZone: a link-local IPv6 literal keeps its zone through
// resolution and into the socket address (it was dropped: connect failed
// with EINVAL where the other clients connected).
func TestResolveKeepsZone(t *testing.T) {
	t.Parallel()
	addrs, err := resolve(context.Background(), "[fe80::1%1]:8080")
	if err != nil || len(addrs) != 1 {
		t.Fatalf("resolve: %v, %v", addrs, err)
	}
	if z := addrs[0].Addr().Zone(); z != "1" {
		t.Fatalf("zone %q, want %q", z, "1")
	}
	sa, ok := sockaddr(addrs[0]).(*unix.SockaddrInet6)
	if !ok || sa.ZoneId != 1 || sa.Port != 8080 {
		t.Errorf("sockaddr %+v, want zone id 1 and port 8080", sa)
	}
	v4, err := resolve(context.Background(), "127.0.0.1:80")
	if err != nil || len(v4) != 1 || !v4[0].Addr().Is4() {
		t.Errorf("resolve 127.0.0.1: %v, %v (want one IPv4 address)", v4, err)
	}
}

// loopBlocked reports whether the event loop goroutine is blocked on a
// connection's mutex inside handle.
func loopBlocked() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "[sync.Mutex.Lock") && strings.Contains(g, "loadgen.(*reactor).handle") {
			return true
		}
	}
	return false
}

// holdLoop holds r's event loop: it takes the idle connection out of the
// pool, locks it and makes it readable, and waits until the loop blocks on
// its lock in handle. The returned unlock lets the loop go (once; later
// calls do nothing).
func holdLoop(t *testing.T, r *reactor) (unlock func()) {
	t.Helper()
	held := r.popIdle()
	if held == nil {
		t.Fatal("no idle connection after the first request")
	}
	held.mu.Lock()
	unlocked := false
	unlock = func() {
		if !unlocked {
			unlocked = true
			held.mu.Unlock()
		}
	}
	if err := unix.Shutdown(held.fd, unix.SHUT_RD); err != nil {
		unlock()
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !loopBlocked(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			unlock()
			t.Fatal("the event loop never reached the held connection")
		}
	}
	return unlock
}

// secondWhileLoopHeld sends request 1 through c and waits for its end,
// holds c's event loop (holdLoop), and starts request 2, which records into
// rec2; ended closes when request 2 is over, unlock lets the loop go.
func secondWhileLoopHeld(t *testing.T, c *client) (rec2 *Record, ended chan struct{}, unlock func()) {
	t.Helper()
	var rec Record
	c.do(context.Background(), &traces.Request{ID: 1, InputTokens: 4, OutputTokens: 2}, &rec)
	if rec.State != StateOK {
		t.Fatalf("first request: state %s (%s)", rec.State, rec.Error)
	}
	unlock = holdLoop(t, c.tr.(*reactor))
	rec2, ended = new(Record), make(chan struct{})
	c.tr.start(context.Background(), &traces.Request{ID: 2, InputTokens: 4, OutputTokens: 2}, rec2, func() { close(ended) })
	return rec2, ended, unlock
}

// TestReactorNewConnectionNotWaitingForLoop: a request that needs a new
// connection is written by the dispatcher as soon as the connect has
// finished, not by the event loop. The loop is held inside another
// connection's event (the test holds that connection's lock and makes its
// socket readable), and the request must reach the server meanwhile: before,
// its bytes waited for the loop to see the connection writable (7.7 ms, p50,
// behind bursts of reads at 1,500 req/s against serve-sim).
func TestReactorNewConnectionNotWaitingForLoop(t *testing.T) {
	t.Parallel()
	arrived := make(chan int, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.Header.Get(RequestIDHeader))
		arrived <- id
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, sseTwoTokens)
	}))
	t.Cleanup(srv.Close)
	c := reactorClient(t, srv.URL, DefaultTimeout)
	rec2, ended, unlock := secondWhileLoopHeld(t, c)
	defer unlock()
	if id := <-arrived; id != 1 {
		t.Fatalf("server saw request %d first, want 1", id)
	}
	select {
	case id := <-arrived:
		if id != 2 {
			t.Fatalf("server saw request %d, want 2", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a request on a new connection did not reach the server while the event loop was busy: it waited for the loop")
	}
	unlock()
	<-ended
	if rec2.State != StateOK || rec2.SentAt < rec2.DispatchedAt {
		t.Errorf("second request: state %s (%s), sent %v, dispatched %v", rec2.State, rec2.Error, rec2.SentAt, rec2.DispatchedAt)
	}
}

// TestReactorLoopSendsWhileDispatcherHeld: a request that falls due while
// the dispatcher is held (its wake-up late: on a busy 2-core machine the
// kernel woke it 1.5–3 ms late for 11 % of the sends against serve-sim at
// 1,000 req/s) is sent by the event loop between the events of another
// stream it is reading. The server must receive request 1 before the test
// lets the dispatcher go; before, request 1 waited for the dispatcher.
func TestReactorLoopSendsWhileDispatcherHeld(t *testing.T) {
	t.Parallel()
	arrived := make(chan int, 4)
	stopStream := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.Header.Get(RequestIDHeader))
		arrived <- id
		w.Header().Set("Content-Type", "text/event-stream")
		if id == 1 {
			_, _ = io.WriteString(w, sseTwoTokens)
			return
		}
		// Request 0 keeps the loop reading: one token event every ms.
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopStream:
				_, _ = io.WriteString(w, sseTwoTokens)
				return
			case <-tick.C:
				_, _ = io.WriteString(w, "data: {\"choices\":[{\"text\":\"x\"}]}\n\n")
				w.(http.Flusher).Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	release := make(chan struct{})
	hold := func(ctx context.Context, due time.Duration) bool {
		if due > 0 { // request 1's wait: held until the test lets it go
			select {
			case <-release:
			case <-ctx.Done():
				return false
			}
		}
		return ctx.Err() == nil
	}
	s := traces.Schedule{Requests: []traces.Request{
		{ID: 0, InputTokens: 4, OutputTokens: 1000},
		{ID: 1, Offset: 20 * time.Millisecond, InputTokens: 4, OutputTokens: 2},
	}}
	var sink SliceSink
	done := make(chan error, 1)
	go func() {
		_, err := Replay(context.Background(), urlServer{srv.URL}, s, nil, &sink, WithTransport(TransportReactor),
			WithIgnoreEOS(false), func(c *config) { c.sleep = hold })
		done <- err
	}()
	if id := <-arrived; id != 0 {
		t.Fatalf("server saw request %d first, want 0", id)
	}
	select {
	case id := <-arrived:
		if id != 1 {
			t.Fatalf("server saw request %d, want 1", id)
		}
	case <-time.After(10 * time.Second):
		t.Error("request 1 did not reach the server while the dispatcher was held: the event loop, busy with request 0's stream, did not send it")
	}
	close(release)
	close(stopStream)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, rec := range sink.Records {
		if rec.State != StateOK || rec.SentAt < rec.ScheduledAt || rec.DispatchedAt < rec.ScheduledAt {
			t.Errorf("request %d: state %s (%s), scheduled %v, dispatched %v, sent %v", rec.RequestID, rec.State, rec.Error, rec.ScheduledAt, rec.DispatchedAt, rec.SentAt)
		}
	}
}

// TestReactorStampsArrivalNotRead: a token event is stamped when its bytes
// reached the socket, not when the event loop got round to reading them.
// The loop is held inside another connection's event (as in
// TestReactorNewConnectionNotWaitingForLoop) while the server writes the
// first token event of a second request; the test lets the loop go well
// after the write. Before, the event was stamped when the loop read it,
// after the release; now it carries the kernel's receive time, before it.
func TestReactorStampsArrivalNotRead(t *testing.T) {
	t.Parallel()
	wrote, finish := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.Header.Get(RequestIDHeader) != "2" {
			_, _ = io.WriteString(w, sseTwoTokens)
			return
		}
		// After the request's write returned: a segment that arrives while
		// the client's own write still holds its socket came without a receive
		// time here (Linux 6.x, 2 of 40 runs), and the read time is used.
		time.Sleep(5 * time.Millisecond)
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
		w.(http.Flusher).Flush()
		close(wrote)
		<-finish
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"text\":\"b\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	c := reactorClient(t, srv.URL, DefaultTimeout)
	r := c.tr.(*reactor)
	waitRxStamps(t)
	rec2, ended, unlock := secondWhileLoopHeld(t, c)
	defer unlock()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never wrote the first token event")
	}
	time.Sleep(20 * time.Millisecond) // the event waits in the socket
	released := c.since()
	unlock()
	// The rest of the stream only once the first event was read: a read
	// that returned both writes would carry the later one's receive time.
	for deadline := time.Now().Add(10 * time.Second); !readOnce(r, rec2); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the event loop never read the second request's response")
		}
	}
	close(finish)
	<-ended
	if rec2.State != StateOK || len(rec2.Events) != 2 {
		t.Fatalf("second request: state %s (%s), %d events", rec2.State, rec2.Error, len(rec2.Events))
	}
	if at := rec2.Events[0].At; at >= released || at < rec2.SentAt {
		t.Errorf("first token event stamped %v, the loop released at %v, sent at %v: want the receive time, between the send and the release", at, released, rec2.SentAt)
	}
	if rec2.Events[1].At < rec2.Events[0].At {
		t.Errorf("events stamped %v then %v: out of order", rec2.Events[0].At, rec2.Events[1].At)
	}
}

// waitRxStamps waits until the kernel stamps received packets: its switch
// is turned on by a deferred work item after a socket asks (the reactor's
// stampfd keeps it on while the reactor lives). A UDP datagram sent to a
// socket that asks comes back with a receive time once it is on.
func waitRxStamps(t *testing.T) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	to, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 8), make([]byte, 64)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if err := unix.Sendto(fd, []byte("x"), 0, to); err != nil {
			t.Fatal(err)
		}
		_, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := rxStamp(oob[:oobn]); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the kernel never stamped a received datagram (SO_TIMESTAMPNS)")
		}
	}
}

// readOnce reports whether the exchange recording into rec was read at
// least once.
func readOnce(r *reactor, rec *Record) bool {
	r.mu.Lock()
	conns := append([]*rconn(nil), r.conns...)
	r.mu.Unlock()
	for _, cn := range conns {
		if cn == nil {
			continue
		}
		cn.mu.Lock()
		read := cn.x != nil && cn.x.rec == rec && cn.x.readAt > 0
		cn.mu.Unlock()
		if read {
			return true
		}
	}
	return false
}

// TestArrivedAt: a receive time is carried back from the read by how long
// it waited, but never before the exchange's previous read (or send), nor
// after the read (a wall clock stepped between the two readings).
func TestArrivedAt(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct{ read, waited, floor, want time.Duration }{
		{ms(100), ms(3), ms(50), ms(97)},
		{ms(100), 0, ms(50), ms(100)},
		{ms(100), ms(80), ms(50), ms(50)},  // before the previous read: the floor
		{ms(100), -ms(5), ms(50), ms(100)}, // a receive time after the read: the read
		{ms(100), ms(1e6), ms(50), ms(50)}, // the wall clock stepped forward
	} {
		if got := arrivedAt(c.read, c.waited, c.floor); got != c.want {
			t.Errorf("arrivedAt(%v, %v, %v) = %v, want %v", c.read, c.waited, c.floor, got, c.want)
		}
	}
}
