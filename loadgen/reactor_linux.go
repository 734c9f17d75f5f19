//go:build linux

package loadgen

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/transferlab/transferlab/traces"
)

// reactorSupported: Linux has epoll.
const reactorSupported = true

// defaultNativeTransport is the client for plain http:// targets on Linux.
const defaultNativeTransport = TransportReactor

// The reactor's sizes.
const (
	// reactorReadBuf is the one read buffer of the event loop (bytes): every
	// connection's bytes pass through it, so no connection holds one.
	reactorReadBuf = 64 << 10
	// reactorEvents is how many readiness events one epoll_wait returns at most.
	reactorEvents = 512
)

// reactor is the Linux transport for plain http:// targets: an epoll event
// loop (one goroutine) drives every in-flight request as a small state
// machine (rexchange: its pushResponse and record), so an in-flight request
// costs no goroutine, no stack and no per-connection buffer (DESIGN: memory
// per in-flight request: the target is ≤ 16 KiB).
//
// The dispatcher (Replay's pacing goroutine, or a closed-loop worker) writes
// each request itself on an idle keep-alive connection with one
// non-blocking write, so schedule lag never waits for the loop; a new
// connection is dialled without blocking and, once connected (at once on a
// nearby server: connectDone), written by the dispatcher too, else by the
// loop when it becomes writable. In the open loop the loop also sends any
// request that falls due while it handles events (setHelper). The loop reads each readable socket once per
// epoll_wait (level-triggered) into its shared buffer, stamps the read with
// the kernel's receive time of its last segment on the run's monotonic clock
// (read; DESIGN.md "Metric definitions"), and feeds the bytes to the exchange. Records go
// to a finisher goroutine, so a slow sink never delays a timestamp.
//
// Locks: reactor.mu guards the fd table, the idle pool and the deadline
// heap; rconn.mu guards a connection and its exchange. Order: rconn.mu
// before reactor.mu.
type reactor struct {
	c *client
	t *target // URL, request head and wire buffers (target.go)
	// addrs are the server's addresses, tried in the resolver's order (RFC
	// 6724) until one connects; resolveErr is why there are none (every
	// request then fails with it, as the other clients' dials do).
	addrs      []netip.AddrPort
	resolveErr error
	epfd       int
	wakefd     int // eventfd: new deadline, cancellation, close
	// stampfd is a socket that asks for receive times and is never used, held
	// open from the loop's start to its close (−1: none): Linux stamps
	// received packets only while some socket asks (a global switch, turned
	// on by a deferred kernel work item, off again when the last such socket
	// closes), so the first requests' reads carry a receive time too, however
	// connections come and go.
	stampfd int
	// epf wraps epfd for Go's netpoller: the loop parks like any goroutine
	// waiting on a socket (epoll_wait with a zero timeout, then a park until
	// the runtime sees epfd readable or the read deadline passes) instead of
	// blocking an OS thread in epoll_wait, which would keep its P until
	// sysmon takes it back (up to 10 ms) and starve the dispatcher.
	epf    *os.File
	epconn syscall.RawConn
	waitDL time.Time // the read deadline set on epf
	// waitFn is epoll_wait(waitEvents, timeout 0) for epconn.Read, made once
	// (a closure per wait would be an allocation per wake-up); its results
	// go to waitN and waitErr. Loop goroutine only.
	waitFn     func(fd uintptr) bool
	waitEvents []unix.EpollEvent
	waitN      int
	waitErr    error
	// msg, iov and oob are recvmsg(2)'s arguments, kept so that a read
	// allocates nothing; oob receives each read's control message, the
	// kernel's receive time (rxStamp). Loop goroutine only.
	msg unix.Msghdr
	iov unix.Iovec
	oob []byte

	mu        sync.Mutex
	conns     []*rconn // by fd
	idle      []*rconn // LIFO; may hold dead connections (skipped)
	deadlines deadlineHeap
	gen       uint32
	cancelled bool // the run ended: no exchange may start
	closing   bool

	cancel   atomic.Bool
	stopWake func() bool
	// helper is the open loop's dispatching step (setHelper), run after
	// each event the loop handles; nil: none.
	helper   atomic.Pointer[func()]
	loopDone chan struct{}
	fin      finisher
}

