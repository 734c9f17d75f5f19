package clientbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/transferlab/transferlab/internal/interrupt"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/loadgen/loadgentest"
	"github.com/transferlab/transferlab/stats"
	"github.com/transferlab/transferlab/traces"
)

// Options are bench-client's flags.
type Options struct {
	json        bool
	jsonOut     string
	rates       []int
	duration    time.Duration
	tokens      int
	itl         time.Duration
	inFlight    int
	vegetaRate  int
	replayN     int
	replayRate  int
	inProcess   bool
	clients     []string
	itlRate     int           // ITL check's rate in req/s (0: skip)
	itlDuration time.Duration // ITL check's run length per client
	pin         bool          // ITL check: pin the simulator child and this process to disjoint CPUs
	cpuProfile  string        // hidden: write a CPU profile of the whole run (or, in a child mode, of the child)
	// serverCPUProfile is hidden: each serve-sim child of the sim stage
	// writes a CPU profile to serverCPUProfile-<offered req/s>.prof.
	serverCPUProfile string
	gcPercent        int    // hidden: debug.SetGCPercent for this process only (0: leave GOGC as is)
	serve            string // hidden: run only the fast server (child mode)
	serveHoldMs      int    // hidden: hold streams after the first token
	// eventsPerWrite is the fast server's token events per write after the
	// first (1: one write, one TCP segment, per event).
	eventsPerWrite int
	replayChild    string // hidden: run only the long replay with this client (child mode)
	serveSim       string // hidden: run only a simulator on this address (child mode)
	// serveSimSweep makes the simulator child use the sweep's config
	// (--sim-config or benchFastConfig, every op --sim-speedup × faster).
	serveSimSweep bool
	// serverCPUs pins the server children (fake server and serve-sim) to
	// these CPUs (Linux; empty: not pinned).
	serverCPUs []int
	// stages names the stages to run (stageKeys).
	stages []string
	// The sweep against serve-sim.
	simRates    []int
	simDuration time.Duration
	// stampAccuracy is the serve-sim sweep's bound on the ITL error p99
	// against the simulator's truth for a load to count as sustained.
	stampAccuracy time.Duration
	simConfig     string
	simSpeedup    float64
	// The head-of-line check.
	holRate     int
	holDuration time.Duration
	holEvery    int
	holBytes    int
	// holLines names the long line's kinds, each checked in the same run:
	// "comment" (": …", dropped as it arrives) and "data" (one data event
	// carrying a token).
	holLines []string
	// serveLongEvery and serveLongBytes are the fast server's long-line
	// settings (loadgentest.Config.LongLineEvery/LongLineBytes; child mode).
	serveLongEvery int
	serveLongBytes int
	serveLongData  bool
	// shutdownGrace is how long the fast-server child lets open streams
	// finish once told to stop before closing them (0: defaultShutdownGrace).
	shutdownGrace time.Duration
}

// defaultShutdownGrace is the fast-server child's default shutdown grace.
const defaultShutdownGrace = 5 * time.Second

// The clients bench-client compares, by loadgen transport: the epoll
// reactor (loadgen.TransportReactor) and net/http (WithHTTPClient).
const (
	clientReactor = "reactor"
	clientNetHTTP = "net/http"
)

// clientOptions returns the Replay options that select client name.
func clientOptions(name string) ([]loadgen.Option, error) {
	switch name {
	case clientReactor:
		return []loadgen.Option{loadgen.WithTransport(loadgen.TransportReactor)}, nil
	case clientNetHTTP:
		return []loadgen.Option{loadgen.WithHTTPClient(loadgen.NewHTTPClient())}, nil
	}
	return nil, fmt.Errorf("bench-client: flag --clients: unknown client %q (want %q or %q)", name, clientReactor, clientNetHTTP)
}

// Command is the sub-command the server children are started with: this
// process's binary (os.Executable) run as `Command` followed by the hidden
// child flags AddFlags registers (--serve-fast, --serve-sim, --replay-child);
// that binary's Command must parse AddFlags' flags and call Run.
const Command = "bench-client"

// AddFlags registers bench-client's flags on f, bound to o, with their
// defaults; the hidden ones start the child modes.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&o.json, "json", false, "print JSON instead of a table")
	f.StringVar(&o.jsonOut, "json-out", "", "also write the JSON report to this file (the table still goes to stdout)")
	f.IntSliceVar(&o.rates, "rates", []int{250, 500, 1000, 2000, 3000}, "offered loads to sweep for streaming (req/s)")
	f.DurationVar(&o.duration, "duration", 10*time.Second, "length of each measured run")
	f.IntVar(&o.tokens, "tokens", 128, "tokens per streamed response (one SSE event each)")
	f.DurationVar(&o.itl, "itl", 0, "server gap between token events (0: back to back, each flushed)")
	f.IntVar(&o.eventsPerWrite, "server-events-per-write", 1, "with --itl 0: the fast server writes the token events after the first this many per write (1: one write per event; more takes the kernel's per-segment cost off the server, whose loopback sends otherwise share the client's cores; the client still parses every SSE event)")
	f.IntVar(&o.inFlight, "in-flight", 4000, "streams held open for the memory-per-request measurement")
	f.IntVar(&o.vegetaRate, "vegeta-rate", 2000, "rate of the vegeta comparison and pacing check (req/s)")
	f.IntVar(&o.replayN, "replay-requests", 0, "also replay this many non-streaming requests and report peak RSS (0: skip)")
	f.IntVar(&o.replayRate, "replay-rate", 10000, "rate of the --replay-requests run (req/s)")
	f.BoolVar(&o.inProcess, "in-process", false, "run the fast server inside this process (CPU and memory then include it)")
	f.StringSliceVar(&o.clients, "clients", []string{clientReactor, clientNetHTTP}, "clients to measure side by side: reactor (epoll), net/http")
	f.IntVar(&o.itlRate, "itl-rate", 500, "rate of the ITL-accuracy check against the simulator (req/s; 0 skips it)")
	f.DurationVar(&o.itlDuration, "itl-duration", 10*time.Second, "length of the ITL-accuracy run, per client")
	f.BoolVar(&o.pin, "pin", false, "ITL check: pin the simulator child to the last CPU and bench-client to the others (Linux)")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	f.StringVar(&o.serverCPUProfile, "server-cpuprofile", "", "stage sim: each serve-sim child writes a CPU profile to PREFIX-<req/s>.prof")
	_ = f.MarkHidden("server-cpuprofile")
	f.StringVar(&o.replayChild, "replay-child", "", "run only the long replay with this client and print its JSON (used by bench-client itself)")
	f.StringVar(&o.serve, "serve-fast", "", "run only the fast server on this address (used by bench-client itself)")
	f.IntVar(&o.serveHoldMs, "serve-hold", 0, "with --serve-fast: hold streams open after the first token until stdin closes (1) or not (0)")
	_ = f.MarkHidden("serve-fast")
	_ = f.MarkHidden("serve-hold")
	_ = f.MarkHidden("replay-child")
	_ = f.MarkHidden("cpuprofile")
	f.IntSliceVar(&o.serverCPUs, "server-cpus", nil, "pin the server children (fake server, serve-sim) to these CPUs (Linux; e.g. 2,3,4,5); run bench-client itself under taskset for its own CPUs")
	f.StringSliceVar(&o.stages, "stages", stageKeys, "stages to run: "+strings.Join(stageKeys, ", "))
	f.IntSliceVar(&o.simRates, "sim-rates", []int{200, 500, 1000, 2000, 2500}, "offered loads of the streaming sweep against serve-sim (req/s; 32-token prompts, 128-token streams)")
	f.DurationVar(&o.simDuration, "sim-duration", 10*time.Second, "length of each run against serve-sim")
	f.DurationVar(&o.stampAccuracy, "sim-stamp-accuracy", defaultStampAccuracy, "the client's stated timestamp accuracy (loadgen/README.md): against serve-sim, each load says whether its ITL error p99 against the simulator's truth is at most this, and the highest sustained load where it is (beside the sustained rate, not part of it)")
	f.StringVar(&o.simConfig, "sim-config", "", "serve-sim config for the sweep against it (empty: the default config with max_num_seqs 8192, max_batch_tokens 16384, truth_capacity 65536, as results/bench-client-2026-12-01/serve-sim-fast.yaml)")
	f.Float64Var(&o.simSpeedup, "sim-speedup", 16, "divide every simulator op's time by this (serve-sim --override OP=F for all ops; 1: none)")
	f.IntVar(&o.holRate, "hol-rate", 100, "rate of the head-of-line check (req/s; 0 skips it)")
	f.DurationVar(&o.holDuration, "hol-duration", 5*time.Second, "length of the head-of-line check, per client")
	f.IntVar(&o.holEvery, "hol-every", 10, "head-of-line check: every this many-th request's stream carries the long line")
	f.IntVar(&o.holBytes, "hol-bytes", 5<<20, "head-of-line check: the long SSE line's length (bytes)")
	f.StringSliceVar(&o.holLines, "hol-lines", holLineKinds, "head-of-line check: the long line's kinds, each run in turn: comment (an SSE comment line), data (one data event, a completion chunk whose text fills it)")
	f.IntVar(&o.serveLongEvery, "serve-long-every", 0, "with --serve-fast: every this many-th request id's stream sends a long comment line (0: none)")
	f.IntVar(&o.serveLongBytes, "serve-long-bytes", 0, "with --serve-fast: the long line's length (bytes)")
	f.BoolVar(&o.serveLongData, "serve-long-data", false, "with --serve-fast: the long line is a data event, not a comment")
	_ = f.MarkHidden("serve-long-every")
	_ = f.MarkHidden("serve-long-bytes")
	_ = f.MarkHidden("serve-long-data")
	f.IntVar(&o.gcPercent, "gc-percent", 0, "set this process's GC percent (debug.SetGCPercent; -1: off), not its children's; 0 leaves GOGC")
	_ = f.MarkHidden("gc-percent")
	f.StringVar(&o.serveSim, "serve-sim", "", "run only a simulator on this address (used by bench-client itself)")
	f.BoolVar(&o.serveSimSweep, "serve-sim-sweep", false, "with --serve-sim: the sweep's config (--sim-config or the raised batch limits, ops --sim-speedup × faster)")
	_ = f.MarkHidden("serve-sim")
	_ = f.MarkHidden("serve-sim-sweep")
}

