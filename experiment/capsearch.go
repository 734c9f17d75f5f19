package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/cost"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/render"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/traces"
)

// CapacitySearchConfig is the `capacity_search` block: after the sweep, each
// arm's offered load is searched until its capacity at the SLO (slo block:
// targets and percentile) is bracketed to RelativePrecision (DESIGN.md
// "Capacity at SLO"). Declaring the block opts in; without it the capacity
// is read from the swept loads only. Every field is optional.
type CapacitySearchConfig struct {
	// RelativePrecision: stop when fail/pass − 1 ≤ it (default 0.1).
	RelativePrecision float64 `yaml:"relative_precision,omitempty"`
	// MinRPS and MaxRPS bound the loads probed, req/s (default: half the
	// lowest and four times the highest of load.rates_rps).
	MinRPS float64 `yaml:"min_rps,omitempty"`
	MaxRPS float64 `yaml:"max_rps,omitempty"`
	// Growth multiplies the highest passing load while nothing has missed
	// (and divides the lowest missing one while nothing has met; default 2).
	Growth float64 `yaml:"growth,omitempty"`
	// ProbeDuration is each search probe's measured span of arrivals
	// (default: the longer of load.duration and SafeProbeDuration);
	// ProbeWarmup its unmeasured lead-in (default: the longer of
	// load.warmup and SafeProbeWarmup).
	ProbeDuration time.Duration `yaml:"probe_duration,omitempty"`
	ProbeWarmup   time.Duration `yaml:"probe_warmup,omitempty"`
	// ArmBudget and Budget bound the wall time of one arm's probes and of
	// the whole search (0: no bound). A probe starts only when its
	// scheduled span plus the longest drain seen (of the sweep's cells and
	// the probes before it) fits.
	ArmBudget time.Duration `yaml:"arm_budget,omitempty"`
	Budget    time.Duration `yaml:"budget,omitempty"`
	// ConcurrentArms searches every arm at once, each on a server started
	// for it (server.kind sim only: each simulated arm is its own simulated
	// GPU, where servers of other kinds may share one), so each arm has the
	// whole budget instead of its share.
	ConcurrentArms bool `yaml:"concurrent_arms,omitempty"`
	// WholeTrace (set by the defaults, not a key): in trace mode with
	// neither probe_warmup nor probe_duration declared, a probe at load R
	// replays the whole trace time-scaled to R, its first truthWarmupShare
	// of the span unmeasured: the schedule the simulator's sustained
	// capacity is judged on (simCapacityTruth), so the probe and the truth
	// run one experiment, in real and in virtual time. Declaring either key
	// asks for shorter probes: the trace's first rows over that span.
	WholeTrace bool `yaml:"-"`
	// wholeSpan is a whole-trace probe's scheduled span at the search's
	// first load (growth × the highest swept load), for progress planning.
	wholeSpan time.Duration
}

// probeSpan is a probe's scheduled span for planning: probe_warmup +
// probe_duration, or a whole-trace probe's at the first load searched.
func (c CapacitySearchConfig) probeSpan() time.Duration {
	if c.WholeTrace {
		return c.wholeSpan
	}
	return c.ProbeWarmup + c.ProbeDuration
}

// planWholeTrace sets c.wholeSpan for a trace of rows rows: rows − 1 gaps
// at growth × the highest of rates (req/s).
func (c *CapacitySearchConfig) planWholeTrace(rows int, rates []float64) {
	if !c.WholeTrace || rows < 2 || len(rates) == 0 {
		return
	}
	c.wholeSpan = time.Duration(float64(rows-1) / (c.Growth * slices.Max(rates)) * float64(time.Second))
}

// SafeProbeWarmup and SafeProbeDuration are the probes' default span
// floors: on the quickstart's trace (requests of seconds, a head lighter
// than the rest), probes of 20 s + 30 s decide loads 10 % below and 5 %
// above each arm's sustained capacity as the simulator's truth does, the
// search with them finds it (TestSafeProbesFindQuickstartTruth), and
// shorter ones meet loads past it (DESIGN.md "Capacity at SLO, searched",
// TestProbeSpanQuickstart).
const (
	SafeProbeWarmup   = 20 * time.Second
	SafeProbeDuration = 30 * time.Second
)

// effective fills the defaults from the load block.
func (c CapacitySearchConfig) effective(l LoadConfig) CapacitySearchConfig {
	if c.RelativePrecision == 0 {
		c.RelativePrecision = 0.1
	}
	if c.Growth == 0 {
		c.Growth = 2
	}
	if len(l.RatesRPS) > 0 {
		if c.MinRPS == 0 {
			c.MinRPS = slices.Min(l.RatesRPS) / 2
		}
		if c.MaxRPS == 0 {
			c.MaxRPS = 4 * slices.Max(l.RatesRPS)
		}
	}
	if (l.Mode == "" || l.Mode == LoadTrace) && c.ProbeDuration == 0 && c.ProbeWarmup == 0 {
		c.WholeTrace = true
	}
	if c.WholeTrace {
		return c
	}
	if c.ProbeDuration == 0 {
		c.ProbeDuration = max(l.Duration, SafeProbeDuration)
	}
	if c.ProbeWarmup == 0 {
		c.ProbeWarmup = max(l.Warmup, SafeProbeWarmup)
	}
	return c
}

