package clientbench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/sim"
)

// The realistic-server sweep's request shape: 32-token prompts, 128-token
// streams, one token event per simulator step.
const (
	simInputTokens  = 32
	simOutputTokens = 128
)

// simRow is one client at one offered load against serve-sim.
type simRow struct {
	Client     string `json:"client"`
	OfferedRPS int    `json:"offered_rps"`
	OK         int    `json:"ok"`
	Scheduled  int    `json:"scheduled"`
	// LagP99Ms and DispatchLagP99Ms are the run's schedule- and dispatch-lag
	// p99 (loadgen.Summary), ms.
	LagP99Ms         reportFloat `json:"schedule_lag_p99_ms"`
	DispatchLagP99Ms reportFloat `json:"dispatch_lag_p99_ms"`
	// LatePct is the share of sent requests whose schedule lag exceeded the
	// 1 ms lag budget (Summary.ScheduleLate of Summary.MeasuredSent), %.
	LatePct      reportFloat `json:"late_over_1ms_pct"`
	EventsPerS   reportFloat `json:"events_per_s"`
	CPUUtilCores reportFloat `json:"cpu_cores_used"`
	// ITLError and TTFTError compare each ok request's measured gaps with the
	// simulator's truth (as the ITL-accuracy check).
	ITLError           errStats `json:"itl_error"`
	TTFTError          errStats `json:"ttft_error"`
	EventCountMismatch int      `json:"event_count_mismatch"`
	// ServerCores is the simulator child's CPU time over the run's wall
	// time, cores (null when unreadable).
	ServerCores reportFloat `json:"server_cores_used"`
	// ServerWriteLag is, per token of every request the simulator saw, the
	// time from the end of the engine step that generated it to the flush of
	// its event (truth: token_flushed_ns − token_generated_ns, ≥ 0), µs: how
	// far the server's own writing fell behind its engine, which no client
	// causes while the socket buffers have room (a 128-token stream is
	// ~20 KB).
	ServerWriteLag errStats `json:"server_write_lag"`
	// ServerQueueDelay is, per request the simulator admitted, admission
	// minus arrival (truth: admitted_ns − arrived_ns), µs: its engine's queue,
	// which grows once the offered load passes the engine's modelled capacity.
	ServerQueueDelay errStats `json:"server_queue_delay"`
	// Sustained is the criterion both servers share (sustained): schedule-lag
	// p99 ≤ 1 ms and every request ok.
	Sustained bool `json:"sustained"`
	// StampsWithin is whether the ITL error p99 against the simulator's
	// truth is at most the section's StampAccuracyUs (stampsWithin).
	StampsWithin bool   `json:"stamps_within_accuracy"`
	FirstError   string `json:"first_error,omitempty"`
}

// simSection is the sweep against serve-sim, a streaming server whose
// engine steps flush one token to every running stream at once.
type simSection struct {
	Server       string   `json:"server"`
	Config       string   `json:"config"`
	Overrides    []string `json:"overrides"`
	InputTokens  int      `json:"input_tokens"`
	OutputTokens int      `json:"output_tokens"`
	DurationS    float64  `json:"duration_s"`
	Rows         []simRow `json:"rows"`
	// StampAccuracyUs is the client's stated timestamp accuracy, µs
	// (--sim-stamp-accuracy): a row's stamps are within it when its ITL
	// error p99 against the simulator's truth is at most this.
	StampAccuracyUs float64 `json:"stamp_accuracy_us"`
	// SustainedRPS is, per client, the highest offered load sustained by the
	// criterion the fake server's sweep uses too: schedule-lag p99 ≤ 1 ms
	// and every request ok (absent: none).
	SustainedRPS map[string]int `json:"sustained_rps"`
	// StampsHeldRPS is, per client, the highest offered load that was
	// sustained with its stamps within StampAccuracyUs (absent: none).
	StampsHeldRPS map[string]int `json:"stamps_held_rps"`
}

