package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/internal/outpath"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/traces"
)

// activeSlackS is how far (s) a profile window's active_s may exceed its
// window_s before the server's answer is refused (it is then clamped).
const activeSlackS = 0.005

// profileStopTimeout bounds ProfileStop: the server exports the trace
// (~90 MB for 2 s on the H200) before it answers.
const profileStopTimeout = 5 * time.Minute

// ProfileRecord is what one profiling pass left, kept in the results
// manifest (manifest.server.<baseline>.amdahl_profiles) beside the trace.
type ProfileRecord struct {
	OfferedLoadRPS float64 `json:"offered_load_rps"`
	Repetition     int     `json:"repetition"`
	// Trace is the Chrome trace (gzip) relative to the output folder; Summary
	// the amdahl.Summary written beside it.
	Trace   string `json:"trace"`
	Summary string `json:"summary"`
	// WindowS and ActiveS are the server's profiler window and the time in it
	// with ≥ 1 request in flight (s, the server's monotonic clock): ActiveS is
	// f_wall's denominator.
	WindowS float64 `json:"window_s"`
	ActiveS float64 `json:"active_s"`
	// ClientActiveS is the same active time from the profiling replay's
	// requests ([sent, end] on the client's clock, clipped to the span from
	// ProfileStart's answer to the ProfileStop call): a cross-check only.
	ClientActiveS float64 `json:"client_active_s"`
	RequestsDone  int     `json:"requests_done"`
	TraceBytes    int64   `json:"trace_bytes"`
	// Replay counts the profiling replay's requests by state; none of them is
	// in records.jsonl or in any cell.
	Replay map[string]int `json:"replay_states"`
	FGPU   amdahl.Num     `json:"f_gpu"`
	FWall  amdahl.Num     `json:"f_wall"`
	FExcl  amdahl.Num     `json:"f_excl"`
	// FMeasures says what f counts; STiming which s the bound pairs it with.
	FMeasures string              `json:"f_measures"`
	STiming   string              `json:"s_timing"`
	Attr      *amdahl.Attribution `json:"attribution,omitempty"`
	Kernels   []string            `json:"target_kernels,omitempty"`
	// HookAgreement compares, when the baseline's hook times the target
	// (server.reference.hook_timings), the hook's CUDA-event target time with
	// this trace's attributed kernel time over the same calls
	// (amdahl.CompareHookProfile); FWallHook is the hook's time over the same
	// active_s. HookAgreementError says why no comparison was made.
	HookAgreement      *amdahl.Agreement `json:"hook_agreement,omitempty"`
	FWallHook          *float64          `json:"f_wall_hook,omitempty"`
	HookAgreementError string            `json:"hook_agreement_error,omitempty"`
	Warnings           []string          `json:"warnings,omitempty"`
}

// fMeasures describes f from a profile, for the manifest.
const fMeasures = "kernel time: |∪ attributed target kernels| (CUPTI durations in the torch-profiler Chrome trace) / server active wall time (active_s over the profiler window)"