// Run runs what o asks: a child mode (a fast server, a simulator or the long
// replay, each started by a parent bench-client) or the whole self-benchmark
// (runBenchClient). Errors that must end the process with a status other
// than 1 are *ExitError.
func Run(ctx context.Context, o Options, in io.Reader, out, log io.Writer) error {
	if o.serve != "" {
		return serveFast(ctx, o, out, in)
	}
	if o.serveSim != "" {
		return serveSim(ctx, o, out, in)
	}
	if o.replayChild != "" {
		return replayChild(ctx, o, out, log)
	}
	return runBenchClient(ctx, o, out, log)
}

// startCPUProfile starts a CPU profile written to path (--cpuprofile);
// stop ends it and closes the file. An empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench-client: flag --cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("bench-client: flag --cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

// ExitError is an error whose process exit status is Code: 2 when a stage
// failed (run incomplete), 128 + the signal's number when an interrupt
// stopped the run. The stages finished before it are reported either way.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// serveFast is the child mode: serve, print the base URL, stop when stdin closes.
func serveFast(ctx context.Context, o Options, out io.Writer, in io.Reader) error {
	cfg := loadgentest.Config{ITL: o.itl, Tokens: o.tokens, EventsPerWrite: o.eventsPerWrite, LongLineEvery: o.serveLongEvery, LongLineBytes: o.serveLongBytes, LongLineData: o.serveLongData}
	if len(o.serverCPUs) > 0 {
		if _, err := pinProcess(o.serverCPUs); err != nil {
			return fmt.Errorf("bench-client: flag --server-cpus: %w", err)
		}
	}
	hold := make(chan struct{})
	if o.serveHoldMs != 0 {
		cfg.Hold = hold
	}
	srv, err := loadgentest.Start(o.serve, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, srv.BaseURL())
	untilClosed(ctx, in)
	close(hold)
	grace := o.shutdownGrace
	if grace <= 0 {
		grace = defaultShutdownGrace
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	// The parent closes stdin when it is done with the server: streams still
	// open after the grace (a client that stopped reading, an ITL longer than
	// the grace) are closed by Close, as asked, and that is no failure.
	if err := srv.Close(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// untilClosed returns when in reaches EOF (a child's parent closed its
// stdin: it is done with the server) or ctx ends.
func untilClosed(ctx context.Context, in io.Reader) {
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, in); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// fastServer is a running fast server (child process or in-process).
type fastServer struct {
	url   string
	close func() error
	// pid is the child process's id (0: in-process).
	pid int
}

// cpu is the server child's user+system CPU time so far; false when the
// server runs in this process or the time cannot be read.
func (f *fastServer) cpu() (time.Duration, bool) {
	if f.pid == 0 {
		return 0, false
	}
	d, err := processCPU(f.pid)
	return d, err == nil
}

// serverCores is the server child's CPU time between c0 (read before a run)
// and now over wall, in cores; not measured in-process or when unreadable.
func serverCores(f *fastServer, c0 time.Duration, ok0 bool, wall time.Duration) reportFloat {
	c1, ok1 := f.cpu()
	if !ok0 || !ok1 || wall <= 0 {
		return notMeasured
	}
	return reportFloat((c1 - c0).Seconds() / wall.Seconds())
}

func (f *fastServer) BaseURL() string { return f.url }
func (f *fastServer) Ready(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.url+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("fast server %s: %w", f.url, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func startFastServer(ctx context.Context, o Options, tokens int, hold bool) (*fastServer, error) {
	if o.inProcess {
		cfg := loadgentest.Config{ITL: o.itl, Tokens: tokens, EventsPerWrite: o.eventsPerWrite, LongLineEvery: o.serveLongEvery, LongLineBytes: o.serveLongBytes, LongLineData: o.serveLongData}
		ch := make(chan struct{})
		if hold {
			cfg.Hold = ch
		}
		s, err := loadgentest.Start("127.0.0.1:0", cfg)
		if err != nil {
			return nil, err
		}
		return &fastServer{url: s.BaseURL(), close: func() error {
			close(ch)
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return s.Close(c)
		}}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench-client: finding this binary for the server child: %w", err)
	}
	args := []string{Command, "--serve-fast", "127.0.0.1:0", "--tokens", fmt.Sprint(tokens), "--itl", o.itl.String(),
		"--server-events-per-write", fmt.Sprint(o.eventsPerWrite)}
	if hold {
		args = append(args, "--serve-hold", "1")
	}
	if o.serveLongEvery > 0 {
		args = append(args, "--serve-long-every", fmt.Sprint(o.serveLongEvery), "--serve-long-bytes", fmt.Sprint(o.serveLongBytes))
		if o.serveLongData {
			args = append(args, "--serve-long-data")
		}
	}
	if len(o.serverCPUs) > 0 {
		args = append(args, "--server-cpus", intList(o.serverCPUs))
	}
	return startChild(ctx, exe, args)
}

// childStderrLimit bounds how much of a child's stderr is kept for its error.
const childStderrLimit = 64 << 10

// startChild starts the fast-server child exe args, reads the base URL it
// prints, and returns it with a close that tells it to stop (closing its
// stdin) and waits. The child's stderr is kept, not passed through: a child
// that fails (non-zero exit, no URL) makes an error carrying its message; one
// that stops as asked prints nothing. A child killed because ctx ended
// (an interrupt) is not reported.
func startChild(ctx context.Context, exe string, args []string) (*fastServer, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := &limitedBuffer{max: childStderrLimit}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench-client: starting the server child: %w", err)
	}
	failed := func(what string, err error) error {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return fmt.Errorf("bench-client: server child %s: %w", what, err)
		}
		return fmt.Errorf("bench-client: server child %s: %w: %s", what, err, msg)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		werr := cmd.Wait()
		if werr != nil && ctx.Err() == nil {
			err = werr
		}
		return nil, failed("gave no URL", err)
	}
	var once sync.Once
	var cerr error
	return &fastServer{url: strings.TrimSpace(line), pid: cmd.Process.Pid, close: func() error {
		once.Do(func() {
			_ = stdin.Close()
			if err := cmd.Wait(); err != nil && ctx.Err() == nil {
				cerr = failed("failed", err)
			}
		})
		return cerr
	}}, nil
}

// limitedBuffer keeps the first max bytes written to it (safe for the
// goroutine exec copies a child's stderr on and a reader after Wait).
type limitedBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// closeServer stops srv and, when the function it is deferred in had no
// error of its own, makes srv's failure (a child's, with its message) that
// function's error.
func closeServer(srv *fastServer, err *error) {
	if cerr := srv.close(); cerr != nil && *err == nil {
		*err = cerr
	}
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSBytes is this process's peak resident set size (Linux reports KiB).
func peakRSSBytes() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}

// rssBytes is the current resident set size from /proc/self/statm.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, res int64
	if _, err := fmt.Sscan(string(b), &size, &res); err != nil {
		return 0
	}
	return res * int64(os.Getpagesize())
}

// constSchedule is n requests every 1/rate s with the given lengths.
func constSchedule(n, rate, in, out int) traces.Schedule {
	s := traces.Schedule{Source: fmt.Sprintf("synthetic:constant rate=%d", rate), Format: "synthetic", Requests: make([]traces.Request, n)}
	gap := time.Second / time.Duration(rate)
	for i := range s.Requests {
		s.Requests[i] = traces.Request{ID: i, Offset: time.Duration(i) * gap, InputTokens: in, OutputTokens: out}
	}
	return s
}

// eventCounter is a sink that counts token events and keeps send times.
type eventCounter struct {
	events   int
	sends    []time.Duration
	firstErr string
	// promptTokens is the largest usage.prompt_tokens the server reported.
	promptTokens int
}

func (c *eventCounter) Add(r *loadgen.Record) error {
	c.events += len(r.Events)
	c.promptTokens = max(c.promptTokens, r.PromptTokens)
	if r.State != loadgen.StateNotSent {
		c.sends = append(c.sends, r.SentAt)
	}
	if r.State != loadgen.StateOK && c.firstErr == "" {
		c.firstErr = string(r.State) + ": " + r.Error
	}
	return nil
}
func (c *eventCounter) Close() error { return nil }

type streamRow struct {
	Client     string `json:"client"`
	OfferedRPS int    `json:"offered_rps"`
	// PromptTokens is the prompt length the fake server reported
	// (usage.prompt_tokens, the largest seen; 0: none reported): serve-sim's
	// sweep sends the same (simInputTokens).
	PromptTokens     int         `json:"prompt_tokens"`
	AchievedSendRPS  reportFloat `json:"achieved_send_rps"`
	EventsPerS       reportFloat `json:"events_per_s"`
	OK               int         `json:"ok"`
	Scheduled        int         `json:"scheduled"`
	LagP99Ms         reportFloat `json:"schedule_lag_p99_ms"`
	DispatchLagP99Ms reportFloat `json:"dispatch_lag_p99_ms"`
	ClientBound      bool        `json:"client_bound"`
	CPUMsPer1kEvents reportFloat `json:"cpu_ms_per_1k_events"`
	CPUUtilCores     reportFloat `json:"cpu_cores_used"`
	// ServerCores is the fake-server child's CPU time over the run's wall
	// time, cores (null in-process).
	ServerCores reportFloat `json:"server_cores_used"`
	Sustained   bool        `json:"sustained"`
	FirstError  string      `json:"first_error,omitempty"`
}

// sustained is bench-client's one criterion for a sustained load, against
// the fake server and serve-sim alike: schedule-lag p99 ≤ 1 ms and all n
// requests ok. Stamp accuracy against serve-sim's truth is reported beside
// it (stampsWithin), not folded in: the fake server has no truth to check.
func sustained(lagP99 time.Duration, ok, n int) bool {
	return lagP99 <= time.Millisecond && ok == n
}

type pacingRow struct {
	OfferedRPS       int         `json:"offered_rps"`
	AchievedSendRPS  reportFloat `json:"achieved_send_rps"`
	RateErrorPct     reportFloat `json:"rate_error_pct"`
	BinMs            int         `json:"bin_ms"`
	ExpectedPerBin   reportFloat `json:"expected_per_bin"`
	MinPerBin        int         `json:"min_per_bin"`
	MaxPerBin        int         `json:"max_per_bin"`
	FirstBin         int         `json:"first_bin"`
	LagP99Ms         reportFloat `json:"schedule_lag_p99_ms"`
	DispatchLagP99Ms reportFloat `json:"dispatch_lag_p99_ms"`
}

// vegetaRow is vegeta's attacker on the non-streaming endpoint; each
// client's own figures and ratios are in its clientSummary.
type vegetaRow struct {
	RateRPS       int         `json:"rate_rps"`
	VegetaSendRPS reportFloat `json:"vegeta_send_rps"`
	VegetaMeanMs  reportFloat `json:"vegeta_mean_latency_ms"`
	VegetaP99Ms   reportFloat `json:"vegeta_p99_latency_ms"`
	VegetaSuccess reportFloat `json:"vegeta_success"`
}

// clientSummary is one client's column of the side-by-side table.
type clientSummary struct {
	Client string `json:"client"`
	// Highest offered load with schedule-lag p99 ≤ 1 ms and every request ok,
	// with its events/s and CPU ms per 1,000 events; null when no tried rate
	// qualified (never 0).
	SustainedRPS              *int         `json:"sustained_rps"`
	SustainedEventsPerS       *reportFloat `json:"sustained_events_per_s"`
	SustainedCPUMsPer1kEvents *reportFloat `json:"sustained_cpu_ms_per_1k_events"`
	// Highest offered load with dispatch-lag p99 ≤ 1 ms and every request ok (null: none).
	DispatchSustainedRPS *int `json:"dispatch_sustained_rps"`

	GoroutinesPerInFlight reportFloat `json:"goroutines_per_in_flight"`
	HeapPerInFlight       reportFloat `json:"heap_bytes_per_in_flight"`
	StackPerInFlight      reportFloat `json:"stack_bytes_per_in_flight"`
	HeapStackPerInFlight  reportFloat `json:"heap_stack_bytes_per_in_flight"`
	RSSPerInFlight        reportFloat `json:"rss_bytes_per_in_flight"`
	OpenStreams           int         `json:"open_streams"`

	Pacing *pacingRow `json:"pacing"` // null: not measured

	OursSendRPS      reportFloat `json:"ours_send_rps"`
	OursMeanMs       reportFloat `json:"ours_mean_latency_ms"`
	OursP99Ms        reportFloat `json:"ours_p99_latency_ms"`
	OursSuccess      reportFloat `json:"ours_success"`
	RateRatio        reportFloat `json:"rate_ratio_ours_over_vegeta"`
	MeanLatencyRatio reportFloat `json:"mean_latency_ratio_ours_over_vegeta"`

	ReplayPeakRSSMB reportFloat    `json:"replay_peak_rss_mb,omitempty"`
	ReplayStates    map[string]int `json:"replay_states,omitempty"`
	ReplayFirstErr  string         `json:"replay_first_error,omitempty"`
}

type benchReport struct {
	Note           string          `json:"note"`
	Server         string          `json:"server"`
	GoVersion      string          `json:"go_version"`
	NumCPU         int             `json:"num_cpu"`
	GOMAXPROCS     int             `json:"gomaxprocs"`
	Tokens         int             `json:"tokens_per_stream"`
	ITLMs          reportFloat     `json:"server_itl_ms"`
	EventsPerWrite int             `json:"server_events_per_write"`
	DurationS      reportFloat     `json:"duration_s"`
	Stream         []streamRow     `json:"stream"`
	InFlight       int             `json:"in_flight"`
	Vegeta         *vegetaRow      `json:"vegeta"` // null: not measured
	ReplayRequests int             `json:"replay_requests,omitempty"`
	ReplayRate     int             `json:"replay_rate_rps,omitempty"`
	Clients        []clientSummary `json:"clients"`
	// Complete is false when an interrupt or a failure stopped the run;
	// IncompleteReason says which, and Stages how each stage ended (an
	// interrupted or failed stage keeps only its whole units; figures of
	// stages that did not run are null).
	Complete         bool         `json:"complete"`
	IncompleteReason string       `json:"incomplete_reason,omitempty"`
	Stages           []benchStage `json:"stages"`
	// ITL is the ITL-accuracy check against the simulator's truth; null
	// when skipped with --itl-rate 0.
	ITL *itlSection `json:"itl_accuracy"`
	// Sim is the streaming sweep against serve-sim; HOL the head-of-line
	// check (null: not run).
	Sim *simSection `json:"serve_sim_sweep"`
	HOL *holSection `json:"head_of_line"`
}

// client returns name's summary.
func (r *benchReport) client(name string) *clientSummary {
	for i := range r.Clients {
		if r.Clients[i].Client == name {
			return &r.Clients[i]
		}
	}
	panic("bench-client: no summary for client " + name) // clients are set up front
}

// msf is d in ms.
func msf(d time.Duration) reportFloat { return reportFloat(d) / reportFloat(time.Millisecond) }

// reportFloat is a figure of bench-client's report. NaN stands for "not
// measured" (a stage that did not run for this client, or a figure that could
// not be formed): it and ±Inf encode as JSON null, never as a number, so the
// report always encodes; null decodes back to NaN.
type reportFloat float64

// notMeasured is a figure no stage has set.
var notMeasured = reportFloat(math.NaN())

// measured reports whether f holds a finite figure.
func (f reportFloat) measured() bool {
	return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0)
}

// MarshalJSON encodes f, or null when f is NaN or ±Inf.
func (f reportFloat) MarshalJSON() ([]byte, error) {
	if !f.measured() {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

// UnmarshalJSON decodes a number, or null as NaN (not measured).
func (f *reportFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = notMeasured
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = reportFloat(v)
	return nil
}

// Rate bounds for every req/s flag: a schedule's gap is 1 s / rate in whole
// nanoseconds, and above 10⁶ req/s that gap (≤ 1 µs) is below what a sender
// can keep.
const (
	minRateRPS = 1
	maxRateRPS = 1_000_000
)

// validateBenchClient checks every flag before anything runs (no child is
// started, nothing is measured) and returns every problem at once, each
// naming its flag. It also checks that --json-out can be written (opening
// the file for writing without truncating it; a file it had to create is
// removed again) and that --pin has 2 CPUs to split, so neither fails only
// after minutes of measuring.
func validateBenchClient(o Options) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("bench-client: "+format, a...)) }
	requests := func(rate int, d time.Duration) int { return int(float64(rate) * d.Seconds()) }
	rateOK := func(r int) bool { return r >= minRateRPS && r <= maxRateRPS }

	if o.duration <= 0 {
		bad("flag --duration %v: want > 0 (each measured run lasts this long)", o.duration)
	}
	if len(o.rates) == 0 {
		bad("flag --rates: name at least one offered load")
	}
	for _, r := range o.rates {
		switch {
		case !rateOK(r):
			bad("flag --rates: %d req/s: want %d–%d", r, minRateRPS, maxRateRPS)
		case o.duration > 0 && requests(r, o.duration) < 1:
			bad("flag --rates: %d req/s for --duration %v schedules no request", r, o.duration)
		}
	}
	if o.tokens < 1 {
		bad("flag --tokens %d: want ≥ 1", o.tokens)
	}
	if o.itl < 0 {
		bad("flag --itl %v: want ≥ 0 (0: back to back)", o.itl)
	}
	if o.eventsPerWrite < 1 || o.eventsPerWrite > 1024 || (o.eventsPerWrite > 1 && o.itl > 0) {
		bad("flag --server-events-per-write %d: want 1–1024, and 1 unless --itl is 0", o.eventsPerWrite)
	}
	if o.inFlight < 1 {
		bad("flag --in-flight %d: want ≥ 1 (streams held open for the memory figures)", o.inFlight)
	}
	switch {
	case !rateOK(o.vegetaRate):
		bad("flag --vegeta-rate %d: want %d–%d req/s", o.vegetaRate, minRateRPS, maxRateRPS)
	case o.duration > 0 && requests(o.vegetaRate, o.duration) < 1:
		bad("flag --vegeta-rate %d for --duration %v schedules no request", o.vegetaRate, o.duration)
	}
	if o.replayN < 0 {
		bad("flag --replay-requests %d: want ≥ 0 (0 skips the long replay)", o.replayN)
	}
	if o.replayN > 0 && !rateOK(o.replayRate) {
		bad("flag --replay-rate %d: want %d–%d req/s", o.replayRate, minRateRPS, maxRateRPS)
	}
	switch {
	case o.itlRate < 0 || o.itlRate > maxRateRPS || (o.itlRate > 0 && o.itlDuration <= 0):
		bad("flags --itl-rate %d / --itl-duration %v: want a rate of 0–%d req/s (0 skips) and, with a rate, a duration > 0", o.itlRate, o.itlDuration, maxRateRPS)
	case o.itlRate > 0 && requests(o.itlRate, o.itlDuration) < 1:
		bad("flags --itl-rate %d / --itl-duration %v: schedule no request", o.itlRate, o.itlDuration)
	}
	if o.pin && o.itlRate > 0 {
		if o.inProcess {
			bad("flag --pin: needs the simulator in a child process (drop --in-process)")
		} else if _, _, err := itlPinning(); err != nil {
			bad("flag --pin: %w", err)
		}
	}
	for _, k := range o.stages {
		if !slices.Contains(stageKeys, k) {
			bad("flag --stages: unknown stage %q (want some of %s)", k, strings.Join(stageKeys, ", "))
		}
	}
	for _, r := range o.simRates {
		if !rateOK(r) || requests(r, o.simDuration) < 1 {
			bad("flags --sim-rates %d / --sim-duration %v: want %d–%d req/s and a duration that schedules a request", r, o.simDuration, minRateRPS, maxRateRPS)
		}
	}
	if len(o.simRates) > 0 && o.simSpeedup <= 0 {
		bad("flag --sim-speedup %g: want > 0", o.simSpeedup)
	}
	if len(o.simRates) > 0 && o.stampAccuracy <= 0 {
		bad("flag --sim-stamp-accuracy %v: want > 0", o.stampAccuracy)
	}
	if o.holRate != 0 && (o.holEvery < 1 || o.holBytes < 4 || o.holBytes > 8<<20 || !rateOK(o.holRate) || requests(o.holRate, o.holDuration) < 1) {
		bad("flags --hol-rate %d / --hol-duration %v / --hol-every %d / --hol-bytes %d: want a rate of 0 (skip) or %d–%d req/s that schedules a request, every ≥ 1, 4 B to 8 MiB",
			o.holRate, o.holDuration, o.holEvery, o.holBytes, minRateRPS, maxRateRPS)
	}
	if o.holRate != 0 {
		if len(o.holLines) == 0 {
			bad("flag --hol-lines: name at least one of %s", strings.Join(holLineKinds, ", "))
		}
		for _, k := range o.holLines {
			if !slices.Contains(holLineKinds, k) {
				bad("flag --hol-lines: unknown kind %q (want some of %s)", k, strings.Join(holLineKinds, ", "))
			}
		}
		if slices.Contains(o.holLines, holLineData) && o.holBytes < loadgentest.LongDataMin {
			bad("flags --hol-bytes %d / --hol-lines data: a data line needs at least %d bytes", o.holBytes, loadgentest.LongDataMin)
		}
	}
	if len(o.clients) == 0 {
		bad("flag --clients: name at least one client")
	}
	seen := map[string]bool{}
	for _, c := range o.clients {
		if _, err := clientOptions(c); err != nil {
			errs = append(errs, err)
		}
		if seen[c] {
			bad("flag --clients: %q named twice (each client is measured once)", c)
		}
		seen[c] = true
	}
	if o.jsonOut != "" {
		if err := probeWritable(o.jsonOut); err != nil {
			bad("flag --json-out: %w", err)
		}
	}
	return errors.Join(errs...)
}