// defaultStampAccuracy is the client's stated timestamp accuracy: ITL error
// p99 against serve-sim's truth at 200 req/s on 2 pinned device cores
// (loadgen/README.md, results/bench-client-2026-12-01).
const defaultStampAccuracy = 450 * time.Microsecond

// add appends row and raises its client's sustained rate, and the rate up
// to which its stamps held, to row's load where row qualifies.
func (sec *simSection) add(row simRow) {
	sec.Rows = append(sec.Rows, row)
	if row.Sustained && row.OfferedRPS > sec.SustainedRPS[row.Client] {
		sec.SustainedRPS[row.Client] = row.OfferedRPS
	}
	if row.Sustained && row.StampsWithin && row.OfferedRPS > sec.StampsHeldRPS[row.Client] {
		sec.StampsHeldRPS[row.Client] = row.OfferedRPS
	}
}

// stampsWithin reports whether the ITL error p99 against the simulator's
// truth is at most accuracy (false when no gap was compared). It is reported
// beside the sustained rate, not folded into it: a client whose reads fall
// behind still sends on time, so the sends alone do not say its stamps hold.
func stampsWithin(itlErr errStats, accuracy time.Duration) bool {
	return itlErr.P99Us != nil && *itlErr.P99Us <= float64(accuracy.Microseconds())
}

// serverQueueDelay is, over every admitted request in truth, its admission
// minus its arrival.
func serverQueueDelay(truth map[string]sim.TruthLine) errStats {
	var d []time.Duration
	for _, t := range truth {
		if t.AdmittedNs != nil {
			d = append(d, time.Duration(*t.AdmittedNs-t.ArrivedNs))
		}
	}
	return newErrStats(d)
}

// serverWriteLag is, over every token of every request in truth, the flush
// of its event minus the end of the step that generated it.
func serverWriteLag(truth map[string]sim.TruthLine) errStats {
	var lag []time.Duration
	for _, t := range truth {
		for k := range min(len(t.TokenGeneratedNs), len(t.TokenFlushedNs)) {
			lag = append(lag, time.Duration(t.TokenFlushedNs[k]-t.TokenGeneratedNs[k]))
		}
	}
	return newErrStats(lag)
}

// holRow is one client's head-of-line figures: token gaps of the streams
// without a long line, against the server's fixed gap.
type holRow struct {
	Client string `json:"client"`
	// Line is the long line's kind: holLineComment or holLineData.
	Line      string `json:"line"`
	OK        int    `json:"ok"`
	Scheduled int    `json:"scheduled"`
	// LongOK is how many of the streams carrying the long line ended ok.
	LongOK int `json:"long_ok"`
	Long   int `json:"long"`
	// GapError is |measured ITL − server ITL| over the other streams' gaps
	// (it includes the server's own timer jitter, so it bounds the delay
	// the long lines caused from above).
	GapError errStats `json:"gap_error"`
	// GapErrorDuring and GapErrorApart split GapError's gaps in one run:
	// those that overlap some long line's time on the wire and parse (its
	// stream's first token event to the next token event after the line:
	// the second for a comment, the third for a data line, which is itself
	// the second) and those that overlap none. Both carry the
	// same server's timer jitter; what Apart lacks is the long lines (the
	// client reading them and the server writing them), so During − Apart is
	// what the long lines cost the other streams' stamps.
	GapErrorDuring errStats `json:"gap_error_during_long"`
	GapErrorApart  errStats `json:"gap_error_apart"`
}

// holSection is the head-of-line check: every LongEvery-th request's stream
// carries one SSE line of LongBytes right after its first token, per kind
// in Lines: a comment line, or a data event (a completion chunk whose text
// fills it, carrying one token).
type holSection struct {
	RateRPS   int      `json:"rate_rps"`
	DurationS float64  `json:"duration_s"`
	Tokens    int      `json:"tokens"`
	ITLMs     float64  `json:"server_itl_ms"`
	LongEvery int      `json:"long_line_every"`
	LongBytes int      `json:"long_line_bytes"`
	Lines     []string `json:"long_line_kinds"`
	Rows      []holRow `json:"rows"`
}