// rconn is one connection.
type rconn struct {
	mu         sync.Mutex
	fd         int
	gen        uint32
	connecting bool
	addr       int  // index in reactor.addrs
	wantOut    bool // registered for EPOLLOUT
	dead       bool
	x          *rexchange // nil while idle
}

// rexchange is one request on its way: the record, the parse state and
// what a retry needs.
type rexchange struct {
	req       *traces.Request
	rec       *Record
	rs        reqState
	resp      pushResponse
	done      func()
	wire      *reqWire  // the request's bytes until the response head arrived
	off       int       // bytes of wire.wire written
	deadline  time.Time // the heap's key: final, or an earlier per-address connect limit
	final     time.Time // the request's own deadline (start + timeout)
	hi        int       // index in the deadline heap, −1 when out
	attempt   int
	reused    bool
	delivered bool
	// readAt is the stamp of x's latest read (0 before the first): a read's
	// stamp is never earlier.
	readAt time.Duration
	// cn is the connection x is on (nil between connections).
	cn atomic.Pointer[rconn]
	// aborted is set when x's deadline passed or the run ended while x was
	// between connections: the next send ends it.
	aborted atomic.Bool
}

// newReactor starts the event loop for c's URL, parsed as t.
func newReactor(c *client, t *target, runCtx context.Context) (*reactor, error) {
	var err error
	r := &reactor{c: c, t: t, loopDone: make(chan struct{})}
	rctx, cancel := context.WithTimeout(runCtx, dialTimeout) // a dead resolver must not hang the run
	r.addrs, r.resolveErr = resolve(rctx, t.addr)
	cancel()
	if r.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("reactor: epoll_create1: %w", err)
	}
	if r.wakefd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		_ = unix.Close(r.epfd)
		return nil, fmt.Errorf("reactor: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(r.wakefd)}
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, r.wakefd, &ev); err != nil {
		_ = unix.Close(r.epfd)
		_ = unix.Close(r.wakefd)
		return nil, fmt.Errorf("reactor: epoll_ctl eventfd: %w", err)
	}
	if err := unix.SetNonblock(r.epfd, true); err != nil {
		_ = unix.Close(r.epfd)
		_ = unix.Close(r.wakefd)
		return nil, fmt.Errorf("reactor: epoll fd non-blocking: %w", err)
	}
	r.epf = os.NewFile(uintptr(r.epfd), "loadgen-epoll") // non-blocking: the netpoller takes it
	if r.epconn, err = r.epf.SyscallConn(); err != nil {
		_ = r.epf.Close()
		_ = unix.Close(r.wakefd)
		return nil, fmt.Errorf("reactor: epoll fd: %w", err)
	}
	r.waitFn = func(fd uintptr) bool {
		r.waitN, r.waitErr = unix.EpollWait(int(fd), r.waitEvents, 0)
		return r.waitN > 0 || (r.waitErr != nil && !errors.Is(r.waitErr, unix.EINTR))
	}
	r.stampfd = stampSocket()
	r.fin.start()
	r.stopWake = context.AfterFunc(runCtx, func() {
		r.cancel.Store(true)
		r.wake()
	})
	go r.loop()
	return r, nil
}

// setHelper installs the open loop's dispatching step, run by the loop
// after each event it handles (loopHelper); nil removes it.
func (r *reactor) setHelper(fn func()) {
	if fn == nil {
		r.helper.Store(nil)
		return
	}
	r.helper.Store(&fn)
}

// resolve returns the addresses of host:port, in the resolver's order.
func resolve(ctx context.Context, hostport string) ([]netip.AddrPort, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, fmt.Errorf("dial tcp %s: %w", hostport, err)
	}
	port, err := net.DefaultResolver.LookupPort(ctx, "tcp", portStr)
	if err != nil {
		return nil, fmt.Errorf("dial tcp %s: %w", hostport, err)
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, host) // keeps an IPv6 zone (LookupNetIP drops it)
	if err != nil {
		return nil, fmt.Errorf("dial tcp: %w", err)
	}
	out := make([]netip.AddrPort, 0, len(ips))
	for _, ip := range ips {
		a, ok := netip.AddrFromSlice(ip.IP)
		if !ok {
			continue
		}
		a = a.Unmap()
		if a.Is6() && ip.Zone != "" {
			a = a.WithZone(ip.Zone)
		}
		out = append(out, netip.AddrPortFrom(a, uint16(port)))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dial tcp %s: no address", hostport)
	}
	return out, nil
}