// probeWritable checks that path can be opened for writing: an existing file
// is opened without truncation and left as it was; a file that had to be
// created is removed again.
func probeWritable(path string) error {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		return os.Remove(path)
	}
	return nil
}

// Stage statuses in benchReport.Stages.
const (
	stageDone        = "done"
	stageInterrupted = "interrupted" // cut short: only its whole units (a client's figures, a rate's run) are kept
	stageFailed      = "failed"      // an error stopped it: only its whole units are kept
	stageNotRun      = "not run"
)

// stageStreams is the streaming sweep's stage name.
const stageStreams = "streaming sweep"

// benchStage is one stage of a run and how it ended.
type benchStage struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// stageFunc runs one stage, recording into rep only whole units (one client
// at one rate, one client's memory figures, …). It returns an error when it
// stopped early: ctx ended or something failed.
type stageFunc func(ctx context.Context, o Options, rep *benchReport, log io.Writer) error

// benchStageList is the run's stages in order; --pin's CPU mask change makes
// the ITL check last.
func benchStageList(o Options) (names []string, run []stageFunc) {
	add := func(key, name string, f stageFunc) {
		if o.stages == nil || slices.Contains(o.stages, key) {
			names, run = append(names, name), append(run, f)
		}
	}
	add("streams", stageStreams, benchStreams)
	add("memory", "memory per in-flight stream", benchMemory)
	add("vegeta", "vegeta comparison", benchVegeta)
	if o.replayN > 0 {
		add("replay", "long replay", benchLongReplay)
	}
	if len(o.simRates) > 0 {
		add("sim", "streaming sweep against serve-sim", benchSim)
	}
	if o.holRate > 0 {
		add("hol", "head-of-line isolation", benchHOL)
	}
	if o.itlRate > 0 {
		add("itl", "ITL accuracy", benchITL)
	}
	return names, run
}