// startSimChild starts a serve-sim child with the sweep's config, pinned to
// o.serverCPUs when given, profiled when o.serverCPUProfile is set (the
// profile named after rate, the run's offered load).
func startSimChild(ctx context.Context, o Options, rate int) (*fastServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench-client: finding this binary for the simulator child: %w", err)
	}
	args := []string{Command, "--serve-sim", "127.0.0.1:0", "--serve-sim-sweep", "--sim-speedup", fmt.Sprint(o.simSpeedup)}
	if o.simConfig != "" {
		args = append(args, "--sim-config", o.simConfig)
	}
	if len(o.serverCPUs) > 0 {
		args = append(args, "--server-cpus", intList(o.serverCPUs))
	}
	if o.serverCPUProfile != "" {
		args = append(args, "--cpuprofile", fmt.Sprintf("%s-%d.prof", o.serverCPUProfile, rate))
	}
	return startChild(ctx, exe, args)
}

// serveSim is the simulator child mode: the sweep's config with
// --serve-sim-sweep, else the default one; pinned to --server-cpus when
// given; print the base URL, serve until in closes (the parent is done) or
// ctx ends, then close the simulator.
func serveSim(ctx context.Context, o Options, out io.Writer, in io.Reader) error {
	cfg := sim.DefaultConfig()
	if o.serveSimSweep {
		var err error
		if cfg, err = sweepSimConfig(o); err != nil {
			return err
		}
	}
	if len(o.serverCPUs) > 0 {
		if _, err := pinProcess(o.serverCPUs); err != nil {
			return fmt.Errorf("bench-client: flag --server-cpus %s: %w", intList(o.serverCPUs), err)
		}
	}
	stop, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	srv, err := sim.New(cfg)
	if err != nil {
		return fmt.Errorf("bench-client: simulator: %w", err)
	}
	if err := srv.Start(o.serveSim); err != nil {
		_ = srv.Close(context.Background())
		return fmt.Errorf("bench-client: simulator: %w", err)
	}
	return srv.ServeChild(ctx, out, in)
}