// profilePass runs the unmeasured profiling replay of the cell k that just
// ended on a, the baseline arm's reference server, and returns f from its
// trace (pc: amdahl.profile with defaults filled). The cell is the runner's
// next one in RunOrder (runCell appends it after Profile returns). Its
// records go to a slice that is dropped: never to records.jsonl, never to a
// cell. ctx is the run's (Profile's own context is not cancellable).
func (r *runner) profilePass(ctx context.Context, a *servers.ReferenceServer, arm ArmConfig, pc *ProfileConfig, k report.CellKey) (*amdahl.Fractions, error) {
	if k.Arm != arm.Name {
		return nil, fmt.Errorf("profiling pass: cell of arm %s on the server of arm %s", k.Arm, arm.Name)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("profiling pass skipped: %w", context.Cause(ctx))
	}
	r.progress.begin(stepProfile)
	sched := r.scheds[loadIndex(r.cfg.Load.RatesRPS, k.OfferedLoadRPS)]
	dir := filepath.Join(r.opt.OutDir, ServersDir, arm.Name, "profiles")
	if err := outpath.MkdirAll("output folder", dir); err != nil {
		return nil, fmt.Errorf("profiling pass: %w", err)
	}
	stem := fmt.Sprintf("load%srps-rep%d", strconv.FormatFloat(k.OfferedLoadRPS, 'g', -1, 64), k.Repetition)
	tracePath, err := filepath.Abs(filepath.Join(dir, stem+".trace.json"))
	if err != nil {
		return nil, fmt.Errorf("profiling pass: %w", err)
	}
	fmt.Fprintf(r.log, "profiling pass (unmeasured: its requests are not in %s nor in any cell) for arm %s at %g req/s, repetition %d: replaying the cell's %d requests, torch-profiler window %s after the %s warm-up → %s\n",
		RecordsFile, arm.Name, k.OfferedLoadRPS, k.Repetition, len(sched.Requests), pc.Window, r.cfg.Load.Warmup, tracePath)

	began := time.Now()
	pctx, cancel := servers.UntilDied(ctx, a.Died())
	defer cancel()
	bg := startReplay(pctx, a, sched, r.replayOptions(arm.Name+" (profiling pass)", k.OfferedLoadRPS, k.Repetition))

	// The window opens at the first send at or after the warm-up, so that at a
	// light load it does not fall in a gap between requests (at 0.5 req/s a
	// 2 s window right after the warm-up saw no request in flight).
	openAt := profileOpenAt(sched, r.cfg.Load.Warmup)
	bg.wait(pctx, openAt-time.Since(began))
	if bg.ended() || pctx.Err() != nil {
		got := bg.finish()
		why := errors.Join(context.Cause(pctx), got.err)
		if why == nil {
			why = fmt.Errorf("its %d requests were all sent and answered", len(sched.Requests))
		}
		return nil, fmt.Errorf("profiling pass: the replay ended before the profiler window was due (%s, the first send after the %s warm-up): %w", openAt.Round(time.Millisecond), r.cfg.Load.Warmup, why)
	}
	if err := a.ProfileStart(pctx, tracePath); err != nil {
		bg.finish()
		return nil, fmt.Errorf("profiling pass: %w", err)
	}
	from := time.Now()
	bg.wait(pctx, pc.Window)
	to := time.Now()
	// No arrivals after the window: the server exports the trace (seconds
	// for a 2 s window) while the requests in flight drain normally.
	bg.pacer.Stop()
	sctx, scancel := context.WithTimeout(context.WithoutCancel(pctx), profileStopTimeout)
	win, stopErr := a.ProfileStop(sctx)
	scancel()
	got := bg.finish()
	if stopErr != nil {
		return nil, fmt.Errorf("profiling pass: %w", stopErr)
	}
	if got.err != nil {
		return nil, fmt.Errorf("profiling pass: replay: %w", got.err)
	}
	sum, err := summarizeWindow(ctx, a.BaseURL(), &win, pc, r.cfg.Seed)
	if err != nil {
		return nil, err
	}
	gz, err := gzipFile(win.TracePath)
	if err != nil {
		return nil, fmt.Errorf("profiling pass: %w", err)
	}
	sum.File = gz
	rec := ProfileRecord{
		OfferedLoadRPS: k.OfferedLoadRPS, Repetition: k.Repetition,
		Trace: relTo(r.opt.OutDir, gz), Summary: relTo(r.opt.OutDir, filepath.Join(dir, stem+".summary.json")),
		WindowS: win.WindowS, ActiveS: win.ActiveS, RequestsDone: win.RequestsDone, TraceBytes: win.TraceBytes,
		ClientActiveS: clientActive(got.sum.Start, bg.keep.Records, from, to).Seconds(),
		Replay:        replayStates(bg.keep.Records),
		FGPU:          sum.Fractions.FGPU, FWall: sum.Fractions.FWall, FExcl: sum.Fractions.FExcl,
		FMeasures: fMeasures, STiming: pc.STiming, Attr: sum.Attribution, Kernels: sum.TargetKernels, Warnings: sum.Warnings,
	}
	if len(win.HookTimings) > 0 {
		r.compareHook(arm, &rec, win, sum.Profile)
	}
	if err := writeSummary(filepath.Join(dir, stem), sum); err != nil {
		return nil, fmt.Errorf("profiling pass: %w", err)
	}
	if d := math.Abs(rec.ClientActiveS - win.ActiveS); d > 0.1*win.ActiveS && d > 0.05 {
		fmt.Fprintf(r.warn, "warning: profiling pass for arm %s at %g req/s: the server counted %.3f s active in its window, the client %.3f s between ProfileStart's answer and the ProfileStop call; f_wall uses the server's\n",
			arm.Name, k.OfferedLoadRPS, win.ActiveS, rec.ClientActiveS)
	}
	appendServerRecord(r, arm.Name, profilesKey, rec)
	fmt.Fprintf(r.log, "profiling pass for arm %s at %g req/s, repetition %d: f_wall %s, f_gpu %s (kernel time / server active %.3f s of a %.3f s window; client saw %.3f s active); trace %s; the pass took %s\n",
		arm.Name, k.OfferedLoadRPS, k.Repetition, sum.Fractions.FWall, sum.Fractions.FGPU, win.ActiveS, win.WindowS, rec.ClientActiveS, rec.Trace, time.Since(began).Round(time.Millisecond))
	fr := sum.Fractions
	fr.Source = string(amdahl.FormatChrome)
	return &fr, nil
}