// wake interrupts epoll_wait.
func (r *reactor) wake() {
	var one = [8]byte{1}
	_, _ = unix.Write(r.wakefd, one[:])
}

// start sends req and calls done, on the finisher goroutine, once rec is
// complete. It never blocks on the network.
func (r *reactor) start(runCtx context.Context, req *traces.Request, rec *Record, done func()) {
	c := r.c
	x := &rexchange{req: req, rec: rec, rs: reqState{runCtx: runCtx}, done: done, hi: -1}
	w := r.t.getWire()
	w.body = c.body(w.body[:0], req)
	w.wire = r.t.appendHead(w.wire[:0], req.ID, c.cfg.stream, len(w.body))
	w.wire = append(w.wire, w.body...)
	x.wire = w
	rec.DispatchedAt = c.since()
	x.final = time.Now().Add(c.cfg.timeout)
	x.deadline = x.final
	r.mu.Lock()
	if r.cancelled || runCtx.Err() != nil || r.resolveErr != nil {
		r.mu.Unlock()
		x.resp.init(c, &x.rs, rec)
		err := context.Cause(runCtx)
		if r.resolveErr != nil && runCtx.Err() == nil {
			err = r.resolveErr
		}
		r.failUnconnected(x, err)
		return
	}
	first := len(r.deadlines) == 0
	heap.Push(&r.deadlines, x)
	r.mu.Unlock()
	if first {
		r.wake()
	}
	r.send(x, false, 0)
}

// send puts x on an idle connection (unless fresh) or a new one, dialling
// the server's addresses from index from on, and writes it when the
// connection is up.
func (r *reactor) send(x *rexchange, fresh bool, from int) {
	for {
		var cn *rconn
		if !fresh {
			cn = r.popIdle()
		}
		reused := cn != nil
		if cn == nil {
			var err error
			if cn, err = r.dial(from); err != nil {
				x.resp.init(r.c, &x.rs, x.rec)
				x.rec.SentAt = r.c.since() // this attempt's: a failed dial is stamped when it failed
				r.failUnconnected(x, err)
				return
			}
		} else {
			cn.mu.Lock()
		}
		if cn.dead {
			cn.mu.Unlock()
			continue
		}
		x.resp.init(r.c, &x.rs, x.rec)
		if x.aborted.Load() {
			r.putBackUnused(cn, reused)
			cn.mu.Unlock()
			r.failUnconnected(x, errPushTimeout)
			return
		}
		cn.x = x
		x.cn.Store(cn)
		x.reused = reused
		if cn.connecting {
			r.limitConnect(cn, x)
		} else {
			r.write(cn, x)
		}
		cn.mu.Unlock()
		return
	}
}

// minConnectLimit is the least time a connect gets before the next address
// is tried (net.Dialer's saneMinimum).
const minConnectLimit = 2 * time.Second

// limitConnect gives a connect that has other addresses after it a share of
// the time left, as net.Dialer does (the time left over the addresses left,
// at least minConnectLimit): when it passes, the next address is tried
// (cn.mu held).
func (r *reactor) limitConnect(cn *rconn, x *rexchange) {
	left := len(r.addrs) - cn.addr
	if left < 2 {
		if !x.deadline.Equal(x.final) {
			r.setDeadline(x, x.final) // the last address has all the time left
		}
		return
	}
	remaining := time.Until(x.final)
	limit := max(remaining/time.Duration(left), min(minConnectLimit, remaining))
	r.setDeadline(x, time.Now().Add(limit))
}

// setDeadline moves x's key in the deadline heap (x's connection's mu
// held), waking the loop when x became the earliest: the loop is parked
// until the earliest deadline it saw.
func (r *reactor) setDeadline(x *rexchange, d time.Time) {
	r.mu.Lock()
	x.deadline = d
	first := false
	if x.hi >= 0 {
		heap.Fix(&r.deadlines, x.hi)
		first = x.hi == 0
	}
	r.mu.Unlock()
	if first {
		r.wake()
	}
}