// sweepSimConfig is the sweep's simulator config: --sim-config (sim.LoadConfig),
// else the default one with benchFastConfig's limits; every op --sim-speedup ×
// faster.
func sweepSimConfig(o Options) (sim.Config, error) {
	cfg, err := sim.LoadConfig(o.simConfig)
	if err != nil {
		return cfg, fmt.Errorf("bench-client: flag --sim-config: %w", err)
	}
	if o.simConfig == "" {
		benchFastConfig(&cfg)
	}
	if o.simSpeedup != 1 {
		for _, op := range sim.OpNames() {
			cfg.SetOverride(op, o.simSpeedup)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("bench-client: simulator config: %w", err)
	}
	return cfg, nil
}

// benchFastConfig raises cfg's batch limits and truth capacity so that, with
// every op 16× faster (--sim-speedup 16), 2,000 req/s of 32-token prompts and
// 128-token streams stay below saturation (the default limits saturate at
// ~156 req/s for that shape) and a 10 s run's truth is kept whole.
func benchFastConfig(cfg *sim.Config) {
	cfg.Scheduler.MaxNumSeqs = 8192
	cfg.Scheduler.MaxBatchTokens = 16384
	cfg.TruthCapacity = 65536
}

// simOverrides is --override OP=speedup for every simulator op (none when
// the speed-up is 1).
func simOverrides(o Options) []string {
	if o.simSpeedup == 1 {
		return nil
	}
	var out []string
	for _, op := range sim.OpNames() {
		out = append(out, fmt.Sprintf("%s=%g", op, o.simSpeedup))
	}
	return out
}

// intList is cpus as "a,b,c".
func intList(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// benchSim sweeps o.simRates against serve-sim, each client in turn at each
// load, a fresh simulator per run (its truth export then holds that run
// only).
func benchSim(ctx context.Context, o Options, rep *benchReport, log io.Writer) error {
	sec := &simSection{Server: "serve-sim child process per run", Config: o.simConfig, Overrides: simOverrides(o),
		InputTokens: simInputTokens, OutputTokens: simOutputTokens, DurationS: o.simDuration.Seconds(),
		StampAccuracyUs: float64(o.stampAccuracy.Microseconds()), SustainedRPS: map[string]int{}, StampsHeldRPS: map[string]int{}}
	if sec.Config == "" {
		sec.Config = "default with max_num_seqs 8192, max_batch_tokens 16384, truth_capacity 65536"
	}
	if len(o.serverCPUs) > 0 {
		sec.Server += " pinned to CPUs " + intList(o.serverCPUs)
	}
	rep.Sim = sec
	for _, rate := range o.simRates {
		for _, name := range o.clients {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			row, err := benchSimOne(ctx, o, name, rate)
			if err != nil {
				return err
			}
			sec.add(row)
			fmt.Fprintf(log, "bench-client: %s vs serve-sim %d req/s: %d/%d ok, lag p99 %.3f ms (%.1f %% > 1 ms), ITL err p50/p99 %s/%s µs, %.2f cores; server %.2f cores, write lag p99 %s µs, queue p99 %s ms\n",
				name, rate, row.OK, row.Scheduled, row.LagP99Ms, row.LatePct, fmtUs(row.ITLError.P50Us), fmtUs(row.ITLError.P99Us), row.CPUUtilCores,
				row.ServerCores, fmtUs(row.ServerWriteLag.P99Us), fmtMsFromUs(row.ServerQueueDelay.P99Us))
		}
	}
	return nil
}

func benchSimOne(ctx context.Context, o Options, name string, rate int) (row simRow, err error) {
	row = simRow{Client: name, OfferedRPS: rate}
	copts, err := clientOptions(name)
	if err != nil {
		return row, err
	}
	srv, err := startSimChild(ctx, o, rate)
	if err != nil {
		return row, err
	}
	defer closeServer(srv, &err)
	n := int(float64(rate) * o.simDuration.Seconds())
	s := constSchedule(n, rate, simInputTokens, simOutputTokens)
	var keep loadgen.SliceSink
	runtime.GC()
	scpu0, sok0 := srv.cpu()
	cpu0, t0 := cpuTime(), time.Now()
	sum, err := loadgen.Replay(ctx, srv, s, nil, &keep, append(copts, loadgen.WithOfferedLoad(float64(rate)), loadgen.WithTimeout(time.Minute))...)
	cpu, wall := cpuTime()-cpu0, time.Since(t0)
	row.ServerCores = serverCores(srv, scpu0, sok0, wall)
	if err != nil {
		return row, fmt.Errorf("bench-client: %s vs serve-sim at %d req/s: %w", name, rate, err)
	}
	if !sum.Complete {
		return row, fmt.Errorf("bench-client: %s vs serve-sim at %d req/s: %s", name, rate, sum.IncompleteReason)
	}
	truth, err := fetchTruth(ctx, srv.url)
	if err != nil {
		return row, fmt.Errorf("bench-client: %s vs serve-sim: %w", name, err)
	}
	var it itlClientRow
	compareTruth(&it, keep.Records, truth)
	events := 0
	for i := range keep.Records {
		events += len(keep.Records[i].Events)
	}
	row.Scheduled, row.OK, row.FirstError = n, it.OK, it.FirstError
	row.LagP99Ms, row.DispatchLagP99Ms = msf(sum.ScheduleLagP99), msf(sum.DispatchLagP99)
	row.LatePct = notMeasured
	if sum.MeasuredSent > 0 { // no warm-up here: every sent request
		row.LatePct = reportFloat(100 * float64(sum.ScheduleLate) / float64(sum.MeasuredSent))
	}
	row.EventsPerS = reportFloat(float64(events) / wall.Seconds())
	row.CPUUtilCores = reportFloat(cpu.Seconds() / wall.Seconds())
	row.ITLError, row.TTFTError, row.EventCountMismatch = it.ITLError, it.TTFTError, it.EventCountMismatch
	row.ServerWriteLag, row.ServerQueueDelay = serverWriteLag(truth), serverQueueDelay(truth)
	row.Sustained = sustained(sum.ScheduleLagP99, row.OK, n)
	row.StampsWithin = stampsWithin(row.ITLError, o.stampAccuracy)
	return row, nil
}

// The head-of-line check's long line kinds (--hol-lines).
const (
	holLineComment = "comment" // ": xxx…": dropped by the reader as it arrives
	holLineData    = "data"    // "data: {…"text":"xxx…"…}": one event, one token
)

// holLineKinds are the kinds the check knows, in the order it runs them.
var holLineKinds = []string{holLineComment, holLineData}

// benchHOL runs the head-of-line check per long line kind and client: a
// fake server with a fixed token gap, every o.holEvery-th request's stream
// carrying a o.holBytes line of the kind after its first token; the other
// streams' gaps are compared with the server's.
func benchHOL(ctx context.Context, o Options, rep *benchReport, log io.Writer) error {
	sec := &holSection{RateRPS: o.holRate, DurationS: o.holDuration.Seconds(), Tokens: holTokens, ITLMs: float64(holITL) / 1e6,
		LongEvery: o.holEvery, LongBytes: o.holBytes, Lines: o.holLines}
	rep.HOL = sec
	for _, line := range o.holLines {
		for _, name := range o.clients {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			row, err := benchHOLOne(ctx, o, name, line)
			if err != nil {
				return err
			}
			sec.Rows = append(sec.Rows, row)
			fmt.Fprintf(log, "bench-client: %s head-of-line, %s line: %d/%d ok (long lines %d/%d), other streams' gap error p99 %s µs, max %s µs (p99 during long lines %s µs, apart %s µs)\n",
				name, line, row.OK, row.Scheduled, row.LongOK, row.Long, fmtUs(row.GapError.P99Us), fmtUs(row.GapError.MaxUs),
				fmtUs(row.GapErrorDuring.P99Us), fmtUs(row.GapErrorApart.P99Us))
		}
	}
	return nil
}

// The head-of-line check's streams: 16 tokens 20 ms apart.
const (
	holTokens = 16
	holITL    = 20 * time.Millisecond
)

func benchHOLOne(ctx context.Context, o Options, name, line string) (row holRow, err error) {
	row.Client, row.Line = name, line
	copts, err := clientOptions(name)
	if err != nil {
		return row, err
	}
	ho := o
	ho.itl, ho.eventsPerWrite, ho.serveLongEvery, ho.serveLongBytes = holITL, 1, o.holEvery, o.holBytes
	ho.serveLongData = line == holLineData
	srv, err := startFastServer(ctx, ho, holTokens, false)
	if err != nil {
		return row, err
	}
	defer closeServer(srv, &err)
	n := int(float64(o.holRate) * o.holDuration.Seconds())
	s := constSchedule(n, o.holRate, 16, holTokens)
	var keep loadgen.SliceSink
	sum, err := loadgen.Replay(ctx, srv, s, nil, &keep, append(copts, loadgen.WithTimeout(time.Minute))...)
	if err != nil {
		return row, fmt.Errorf("bench-client: %s head-of-line check (%s line): %w", name, line, err)
	}
	if !sum.Complete {
		return row, fmt.Errorf("bench-client: %s head-of-line check (%s line): %s", name, line, sum.IncompleteReason)
	}
	row.Scheduled = n
	var gaps []time.Duration
	after := 1 // the token event after the long line: a data line is itself event 1
	if line == holLineData {
		after = 2
	}
	onWire := longWindows(keep.Records, o.holEvery, after)
	var during, apart []time.Duration
	for i := range keep.Records {
		r := &keep.Records[i]
		long := r.RequestID%o.holEvery == 0
		ok := r.State == loadgen.StateOK
		if long {
			row.Long++
			if ok {
				row.LongOK++
			}
		}
		if ok {
			row.OK++
		}
		if long || !ok {
			continue
		}
		for k := 1; k < len(r.Events); k++ {
			a, b := r.Events[k-1].At, r.Events[k].At
			e := b - a - holITL
			gaps = append(gaps, e)
			if overlaps(onWire, a, b) {
				during = append(during, e)
			} else {
				apart = append(apart, e)
			}
		}
	}
	row.GapError = newErrStats(gaps)
	row.GapErrorDuring, row.GapErrorApart = newErrStats(during), newErrStats(apart)
	return row, nil
}

// window is a closed interval of run offsets.
type window struct{ from, to time.Duration }

// longWindows are the long lines' times on the wire and in the reader
// (streams of request ids that are multiples of every): the server writes
// the line right after the first token event and the next token after it,
// so from the first token event to event after (the token event that
// follows the line; to the response's end, or its final time when it
// failed, for a stream with fewer events), sorted by start.
func longWindows(recs []loadgen.Record, every, after int) []window {
	var ws []window
	for i := range recs {
		r := &recs[i]
		if r.RequestID%every != 0 || len(r.Events) == 0 {
			continue
		}
		end := r.EndAt
		if len(r.Events) > after {
			end = r.Events[after].At
		} else if end == 0 {
			end = r.FinalAt
		}
		ws = append(ws, window{r.Events[0].At, max(end, r.Events[0].At)})
	}
	slices.SortFunc(ws, func(x, y window) int { return cmp.Compare(x.from, y.from) })
	return ws
}

// overlaps reports whether [a, b] meets any of ws (sorted by start).
func overlaps(ws []window, a, b time.Duration) bool {
	for _, w := range ws {
		if w.from > b {
			return false
		}
		if w.to >= a {
			return true
		}
	}
	return false
}

// printSimTable prints the sweep against serve-sim.
func printSimTable(out io.Writer, r *benchReport) {
	s := r.Sim
	fmt.Fprintf(out, "\nstreaming sweep against serve-sim (%s; config %s, ops overridden ×%g; %d-token prompts, %d-token streams, uniform arrivals, %.3g s per run);\n"+
		"ITL/TTFT error = |measured − simulator truth| per token gap / request\n",
		s.Server, s.Config, simSpeedupOf(s), s.InputTokens, s.OutputTokens, s.DurationS)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\toffered req/s\tok\tlag p99 ms\t> 1 ms late %\tdispatch lag p99 ms\tevents/s\tcores used\tITL err p50 µs\tp99 µs\tTTFT err p99 µs\tcount mismatch\tserver cores\tserver write lag p99 µs\tserver queue p99 ms\tsustained\tstamps within\t")
	for _, x := range s.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%t\t%t\t\n", x.Client, x.OfferedRPS, x.OK, x.Scheduled,
			fmtFloat("%.3f", x.LagP99Ms), fmtFloat("%.1f", x.LatePct), fmtFloat("%.3f", x.DispatchLagP99Ms), fmtFloat("%.0f", x.EventsPerS),
			fmtFloat("%.2f", x.CPUUtilCores), fmtUs(x.ITLError.P50Us), fmtUs(x.ITLError.P99Us), fmtUs(x.TTFTError.P99Us), x.EventCountMismatch,
			fmtFloat("%.2f", x.ServerCores), fmtUs(x.ServerWriteLag.P99Us), fmtMsFromUs(x.ServerQueueDelay.P99Us), x.Sustained, x.StampsWithin)
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "sustained, against both servers alike: schedule-lag p99 ≤ 1 ms and all ok; stamps within: ITL error p99 ≤ %s µs against serve-sim's truth "+
		"(reported beside it, not part of it: the fake server has no truth to check stamps against); server write lag: the simulator's own flush of a token's event after the step that generated it; server queue: its engine's admission after arrival\n",
		fmtUs(&s.StampAccuracyUs))
	for _, c := range r.Clients {
		fmt.Fprintln(out, simSummaryLine(c, s))
	}
}