// search is the analysis side's settings for these bounds.
func (c CapacitySearchConfig) search(slo SLOConfig) analysis.Search {
	return analysis.Search{MinRPS: c.MinRPS, MaxRPS: c.MaxRPS, RelativePrecision: c.RelativePrecision, Growth: c.Growth, Quantile: slo.Percentile / 100}
}

// validate names each problem by field (after defaults from the load
// block). declared reports whether the file sets a key of the block: a key
// set to 0 is refused, since leaving it out is what gives its default (0
// would otherwise silently mean the default, or no budget).
func (c CapacitySearchConfig) validate(l LoadConfig, slo SLOConfig, serverKind string, declared func(key string) bool) error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("capacity_search.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	for _, z := range []struct {
		key, unset string
		zero       bool
	}{
		{"relative_precision", "the default, 0.1", c.RelativePrecision == 0},
		{"growth", "the default, 2", c.Growth == 0},
		{"min_rps", "the default, half the lowest of load.rates_rps", c.MinRPS == 0},
		{"max_rps", "the default, four times the highest of load.rates_rps", c.MaxRPS == 0},
		{"probe_duration", "the default, the longer of load.duration and " + SafeProbeDuration.String(), c.ProbeDuration == 0},
		{"probe_warmup", "the default, the longer of load.warmup and " + SafeProbeWarmup.String(), c.ProbeWarmup == 0},
		{"arm_budget", "no budget per arm", c.ArmBudget == 0},
		{"budget", "no budget for the whole search", c.Budget == 0},
	} {
		if z.zero && declared(z.key) {
			bad(z.key, "set to 0: leave it out for %s", z.unset)
		}
	}
	if c.ConcurrentArms && serverKind != servers.Sim {
		bad("concurrent_arms", "only for server.kind sim (each simulated arm is its own simulated GPU); the arms of a server of kind %s may share one GPU, so they are probed one at a time: leave it out", serverKind)
	}
	if slo.TTFTMs <= 0 && slo.TPOTMs <= 0 && slo.E2EMs <= 0 {
		errs = append(errs, errors.New("capacity_search: needs an SLO target to search for (slo.ttft_ms, slo.tpot_ms or slo.e2e_ms)"))
	}
	if c.RelativePrecision < 0 {
		bad("relative_precision", "must be > 0, got %g", c.RelativePrecision)
	}
	if c.Growth != 0 && !(c.Growth > 1) {
		bad("growth", "must be > 1, got %g", c.Growth)
	}
	if c.MinRPS < 0 {
		bad("min_rps", "must be > 0 req/s, got %g", c.MinRPS)
	}
	if c.MaxRPS < 0 {
		bad("max_rps", "must be > 0 req/s, got %g", c.MaxRPS)
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"probe_duration", c.ProbeDuration}, {"probe_warmup", c.ProbeWarmup}, {"arm_budget", c.ArmBudget}, {"budget", c.Budget}} {
		if d.v < 0 {
			bad(d.field, "must be ≥ 0, got %s", d.v)
		}
	}
	if e := c.effective(l); e.MinRPS > 0 && e.MaxRPS > 0 && e.MinRPS >= e.MaxRPS {
		bad("max_rps", "must be above min_rps (%g req/s), got %g", e.MinRPS, e.MaxRPS)
	}
	return errors.Join(errs...)
}

// searchSettings is the run's search, defaults filled (nil when the config
// declares none).
func (r *runner) searchSettings() *CapacitySearchConfig {
	if r.cfg.Extra.CapacitySearch == nil {
		return nil
	}
	return r.cfg.Extra.CapacitySearch // Effective filled its defaults
}

// probeSchedule is the schedule of one search probe at rate: the load
// block's mode with the probe's warm-up and duration, synthetic arrivals
// seeded by the rate itself, so every arm probed at one rate replays the
// same requests.
func (r *runner) probeSchedule(c CapacitySearchConfig, rate float64) (traces.Schedule, error) {
	l := r.cfg.Load
	l.Duration, l.Warmup = c.ProbeDuration, c.ProbeWarmup
	return cellSchedule(r.base, l, rate, r.cfg.Seed, int(math.Float64bits(rate)%(1<<31)))
}

// probe is one search probe's schedule at rate and its unmeasured lead-in
// (from the schedule's start): with c.WholeTrace the truth's own schedule
// (longSchedule) and warm-up share, else probeSchedule and probe_warmup.
func (r *runner) probe(c CapacitySearchConfig, rate float64) (traces.Schedule, time.Duration, error) {
	if !c.WholeTrace {
		s, err := r.probeSchedule(c, rate)
		return s, c.ProbeWarmup, err
	}
	s, err := r.longSchedule(rate)
	if err != nil {
		return traces.Schedule{}, 0, err
	}
	return s, truthWarmup(s), nil
}

