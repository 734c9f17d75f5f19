package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/loadgen/loadgentest"
	"github.com/transferlab/transferlab/traces"
)

// benchClientOpts are bench-client's flags.
type benchClientOpts struct {
	json        bool
	rates       []int
	duration    time.Duration
	tokens      int
	itl         time.Duration
	inFlight    int
	vegetaRate  int
	replayN     int
	replayRate  int
	inProcess   bool
	serve       string // hidden: run only the fast server (child mode)
	serveHoldMs int    // hidden: hold streams after the first token
}

// newBenchClientCmd measures the instrument itself (issue 5, item 5).
func newBenchClientCmd() *cobra.Command {
	var o benchClientOpts
	cmd := &cobra.Command{
		Use:   "bench-client",
		Short: "Measure the load generator's own limits against a fast fake server (not a lab result)",
		Long: `bench-client runs transferlab's client against a minimal fast OpenAI-compatible
SSE server (loadgen/loadgentest; by default a child process of this binary, so
the client's CPU and memory are measured alone; --in-process to share the
process) and reports:
  - per offered load: achieved send rate, SSE token events/s, schedule lag p99,
    client CPU time per 1,000 events, and whether lag p99 stayed ≤ 1 ms;
  - the highest rate sustained with lag p99 ≤ 1 ms and every request ok;
  - memory per in-flight streaming request (heap+stack, and RSS);
  - pacing at the vegeta comparison rate: send-rate error and sends per 10 ms bin;
  - vegeta's own attacker vs our client on the same non-streaming endpoint,
    with the ratios;
  - optionally a long non-streaming replay's peak RSS (--replay-requests).
Figures describe this machine's client, never a server under test.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.serve != "" {
				return serveFast(cmd.Context(), o, cmd.OutOrStdout(), cmd.InOrStdin())
			}
			return runBenchClient(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print JSON instead of a table")
	f.IntSliceVar(&o.rates, "rates", []int{250, 500, 1000, 2000, 3000}, "offered loads to sweep for streaming (req/s)")
	f.DurationVar(&o.duration, "duration", 3*time.Second, "length of each measured run")
	f.IntVar(&o.tokens, "tokens", 128, "tokens per streamed response (one SSE event each)")
	f.DurationVar(&o.itl, "itl", 0, "server gap between token events (0: back to back, each flushed)")
	f.IntVar(&o.inFlight, "in-flight", 2000, "streams held open for the memory-per-request measurement")
	f.IntVar(&o.vegetaRate, "vegeta-rate", 2000, "rate of the vegeta comparison and pacing check (req/s)")
	f.IntVar(&o.replayN, "replay-requests", 0, "also replay this many non-streaming requests and report peak RSS (0: skip)")
	f.IntVar(&o.replayRate, "replay-rate", 10000, "rate of the --replay-requests run (req/s)")
	f.BoolVar(&o.inProcess, "in-process", false, "run the fast server inside this process (CPU and memory then include it)")
	f.StringVar(&o.serve, "serve-fast", "", "run only the fast server on this address (used by bench-client itself)")
	f.IntVar(&o.serveHoldMs, "serve-hold", 0, "with --serve-fast: hold streams open after the first token until stdin closes (1) or not (0)")
	_ = f.MarkHidden("serve-fast")
	_ = f.MarkHidden("serve-hold")
	return cmd
}

// serveFast is the child mode: serve, print the base URL, stop when stdin closes.
func serveFast(ctx context.Context, o benchClientOpts, out io.Writer, in io.Reader) error {
	cfg := loadgentest.Config{ITL: o.itl, Tokens: o.tokens}
	hold := make(chan struct{})
	if o.serveHoldMs != 0 {
		cfg.Hold = hold
	}
	srv, err := loadgentest.Start(o.serve, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, srv.BaseURL())
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, in); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	close(hold)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Close(sctx)
}

// fastServer is a running fast server (child process or in-process).
type fastServer struct {
	url   string
	close func() error
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

func startFastServer(ctx context.Context, o benchClientOpts, tokens int, hold bool) (*fastServer, error) {
	if o.inProcess {
		cfg := loadgentest.Config{ITL: o.itl, Tokens: tokens}
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
	args := []string{"bench-client", "--serve-fast", "127.0.0.1:0", "--tokens", fmt.Sprint(tokens), "--itl", o.itl.String()}
	if hold {
		args = append(args, "--serve-hold", "1")
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench-client: starting the server child: %w", err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("bench-client: server child gave no URL: %w", err)
	}
	return &fastServer{url: strings.TrimSpace(line), close: func() error {
		_ = stdin.Close()
		return cmd.Wait()
	}}, nil
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
}

func (c *eventCounter) Add(r *loadgen.Record) error {
	c.events += len(r.Events)
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
	OfferedRPS       int     `json:"offered_rps"`
	AchievedSendRPS  float64 `json:"achieved_send_rps"`
	EventsPerS       float64 `json:"events_per_s"`
	OK               int     `json:"ok"`
	Scheduled        int     `json:"scheduled"`
	LagP99Ms         float64 `json:"schedule_lag_p99_ms"`
	DispatchLagP99Ms float64 `json:"dispatch_lag_p99_ms"`
	ClientBound      bool    `json:"client_bound"`
	CPUMsPer1kEvents float64 `json:"cpu_ms_per_1k_events"`
	CPUUtilCores     float64 `json:"cpu_cores_used"`
	Sustained        bool    `json:"sustained"`
	FirstError       string  `json:"first_error,omitempty"`
}

type pacingRow struct {
	OfferedRPS       int     `json:"offered_rps"`
	AchievedSendRPS  float64 `json:"achieved_send_rps"`
	RateErrorPct     float64 `json:"rate_error_pct"`
	BinMs            int     `json:"bin_ms"`
	ExpectedPerBin   float64 `json:"expected_per_bin"`
	MinPerBin        int     `json:"min_per_bin"`
	MaxPerBin        int     `json:"max_per_bin"`
	FirstBin         int     `json:"first_bin"`
	LagP99Ms         float64 `json:"schedule_lag_p99_ms"`
	DispatchLagP99Ms float64 `json:"dispatch_lag_p99_ms"`
}

type vegetaRow struct {
	RateRPS          int     `json:"rate_rps"`
	OursSendRPS      float64 `json:"ours_send_rps"`
	VegetaSendRPS    float64 `json:"vegeta_send_rps"`
	OursMeanMs       float64 `json:"ours_mean_latency_ms"`
	VegetaMeanMs     float64 `json:"vegeta_mean_latency_ms"`
	OursP99Ms        float64 `json:"ours_p99_latency_ms"`
	VegetaP99Ms      float64 `json:"vegeta_p99_latency_ms"`
	OursSuccess      float64 `json:"ours_success"`
	VegetaSuccess    float64 `json:"vegeta_success"`
	RateRatio        float64 `json:"rate_ratio_ours_over_vegeta"`
	MeanLatencyRatio float64 `json:"mean_latency_ratio_ours_over_vegeta"`
}

type benchReport struct {
	Note                 string         `json:"note"`
	Server               string         `json:"server"`
	GoVersion            string         `json:"go_version"`
	NumCPU               int            `json:"num_cpu"`
	Tokens               int            `json:"tokens_per_stream"`
	ITLMs                float64        `json:"server_itl_ms"`
	Stream               []streamRow    `json:"stream"`
	SustainedRPS         int            `json:"sustained_rps"`
	SustainedEventsPerS  float64        `json:"sustained_events_per_s"`
	InFlight             int            `json:"in_flight"`
	HeapStackPerInFlight float64        `json:"heap_stack_bytes_per_in_flight"`
	RSSPerInFlight       float64        `json:"rss_bytes_per_in_flight"`
	Pacing               pacingRow      `json:"pacing"`
	Vegeta               vegetaRow      `json:"vegeta"`
	ReplayRequests       int            `json:"replay_requests,omitempty"`
	ReplayPeakRSSMB      float64        `json:"replay_peak_rss_mb,omitempty"`
	ReplayStates         map[string]int `json:"replay_states,omitempty"`
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func runBenchClient(ctx context.Context, o benchClientOpts, out, log io.Writer) error {
	rep := benchReport{
		Note:      "instrument self-test against a fake server; not a lab result",
		Server:    "child process (client measured alone)",
		GoVersion: runtime.Version(),
		NumCPU:    runtime.NumCPU(),
		Tokens:    o.tokens,
		ITLMs:     msf(o.itl),
	}
	if o.inProcess {
		rep.Server = "in-process (CPU and memory include the server)"
	}
	if err := benchStreams(ctx, o, &rep, log); err != nil {
		return err
	}
	if err := benchMemory(ctx, o, &rep, log); err != nil {
		return err
	}
	if err := benchVegeta(ctx, o, &rep, log); err != nil {
		return err
	}
	if o.replayN > 0 {
		if err := benchLongReplay(ctx, o, &rep, log); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return &exitError{code: 130, err: fmt.Errorf("bench-client interrupted: %w", err)}
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printBenchTable(out, &rep)
	return nil
}

func benchStreams(ctx context.Context, o benchClientOpts, rep *benchReport, log io.Writer) error {
	srv, err := startFastServer(ctx, o, o.tokens, false)
	if err != nil {
		return err
	}
	defer srv.close()
	for _, rate := range o.rates {
		if ctx.Err() != nil {
			return nil
		}
		n := int(float64(rate) * o.duration.Seconds())
		s := constSchedule(n, rate, 16, o.tokens)
		cnt := &eventCounter{}
		runtime.GC()
		cpu0, t0 := cpuTime(), time.Now()
		sum, err := loadgen.Replay(ctx, srv, s, nil, cnt, loadgen.WithOfferedLoad(float64(rate)))
		cpu, wall := cpuTime()-cpu0, time.Since(t0)
		if err != nil {
			return fmt.Errorf("bench-client: streaming at %d req/s: %w", rate, err)
		}
		row := streamRow{OfferedRPS: rate, OK: sum.States[loadgen.StateOK], Scheduled: n, LagP99Ms: msf(sum.ScheduleLagP99),
			DispatchLagP99Ms: msf(sum.DispatchLagP99), ClientBound: sum.ClientBound, FirstError: cnt.firstErr}
		row.AchievedSendRPS = sendRate(cnt.sends)
		row.EventsPerS = float64(cnt.events) / wall.Seconds()
		if cnt.events > 0 {
			row.CPUMsPer1kEvents = msf(cpu) / float64(cnt.events) * 1000
		}
		row.CPUUtilCores = cpu.Seconds() / wall.Seconds()
		row.Sustained = sum.ScheduleLagP99 <= time.Millisecond && row.OK == n
		if row.Sustained && rate > rep.SustainedRPS {
			rep.SustainedRPS, rep.SustainedEventsPerS = rate, row.EventsPerS
		}
		rep.Stream = append(rep.Stream, row)
		fmt.Fprintf(log, "bench-client: streaming %d req/s: %d/%d ok, %.0f events/s, lag p99 %.3f ms\n", rate, row.OK, n, row.EventsPerS, row.LagP99Ms)
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

func benchMemory(ctx context.Context, o benchClientOpts, rep *benchReport, log io.Writer) error {
	srv, err := startFastServer(ctx, o, 2, true)
	if err != nil {
		return err
	}
	n := o.inFlight
	s := constSchedule(n, 100000, 16, 2)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rss0 := rssBytes()
	// Streams get their first token and are then held open by the server;
	// the run is cancelled once they are all in flight.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first := &firstEventProbe{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = loadgen.Replay(rctx, srv, s, nil, first, loadgen.WithTimeout(time.Minute))
	}()
	deadline := time.Now().Add(30 * time.Second)
	var at runtime.MemStats
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
		if first.openStreams(srv.url) >= n {
			break
		}
	}
	time.Sleep(200 * time.Millisecond)
	runtime.GC()
	runtime.ReadMemStats(&at)
	rss1 := rssBytes()
	cancel()
	<-done
	if err := srv.close(); err != nil {
		fmt.Fprintf(log, "bench-client: server child: %v\n", err)
	}
	rep.InFlight = n
	rep.HeapStackPerInFlight = float64(int64(at.HeapInuse+at.StackInuse)-int64(before.HeapInuse+before.StackInuse)) / float64(n)
	rep.RSSPerInFlight = float64(rss1-rss0) / float64(n)
	fmt.Fprintf(log, "bench-client: %d streams in flight: %.0f B heap+stack each\n", n, rep.HeapStackPerInFlight)
	return nil
}

// firstEventProbe counts open streams by asking nothing of the records: the
// server is held, so records arrive only at cancellation; openStreams polls
// the process's established connections instead.
type firstEventProbe struct{}

func (*firstEventProbe) Add(*loadgen.Record) error { return nil }
func (*firstEventProbe) Close() error              { return nil }

// openStreams counts this process's established TCP connections to url's port.
func (*firstEventProbe) openStreams(url string) int {
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

func benchVegeta(ctx context.Context, o benchClientOpts, rep *benchReport, log io.Writer) error {
	srv, err := startFastServer(ctx, o, o.tokens, false)
	if err != nil {
		return err
	}
	defer srv.close()
	rate := o.vegetaRate
	n := int(float64(rate) * o.duration.Seconds())
	// Ours, non-streaming, through the trace pacer at a constant rate.
	s := constSchedule(n, rate, 16, o.tokens)
	var keep loadgen.SliceSink
	sum, err := loadgen.Replay(ctx, srv, s, nil, &keep, loadgen.WithStream(false))
	if err != nil {
		return fmt.Errorf("bench-client: our non-streaming run: %w", err)
	}
	var sends []time.Duration
	var lat []time.Duration
	okN := 0
	for i := range keep.Records {
		r := &keep.Records[i]
		if r.State == loadgen.StateNotSent {
			continue
		}
		sends = append(sends, r.SentAt)
		if e2e, ok := r.E2E(); ok && r.State == loadgen.StateOK {
			lat = append(lat, e2e)
			okN++
		}
	}
	p := pacingRow{OfferedRPS: rate, AchievedSendRPS: sendRate(sends), BinMs: 10, LagP99Ms: msf(sum.ScheduleLagP99), DispatchLagP99Ms: msf(sum.DispatchLagP99)}
	p.RateErrorPct = (p.AchievedSendRPS/float64(rate) - 1) * 100
	p.ExpectedPerBin = float64(rate) / 100
	p.MinPerBin, p.MaxPerBin, p.FirstBin = sendBins(sends, 10*time.Millisecond)
	rep.Pacing = p

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
	v := vegetaRow{RateRPS: rate, OursSendRPS: p.AchievedSendRPS, VegetaSendRPS: m.Rate,
		VegetaMeanMs: msf(m.Latencies.Mean), VegetaP99Ms: msf(m.Latencies.P99), VegetaSuccess: m.Success}
	if len(lat) > 0 {
		var tot time.Duration
		for _, l := range lat {
			tot += l
		}
		v.OursMeanMs = msf(tot / time.Duration(len(lat)))
		v.OursP99Ms = msf(loadgen.QuantileDuration(sum.Hist.E2E, 99))
		v.OursSuccess = float64(okN) / float64(n)
	}
	if v.VegetaSendRPS > 0 {
		v.RateRatio = v.OursSendRPS / v.VegetaSendRPS
	}
	if v.VegetaMeanMs > 0 {
		v.MeanLatencyRatio = v.OursMeanMs / v.VegetaMeanMs
	}
	rep.Vegeta = v
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

func benchLongReplay(ctx context.Context, o benchClientOpts, rep *benchReport, log io.Writer) error {
	srv, err := startFastServer(ctx, o, 1, false)
	if err != nil {
		return err
	}
	defer srv.close()
	s := constSchedule(o.replayN, o.replayRate, 16, 1)
	// Records go where a real run sends them: a JSONL encoder (to io.Discard
	// here) and the summary's histograms; nothing is kept per request.
	sum, err := loadgen.Replay(ctx, srv, s, nil, loadgen.NewJSONLSink(io.Discard), loadgen.WithStream(false))
	if err != nil {
		return fmt.Errorf("bench-client: long replay: %w", err)
	}
	rep.ReplayRequests = o.replayN
	rep.ReplayPeakRSSMB = float64(peakRSSBytes()) / (1 << 20)
	rep.ReplayStates = map[string]int{}
	for st, c := range sum.States {
		rep.ReplayStates[string(st)] = c
	}
	fmt.Fprintf(log, "bench-client: replayed %d requests, peak RSS %.0f MB\n", o.replayN, rep.ReplayPeakRSSMB)
	return nil
}

func printBenchTable(out io.Writer, r *benchReport) {
	fmt.Fprintf(out, "transferlab bench-client — %s; server: %s; %s, %d CPUs; %d-token streams, server ITL %.3g ms\n\n",
		r.Note, r.Server, r.GoVersion, r.NumCPU, r.Tokens, r.ITLMs)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "offered req/s\tsent req/s\tevents/s\tok\tlag p99 ms\tdispatch lag p99 ms\tclient-bound\tCPU ms/1k events\tcores used\tlag ≤ 1 ms & all ok\t")
	for _, s := range r.Stream {
		fmt.Fprintf(tw, "%d\t%.1f\t%.0f\t%d/%d\t%.3f\t%.3f\t%t\t%.1f\t%.2f\t%t\t\n", s.OfferedRPS, s.AchievedSendRPS, s.EventsPerS, s.OK, s.Scheduled,
			s.LagP99Ms, s.DispatchLagP99Ms, s.ClientBound, s.CPUMsPer1kEvents, s.CPUUtilCores, s.Sustained)
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "\nsustained (lag p99 ≤ 1 ms, all ok): %d req/s, %.0f events/s\n", r.SustainedRPS, r.SustainedEventsPerS)
	fmt.Fprintf(out, "memory per in-flight stream (%d held open): %.0f B heap+stack, %.0f B RSS\n", r.InFlight, r.HeapStackPerInFlight, r.RSSPerInFlight)
	p := r.Pacing
	fmt.Fprintf(out, "pacing at %d req/s (non-streaming): sent %.1f req/s (%+.2f %%), per %d ms bin min %d / max %d (expected %.1f), first bin %d, lag p99 %.3f ms (dispatch %.3f ms)\n",
		p.OfferedRPS, p.AchievedSendRPS, p.RateErrorPct, p.BinMs, p.MinPerBin, p.MaxPerBin, p.ExpectedPerBin, p.FirstBin, p.LagP99Ms, p.DispatchLagP99Ms)
	v := r.Vegeta
	fmt.Fprintf(out, "vegeta vs ours at %d req/s, same non-streaming endpoint: send rate %.1f vs %.1f (ours/vegeta %.3f), mean latency %.3f vs %.3f ms (ratio %.3f), p99 %.3f vs %.3f ms, success %.3f vs %.3f\n",
		v.RateRPS, v.VegetaSendRPS, v.OursSendRPS, v.RateRatio, v.VegetaMeanMs, v.OursMeanMs, v.MeanLatencyRatio, v.VegetaP99Ms, v.OursP99Ms, v.VegetaSuccess, v.OursSuccess)
	if r.ReplayRequests > 0 {
		fmt.Fprintf(out, "long replay: %d non-streaming requests, peak RSS %.0f MB, states %v\n", r.ReplayRequests, r.ReplayPeakRSSMB, r.ReplayStates)
	}
	met := map[bool]string{true: "met", false: "NOT met"}
	fmt.Fprintf(out, "\ntargets (issue 5): ≥ 2,000 req/s and ≥ 250,000 events/s at lag p99 ≤ 1 ms: %s; ≤ 4 KiB per in-flight request: %s",
		met[r.SustainedRPS >= 2000 && r.SustainedEventsPerS >= 250000], met[r.HeapStackPerInFlight <= 4096])
	if r.ReplayRequests >= 1000000 {
		fmt.Fprintf(out, "; 1,000,000-request replay under 500 MB RSS: %s", met[r.ReplayPeakRSSMB < 500])
	}
	fmt.Fprintln(out)
}