// simSummaryLine is client c's sustained rates against both servers, their
// ratio, and the highest rate at which its stamps held against serve-sim.
func simSummaryLine(c clientSummary, s *simSection) string {
	fake := "none"
	if c.SustainedRPS != nil {
		fake = strconv.Itoa(*c.SustainedRPS)
	}
	stamps := "stamps within accuracy at none of the loads tried"
	if v, ok := s.StampsHeldRPS[c.Client]; ok {
		stamps = fmt.Sprintf("stamps within accuracy up to %d req/s", v)
	}
	simRate, ok := s.SustainedRPS[c.Client]
	if !ok {
		return fmt.Sprintf("%s: highest req/s sustained: serve-sim none of those tried; fake server %s; %s", c.Client, fake, stamps)
	}
	ratio := ""
	if c.SustainedRPS != nil {
		ratio = fmt.Sprintf(" (serve-sim / fake %.2f)", float64(simRate)/float64(*c.SustainedRPS))
	}
	return fmt.Sprintf("%s: highest req/s sustained: serve-sim %d; fake server %s%s; %s", c.Client, simRate, fake, ratio, stamps)
}

// simSpeedupOf reads the speed-up back from the overrides (1 when none).
func simSpeedupOf(s *simSection) float64 {
	if len(s.Overrides) == 0 {
		return 1
	}
	_, v, _ := strings.Cut(s.Overrides[0], "=")
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 1
	}
	return f
}