// stageKeys are --stages' names, in the order the stages run.
var stageKeys = []string{"streams", "memory", "vegeta", "replay", "sim", "hol", "itl"}

// runStages runs the stages in order and records each one's status in
// rep.Stages. It stops at the first stage that does not finish: when ctx
// ended that stage is interrupted, otherwise failed (its error is returned);
// the stages after it are not run.
func runStages(ctx context.Context, o Options, rep *benchReport, names []string, run []stageFunc, log io.Writer) error {
	rep.Complete = true
	rep.Stages = make([]benchStage, len(names))
	for i, name := range names {
		rep.Stages[i] = benchStage{Name: name, Status: stageNotRun}
	}
	for i := range names {
		if ctx.Err() != nil {
			break
		}
		err := run[i](ctx, o, rep, log)
		switch {
		case err == nil:
			rep.Stages[i].Status = stageDone
			continue
		case ctx.Err() != nil:
			rep.Stages[i].Status = stageInterrupted
		default:
			rep.Stages[i].Status, rep.Stages[i].Error = stageFailed, err.Error()
			rep.Complete, rep.IncompleteReason = false, fmt.Sprintf("%s failed: %v", names[i], err)
			return err
		}
		break
	}
	if ctx.Err() != nil {
		rep.Complete, rep.IncompleteReason = false, context.Cause(ctx).Error()
	}
	return nil
}