// failUnconnected ends x, which holds no connection, on err: SentAt is
// stamped now unless a byte was written before, the record completed with
// what was measured, and delivered.
func (r *reactor) failUnconnected(x *rexchange, err error) {
	if x.rec.SentAt == 0 {
		x.rec.SentAt = r.c.since()
	}
	x.resp.fail(err, r.c.since())
	r.finishExchange(nil, x)
}

// putBackUnused puts back (reused) or closes (new) a connection taken for
// an exchange that ended before using it (cn.mu held).
func (r *reactor) putBackUnused(cn *rconn, reused bool) {
	if !reused {
		r.closeConn(cn)
		return
	}
	r.mu.Lock()
	r.idle = append(r.idle, cn)
	r.mu.Unlock()
}

// popIdle takes the most recently idled connection, or nil.
func (r *reactor) popIdle() *rconn {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.idle)
	if n == 0 {
		return nil
	}
	cn := r.idle[n-1]
	r.idle[n-1] = nil
	r.idle = r.idle[:n-1]
	return cn
}

// dial opens a non-blocking TCP connection to the first of the server's
// addresses from index from on that does not refuse at once, and registers
// it with the loop; it returns it locked. A connection refused later
// (asynchronously) is retried on the next address by handle.
func (r *reactor) dial(from int) (*rconn, error) {
	var err error
	for i := from; i < len(r.addrs); i++ {
		var cn *rconn
		if cn, err = r.dialAddr(i); err == nil {
			return cn, nil
		}
		if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) {
			return nil, err // no other address helps
		}
	}
	if err == nil {
		err = fmt.Errorf("dial tcp %s: no address", r.t.addr)
	}
	return nil, err
}

// dialAddr is dial for address i.
func (r *reactor) dialAddr(i int) (*rconn, error) {
	a := r.addrs[i]
	family := unix.AF_INET6
	if a.Addr().Is4() {
		family = unix.AF_INET
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return nil, fmt.Errorf("dial tcp %s: socket: %w", a, err)
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	// Each read then carries the kernel's receive time (rxStamp); where it
	// is refused, reads are stamped when they return.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	cn := &rconn{fd: fd, addr: i}
	cn.mu.Lock()
	err = unix.Connect(fd, sockaddr(a))
	if errors.Is(err, unix.EINPROGRESS) {
		cn.connecting, err = connectDone(fd)
	}
	if err != nil {
		_ = unix.Close(fd)
		cn.mu.Unlock()
		return nil, fmt.Errorf("dial tcp %s: connect: %w", a, err)
	}
	r.mu.Lock()
	r.gen++
	cn.gen = r.gen
	for len(r.conns) <= fd {
		r.conns = append(r.conns, nil)
	}
	r.conns[fd] = cn
	r.mu.Unlock()
	events := uint32(unix.EPOLLIN | unix.EPOLLRDHUP)
	if cn.connecting {
		events |= unix.EPOLLOUT
		cn.wantOut = true
	}
	ev := unix.EpollEvent{Events: events, Fd: int32(fd), Pad: int32(cn.gen)}
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		r.closeConn(cn)
		cn.mu.Unlock()
		return nil, fmt.Errorf("dial tcp %s: epoll_ctl: %w", a, err)
	}
	return cn, nil
}

// connectDone asks once, without waiting, whether the non-blocking connect
// on fd has finished (poll(2) with a zero timeout, then SO_ERROR):
// connecting is true while the handshake is under way, err is set when it
// failed. A connect to a nearby server has usually finished by the time
// connect(2) returns EINPROGRESS (on loopback the handshake runs inside the
// call: 1,881 of 1,881 in results/dispatch-2026-12-02), and then the caller
// writes the request itself at once instead of leaving it to the event loop,
// which may be busy reading other streams for milliseconds (new connections'
// requests waited 7.7 ms there, p50, at 1,500 req/s against serve-sim).
func connectDone(fd int) (connecting bool, err error) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	n, err := unix.Poll(pfd, 0)
	if err != nil || n == 0 {
		return true, nil // EINTR or not yet: the loop waits for EPOLLOUT as before
	}
	soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return false, err
	}
	if soerr != 0 {
		return false, unix.Errno(soerr)
	}
	return false, nil
}

