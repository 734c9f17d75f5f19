//go:build linux

package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/transferlab/transferlab/traces"
)

// segmentServerEnv, set to a step (a time.Duration), makes this test binary
// the server child of BenchmarkReactorSegmentPerEvent (TestMain).
const segmentServerEnv = "LOADGEN_SEGMENT_SERVER_STEP"

// segmentServerChild serves as serve-sim writes: every step each open
// stream gets its next token event, one Write (one TCP segment) each, 128
// of them, then the usage chunk and [DONE]. It prints its address and
// stops when stdin closes.
func segmentServerChild(step string) int {
	d, err := time.ParseDuration(step)
	if err != nil || d <= 0 {
		fmt.Fprintf(os.Stderr, "%s=%q: want a positive duration\n", segmentServerEnv, step)
		return 2
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var tick atomic.Pointer[chan struct{}]
	first := make(chan struct{})
	tick.Store(&first)
	go func() {
		for range time.Tick(d) {
			next := make(chan struct{})
			close(*tick.Swap(&next))
		}
	}()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go serveSegments(nc, &tick)
		}
	}()
	fmt.Println("http://" + ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = ln.Close()
	return 0
}

// serveSegments answers each request on nc with one stream.
func serveSegments(nc net.Conn, tick *atomic.Pointer[chan struct{}]) {
	defer nc.Close()
	br := bufio.NewReaderSize(nc, 4096)
	for {
		length := 0
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(bytes.TrimSpace(line)) == 0 {
				break
			}
			if k, v, ok := bytes.Cut(line, []byte(":")); ok && strings.EqualFold(string(k), "content-length") {
				length, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
			}
		}
		if _, err := br.Discard(length); err != nil {
			return
		}
		if _, err := nc.Write(segHead); err != nil {
			return
		}
		for k := 0; k < segmentTokens; k++ {
			<-*tick.Load()
			ev := segToken
			if k == segmentTokens-1 {
				ev = segLast
			}
			if _, err := nc.Write(ev); err != nil {
				return
			}
		}
		if _, err := nc.Write(segTail); err != nil {
			return
		}
	}
}

// processCPUTime is this process's CPU time so far, user plus system.
func processCPUTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// threadCPUTime is the calling thread's CPU time so far.
func threadCPUTime(b *testing.B) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// BenchmarkPushFeedPerEvent measures the reactor's per-read work on a
// serve-sim stream read one event at a time, as the loop reads it when
// each event is its own TCP segment: the chunked framing, SSE parse, chunk
// decode and the record's bookkeeping of one feed (ns/op is per event;
// cpu-ns/event the thread's CPU time, steadier than ns/op on a busy host).
func BenchmarkPushFeedPerEvent(b *testing.B) {
	cfg := defaultConfig()
	c := &client{cfg: &cfg, url: "http://x/v1/completions", since: func() time.Duration { return 0 }}
	feeds := [][]byte{segHead}
	for k := 0; k < segmentTokens-1; k++ {
		feeds = append(feeds, segToken)
	}
	feeds = append(feeds, segLast, segTail)
	b.ReportAllocs()
	var rec Record
	var r pushResponse
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPUTime(b)
	events := 0
	for events < b.N {
		rec = Record{}
		rs := reqState{runCtx: context.Background()}
		r.init(c, &rs, &rec)
		for i, p := range feeds {
			r.feed(p, time.Duration(i+1))
		}
		if rec.State != StateOK || len(rec.Events) != segmentTokens {
			b.Fatalf("state %s (%q), %d events; want ok, %d", rec.State, rec.Error, len(rec.Events), segmentTokens)
		}
		events += segmentTokens
	}
	b.ReportMetric(float64(threadCPUTime(b)-cpu0)/float64(events), "cpu-ns/event")
}