func newBenchReport(o Options) benchReport {
	rep := benchReport{
		Note:           "instrument self-test against a fake server; not a lab result",
		Server:         "child process (client measured alone)",
		GoVersion:      runtime.Version(),
		NumCPU:         runtime.NumCPU(),
		GOMAXPROCS:     runtime.GOMAXPROCS(0),
		Tokens:         o.tokens,
		ITLMs:          msf(o.itl),
		EventsPerWrite: o.eventsPerWrite,
		DurationS:      reportFloat(o.duration.Seconds()),
		InFlight:       o.inFlight,
	}
	if o.inProcess {
		rep.Server = "in-process (CPU and memory include the server)"
	}
	for _, c := range o.clients {
		rep.Clients = append(rep.Clients, newClientSummary(c))
	}
	return rep
}

// newClientSummary is name's column with nothing measured yet.
func newClientSummary(name string) clientSummary {
	m := notMeasured
	return clientSummary{Client: name, GoroutinesPerInFlight: m, HeapPerInFlight: m, StackPerInFlight: m, HeapStackPerInFlight: m, RSSPerInFlight: m,
		OursSendRPS: m, OursMeanMs: m, OursP99Ms: m, OursSuccess: m, RateRatio: m, MeanLatencyRatio: m}
}

// runBenchClient validates the flags, runs the stages and reports what was
// measured: the table (or --json) on out first, then --json-out. An
// interrupt or a failing stage still reports every stage finished before it,
// marked incomplete; the exit status is then 130 (SIGINT), 143 (SIGTERM) or
// 2 (run incomplete).
func runBenchClient(ctx context.Context, o Options, out, log io.Writer) error {
	if err := validateBenchClient(o); err != nil {
		return err
	}
	if o.gcPercent != 0 {
		defer debug.SetGCPercent(debug.SetGCPercent(o.gcPercent))
	}
	rep := newBenchReport(o)
	stop, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	names, stages := benchStageList(o)
	runErr := runStages(ctx, o, &rep, names, stages, log)
	werr := writeBenchReport(o, &rep, out)
	switch {
	case ctx.Err() != nil:
		return &ExitError{Code: interruptStatus(ctx), Err: errors.Join(fmt.Errorf("bench-client %s: kept the stages finished before it (%s)", context.Cause(ctx), stagesLine(rep.Stages)), werr)}
	case runErr != nil:
		return &ExitError{Code: 2, Err: errors.Join(fmt.Errorf("bench-client incomplete (the stages finished before it are reported): %w", runErr), werr)}
	}
	return werr
}

// interruptStatus is the exit status of a run stopped by ctx: 128 + the
// signal's number, the shell's convention (interrupt.Status): 143 for
// SIGTERM, else 130 (SIGINT, and any other cancellation).
func interruptStatus(ctx context.Context) int {
	return interrupt.Status(ctx, interrupt.ExitCode(os.Interrupt))
}

// writeBenchReport prints rep on out (the table, or JSON with --json) and
// then writes --json-out. Non-finite figures encode as null (reportFloat).
func writeBenchReport(o Options, rep *benchReport, out io.Writer) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("bench-client: encoding the report: %w", err)
	}
	b = append(b, '\n')
	if o.json {
		if _, err := out.Write(b); err != nil {
			return fmt.Errorf("bench-client: writing the report: %w", err)
		}
	} else {
		printBenchTable(out, rep)
	}
	if o.jsonOut != "" {
		if err := os.WriteFile(o.jsonOut, b, 0o644); err != nil {
			return fmt.Errorf("bench-client: flag --json-out: %w (the report is on stdout)", err)
		}
	}
	return nil
}

// stagesLine lists the stages with their status ("streaming sweep: done; …").
func stagesLine(st []benchStage) string {
	parts := make([]string, len(st))
	for i, s := range st {
		parts[i] = s.Name + ": " + s.Status
	}
	return strings.Join(parts, "; ")
}

// benchStreams sweeps the offered loads, each client in turn at each load
// (interleaved, so a change in the machine's load hits both alike).
func benchStreams(ctx context.Context, o Options, rep *benchReport, log io.Writer) (err error) {
	srv, err := startFastServer(ctx, o, o.tokens, false)
	if err != nil {
		return err
	}
	defer closeServer(srv, &err)
	for _, rate := range o.rates {
		for _, name := range o.clients {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			copts, _ := clientOptions(name)
			n := int(float64(rate) * o.duration.Seconds())
			// The prompt of serve-sim's sweep, so the two sustained rates
			// compare requests of one shape.
			s := constSchedule(n, rate, simInputTokens, o.tokens)
			cnt := &eventCounter{}
			runtime.GC()
			scpu0, sok0 := srv.cpu()
			cpu0, t0 := cpuTime(), time.Now()
			sum, err := loadgen.Replay(ctx, srv, s, nil, cnt, append(copts, loadgen.WithOfferedLoad(float64(rate)))...)
			cpu, wall := cpuTime()-cpu0, time.Since(t0)
			serverCPU := serverCores(srv, scpu0, sok0, wall)
			if err != nil {
				return fmt.Errorf("bench-client: %s streaming at %d req/s: %w", name, rate, err)
			}
			if !sum.Complete {
				// Cut short (ctx ended): not a whole run at this rate.
				return fmt.Errorf("bench-client: %s streaming at %d req/s: %s", name, rate, sum.IncompleteReason)
			}
			row := streamRow{Client: name, OfferedRPS: rate, PromptTokens: cnt.promptTokens, OK: sum.States[loadgen.StateOK], Scheduled: n, LagP99Ms: msf(sum.ScheduleLagP99),
				DispatchLagP99Ms: msf(sum.DispatchLagP99), ClientBound: sum.ClientBound, FirstError: cnt.firstErr}
			row.AchievedSendRPS = reportFloat(sendRate(cnt.sends))
			row.EventsPerS = reportFloat(float64(cnt.events) / wall.Seconds())
			row.CPUMsPer1kEvents = notMeasured
			if cnt.events > 0 {
				row.CPUMsPer1kEvents = msf(cpu) / reportFloat(cnt.events) * 1000
			}
			row.CPUUtilCores = reportFloat(cpu.Seconds() / wall.Seconds())
			row.ServerCores = serverCPU
			row.Sustained = sustained(sum.ScheduleLagP99, row.OK, n)
			cs := rep.client(name)
			if row.Sustained && (cs.SustainedRPS == nil || rate > *cs.SustainedRPS) {
				ev, cpu := row.EventsPerS, row.CPUMsPer1kEvents
				cs.SustainedRPS, cs.SustainedEventsPerS, cs.SustainedCPUMsPer1kEvents = &rate, &ev, &cpu
			}
			if sum.DispatchLagP99 <= time.Millisecond && row.OK == n && (cs.DispatchSustainedRPS == nil || rate > *cs.DispatchSustainedRPS) {
				cs.DispatchSustainedRPS = &rate
			}
			rep.Stream = append(rep.Stream, row)
			fmt.Fprintf(log, "bench-client: %s streaming %d req/s: %d/%d ok, %.0f events/s, lag p99 %.3f ms, %.2f CPU ms/1k events\n",
				name, rate, row.OK, n, row.EventsPerS, row.LagP99Ms, row.CPUMsPer1kEvents)
		}
	}
	return nil
}

// sendRate is (n−1)/(last−first send) in req/s.
func sendRate(sends []time.Duration) float64 {
	if len(sends) < 2 {
		return 0
	}
	lo, hi := sends[0], sends[0]
	for _, s := range sends {
		lo, hi = min(lo, s), max(hi, s)
	}
	if hi <= lo {
		return 0
	}
	return float64(len(sends)-1) / (hi - lo).Seconds()
}

// benchMemory holds o.inFlight streams open per client (the server sends one
// token and waits) and measures this process's growth per stream: heap in
// use, goroutine stacks, RSS and goroutines. Memory is returned to the OS
// before each client's baseline so the RSS deltas compare.
func benchMemory(ctx context.Context, o Options, rep *benchReport, log io.Writer) error {
	for _, name := range o.clients {
		if err := benchMemoryOne(ctx, o, name, rep.client(name), log); err != nil {
			return err
		}
	}
	return nil
}