// sockaddr returns a new Sockaddr for a (unix.Connect writes into the one
// it is given, so dispatchers must not share one).
func sockaddr(a netip.AddrPort) unix.Sockaddr {
	if a.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(a.Port()), Addr: a.Addr().As4()}
	}
	sa := &unix.SockaddrInet6{Port: int(a.Port()), Addr: a.Addr().As16()}
	if z := a.Addr().Zone(); z != "" {
		if n, err := strconv.ParseUint(z, 10, 32); err == nil {
			sa.ZoneId = uint32(n) // a numeric zone is the interface index
		} else if ifi, err := net.InterfaceByName(z); err == nil {
			sa.ZoneId = uint32(ifi.Index)
		}
	}
	return sa
}

// setOut registers or unregisters cn for writability (cn.mu held).
func (r *reactor) setOut(cn *rconn, on bool) {
	if cn.wantOut == on {
		return
	}
	cn.wantOut = on
	events := uint32(unix.EPOLLIN | unix.EPOLLRDHUP)
	if on {
		events |= unix.EPOLLOUT
	}
	ev := unix.EpollEvent{Events: events, Fd: int32(cn.fd), Pad: int32(cn.gen)}
	_ = unix.EpollCtl(r.epfd, unix.EPOLL_CTL_MOD, cn.fd, &ev)
}

// write writes what is left of x's request on cn (cn.mu held); SentAt is
// stamped before the first byte. A reused connection the server closed
// while idle sends x again on a new one.
func (r *reactor) write(cn *rconn, x *rexchange) {
	if x.off == 0 {
		x.rec.SentAt = r.c.since()
	}
	for x.off < len(x.wire.wire) {
		n, err := unix.Write(cn.fd, x.wire.wire[x.off:])
		if n > 0 {
			x.off += n
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			r.setOut(cn, true)
			return
		}
		if err == nil {
			err = unix.EIO
		}
		r.failConn(cn, x, fmt.Errorf("write tcp %s: %w", r.t.addr, err))
		return
	}
	r.setOut(cn, false)
}

// failConn ends cn (cn.mu held) on err; a reused connection failing before
// any response byte is the server's idle close, and x goes again, once, on
// a new connection.
func (r *reactor) failConn(cn *rconn, x *rexchange, err error) {
	r.drop(cn, x)
	if x.reused && x.attempt == 0 && x.resp.stale() && isConnGone(err) && x.rs.runCtx.Err() == nil {
		x.attempt++
		x.off = 0
		go r.send(x, true, 0) // off the loop and off cn.mu: dialling registers with both
		return
	}
	x.resp.fail(err, r.c.since())
	r.finishExchange(nil, x)
}

// drop detaches x from cn and closes cn (cn.mu held).
func (r *reactor) drop(cn *rconn, x *rexchange) {
	cn.x = nil
	x.cn.Store(nil)
	r.closeConn(cn)
}

// closeConn closes cn's socket (cn.mu held, or cn not yet shared).
func (r *reactor) closeConn(cn *rconn) {
	if cn.dead {
		return
	}
	cn.dead = true
	r.mu.Lock()
	if cn.fd < len(r.conns) && r.conns[cn.fd] == cn {
		r.conns[cn.fd] = nil
	}
	r.mu.Unlock()
	_ = unix.Close(cn.fd)
}

// finishExchange ends x for its connection cn (cn.mu held; nil when x has
// none): the record goes to the finisher if it has not yet, the connection
// back to the idle pool or closed.
func (r *reactor) finishExchange(cn *rconn, x *rexchange) {
	r.release(x)
	r.mu.Lock()
	if x.hi >= 0 {
		heap.Remove(&r.deadlines, x.hi)
	}
	keep := cn != nil && !r.closing && x.resp.reusable() && len(r.idle) < maxIdleConns
	if keep {
		r.idle = append(r.idle, cn)
	}
	r.mu.Unlock()
	if cn != nil {
		cn.x = nil
		x.cn.Store(nil)
		if !keep {
			r.closeConn(cn)
		}
	}
	r.deliver(x)
}

// release returns x's request buffer to the pool.
func (r *reactor) release(x *rexchange) {
	if x.wire != nil {
		r.t.putWire(x.wire)
		x.wire = nil
	}
}

// deliver hands x's complete record to the finisher, once.
func (r *reactor) deliver(x *rexchange) {
	if x.delivered {
		return
	}
	x.delivered = true
	r.fin.push(x.done)
}