// printHOLTable prints the head-of-line check.
func printHOLTable(out io.Writer, s *holSection) {
	fmt.Fprintf(out, "\nhead-of-line isolation: %d req/s for %.3g s, %d-token streams %.0f ms apart; every %d-th request's stream carries a %d-byte SSE line after its first token "+
		"(comment: \": xxx…\"; data: one data event, a completion chunk whose text fills it);\n"+
		"gap error = |measured ITL − %.0f ms| over the other streams' gaps (includes the fake server's timer jitter); during / apart: the gaps that overlap a long line's time on the wire and in the reader "+
		"(its stream's first token event to the one after the line) / those that overlap none, in the same run\n",
		s.RateRPS, s.DurationS, s.Tokens, s.ITLMs, s.LongEvery, s.LongBytes, s.ITLMs)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client\tline\tok\tlong-line streams ok\tgaps\tgap err p50 µs\tp99 µs\tmax µs\tduring: gaps\tp50 µs\tp99 µs\tmax µs\tapart: gaps\tp50 µs\tp99 µs\tmax µs\t")
	for _, x := range s.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d/%d\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", x.Client, x.Line, x.OK, x.Scheduled, x.LongOK, x.Long, x.GapError.N,
			fmtUs(x.GapError.P50Us), fmtUs(x.GapError.P99Us), fmtUs(x.GapError.MaxUs),
			x.GapErrorDuring.N, fmtUs(x.GapErrorDuring.P50Us), fmtUs(x.GapErrorDuring.P99Us), fmtUs(x.GapErrorDuring.MaxUs),
			x.GapErrorApart.N, fmtUs(x.GapErrorApart.P50Us), fmtUs(x.GapErrorApart.P99Us), fmtUs(x.GapErrorApart.MaxUs))
	}
	_ = tw.Flush()
}