func benchMemoryOne(ctx context.Context, o Options, name string, cs *clientSummary, log io.Writer) error {
	srv, err := startFastServer(ctx, o, 2, true)
	if err != nil {
		return err
	}
	copts, _ := clientOptions(name)
	n := o.inFlight
	s := constSchedule(n, 100000, 16, 2)
	var before, at runtime.MemStats
	runtime.GC()
	debug.FreeOSMemory()
	runtime.ReadMemStats(&before)
	rss0, g0 := rssBytes(), runtime.NumGoroutine()
	// Streams get their first token and are then held open by the server;
	// the run is cancelled once they are all in flight.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = loadgen.Replay(rctx, srv, s, nil, nopSink{}, append(copts, loadgen.WithTimeout(time.Minute))...)
	}()
	deadline := time.Now().Add(60 * time.Second)
	open := 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
		if open = openStreams(srv.url); open >= n {
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // every reader has its first event and waits for the next
	runtime.GC()
	runtime.GC() // a second cycle shrinks stacks once more
	runtime.ReadMemStats(&at)
	rss1, g1 := rssBytes(), runtime.NumGoroutine()
	cancel()
	<-done
	if err := srv.close(); err != nil {
		return err
	}
	if ctx.Err() != nil {
		// Interrupted while the streams were opening: the figures would
		// divide by streams that were never open.
		return context.Cause(ctx)
	}
	per := func(a, b int64) reportFloat { return reportFloat(a-b) / reportFloat(n) }
	cs.OpenStreams = open
	cs.HeapPerInFlight = per(int64(at.HeapInuse), int64(before.HeapInuse))
	cs.StackPerInFlight = per(int64(at.StackInuse), int64(before.StackInuse))
	cs.HeapStackPerInFlight = cs.HeapPerInFlight + cs.StackPerInFlight
	cs.RSSPerInFlight = per(rss1, rss0)
	cs.GoroutinesPerInFlight = per(int64(g1), int64(g0))
	fmt.Fprintf(log, "bench-client: %s: %d streams in flight (%d seen open): %.0f B heap + %.0f B stack each, %.0f B RSS, %.2f goroutines\n",
		name, n, open, cs.HeapPerInFlight, cs.StackPerInFlight, cs.RSSPerInFlight, cs.GoroutinesPerInFlight)
	return nil
}

// nopSink drops records.
type nopSink struct{}

func (nopSink) Add(*loadgen.Record) error { return nil }
func (nopSink) Close() error              { return nil }

// openStreams counts this process's established TCP connections to url's port.
func openStreams(url string) int {
	port := url[strings.LastIndexByte(url, ':')+1:]
	var p int
	if _, err := fmt.Sscan(port, &p); err != nil {
		return 0
	}
	hexPort := fmt.Sprintf(":%04X", p)
	b, err := os.ReadFile("/proc/self/net/tcp")
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[2], hexPort) && f[3] == "01" {
			n++
		}
	}
	return n
}

// benchVegeta runs each client, then vegeta's attacker, non-streaming at
// o.vegetaRate against the same endpoint.
func benchVegeta(ctx context.Context, o Options, rep *benchReport, log io.Writer) (err error) {
	srv, err := startFastServer(ctx, o, o.tokens, false)
	if err != nil {
		return err
	}
	defer closeServer(srv, &err)
	rate := o.vegetaRate
	n := int(float64(rate) * o.duration.Seconds())

	// vegeta's attacker on the same endpoint and body shape.
	body := []byte(fmt.Sprintf(`{"prompt":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16],"max_tokens":%d,"ignore_eos":true,"stream":false}`, o.tokens))
	tgt := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodPost, URL: srv.url + "/v1/completions", Body: body,
		Header: http.Header{"Content-Type": []string{"application/json"}}})
	atk := vegeta.NewAttacker(vegeta.Timeout(30 * time.Second))
	var m vegeta.Metrics
	for res := range atk.Attack(tgt, vegeta.ConstantPacer{Freq: rate, Per: time.Second}, o.duration, "bench") {
		if ctx.Err() != nil {
			atk.Stop()
		}
		m.Add(res)
	}
	m.Close()
	if ctx.Err() != nil {
		return context.Cause(ctx) // vegeta was stopped early: not its whole run
	}
	rep.Vegeta = &vegetaRow{RateRPS: rate, VegetaSendRPS: reportFloat(m.Rate), VegetaMeanMs: msf(m.Latencies.Mean), VegetaP99Ms: msf(m.Latencies.P99),
		VegetaSuccess: reportFloat(m.Success)}

	for _, name := range o.clients {
		copts, _ := clientOptions(name)
		// Ours, non-streaming, through the trace pacer at a constant rate.
		s := constSchedule(n, rate, 16, o.tokens)
		var keep loadgen.SliceSink
		sum, err := loadgen.Replay(ctx, srv, s, nil, &keep, append(copts, loadgen.WithStream(false))...)
		if err != nil {
			return fmt.Errorf("bench-client: %s non-streaming run: %w", name, err)
		}
		if !sum.Complete {
			return fmt.Errorf("bench-client: %s non-streaming run: %s", name, sum.IncompleteReason)
		}
		var sends []time.Duration
		var tot time.Duration
		var e2es []float64 // ns, for the p99 (stats.NearestRank)
		for i := range keep.Records {
			r := &keep.Records[i]
			if r.State == loadgen.StateNotSent {
				continue
			}
			sends = append(sends, r.SentAt)
			if e2e, ok := r.E2E(); ok && r.State == loadgen.StateOK {
				tot += e2e
				e2es = append(e2es, float64(e2e))
			}
		}
		okN := len(e2es)
		cs := rep.client(name)
		p := pacingRow{OfferedRPS: rate, AchievedSendRPS: reportFloat(sendRate(sends)), BinMs: 10, LagP99Ms: msf(sum.ScheduleLagP99), DispatchLagP99Ms: msf(sum.DispatchLagP99)}
		p.RateErrorPct = (p.AchievedSendRPS/reportFloat(rate) - 1) * 100
		p.ExpectedPerBin = reportFloat(rate) / 100
		p.MinPerBin, p.MaxPerBin, p.FirstBin = sendBins(sends, 10*time.Millisecond)
		cs.Pacing = &p
		cs.OursSendRPS = p.AchievedSendRPS
		cs.OursSuccess = reportFloat(okN) / reportFloat(n)
		if okN > 0 { // else the latencies stay not measured (null), never 0
			cs.OursMeanMs = msf(tot / time.Duration(okN))
			slices.Sort(e2es)
			cs.OursP99Ms = msf(time.Duration(stats.NearestRank(e2es, 0.99)))
		}
		if m.Rate > 0 {
			cs.RateRatio = cs.OursSendRPS / reportFloat(m.Rate)
		}
		if rep.Vegeta.VegetaMeanMs > 0 {
			cs.MeanLatencyRatio = cs.OursMeanMs / rep.Vegeta.VegetaMeanMs
		}
	}
	fmt.Fprintf(log, "bench-client: vegeta comparison at %d req/s done\n", rate)
	return nil
}

// sendBins returns the min and max sends per bin over the full bins of the
// run, and the first bin's count (a start-up burst shows there).
func sendBins(sends []time.Duration, bin time.Duration) (lo, hi, first int) {
	if len(sends) == 0 {
		return 0, 0, 0
	}
	start, end := sends[0], sends[0]
	for _, s := range sends {
		start, end = min(start, s), max(end, s)
	}
	nb := int((end - start) / bin)
	if nb == 0 {
		return len(sends), len(sends), len(sends)
	}
	counts := make([]int, nb+1)
	for _, s := range sends {
		counts[int((s-start)/bin)]++
	}
	full := counts[:nb] // the last bin is partial
	lo, hi = full[0], full[0]
	for _, c := range full {
		lo, hi = min(lo, c), max(hi, c)
	}
	return lo, hi, full[0]
}

// replayResult is what a --replay-child prints.
type replayResult struct {
	PeakRSSMB  float64        `json:"peak_rss_mb"`
	States     map[string]int `json:"states"`
	FirstError string         `json:"first_error,omitempty"`
}

// firstError is a sink that keeps the first failed request's state and error.
type firstError struct{ msg string }

func (f *firstError) Add(r *loadgen.Record) error {
	if r.State != loadgen.StateOK && f.msg == "" {
		f.msg = fmt.Sprintf("request %d: %s: %s", r.RequestID, r.State, r.Error)
	}
	return nil
}
func (*firstError) Close() error { return nil }