// BenchmarkReactorSegmentPerEvent drives the reactor against a server
// child that writes as serve-sim does: many streams at once, each token
// event its own TCP segment, one step apart. An op is one 128-event
// stream; events/s is what the reactor read, cpu-ns/event this process's
// CPU time (the reactor's loop and the goroutines waiting on requests; the
// server is another process) per token event. Both are the read path's
// cost at a load the loop keeps up with, not a capacity.
func BenchmarkReactorSegmentPerEvent(b *testing.B) {
	if !reactorSupported {
		b.Skip("the reactor needs epoll")
	}
	const streams, step = 256, "1ms"
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), segmentServerEnv+"="+step)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("segment server child: %v", err)
	}
	cfg := defaultConfig()
	WithTransport(TransportReactor)(&cfg)
	start := time.Now()
	c, err := newClient(context.Background(), &cfg, strings.TrimSpace(line), start)
	if err != nil {
		b.Fatal(err)
	}
	defer c.close()
	ctx := context.Background()
	var next atomic.Int64
	var bad atomic.Pointer[string]
	run := func(n int) {
		next.Store(0)
		var wg sync.WaitGroup
		for g := 0; g < min(streams, n); g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= int64(n); i = next.Add(1) {
					req := traces.Request{ID: int(i), InputTokens: 32, OutputTokens: segmentTokens}
					var rec Record
					c.do(ctx, &req, &rec)
					if rec.State != StateOK || len(rec.Events) != segmentTokens {
						msg := fmt.Sprintf("state %s (%s), %d events; want ok, %d", rec.State, rec.Error, len(rec.Events), segmentTokens)
						bad.Store(&msg)
					}
				}
			}()
		}
		wg.Wait()
		if m := bad.Load(); m != nil {
			b.Fatal(*m)
		}
	}
	run(streams) // connections opened, pools warm
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, t0 := processCPUTime(b), time.Now()
	run(b.N)
	cpu, wall := processCPUTime(b)-cpu0, time.Since(t0)
	events := float64(b.N) * segmentTokens
	b.ReportMetric(events/wall.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/events, "cpu-ns/event")
}

// BenchmarkLoopbackSendIntoEpoll measures what one token event costs the
// server's side of a loopback connection when the client's socket sits in
// an epoll set: a 200-byte write(2) per connection, 256 connections a
// round, the reader draining every round untimed. cpu-ns/write is the
// writing thread's CPU time per write, which on loopback includes the
// delivery into the client's socket (softirq on the sender's CPU) and the
// wake-ups that delivery makes. Sub-benchmarks: plain, the set waited on by
// nobody; netpoller, the set itself registered with Go's netpoller as the
// reactor's is (each delivery then also wakes that outer epoll's wait
// queue).
func BenchmarkLoopbackSendIntoEpoll(b *testing.B) {
	for _, nested := range []bool{false, true} {
		name := "plain"
		if nested {
			name = "netpoller"
		}
		b.Run(name, func(b *testing.B) { benchLoopbackSend(b, nested) })
	}
}

func benchLoopbackSend(b *testing.B, nested bool) {
	const conns, size = 256, 200
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	if nested {
		if err := unix.SetNonblock(epfd, true); err != nil {
			b.Fatal(err)
		}
		f := os.NewFile(uintptr(epfd), "bench-epoll") // registered with the netpoller
		defer f.Close()
	} else {
		defer unix.Close(epfd)
	}
	var srvFds, cliFds []int
	var keep []net.Conn
	port := ln.Addr().(*net.TCPAddr).Port
	defer func() {
		for _, fd := range cliFds {
			_ = unix.Close(fd)
		}
	}()
	for range conns {
		// The client's socket is a raw one, in no epoll set but epfd (a
		// net.Conn would sit in the netpoller's too).
		cf, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		cliFds = append(cliFds, cf)
		if err := unix.Connect(cf, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			b.Fatal(err)
		}
		if err := unix.SetNonblock(cf, true); err != nil {
			b.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		keep = append(keep, s)
		srvFds = append(srvFds, rawFd(b, s))
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(cf)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, cf, &ev); err != nil {
			b.Fatal(err)
		}
	}
	defer func() {
		for _, c := range keep {
			_ = c.Close()
		}
	}()
	msg := bytes.Repeat([]byte{'x'}, size)
	buf := make([]byte, 64<<10)
	events := make([]unix.EpollEvent, conns)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu time.Duration
	writes := 0
	b.ResetTimer()
	for writes < b.N {
		c0 := threadCPUTime(b)
		for _, fd := range srvFds {
			if _, err := unix.Write(fd, msg); err != nil {
				b.Fatal(err)
			}
		}
		cpu += threadCPUTime(b) - c0
		writes += conns
		for left := conns * size; left > 0; {
			n, err := unix.EpollWait(epfd, events, 1000)
			if err != nil && err != unix.EINTR {
				b.Fatal(err)
			}
			for _, ev := range events[:max(n, 0)] {
				m, err := unix.Read(int(ev.Fd), buf)
				if err != nil && err != unix.EAGAIN {
					b.Fatal(err)
				}
				left -= max(m, 0)
			}
		}
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(writes), "cpu-ns/write")
}

// rawFd is c's socket, for raw reads and writes in a benchmark (the
// runtime's own non-blocking mode kept; c stays open and owned by the test).
func rawFd(b *testing.B, c net.Conn) int {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	var fd int
	if err := rc.Control(func(f uintptr) { fd = int(f) }); err != nil {
		b.Fatal(err)
	}
	return fd
}