// summarizeWindow is the checked summary of the profiler window win that
// server answered (its active_s clamped to window_s within activeSlackS):
// f from its Chrome trace with pc's kernel selection, refused when
// CUDA-graph-replayed kernels went unattributed or no kernel was attributed
// to the target. seed seeds the bootstrap.
func summarizeWindow(ctx context.Context, server string, win *integrate.ProfileWindow, pc *ProfileConfig, seed int64) (amdahl.Summary, error) {
	// The server reads its window length and then its active time, so a
	// window that was busy throughout can show active_s a few µs above
	// window_s (seen on the H200: 2.1145616 vs 2.1145592 s). Up to
	// activeSlackS is that, and is clamped; more is a server bug.
	if win.ActiveS > win.WindowS+activeSlackS {
		return amdahl.Summary{}, fmt.Errorf("profiling pass: server %s: field active_s %v exceeds window_s %v by more than %g s", server, win.ActiveS, win.WindowS, activeSlackS)
	}
	win.ActiveS = min(win.ActiveS, win.WindowS)
	if !(win.ActiveS > 0) {
		return amdahl.Summary{}, fmt.Errorf("profiling pass: server %s: no request was in flight during the %.3f s profiler window (active_s %v)", server, win.WindowS, win.ActiveS)
	}
	opt, err := pc.options()
	if err != nil {
		return amdahl.Summary{}, err
	}
	activeWall := time.Duration(math.Round(win.ActiveS * 1e9))
	sum, err := amdahl.Summarize(ctx, win.TracePath, amdahl.FormatChrome, amdahl.SummaryConfig{
		ActiveWall: activeWall, Options: opt, Boot: []amdahl.BootOption{amdahl.Seed(uint64(seed))},
	})
	if err != nil {
		return amdahl.Summary{}, fmt.Errorf("profiling pass: %w", err)
	}
	if !sum.Complete {
		return amdahl.Summary{}, fmt.Errorf("profiling pass: %s: %d CUDA-graph-replayed kernels were not attributed (target work missed, f would be an underestimate): set amdahl.profile.kernel_sequence or kernel_pattern to the target's kernels",
			win.TracePath, sum.Attribution.GraphUnattributed)
	}
	if sum.Fractions.TargetGPU == 0 {
		return amdahl.Summary{}, fmt.Errorf("profiling pass: %s: no kernel was attributed to the target (annotation %q, kernel_sequence %q, kernel_pattern %q)",
			win.TracePath, pc.Annotation, pc.KernelSequence, pc.KernelPattern)
	}
	return sum, nil
}