// loop is the event loop.
func (r *reactor) loop() {
	defer close(r.loopDone)
	events := make([]unix.EpollEvent, reactorEvents)
	buf := make([]byte, reactorReadBuf)
	r.oob = make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))
	for {
		n := r.wait(events)
		help := r.helper.Load()
		for i := 0; i < n; i++ {
			ev := &events[i]
			if int(ev.Fd) == r.wakefd {
				var b [8]byte
				_, _ = unix.Read(r.wakefd, b[:])
				continue
			}
			if cn := r.lookup(int(ev.Fd), uint32(ev.Pad)); cn != nil {
				r.handle(cn, ev.Events, buf)
			}
			// A request due meanwhile is sent now, between reads (after
			// each event, so an idle connection's pending event, a server's
			// close or stray bytes, is seen before it could be reused).
			if help != nil {
				(*help)()
			}
		}
		r.mu.Lock()
		closing := r.closing
		r.mu.Unlock()
		if r.cancel.Load() || closing {
			// Closing comes after every record was delivered: what is left
			// is reading on past [DONE]; those connections are closed.
			r.cancelAll()
		}
		if closing {
			return
		}
		r.expire()
	}
}

// wait returns the next readiness events, parking in Go's netpoller while
// there are none, until the earliest request deadline at the latest (then
// it returns 0).
func (r *reactor) wait(events []unix.EpollEvent) int {
	r.mu.Lock()
	var dl time.Time // zero: no deadline
	if r.closing {
		dl = aLongTimeAgo
	} else if len(r.deadlines) > 0 {
		dl = r.deadlines[0].deadline
	}
	r.mu.Unlock()
	if !dl.Equal(r.waitDL) {
		_ = r.epf.SetReadDeadline(dl)
		r.waitDL = dl
	}
	r.waitEvents = events
	err := r.epconn.Read(r.waitFn)
	n, werr := r.waitN, r.waitErr
	if werr != nil && !errors.Is(werr, unix.EINTR) {
		panic(fmt.Sprintf("loadgen reactor: epoll_wait: %v", werr)) // only EBADF/EFAULT/EINVAL: a bug
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		panic(fmt.Sprintf("loadgen reactor: waiting on epoll: %v", err))
	}
	return max(n, 0)
}

func (r *reactor) lookup(fd int, gen uint32) *rconn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fd < len(r.conns) && r.conns[fd] != nil && r.conns[fd].gen == gen {
		return r.conns[fd]
	}
	return nil
}

// handle serves one readiness event of cn.
func (r *reactor) handle(cn *rconn, events uint32, buf []byte) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.dead {
		return
	}
	x := cn.x
	if cn.connecting {
		if events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			return
		}
		if soerr, err := unix.GetsockoptInt(cn.fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || soerr != 0 {
			if err == nil {
				err = unix.Errno(soerr)
			}
			switch {
			case x == nil:
				r.closeConn(cn)
			case cn.addr+1 < len(r.addrs) && x.rs.runCtx.Err() == nil:
				// Refused there: the next address, off the loop and cn.mu.
				r.drop(cn, x)
				go r.send(x, true, cn.addr+1)
			default:
				x.rec.SentAt = r.c.since()
				r.failConn(cn, x, fmt.Errorf("dial tcp %s: connect: %w", r.addrs[cn.addr], err))
			}
			return
		}
		cn.connecting = false
		if x != nil && !x.deadline.Equal(x.final) {
			r.setDeadline(x, x.final)
		}
		if x != nil {
			r.write(cn, x)
		}
		return
	}
	if x != nil && x.wire != nil && x.off < len(x.wire.wire) && events&unix.EPOLLOUT != 0 {
		r.write(cn, x)
		if cn.dead || cn.x != x {
			return
		}
	}
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		r.read(cn, x, buf)
	}
}