// probeText describes the search's probes for results.json: the whole
// trace's schedule, or "" for probes of probe_warmup + probe_duration
// (their own fields say them).
func (r *runner) probeText(c CapacitySearchConfig) string {
	if !c.WholeTrace {
		return ""
	}
	return fmt.Sprintf("the whole trace (%d requests) time-scaled to its load, its first %g %% unmeasured", len(r.base.Requests), 100*truthWarmupShare)
}

// searchArms are the arms searched: the baseline, then each candidate (not
// the A/A replicate, which is the baseline, nor a ceiling).
func (r *runner) searchArms() []ArmConfig {
	var out []ArmConfig
	for _, a := range r.cfg.Arms {
		if !a.IsCeiling() {
			out = append(out, a)
		}
	}
	return out
}

// sweepProbes are arm's complete sweep cells as search observations. A
// cell that met the SLO over a span shorter than a probe's (short: its
// warm-up or duration is shorter) is left out: a load past capacity can
// meet it over a short span, before its queue has grown; a miss is kept.
func sweepProbes(res *report.Results, arm string, short bool) []report.CapacityProbe {
	var out []report.CapacityProbe
	for _, c := range res.Cells {
		if c.Arm == arm && c.Incomplete == "" {
			p := probeOf(c, "sweep")
			if short && analysis.Met(p.Attainment, res.SLO.Percentile/100) {
				continue
			}
			p.Repetition = c.Repetition
			out = append(out, p)
		}
	}
	return out
}

// probeOf reads a cell's SLO attainment counts (Cell.SLOClaims), client
// flag and window.
func probeOf(c report.Cell, source string) report.CapacityProbe {
	p := report.CapacityProbe{LoadRPS: c.OfferedLoadRPS, Source: source, ClientBound: c.ClientBound, Incomplete: c.Incomplete}
	for _, cl := range c.SLOClaims {
		p.Attainment = append(p.Attainment, report.SLOAttainment{Metric: cl.Metric, TargetMs: cl.TargetMs, N: cl.N, Over: cl.Over})
	}
	if c.E2E.P90Ms != nil {
		p.E2EP90Ms = *c.E2E.P90Ms
	}
	if c.WindowS != nil {
		p.WindowS = *c.WindowS
		p.OutputTokens = int(math.Round(c.WindowOutputTokens))
		p.TotalTokens = p.OutputTokens + c.InputTokens
	}
	return p
}

// searchCapacity runs the capacity search after the sweep (use starts or
// reuses an arm's server) and sets the results' capacity_search section.
// Its probes' records are summarised (counts per SLO target, window,
// tokens) in results.json, not written to records.jsonl, and --resume does
// not keep them: a resumed run searches again from the sweep's cells.
func (r *runner) searchCapacity(ctx context.Context, use func(ArmConfig) (servers.Server, error)) error {
	c := r.searchSettings()
	if c == nil {
		return nil
	}
	if most, ok := traceRateLimit(r.cfg.Load, *c, len(r.base.Requests)); ok && !c.WholeTrace && most < c.MaxRPS {
		if most <= c.MinRPS {
			return fmt.Errorf("capacity_search: a probe of %s (probe_warmup + probe_duration) at min_rps %g req/s needs more rows than the trace's %d: shorten the probes or use a longer trace", c.ProbeWarmup+c.ProbeDuration, c.MinRPS, len(r.base.Requests))
		}
		w := fmt.Sprintf("capacity_search: max_rps lowered from %g to %.4g req/s: a probe of %s (probe_warmup + probe_duration) at a higher load needs more rows than the trace's %d", c.MaxRPS, most, c.ProbeWarmup+c.ProbeDuration, len(r.base.Requests))
		r.res.Warnings = append(r.res.Warnings, w)
		fmt.Fprintf(r.warn, "warning: %s\n", w)
		lowered := *c
		lowered.MaxRPS = most
		c = &lowered
	}
	if w := maxRequestsWarning(r.cfg.Load, *c); w != "" && !c.WholeTrace {
		r.res.Warnings = append(r.res.Warnings, w)
		fmt.Fprintf(r.warn, "warning: %s\n", w)
	}
	s := c.search(r.cfg.SLO)
	cs := &report.CapacitySearch{
		Method: s.Method(), SLO: r.res.SLO, RelativePrecision: c.RelativePrecision, MinRPS: c.MinRPS, MaxRPS: c.MaxRPS,
		ProbeDurationS: c.ProbeDuration.Seconds(), ProbeWarmupS: c.ProbeWarmup.Seconds(),
		ArmBudgetS: c.ArmBudget.Seconds(), BudgetS: c.Budget.Seconds(), Level: s.WithDefaults().Level,
		ProbeWindow: r.probeText(*c),
	}
	r.res.CapacitySearch = cs
	if r.opt.Slice != nil {
		cs.NotRun = "a shard (run --shard) replays part of each schedule: the search needs whole ones; run it unsplit"
		return nil
	}
	if r.kept != nil {
		fmt.Fprintf(r.log, "capacity search: --resume keeps no search probe: the search runs again from the sweep's cells\n")
	}
	began := time.Now()
	d := &drains{}
	arms := r.searchArms()
	cs.Arms = make([]report.CapacityArm, len(arms))
	if c.ConcurrentArms {
		cs.Concurrent = true
		if err := r.searchConcurrently(ctx, *c, s, arms, began, d, cs.Arms); err != nil {
			r.searchInterrupted(ctx, cs, arms)
			return err
		}
	} else {
		for i, arm := range arms {
			a, err := r.searchArm(ctx, *c, s, arm, func() (servers.Server, error) { return use(arm) }, began, d, nil, r.log, r.warn)
			cs.Arms[i] = a
			if err != nil {
				cs.Arms = cs.Arms[:i+1]
				r.searchInterrupted(ctx, cs, arms)
				return err
			}
		}
	}
	var all []report.CapacityProbe
	for _, a := range cs.Arms {
		all = append(all, a.Probes...)
	}
	if w := shortProbeWarning(s, *c, all, len(r.base.Requests), r.cfg.Load.Mode == "" || r.cfg.Load.Mode == LoadTrace); w != "" && !c.WholeTrace {
		r.res.Warnings = append(r.res.Warnings, w)
		fmt.Fprintf(r.warn, "warning: %s\n", w)
	}
	base := cs.Arms[0]
	for _, a := range cs.Arms[1:] {
		cs.Gains = append(cs.Gains, analysis.SearchGain(a, base))
	}
	return nil
}