// replayChild is the child mode of the long replay: one client in a fresh
// process, so its peak RSS is that client's alone.
func replayChild(ctx context.Context, o Options, out, log io.Writer) (err error) {
	copts, err := clientOptions(o.replayChild)
	if err != nil {
		return err
	}
	srv, err := startFastServer(ctx, o, 1, false)
	if err != nil {
		return err
	}
	defer closeServer(srv, &err)
	s := constSchedule(o.replayN, o.replayRate, 16, 1)
	// Records go where a real run sends them: a JSONL encoder (to io.Discard
	// here) and the summary's histograms; nothing is kept per request.
	fe := &firstError{}
	sum, err := loadgen.Replay(ctx, srv, s, nil, loadgen.MultiSink(loadgen.NewJSONLSink(io.Discard), fe), append(copts, loadgen.WithStream(false))...)
	if err != nil {
		return fmt.Errorf("bench-client: long replay: %w", err)
	}
	res := replayResult{PeakRSSMB: float64(peakRSSBytes()) / (1 << 20), States: map[string]int{}, FirstError: fe.msg}
	for st, c := range sum.States {
		res.States[string(st)] = c
	}
	fmt.Fprintf(log, "bench-client: %s replayed %d requests, peak RSS %.0f MB\n", o.replayChild, o.replayN, res.PeakRSSMB)
	return json.NewEncoder(out).Encode(res)
}

// benchLongReplay runs the long replay once per client, each in a child
// process of this binary (peak RSS is per process).
func benchLongReplay(ctx context.Context, o Options, rep *benchReport, log io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench-client: finding this binary for the replay child: %w", err)
	}
	rep.ReplayRequests, rep.ReplayRate = o.replayN, o.replayRate
	for _, name := range o.clients {
		args := []string{Command, "--replay-child", name, "--replay-requests", fmt.Sprint(o.replayN), "--replay-rate", fmt.Sprint(o.replayRate)}
		if o.inProcess {
			args = append(args, "--in-process")
		}
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Stderr = log
		b, err := cmd.Output()
		if ctx.Err() != nil {
			return context.Cause(ctx) // the child was stopped: not its whole replay
		}
		if err != nil {
			return fmt.Errorf("bench-client: %s replay child: %w", name, err)
		}
		var res replayResult
		if err := json.Unmarshal(b, &res); err != nil {
			return fmt.Errorf("bench-client: %s replay child printed %q: %w", name, clipString(string(b), 200), err)
		}
		cs := rep.client(name)
		cs.ReplayPeakRSSMB, cs.ReplayStates, cs.ReplayFirstErr = reportFloat(res.PeakRSSMB), res.States, res.FirstError
	}
	return nil
}

func clipString(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// notMeasuredText is what the table prints for a figure no stage set.
const notMeasuredText = "not measured"

// fmtFloat prints a report figure, or "not measured".
func fmtFloat(format string, v reportFloat) string {
	if !v.measured() {
		return notMeasuredText
	}
	return fmt.Sprintf(format, float64(v))
}

// Target verdicts of the summary lines: a target is met or not only on a
// measurement; an absent or empty one says so.
const (
	verdictMet         = "met"
	verdictNotMet      = "NOT met"
	verdictNotMeasured = "not measured"
)

// throughputTargetRPS and throughputTargetEventsPerS are the client's
// throughput target: both at schedule-lag p99 ≤ 1 ms with every request ok.
const (
	throughputTargetRPS        = 2000
	throughputTargetEventsPerS = 250000
)

// throughputVerdict is the throughput target for c: ≥ 2,000 req/s and
// ≥ 250,000 events/s at schedule-lag p99 ≤ 1 ms with every request ok. It is
// met when a swept rate ≥ 2,000 req/s qualified; NOT met only when the sweep
// finished and tried a rate ≥ 2,000 req/s, none qualifying; otherwise not
// measured: no streaming row for c, a sweep cut short, or every swept rate
// below 2,000 req/s (said with the highest one: `--rates 250` measures
// nothing about 2,000 req/s).
func throughputVerdict(r *benchReport, c *clientSummary) string {
	highest, swept := 0, false
	for _, s := range r.Stream {
		if s.Client == c.Client {
			highest, swept = max(highest, s.OfferedRPS), true
		}
	}
	switch {
	case !swept:
		return verdictNotMeasured
	case c.SustainedRPS != nil && *c.SustainedRPS >= throughputTargetRPS && c.SustainedEventsPerS != nil && *c.SustainedEventsPerS >= throughputTargetEventsPerS:
		return verdictMet
	case stageStatus(r, stageStreams) != stageDone:
		return verdictNotMeasured + " (the sweep was cut short before every rate)"
	case highest < throughputTargetRPS:
		return fmt.Sprintf("%s (highest rate swept: %d req/s)", verdictNotMeasured, highest)
	}
	return verdictNotMet
}

// stageStatus is the status of stage name in r ("" when r lists no such stage).
func stageStatus(r *benchReport, name string) string {
	for _, s := range r.Stages {
		if s.Name == name {
			return s.Status
		}
	}
	return ""
}

// memoryTargetBytes is the memory target per in-flight stream: ≤ 16 KiB of
// heap+stack (10,000 streams in 160 MB).
const memoryTargetBytes = 16 << 10

// memoryVerdict is the ≤ 16 KiB heap+stack per in-flight request target. It is
// judged only when all r.InFlight streams were seen open (fewer would
// understate the figure) and the figure is positive (holding streams open
// cannot free memory; zero or less is no measurement).
func memoryVerdict(r *benchReport, c *clientSummary) string {
	switch {
	case !c.HeapStackPerInFlight.measured():
		return verdictNotMeasured
	case r.InFlight < 1 || c.OpenStreams < r.InFlight:
		return fmt.Sprintf("%s (%d of %d streams seen open)", verdictNotMeasured, c.OpenStreams, r.InFlight)
	case c.HeapStackPerInFlight <= 0:
		return fmt.Sprintf("%s (%.0f B per stream is no measurement)", verdictNotMeasured, float64(c.HeapStackPerInFlight))
	case c.HeapStackPerInFlight <= memoryTargetBytes:
		return verdictMet
	}
	return verdictNotMet
}

// replayVerdict is the 1,000,000-request replay target under 500 MB RSS with
// every request ok.
func replayVerdict(r *benchReport, c *clientSummary) string {
	ok := c.ReplayStates[string(loadgen.StateOK)]
	switch {
	case c.ReplayStates == nil || !c.ReplayPeakRSSMB.measured() || c.ReplayPeakRSSMB <= 0:
		return verdictNotMeasured
	case ok != r.ReplayRequests:
		return fmt.Sprintf("%s (%d of %d requests ok)", verdictNotMet, ok, r.ReplayRequests)
	case c.ReplayPeakRSSMB < 500:
		return verdictMet
	}
	return verdictNotMet
}

// printIncomplete says which stages finished when the run did not.
func printIncomplete(out io.Writer, r *benchReport) {
	if r.Complete {
		return
	}
	fmt.Fprintf(out, "INCOMPLETE (%s): only the stages finished are reported, and the whole units of the one cut short — %s\n", r.IncompleteReason, stagesLine(r.Stages))
}

func printBenchTable(out io.Writer, r *benchReport) {
	printBenchHeader(out, r)
	fmt.Fprintln(out)
	printStreamTable(out, r)
	fmt.Fprintln(out)
	printSideBySide(out, r)
	printVegetaAndTargets(out, r)
	if r.ITL != nil {
		printITLTable(out, r.ITL)
	}
	if r.Sim != nil {
		printSimTable(out, r)
	}
	if r.HOL != nil {
		printHOLTable(out, r.HOL)
	}
	if !r.Complete {
		fmt.Fprintln(out)
		printIncomplete(out, r)
	}
}

// printBenchHeader prints the run's conditions (server, Go, CPUs, request
// shape, writes per event) and, for an incomplete run, which stages ran.
func printBenchHeader(out io.Writer, r *benchReport) {
	perWrite := "one write (one TCP segment) per token event"
	if r.EventsPerWrite > 1 {
		perWrite = fmt.Sprintf("server writes %d token events per write after the first (fewer TCP segments; the client still parses every event)", r.EventsPerWrite)
	}
	fmt.Fprintf(out, "transferlab bench-client — %s; server: %s; %s, %d CPUs, GOMAXPROCS %d; %d-token prompts, %d-token streams, server ITL %.3g ms, %s; %.3g s runs\n",
		r.Note, r.Server, r.GoVersion, r.NumCPU, r.GOMAXPROCS, simInputTokens, r.Tokens, float64(r.ITLMs), perWrite, float64(r.DurationS))
	printIncomplete(out, r)
}

// printStreamTable prints the streaming sweep against the fake server, one
// row per client and offered load.
func printStreamTable(out io.Writer, r *benchReport) {
	if len(r.Stream) == 0 {
		fmt.Fprintf(out, "streaming sweep: %s\n", notMeasuredText)
		return
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\toffered req/s\tsent req/s\tevents/s\tok\tlag p99 ms\tdispatch lag p99 ms\tclient-bound\tCPU ms/1k events\tcores used\tserver cores\tlag ≤ 1 ms & all ok\t")
	for _, s := range r.Stream {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d/%d\t%s\t%s\t%t\t%s\t%s\t%s\t%t\t\n", s.Client, s.OfferedRPS, fmtFloat("%.1f", s.AchievedSendRPS), fmtFloat("%.0f", s.EventsPerS),
			s.OK, s.Scheduled, fmtFloat("%.3f", s.LagP99Ms), fmtFloat("%.3f", s.DispatchLagP99Ms), s.ClientBound, fmtFloat("%.2f", s.CPUMsPer1kEvents),
			fmtFloat("%.2f", s.CPUUtilCores), fmtFloat("%.2f", s.ServerCores), s.Sustained)
	}
	_ = tw.Flush()
}

// sideBySide is the side-by-side table: one column per client, one row per
// figure.
type sideBySide struct {
	tw *tabwriter.Writer
	r  *benchReport
}

// row prints label and f of each client.
func (t sideBySide) row(label string, f func(c *clientSummary) string) {
	fmt.Fprintf(t.tw, "%s\t", label)
	for i := range t.r.Clients {
		fmt.Fprintf(t.tw, "%s\t", f(&t.r.Clients[i]))
	}
	fmt.Fprintln(t.tw)
}

// streamed reports whether c ran in the streaming sweep.
func (t sideBySide) streamed(c *clientSummary) bool {
	return slices.ContainsFunc(t.r.Stream, func(s streamRow) bool { return s.Client == c.Client })
}

// sweepInt is a rate the sweep found: not measured without a sweep, "none
// of the rates tried" when no rate qualified.
func (t sideBySide) sweepInt(c *clientSummary, v *int) string {
	switch {
	case !t.streamed(c):
		return notMeasuredText
	case v == nil:
		return "none of the rates tried"
	}
	return fmt.Sprint(*v)
}

// sweepNum is a figure at the sweep's highest sustained rate, as sweepInt.
func (t sideBySide) sweepNum(c *clientSummary, format string, v *reportFloat) string {
	switch {
	case !t.streamed(c):
		return notMeasuredText
	case v == nil:
		return "– (no rate qualified)"
	}
	return fmtFloat(format, *v)
}

// pacing is f of c's non-streaming pacing run, or not measured.
func pacing(f func(p *pacingRow) string) func(c *clientSummary) string {
	return func(c *clientSummary) string {
		if c.Pacing == nil {
			return notMeasuredText
		}
		return f(c.Pacing)
	}
}

// printSideBySide prints the clients side by side: the sweep's sustained
// rates, memory per in-flight stream, pacing and latency against vegeta, and
// the long replay.
func printSideBySide(out io.Writer, r *benchReport) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "side by side\t")
	for _, c := range r.Clients {
		fmt.Fprintf(tw, "%s\t", c.Client)
	}
	fmt.Fprintln(tw)
	t := sideBySide{tw: tw, r: r}
	t.sweepRows()
	t.memoryRows()
	t.pacingRows()
	t.replayRows()
	_ = tw.Flush()
}