// bgReplay is one unmeasured replay running while its caller waits on it
// (the profiling pass opens and closes the profiler window meanwhile). Its
// records go to keep, never to records.jsonl or a cell.
type bgReplay struct {
	pacer *loadgen.StopPacer
	keep  *loadgen.SliceSink
	done  chan replayed
	// got is the replay's outcome once it has ended (nil before).
	got *replayed
}

// replayed is what loadgen.Replay returned.
type replayed struct {
	sum loadgen.Summary
	err error
}

// startReplay starts replaying sched on srv with opts, paced by the
// schedule until its pacer is stopped.
func startReplay(ctx context.Context, srv loadgen.Server, sched traces.Schedule, opts []loadgen.Option) *bgReplay {
	b := &bgReplay{pacer: loadgen.NewStopPacer(loadgen.NewTracePacer(sched)), keep: &loadgen.SliceSink{}, done: make(chan replayed, 1)}
	go func() {
		sum, err := loadgen.Replay(ctx, srv, sched, b.pacer, b.keep, opts...)
		b.done <- replayed{sum, err}
	}()
	return b
}

// wait returns after d, when ctx ends or when the replay ends, whichever
// is first.
func (b *bgReplay) wait(ctx context.Context, d time.Duration) {
	if b.got != nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case x := <-b.done:
		b.got = &x
	}
}

// ended reports whether the replay has ended (as seen by wait).
func (b *bgReplay) ended() bool { return b.got != nil }

// finish releases no more requests and waits for the replay to end (the
// requests in flight finish normally).
func (b *bgReplay) finish() replayed {
	b.pacer.Stop()
	if b.got == nil {
		x := <-b.done
		b.got = &x
	}
	return *b.got
}

// profilesKey names the profiling passes' records in a server's manifest.
const profilesKey = "amdahl_profiles"

// hookSlack is how far a hook window may reach past the profiled window
// and still be compared: the server closes one at the serving thread's next
// target call after the profiler starts (ms on a busy server).
const hookSlack = 50 * time.Millisecond

// compareHook fills rec's hook-vs-profile comparison from the timings the
// server returned with the profile window: the target's hook document is
// compared with p, the trace as the pass attributed it, over the hook's
// "profile" window. Failures are recorded in rec, never fatal: f still
// comes from the profile.
func (r *runner) compareHook(arm ArmConfig, rec *ProfileRecord, win integrate.ProfileWindow, p *amdahl.Profile) {
	fail := func(err error) {
		rec.HookAgreementError = err.Error()
		fmt.Fprintf(r.warn, "warning: profiling pass at %g req/s: no hook-vs-profile comparison: %v\n", rec.OfferedLoadRPS, err)
	}
	docs, err := amdahl.ParseHookTimingsAll(bytes.NewReader(win.HookTimings), win.TracePath+" (hook_timings)")
	if err != nil {
		fail(err)
		return
	}
	target := r.cfg.Server.Reference.Effective().ProfileTarget
	if arm.Override != nil {
		target = arm.Override.Target
	}
	h, err := amdahl.HookTimingsFor(docs, target, win.TracePath+" (hook_timings)")
	if err != nil {
		fail(err)
		return
	}
	ag, err := amdahl.CompareHookProfile(h, p, hookSlack)
	if err != nil {
		fail(err)
		return
	}
	rec.HookAgreement = &ag
	if win.ActiveS > 0 {
		f := ag.HookTarget.Seconds() / win.ActiveS
		rec.FWallHook = &f
	}
	verdict := "within 2 %"
	if math.Abs(ag.RelDiffSpan) > 0.02 {
		verdict = "NOT within 2 % (the events also hold CPU launch time where the GPU waited for the call's next kernel: they agree only where the GPU is the bottleneck; HOOK_TIMINGS.md)"
	}
	if int64(ag.ProfileCalls) != ag.HookCalls {
		verdict += fmt.Sprintf("; the hook counted %d calls, the profile %d: not the same calls", ag.HookCalls, ag.ProfileCalls)
	}
	if !ag.Complete {
		verdict += "; the hook saw CUDA-graph capture calls, so it misses replayed work and the comparison says nothing"
	}
	fmt.Fprintf(r.log, "hook vs profile at %g req/s over the same %d window(s) (%.3f s; hook %d calls, profile %d by %s): hook CUDA-event target time %.3f ms vs the calls' GPU span %.3f ms: %+.2f %%, %s; vs their kernel time %.3f ms (what f counts): %+.2f %%\n",
		rec.OfferedLoadRPS, ag.HookWindows, ag.Window.Len().Seconds(), ag.HookCalls, ag.ProfileCalls, ag.Selection,
		float64(ag.HookTarget)/1e6, float64(ag.ProfileSpan)/1e6, 100*ag.RelDiffSpan, verdict, float64(ag.ProfileTarget)/1e6, 100*ag.RelDiff)
}