// searchInterrupted sets cs.Interrupted when the run ended (ctx: a
// signal, the run deadline) during the search: what stopped it, after how
// many search probes (one cut short counts for nothing), each arm's bracket
// so far (arms not reached: not searched), and that `run --resume` runs the
// search again from the kept sweep cells, which is what it does (the
// probes are not in cells.jsonl). Nothing when the search failed otherwise.
func (r *runner) searchInterrupted(ctx context.Context, cs *report.CapacitySearch, arms []ArmConfig) {
	if ctx.Err() == nil {
		return
	}
	done, cut := 0, []string{}
	var each []string
	for _, arm := range arms {
		i := slices.IndexFunc(cs.Arms, func(a report.CapacityArm) bool { return a.Arm == arm.Name })
		if i < 0 || cs.Arms[i].Arm == "" {
			each = append(each, arm.Name+": not searched")
			continue
		}
		a := cs.Arms[i]
		for _, p := range a.Probes {
			switch {
			case p.Source != "search":
			case p.Incomplete != "":
				cut = append(cut, fmt.Sprintf("%s at %s req/s", a.Arm, report.Num(p.LoadRPS)))
			default:
				done++
			}
		}
		each = append(each, a.Arm+": "+bracketSoFar(a))
	}
	s := fmt.Sprintf("interrupted after %d search probe%s (%s)", done, plural(done), context.Cause(ctx))
	if len(cut) == 1 {
		s += "; the probe cut short (" + cut[0] + ") decides nothing"
	} else if len(cut) > 1 {
		s += "; the probes cut short (" + strings.Join(cut, ", ") + ") decide nothing"
	}
	s += "; so far " + strings.Join(each, "; ")
	s += fmt.Sprintf(". `transferlab run --resume %s` keeps the run's complete sweep cells and runs the search again from the sweep's cells (its probes so far are not kept)", r.opt.OutDir)
	cs.Interrupted = s
}

