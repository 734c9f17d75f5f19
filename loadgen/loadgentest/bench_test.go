package loadgentest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchChildEnv, set to "raw", "raw8" or "nethttp", makes this test binary a
// server child for BenchmarkServer (TestMain).
const benchChildEnv = "LOADGENTEST_BENCH_SERVER"

// benchChild serves with impl, prints its base URL, then answers each line
// on stdin with the process's CPU time so far (user and system, ns), and
// stops when stdin closes.
func benchChild(impl string) int {
	var base string
	var stop func(context.Context) error
	switch impl {
	case "raw", "raw8":
		cfg := Config{}
		if impl == "raw8" {
			cfg.EventsPerWrite = 8
		}
		s, err := Start("127.0.0.1:0", cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		base, stop = s.BaseURL(), s.Close
	case "nethttp":
		s, err := startNetHTTP("127.0.0.1:0", Config{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		base, stop = s.BaseURL(), s.Close
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: want raw, raw8 or nethttp\n", benchChildEnv, impl)
		return 2
	}
	fmt.Println(base)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		user, sys, err := processCPU()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(user.Nanoseconds(), sys.Nanoseconds())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = stop(ctx)
	return 0
}

// serverChild is a running benchmark server child.
type serverChild struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	base string
}

func startServerChild(b *testing.B, impl string) *serverChild {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), benchChildEnv+"="+impl)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &serverChild{cmd: cmd, in: in, out: bufio.NewReader(outp)}
	b.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	line, err := c.out.ReadString('\n')
	if err != nil {
		b.Fatalf("%s server child: %v", impl, err)
	}
	c.base = strings.TrimSpace(line)
	return c
}

// cpuTime is a process's CPU time in user and system mode.
type cpuTime struct{ user, sys time.Duration }

func (a cpuTime) sub(b cpuTime) cpuTime { return cpuTime{a.user - b.user, a.sys - b.sys} }
func (a cpuTime) add(b cpuTime) cpuTime { return cpuTime{a.user + b.user, a.sys + b.sys} }

// cpu asks the child for its CPU time so far.
func (c *serverChild) cpu(b *testing.B) cpuTime {
	if _, err := io.WriteString(c.in, "cpu\n"); err != nil {
		b.Fatal(err)
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	var user, sys int64
	if _, err := fmt.Sscan(line, &user, &sys); err != nil {
		b.Fatalf("child CPU %q: %v", line, err)
	}
	t := cpuTime{time.Duration(user), time.Duration(sys)}
	return t
}

// benchStreams sends n 128-token streaming requests to base over conns
// keep-alive connections and reads every response to its end.
func benchStreams(b *testing.B, conns []net.Conn, n int) {
	req := []byte(post("/v1/completions", "", `{"max_tokens":128,"stream":true,"stream_options":{"include_usage":true},"prompt":[1,2,3,4]}`))
	var wg sync.WaitGroup
	errs := make(chan error, len(conns))
	for i, nc := range conns {
		share := n / len(conns)
		if i < n%len(conns) {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReaderSize(nc, 64<<10)
			for range share {
				if _, err := nc.Write(req); err != nil {
					errs <- err
					return
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					errs <- err
					return
				}
				got, err := io.Copy(io.Discard, resp.Body)
				if err != nil || got < 128*int64(len(compEvent.raw)) {
					errs <- fmt.Errorf("stream of %d bytes: %v", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkServer compares the server's CPU cost per SSE token event with
// the net/http server it replaced, side by side in one run: nethttp (the
// old server), raw (this one, one Write per event) and raw8 (this one with
// EventsPerWrite 8) each run as their own child process (as bench-client
// runs the server) and serve 128-token streams, back to back, to 4
// keep-alive loopback connections; they take turns in 10 blocks, so all see
// the same machine load. An op is one token event served by each server;
// the metrics are each
// child's CPU time (getrusage) per event, user + system and user alone,
// its events/s while serving, and the ratio of the two CPU costs.
func BenchmarkServer(b *testing.B) {
	const tokens, nconns, blocks = 128, 4, 10
	impls := []string{"nethttp", "raw", "raw8"}
	kids := make([]*serverChild, len(impls))
	dialed := make([][]net.Conn, len(impls))
	for i, impl := range impls {
		kids[i] = startServerChild(b, impl)
		for range nconns {
			nc, err := net.Dial("tcp", strings.TrimPrefix(kids[i].base, "http://"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = nc.Close() })
			dialed[i] = append(dialed[i], nc)
		}
		benchStreams(b, dialed[i], nconns) // warm up
	}
	requests := max(blocks, b.N/tokens)
	cpu := make([]cpuTime, len(impls))
	wall := make([]time.Duration, len(impls))
	b.ResetTimer()
	for k := range blocks {
		n := requests / blocks
		if k < requests%blocks {
			n++
		}
		for i := range impls {
			c0, t0 := kids[i].cpu(b), time.Now()
			benchStreams(b, dialed[i], n)
			wall[i] += time.Since(t0)
			cpu[i] = cpu[i].add(kids[i].cpu(b).sub(c0))
		}
	}
	b.StopTimer()
	events := float64(requests * tokens)
	for i, impl := range impls {
		b.ReportMetric(float64(cpu[i].user+cpu[i].sys)/events, impl+"-cpu-ns/event")
		b.ReportMetric(float64(cpu[i].user)/events, impl+"-user-ns/event")
		b.ReportMetric(events/wall[i].Seconds(), impl+"-events/s")
	}
	for i := 1; i < len(impls); i++ {
		b.ReportMetric(float64(cpu[0].user+cpu[0].sys)/float64(cpu[i].user+cpu[i].sys), "nethttp/"+impls[i]+"-cpu")
	}
}