func (t sideBySide) sweepRows() {
	t.row("highest req/s, schedule-lag p99 ≤ 1 ms, all ok", func(c *clientSummary) string { return t.sweepInt(c, c.SustainedRPS) })
	t.row("highest req/s, dispatch-lag p99 ≤ 1 ms, all ok", func(c *clientSummary) string { return t.sweepInt(c, c.DispatchSustainedRPS) })
	t.row("events/s at the highest req/s", func(c *clientSummary) string { return t.sweepNum(c, "%.0f", c.SustainedEventsPerS) })
	t.row("CPU ms per 1,000 events there", func(c *clientSummary) string { return t.sweepNum(c, "%.2f", c.SustainedCPUMsPer1kEvents) })
}

func (t sideBySide) memoryRows() {
	t.row(fmt.Sprintf("goroutines per in-flight stream (%d open)", t.r.InFlight), func(c *clientSummary) string { return fmtFloat("%.2f", c.GoroutinesPerInFlight) })
	t.row("streams seen open", func(c *clientSummary) string {
		if !c.HeapStackPerInFlight.measured() {
			return notMeasuredText
		}
		return fmt.Sprint(c.OpenStreams)
	})
	t.row("heap B per in-flight stream", func(c *clientSummary) string { return fmtFloat("%.0f", c.HeapPerInFlight) })
	t.row("stack B per in-flight stream", func(c *clientSummary) string { return fmtFloat("%.0f", c.StackPerInFlight) })
	t.row("heap+stack B per in-flight stream", func(c *clientSummary) string { return fmtFloat("%.0f", c.HeapStackPerInFlight) })
	t.row("RSS B per in-flight stream", func(c *clientSummary) string { return fmtFloat("%.0f", c.RSSPerInFlight) })
}

// pacingRows are the non-streaming run's pacing and latency, beside vegeta's.
func (t sideBySide) pacingRows() {
	vegetaRate := "--vegeta-rate"
	if t.r.Vegeta != nil {
		vegetaRate = fmt.Sprintf("%d req/s", t.r.Vegeta.RateRPS)
	}
	t.row(fmt.Sprintf("pacing at %s: sent req/s (error %%)", vegetaRate), pacing(func(p *pacingRow) string {
		return fmt.Sprintf("%s (%s %%)", fmtFloat("%.1f", p.AchievedSendRPS), fmtFloat("%+.2f", p.RateErrorPct))
	}))
	t.row("sends per 10 ms bin min/max/first", pacing(func(p *pacingRow) string { return fmt.Sprintf("%d/%d/%d", p.MinPerBin, p.MaxPerBin, p.FirstBin) }))
	t.row("non-streaming lag p99 ms (dispatch)", pacing(func(p *pacingRow) string {
		return fmt.Sprintf("%s (%s)", fmtFloat("%.3f", p.LagP99Ms), fmtFloat("%.3f", p.DispatchLagP99Ms))
	}))
	t.row("send rate / vegeta's", func(c *clientSummary) string { return fmtFloat("%.3f", c.RateRatio) })
	t.row("mean latency / vegeta's", func(c *clientSummary) string { return fmtFloat("%.3f", c.MeanLatencyRatio) })
	t.row("latency mean / p99 ms", func(c *clientSummary) string {
		if !c.OursMeanMs.measured() {
			return notMeasuredText
		}
		return fmt.Sprintf("%.3f / %s", float64(c.OursMeanMs), fmtFloat("%.3f", c.OursP99Ms))
	})
	t.row("success", func(c *clientSummary) string { return fmtFloat("%.3f", c.OursSuccess) })
}

// replayRows are the long replay's, when one was asked for.
func (t sideBySide) replayRows() {
	if t.r.ReplayRequests <= 0 {
		return
	}
	t.row(fmt.Sprintf("%d-request replay peak RSS MB", t.r.ReplayRequests), func(c *clientSummary) string {
		if c.ReplayStates == nil {
			return notMeasuredText
		}
		return fmtFloat("%.0f", c.ReplayPeakRSSMB)
	})
	t.row("replay requests ok", func(c *clientSummary) string {
		if c.ReplayStates == nil {
			return notMeasuredText
		}
		return fmt.Sprint(c.ReplayStates[string(loadgen.StateOK)])
	})
}

// printVegetaAndTargets prints vegeta's own figures and each client's
// verdict on the targets.
func printVegetaAndTargets(out io.Writer, r *benchReport) {
	if v := r.Vegeta; v != nil {
		fmt.Fprintf(out, "\nvegeta at %d req/s, same non-streaming endpoint: sent %s req/s, latency mean %s ms, p99 %s ms, success %s\n",
			v.RateRPS, fmtFloat("%.1f", v.VegetaSendRPS), fmtFloat("%.3f", v.VegetaMeanMs), fmtFloat("%.3f", v.VegetaP99Ms), fmtFloat("%.3f", v.VegetaSuccess))
	} else {
		fmt.Fprintf(out, "\nvegeta comparison: %s\n", notMeasuredText)
	}
	for i := range r.Clients {
		c := &r.Clients[i]
		fmt.Fprintf(out, "targets, %s: ≥ 2,000 req/s and ≥ 250,000 events/s at lag p99 ≤ 1 ms: %s; ≤ 16 KiB per in-flight request: %s",
			c.Client, throughputVerdict(r, c), memoryVerdict(r, c))
		if r.ReplayRequests >= 1000000 {
			fmt.Fprintf(out, "; 1,000,000-request replay under 500 MB RSS: %s", replayVerdict(r, c))
		}
		fmt.Fprintln(out)
	}
}