// bracketSoFar is an arm's bracket as far as its search got: "bracket
// [4.00, 8.00] req/s", with "none" for an end not found yet.
func bracketSoFar(a report.CapacityArm) string {
	end := func(v float64) string {
		if v > 0 {
			return report.Num(v)
		}
		return "none"
	}
	s := "bracket [" + end(a.PassRPS) + ", " + end(a.FailRPS) + "] req/s"
	switch {
	case a.PassRPS > 0 && a.FailRPS == 0:
		s += " (met up to " + report.Num(a.PassRPS) + " req/s, no load missed yet)"
	case a.PassRPS == 0 && a.FailRPS > 0:
		s += " (missed from " + report.Num(a.FailRPS) + " req/s, no load met yet)"
	case a.PassRPS == 0:
		s += " (no load decided yet)"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// drains is the longest drain seen (probe wall − scheduled span) over
// the search's probes, shared by arms searched at once.
type drains struct {
	mu  sync.Mutex
	max time.Duration
}

func (d *drains) see(v time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.max = max(d.max, v)
}

func (d *drains) longest() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.max
}

// probeRounds tells the run's progress when a round of the probes of arms
// searched at once begins (runPlan plans such rounds, not probes): when the
// first arm starts its k-th probe. A nil probeRounds (arms one at a time)
// begins a progress step at every probe.
type probeRounds struct {
	mu    sync.Mutex
	begun int // the highest round begun
}

// begin is called as an arm starts its k-th probe (k ≥ 1).
func (b *probeRounds) begin(p *runProgress, k int) {
	if b == nil {
		p.begin(stepProbe)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if k > b.begun {
		b.begun = k
		p.begin(stepProbe)
	}
}

// searchConcurrently searches every arm at once, each on a server of its
// own started for the search (capacity_search.concurrent_arms: each
// simulated arm is its own simulated GPU), into out (in arms' order); the
// servers are shut down after. The first error is returned.
func (r *runner) searchConcurrently(ctx context.Context, c CapacitySearchConfig, s analysis.Search, arms []ArmConfig, began time.Time, d *drains, out []report.CapacityArm) error {
	srvs := make([]servers.Server, len(arms))
	defer func() {
		for i, srv := range srvs {
			if srv == nil {
				continue
			}
			if err := srv.Close(context.WithoutCancel(ctx)); err != nil {
				fmt.Fprintf(r.warn, "warning: arm %s: shutting its search server down: %v\n", arms[i].Name, err)
			}
		}
	}()
	for i, arm := range arms {
		r.progress.begin(stepStart)
		srv, err := r.startArm(ctx, arm)
		if err != nil {
			return fmt.Errorf("arm %s (capacity search): %w", arm.Name, err)
		}
		srvs[i] = srv
		r.addServerInfo(ctx, arm.Name, srv)
	}
	fmt.Fprintf(r.log, "capacity search: %d arms at once, each on its own simulated server (capacity_search.concurrent_arms)\n", len(arms))
	var mu sync.Mutex
	log, warn := lockedWriter{&mu, r.log}, lockedWriter{&mu, r.warn}
	rounds := &probeRounds{}
	errs := make([]error, len(arms))
	var wg sync.WaitGroup
	for i, arm := range arms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = r.searchArm(ctx, c, s, arm, func() (servers.Server, error) { return srvs[i], nil }, began, d, rounds, log, warn)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// searchArm searches one arm's capacity from its sweep cells: probes (on
// the server srv returns) until analysis.Search stops or a budget would be
// exceeded, then the capacity, its cost and the simulator's truth. Its
// lines go to log and warn.
func (r *runner) searchArm(ctx context.Context, c CapacitySearchConfig, s analysis.Search, arm ArmConfig, srv func() (servers.Server, error), began time.Time, d *drains, rounds *probeRounds, log, warn io.Writer) (report.CapacityArm, error) {
	probes := sweepProbes(r.res, arm.Name, !c.WholeTrace && (r.cfg.Load.Warmup < c.ProbeWarmup || r.cfg.Load.Duration < c.ProbeDuration))
	swept := len(probes)
	armBegan := time.Now()
	stopped := ""
	for {
		load, stop := s.Next(probes)
		if stop != "" {
			stopped = stop
			break
		}
		sched, warm, err := r.probe(c, load)
		if err != nil {
			return s.Capacity(arm.Name, probes, "stopped: "+err.Error()), fmt.Errorf("capacity_search at %g req/s (capacity_search.max_rps, probe_duration): %w", load, err)
		}
		// A budget is a cap: the longest drain seen (the sweep's cells' before the first probe).
		est := sched.Duration() + max(d.longest(), r.progress.maxTail(stepCell))
		if c.ArmBudget > 0 && time.Since(armBegan)+est > c.ArmBudget {
			stopped = fmt.Sprintf("budget: capacity_search.arm_budget = %s", c.ArmBudget)
			break
		}
		if c.Budget > 0 && time.Since(began)+est > c.Budget {
			stopped = fmt.Sprintf("budget: capacity_search.budget = %s", c.Budget)
			break
		}
		sv, err := srv() // its error names the arm
		if err != nil {
			return s.Capacity(arm.Name, probes, "stopped: "+err.Error()), err
		}
		rounds.begin(r.progress, len(probes)-swept+1)
		fmt.Fprintf(log, "capacity search, arm %s: probe at %.4g req/s: %d requests over %s; %s\n",
			arm.Name, load, len(sched.Requests), sched.Duration().Round(time.Millisecond), r.progress.status())
		p, err := r.runProbe(ctx, sv, arm.Name, load, sched, warm)
		probes = append(probes, p)
		d.see(time.Duration(p.DurationS*float64(time.Second)) - sched.Duration())
		if err != nil && ctx.Err() != nil {
			return s.Capacity(arm.Name, probes, analysis.StopInterrupted+" ("+context.Cause(ctx).Error()+")"), err
		}
		if err != nil {
			return s.Capacity(arm.Name, probes, "stopped: "+err.Error()), err
		}
		if p.StoppedEarly != "" {
			fmt.Fprintf(log, "capacity search, arm %s: probe at %.4g req/s stopped after %.1f s: %s\n", arm.Name, load, p.DurationS, p.StoppedEarly)
		}
	}
	a := s.Capacity(arm.Name, probes, stopped)
	a.ElapsedS = time.Since(armBegan).Seconds()
	a.Cost = r.costAtCapacity(a, warn)
	var err error
	if a.SimTruth, err = r.simCapacityTruth(arm, c); err != nil {
		fmt.Fprintf(warn, "warning: no simulator truth for the capacity of %s: %v\n", arm.Name, err)
	}
	if a.SimTruth != nil {
		a.SimTruth.Note = truthNote(*a.SimTruth, a, c)
	}
	fmt.Fprintf(log, "capacity search, arm %s: %s\n", arm.Name, render.CapacityArmText(a))
	return a, nil
}

// traceRateLimit is, in trace mode (ok), the highest load whose probe
// schedule fits a trace of rows rows: cellSchedule takes ⌈rate·span⌉ + 1
// consecutive rows, so rate ≤ (rows − 1) / span.
func traceRateLimit(l LoadConfig, c CapacitySearchConfig, rows int) (float64, bool) {
	span := (c.ProbeWarmup + c.ProbeDuration).Seconds()
	if l.Mode != "" && l.Mode != LoadTrace || span <= 0 {
		return 0, false
	}
	return float64(rows-1) / span, true
}

// maxRequestsWarning says when load.max_requests cuts probes short, ""
// when not: a probe at rate takes ⌈rate·span⌉ + 1 requests (cellSchedule)
// and keeps the first max_requests, so above (max_requests − 1) / span
// req/s its span is shorter than probe_warmup + probe_duration.
func maxRequestsWarning(l LoadConfig, c CapacitySearchConfig) string {
	span := (c.ProbeWarmup + c.ProbeDuration).Seconds()
	if l.MaxRequests <= 0 || span <= 0 || math.Ceil(c.MaxRPS*span)+1 <= float64(l.MaxRequests) {
		return ""
	}
	return fmt.Sprintf("capacity_search: load.max_requests = %d cuts probes above %.3g req/s short of their %s (probe_warmup + probe_duration; one at max_rps %.4g req/s would take %d requests): raise load.max_requests or leave it out",
		l.MaxRequests, float64(l.MaxRequests-1)/span, c.ProbeWarmup+c.ProbeDuration, c.MaxRPS, int(math.Ceil(c.MaxRPS*span))+1)
}

// shortProbeWarning says when the search's probes were shorter than the
// method needs to be trusted against a real server, "" when not: their
// warm-up (c.ProbeWarmup) below the longest E2E p90 measured at a load that
// met the SLO (analysis.Search.FillTime: a probe from an idle server fills
// for about one E2E). A necessary condition, not a sufficient one; in
// trace mode (trace: the probes replay the first rows of a trace of
// traceRows rows) it also says how many rows the longest probe replayed,
// since a trace's later rows can be heavier than its head.
func shortProbeWarning(s analysis.Search, c CapacitySearchConfig, probes []report.CapacityProbe, traceRows int, trace bool) string {
	e2e, load := s.FillTime(probes)
	if e2e == 0 || float64(c.ProbeWarmup)/float64(time.Millisecond) >= e2e {
		return ""
	}
	need := time.Duration(math.Ceil(e2e/1000)) * time.Second
	w := fmt.Sprintf("capacity_search: the probes' warm-up (probe_warmup = %s) is shorter than the E2E p90 measured at a load that met the SLO (%.3g s at %s req/s): "+
		"a probe starts on an idle server, which fills for about one E2E before completions balance arrivals, so its measured requests met a server emptier than that load keeps it and a met load may not be sustained; "+
		"raise capacity_search.probe_warmup to ≥ %s and probe_duration with it (necessary, not sufficient: on the quickstart's trace 20s + 30s probes decide loads 10 %% below and 5 %% above each arm's sustained capacity, docs/DESIGN.md)",
		c.ProbeWarmup, e2e/1000, report.Num(load), need)
	if trace {
		rows := 0
		for _, p := range probes {
			if p.Source != "search" {
				continue
			}
			rows = max(rows, int(math.Ceil(p.LoadRPS*(c.ProbeWarmup+c.ProbeDuration).Seconds()))+1)
		}
		if rows < traceRows {
			w += fmt.Sprintf("; each probe replayed at most the trace's first %d of its %d rows, so the capacity found is that of its head", rows, traceRows)
		}
	}
	return w
}

// runProbe replays one search probe's schedule on srv and summarises it
// (analysis.BuildCell's SLO claims, client flag and window). Its records go
// nowhere else. The server dying or the run ending is an error.
func (r *runner) runProbe(ctx context.Context, srv servers.Server, arm string, rate float64, sched traces.Schedule, warmup time.Duration) (report.CapacityProbe, error) {
	keep := &loadgen.SliceSink{}
	sinks := []loadgen.Sink{keep}
	if r.progress != nil {
		r.progress.startCell(len(sched.Requests))
		sinks = append(sinks, cellRequests{r.progress})
	}
	opts := append(r.replayOptions(arm+" (capacity search)", rate, 0), loadgen.WithWarmup(warmup))
	uctx, stop := servers.UntilDied(ctx, srv.Died())
	defer stop()
	cctx, missed := context.WithCancelCause(uctx)
	defer missed(nil)
	ff := newFailFast(r.res.SLO, sched, warmup, missed)
	sinks = append(sinks, ff)
	opts = append(opts, loadgen.WithObserver(ff))
	stalls, _ := srv.(stallCounter)
	var lost0 time.Duration
	if stalls != nil {
		lost0 = stalls.StallLost()
	}
	began := time.Now()
	sum, rerr := loadgen.Replay(cctx, srv, sched, loadgen.NewTracePacer(sched), loadgen.MultiSink(sinks...), opts...)
	c := analysis.BuildCell(keep.Records, analysis.CellOptions{Arm: arm, OfferedLoadRPS: rate, SLO: r.res.SLO})
	lateness := func(p *report.CapacityProbe) {
		p.DurationS = time.Since(began).Seconds()
		if stalls != nil {
			p.HostStallS = (stalls.StallLost() - lost0).Seconds()
		}
		lag, _, d := analysis.LatenessMargin(keep.Records)
		p.DispatchLagMaxMs, p.LatenessMarginMs = lag.Seconds()*1000, d.Seconds()*1000
		p.Scheduled = ff.n
		if p.ClientBound {
			p.AttainmentLoosened = analysis.LooseAttainment(keep.Records, r.res.SLO, d)
		}
	}
	if why := ff.stopped(); why != "" && ctx.Err() == nil {
		// Decided, not cut short: the probe met or missed the SLO.
		p := probeOf(c, "search")
		if k := lateCancelled(keep.Records, r.res.SLO); k > 0 {
			for i := range p.Attainment {
				if p.Attainment[i].Metric == "ttft" {
					p.Attainment[i].N += k
					p.Attainment[i].Over += k
				}
			}
		}
		p.StoppedEarly = why
		lateness(&p)
		return p, nil
	}
	if !sum.Complete {
		c.Incomplete = sum.IncompleteReason
		if c.Incomplete == "" {
			c.Incomplete = "the probe did not run to its end"
		}
	}
	p := probeOf(c, "search")
	lateness(&p)
	select {
	case <-srv.Died():
		return p, fmt.Errorf("arm %s at %g req/s (capacity search): the server died: %w", arm, rate, srv.Err())
	default:
	}
	if rerr != nil {
		return p, fmt.Errorf("arm %s at %g req/s (capacity search): %w", arm, rate, rerr)
	}
	if ctx.Err() != nil {
		return p, fmt.Errorf("arm %s at %g req/s (capacity search): run stopped: %w", arm, rate, context.Cause(ctx))
	}
	return p, nil
}

// stallCounter is a server that counts the time it lost to host stalls
// (servers.SimServer, through sim.Server.StallLost): runProbe reads it
// before and after a probe (its HostStallS), without resetting the
// server's profile, which would redraw the noise model's run factor.
type stallCounter interface {
	StallLost() time.Duration
}

var _ stallCounter = (*servers.SimServer)(nil)

// failFast is a probe's sink (and loadgen.Observer) that stops it once
// its outcome is decided. Missed: when, for some declared target, more of
// its measured requests are over the target (analysis.RecordOver, as they
// end; and for TTFT, as soon as one sent longer ago than the target has no
// token yet: over it whatever comes next) than 1 − percentile/100 of all
// the requests it schedules after its warm-up, no later request can bring
// the share within the target back to the percentile. Met: when, for every
// target, those over it plus the measured requests yet to end are within
// that limit, the share is at the percentile whatever they do. Either way
// the rest are cancelled (stop).
type failFast struct {
	mu    sync.Mutex
	slo   report.SLO
	n     int // measured requests scheduled
	limit float64
	over  map[string]int
	ended int
	// measured: the IDs scheduled at or after the warm-up; late: measured
	// requests over the TTFT target with no token yet (counted in over).
	measured map[int]bool
	late     map[int]bool
	start    time.Time
	timers   []*time.Timer
	stop     context.CancelCauseFunc
	why      string
	met      bool
}

// newFailFast watches sched's requests scheduled at or after warmup.
func newFailFast(slo report.SLO, sched traces.Schedule, warmup time.Duration, stop context.CancelCauseFunc) *failFast {
	f := &failFast{slo: slo, over: map[string]int{}, measured: map[int]bool{}, late: map[int]bool{}, stop: stop}
	for _, q := range sched.Requests {
		if q.Offset >= warmup {
			f.measured[q.ID] = true
		}
	}
	f.n = len(f.measured)
	f.limit = overLimit(slo, f.n)
	return f
}

// overLimit is analysis.OverLimit at the SLO's percentile.
func overLimit(slo report.SLO, n int) float64 {
	return analysis.OverLimit(slo.Percentile/100, n)
}

// Add counts one ended request.
func (f *failFast) Add(rec *loadgen.Record) error {
	if rec.Warmup {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended++
	for _, m := range analysis.RecordOver(rec, f.slo) {
		if m == "ttft" && f.late[rec.RequestID] {
			continue // counted when it was late
		}
		f.over[m]++
	}
	delete(f.late, rec.RequestID)
	f.decide()
	return nil
}

// Began implements loadgen.Observer.
func (f *failFast) Began(start time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.start = start
}

// Head implements loadgen.Observer: a measured request sent at sentAt with
// no token by sentAt + the TTFT target is over it.
func (f *failFast) Head(id int, sentAt time.Duration) {
	if f.slo.TTFTMs <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.measured[id] || f.why != "" || f.start.IsZero() {
		return
	}
	f.late[id] = false // sent, no token yet
	due := sentAt + time.Duration(f.slo.TTFTMs*float64(time.Millisecond))
	f.timers = append(f.timers, time.AfterFunc(due-time.Since(f.start)+time.Millisecond, func() { f.lateBy(id, due) }))
}

// lateBy counts id over the TTFT target if it has no token at due.
func (f *failFast) lateBy(id int, due time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if late, waiting := f.late[id]; !waiting || late || f.why != "" || time.Since(f.start) <= due {
		return
	}
	f.late[id] = true
	f.over["ttft"]++
	f.decide()
}

// FirstToken implements loadgen.Observer.
func (f *failFast) FirstToken(id int, _ time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.late[id] {
		delete(f.late, id)
	}
}

// decide stops the probe once its outcome is decided (f.mu held).
func (f *failFast) decide() {
	if f.why != "" {
		return
	}
	pct := 100 - f.slo.Percentile
	for _, m := range []string{"ttft", "tpot", "e2e"} {
		if float64(f.over[m]) > f.limit {
			f.why = fmt.Sprintf("%d measured requests over the %s target, more than %g %% of the %d it schedules: the SLO can no longer be met, so the rest were cancelled", f.over[m], m, pct, f.n)
			f.stop(errors.New("capacity search: " + f.why))
			return
		}
	}
	// f.over counts declared targets only (RecordOver names no other; a
	// late first token counts only with a TTFT target).
	left, most := f.n-f.ended, 0
	for _, k := range f.over {
		most = max(most, k)
	}
	if left > 0 && float64(most+left) <= f.limit {
		f.met = true
		f.why = fmt.Sprintf("met: at most %d measured requests over a target and %d yet to end, within %g %% of the %d it schedules: the SLO is met whatever they do, so they were cancelled", most, left, pct, f.n)
		f.stop(errors.New("capacity search: " + f.why))
	}
}

// Close stops the TTFT timers (implements loadgen.Sink).
func (f *failFast) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.timers {
		t.Stop()
	}
	return nil
}

// stopped is why the probe was stopped early, "" when it was not.
func (f *failFast) stopped() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.why
}

// lateCancelled counts the measured requests of a stopped probe that were
// cancelled over the TTFT target: sent, their first token more than the
// target after their send, or none by then (over it whatever would have
// come). The probe's TTFT attainment counts them, as failFast did
// (analysis.BuildCell counts a cancelled request nowhere).
func lateCancelled(recs []loadgen.Record, slo report.SLO) int {
	if slo.TTFTMs <= 0 {
		return 0
	}
	k := 0
	for i := range recs {
		if !recs[i].Warmup && analysis.CancelledOverTTFT(&recs[i], slo.TTFTMs, 0) {
			k++
		}
	}
	return k
}

// costAtCapacity prices arm's probes at its PassRPS (their windows and
// tokens pooled) with the config's cost inputs; nil without them.
func (r *runner) costAtCapacity(a report.CapacityArm, warn io.Writer) *report.CapacityCost {
	in := r.cfg.Extra.Cost
	if in == nil || a.PassRPS == 0 {
		return nil
	}
	var window float64
	var out, total int
	for _, p := range a.Probes {
		if p.LoadRPS == a.PassRPS && p.Incomplete == "" && p.WindowS > 0 {
			window += p.WindowS
			out += p.OutputTokens
			total += p.TotalTokens
		}
	}
	if window == 0 {
		return nil
	}
	res, err := cost.Compute(*in, time.Duration(window*float64(time.Second)), out, total, nil)
	if err != nil || res.CostPer1MOutputTokens == nil {
		fmt.Fprintf(warn, "warning: no cost at capacity for %s at %g req/s: %v %v\n", a.Arm, a.PassRPS, err, res.Notes)
		return nil
	}
	return &report.CapacityCost{LoadRPS: a.PassRPS, Currency: in.Currency, CostPer1MOutputTokens: *res.CostPer1MOutputTokens}
}