// read reads cn once and feeds x (cn.mu held). The bytes are stamped with
// the kernel's receive time of the read's last segment (rxStamp), carried
// onto the run's clock, so the time they waited for this loop (reading other
// streams, descheduled, waiting for a CPU) is not in their stamp; an EOF, or
// a read without that time, is stamped when the read returns.
func (r *reactor) read(cn *rconn, x *rexchange, buf []byte) {
	n, oobn, err := r.recvmsg(cn.fd, buf)
	// One clock reading gives both the run offset and the wall time that the
	// receive time is subtracted from: two readings would put any wait
	// between them (a preemption on a busy host) into the stamp, early.
	now := time.Now()
	at := now.Sub(r.c.epoch)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
		return
	}
	if x == nil { // idle: the server closed it, or sent bytes nobody asked for
		r.closeConn(cn)
		return
	}
	switch {
	case n > 0:
		if rx, ok := rxStamp(r.oob[:oobn]); ok {
			at = arrivedAt(at, time.Duration(now.UnixNano()-rx), max(x.readAt, x.rec.SentAt))
		}
		x.readAt = at
		x.resp.feed(buf[:n], at)
		if x.resp.phase != phaseHead {
			r.release(x)
		}
	case err == nil: // EOF
		if x.reused && x.resp.stale() {
			r.failConn(cn, x, fmt.Errorf("read tcp %s: %w", r.t.addr, errStaleEOF))
			return
		}
		x.resp.eof(at)
	default:
		r.failConn(cn, x, fmt.Errorf("read tcp %s: %w", r.t.addr, err))
		return
	}
	// A record is delivered when the response ends, not at [DONE]: until
	// then the server still holds the request (an in-flight cap counts it).
	if x.resp.ended() {
		r.finishExchange(cn, x)
	}
}

// recvmsg is read(2) into buf that also receives the read's control
// messages into r.oob (oobn bytes of them); x/sys's Recvmsg would allocate
// the peer's address on every read.
func (r *reactor) recvmsg(fd int, buf []byte) (n, oobn int, err error) {
	r.iov.Base = &buf[0]
	r.iov.SetLen(len(buf))
	r.msg.Iov = &r.iov
	r.msg.SetIovlen(1)
	r.msg.Control = &r.oob[0]
	r.msg.SetControllen(len(r.oob))
	m, _, errno := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&r.msg)), 0)
	if errno != 0 {
		return 0, 0, errno
	}
	return int(m), int(r.msg.Controllen), nil
}

// rxStamp returns the receive time (CLOCK_REALTIME, ns) in a read's control
// messages oob (SO_TIMESTAMPNS: for TCP, the time the kernel received the
// last segment the read returned); false when oob holds none.
func rxStamp(oob []byte) (int64, bool) {
	h := int(unsafe.Sizeof(unix.Cmsghdr{}))
	for len(oob) >= h {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(c.Len)
		if l < h || l > len(oob) {
			return 0, false
		}
		if c.Level == unix.SOL_SOCKET && c.Type == unix.SO_TIMESTAMPNS && l >= h+int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&oob[unix.CmsgLen(0)]))
			return ts.Nano(), true
		}
		oob = oob[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(oob)):]
	}
	return 0, false
}

// arrivedAt carries a receive time onto the run's clock: read is the run
// offset when the read returned and waited how long before it the bytes
// were received (the wall clock read then minus the receive time: both on
// CLOCK_REALTIME, microseconds to milliseconds apart, so a clock step
// between them is the only error, caught by the bounds). The result is
// read − waited, kept within [floor, read]: never before the exchange's
// previous read (or its send), never after this read returned.
func arrivedAt(read, waited, floor time.Duration) time.Duration {
	return min(read, max(read-waited, floor))
}

// isConnGone reports an error of a connection the peer closed.
func isConnGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// errStaleEOF is the EOF of a reused connection before any response byte.
var errStaleEOF = fmt.Errorf("connection closed before a response: %w", io.EOF)

// expire ends the exchanges whose deadline passed.
func (r *reactor) expire() {
	now := time.Now()
	for {
		r.mu.Lock()
		if len(r.deadlines) == 0 || r.deadlines[0].deadline.After(now) {
			r.mu.Unlock()
			return
		}
		x := heap.Pop(&r.deadlines).(*rexchange)
		r.mu.Unlock()
		r.abort(x, true)
	}
}

// cancelAll ends every exchange in flight: the run was cancelled.
func (r *reactor) cancelAll() {
	r.mu.Lock()
	r.cancelled = true
	xs := make([]*rexchange, len(r.deadlines))
	copy(xs, r.deadlines)
	r.deadlines = r.deadlines[:0]
	for _, x := range xs {
		x.hi = -1
	}
	r.mu.Unlock()
	for _, x := range xs {
		r.abort(x, false)
	}
}