// profileOpenAt is when the profiler window opens, as an offset from the
// replay's start: the scheduled offset of the first request sent at or after
// warmup, or warmup when none is.
func profileOpenAt(s traces.Schedule, warmup time.Duration) time.Duration {
	for _, q := range s.Requests {
		if q.Offset >= warmup {
			return q.Offset
		}
	}
	return warmup
}

// baselineProfiles are the profiling passes' records kept so far under the
// baseline arm's server (manifest.server.<baseline>.amdahl_profiles).
func (r *runner) baselineProfiles() []ProfileRecord {
	if len(r.cfg.Arms) == 0 || r.res == nil {
		return nil
	}
	info, _ := r.res.Manifest.Server[r.cfg.Arms[0].Name].(map[string]any)
	recs, _ := info[profilesKey].([]ProfileRecord)
	return recs
}

// profileSource says where the baseline's f at offered load rateRPS came
// from when amdahl.profile measured it: the Chrome traces (relative to the
// output folder), what f counts and which s it is paired with. It is ""
// when no profiling pass at that load succeeded. Meant for the Amdahl
// section's per-load source.
func (r *runner) profileSource(rateRPS float64) string {
	if r.cfg.Amdahl.Profile == nil {
		return ""
	}
	recs := r.baselineProfiles()
	var traces []string
	timing := ""
	for _, p := range recs {
		if p.OfferedLoadRPS == rateRPS {
			traces = append(traces, p.Trace)
			timing = p.STiming
		}
	}
	if len(traces) == 0 {
		return ""
	}
	return fmt.Sprintf("torch-profiler Chrome trace %s of unmeasured profiling replays; f = %s; s timing %s", strings.Join(traces, ", "), fMeasures, timing)
}

// hookCheck is the hook's f_wall and its target time's difference from the
// profile's calls' GPU span and kernel time (percent), averaged over the
// profiling passes at rateRPS that compared them; nils when none did.
func (r *runner) hookCheck(rateRPS float64) (fWall, spanPct, kernelPct *float64) {
	var f, ds, dk float64
	n := 0
	for _, p := range r.baselineProfiles() {
		if p.OfferedLoadRPS == rateRPS && p.HookAgreement != nil && p.FWallHook != nil {
			f += *p.FWallHook
			ds += 100 * p.HookAgreement.RelDiffSpan
			dk += 100 * p.HookAgreement.RelDiff
			n++
		}
	}
	if n == 0 {
		return nil, nil, nil
	}
	f, ds, dk = f/float64(n), ds/float64(n), dk/float64(n)
	return &f, &ds, &dk
}

func replayStates(recs []loadgen.Record) map[string]int {
	out := map[string]int{}
	for i := range recs {
		out[string(recs[i].State)]++
	}
	return out
}