// abort ends x on its deadline or the run's end (x is out of the heap).
// On a deadline (expired) a connect that ran out of its share of the time
// moves on to the next address instead, while the request has time left.
func (r *reactor) abort(x *rexchange, expired bool) {
	cn := x.cn.Load()
	if cn != nil && expired && r.nextAddress(cn, x) {
		return
	}
	x.aborted.Store(true)
	if cn == nil {
		return // between connections (a retry on its way): its send ends it
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.x != x || cn.dead {
		return // it ended meanwhile, or moved to a retry whose send ends it
	}
	err := errPushTimeout
	if cn.connecting {
		err = fmt.Errorf("dial tcp %s: %w", r.addrs[cn.addr], os.ErrDeadlineExceeded)
	}
	r.drop(cn, x)
	r.failUnconnected(x, err)
}

// nextAddress moves x, whose connect on cn hangs past its share of the
// time, to the next address; false when that is not the case.
func (r *reactor) nextAddress(cn *rconn, x *rexchange) bool {
	cn.mu.Lock()
	if cn.x != x || cn.dead || !cn.connecting || cn.addr+1 >= len(r.addrs) || !time.Now().Before(x.final) || x.rs.runCtx.Err() != nil {
		cn.mu.Unlock()
		return false
	}
	next := cn.addr + 1
	r.drop(cn, x)
	cn.mu.Unlock()
	r.mu.Lock()
	x.deadline = x.final
	heap.Push(&r.deadlines, x)
	r.mu.Unlock()
	go r.send(x, true, next) // off the loop: dialling registers with it
	return true
}

// close stops the loop once nothing is in flight and closes every socket.
func (r *reactor) close() {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	r.wake()
	<-r.loopDone
	r.stopWake()
	r.mu.Lock()
	conns := r.conns
	r.conns, r.idle = nil, nil
	r.mu.Unlock()
	for _, cn := range conns {
		if cn != nil {
			cn.mu.Lock()
			cn.dead = true
			_ = unix.Close(cn.fd)
			cn.mu.Unlock()
		}
	}
	_ = r.epf.Close()
	_ = unix.Close(r.wakefd)
	if r.stampfd >= 0 {
		_ = unix.Close(r.stampfd)
	}
	r.fin.stop()
}

// stampSocket opens a UDP socket that asks for receive times
// (SO_TIMESTAMPNS), or returns −1 where that fails (the reads are then
// stamped when they return until a connection has asked).
func stampSocket() int {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) != nil {
		_ = unix.Close(fd)
		return -1
	}
	return fd
}

// deadlineHeap orders in-flight exchanges by deadline (container/heap).
type deadlineHeap []*rexchange

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].deadline.Before(h[j].deadline) }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].hi, h[j].hi = i, j
}
func (h *deadlineHeap) Push(v any) {
	x := v.(*rexchange)
	x.hi = len(*h)
	*h = append(*h, x)
}
func (h *deadlineHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	x.hi = -1
	return x
}

// finisher runs completion callbacks in order on its own goroutine.
type finisher struct {
	mu    sync.Mutex
	q     []func()
	ready chan struct{}
	quit  chan struct{}
	done  chan struct{}
}

func (f *finisher) start() {
	f.ready, f.quit, f.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go f.run()
}

func (f *finisher) push(fn func()) {
	f.mu.Lock()
	f.q = append(f.q, fn)
	f.mu.Unlock()
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

func (f *finisher) run() {
	defer close(f.done)
	var batch []func()
	for {
		f.mu.Lock()
		batch, f.q = f.q, batch[:0]
		f.mu.Unlock()
		for i, fn := range batch {
			fn()
			batch[i] = nil
			// Let a woken event loop run between records: with one P (a
			// pinned client) a batch of records (histograms, the sink)
			// would otherwise hold it, and every read waiting meanwhile
			// would be stamped late.
			runtime.Gosched()
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-f.ready:
		case <-f.quit:
			f.mu.Lock()
			left := len(f.q)
			f.mu.Unlock()
			if left == 0 {
				return
			}
		}
	}
}

// stop returns once every pushed callback ran.
func (f *finisher) stop() {
	close(f.quit)
	<-f.done
}
