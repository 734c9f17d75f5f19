package experiment

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/sim"
	"github.com/transferlab/transferlab/stats"
	"github.com/transferlab/transferlab/traces"
)

// TestSimCapacityTruthQuickstart: on the quickstart's trace each arm's
// sustained capacity at the SLO (the whole trace, virtual time) is
// bracketed to truthPrecision, lies below the engine's saturation
// throughput for the trace's mix (sim.Config.Capacity: a sustained load
// above it builds an unbounded queue), and the 2× gate/up GEMM raises it.
// A probe of the quickstart's span (probe_warmup + probe_duration from an
// idle engine) at 1.2× the baseline's sustained capacity still meets the
// SLO: the bias the capacity line's note names.
func TestSimCapacityTruthQuickstart(t *testing.T) {
	t.Parallel()
	r := fullTraceRunner(t)
	eff := r.cfg
	sc := *eff.Extra.CapacitySearch
	mix := make([]sim.Lengths, len(r.base.Requests))
	for i, q := range r.base.Requests {
		mix[i] = sim.Lengths{InputTokens: q.InputTokens, OutputTokens: q.OutputTokens}
	}
	truth := map[string]float64{}
	for _, arm := range eff.Arms[:3] {
		tr, err := r.simCapacityTruth(arm, sc)
		if err != nil {
			t.Fatal(err)
		}
		if tr == nil || tr.MetRPS == 0 || tr.MissedRPS == 0 || tr.MissedRPS/tr.MetRPS-1 > truthPrecision+1e-9 {
			t.Fatalf("%s: truth %+v, want a bracket within %g", arm.Name, tr, truthPrecision)
		}
		sat, err := r.simConfig(arm).Capacity(mix, 2000)
		if err != nil {
			t.Fatal(err)
		}
		if tr.MissedRPS > sat.RequestsPerS {
			t.Errorf("%s: sustained capacity at SLO %.2f req/s above the saturation throughput %.2f req/s", arm.Name, tr.MissedRPS, sat.RequestsPerS)
		}
		if !strings.Contains(tr.Window, "the whole trace (2000 requests)") {
			t.Errorf("%s: window %q", arm.Name, tr.Window)
		}
		truth[arm.Name] = tr.RPS()
		t.Logf("%s: sustained capacity %.2f req/s [%.2f, %.2f], saturation %.2f req/s", arm.Name, tr.RPS(), tr.MetRPS, tr.MissedRPS, sat.RequestsPerS)
	}
	if !(truth["gate-up-2x"] > 1.05*truth["baseline"]) {
		t.Errorf("gate-up-2x's sustained capacity %.2f is not above the baseline's %.2f", truth["gate-up-2x"], truth["baseline"])
	}
	rate := 1.2 * truth["baseline"]
	sched, err := r.probeSchedule(sc, rate)
	if err != nil {
		t.Fatal(err)
	}
	if !analysis.Met(truthAttainment(t, r.simConfig(eff.Arms[0]), sched, sc.ProbeWarmup, r.res.SLO), eff.SLO.Percentile/100) {
		t.Errorf("a %s probe at %.1f req/s misses the SLO: the short-probe bias is gone; revisit the quickstart's comment", sc.ProbeWarmup+sc.ProbeDuration, rate)
	}
}

// quickstartRunner is a runner over configs/quickstart.yaml (defaults
// filled, its trace read), enough for the simulator's truth and probe
// schedules without running anything.
func quickstartRunner(t *testing.T) *runner {
	t.Helper()
	cfg, _, err := Load("../configs/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return runnerOf(t, *cfg)
}

// fullTraceRunner is quickstartRunner over the whole 2000-row trace with
// probes of 1 s + 4 s (its first rows): the quickstart before its trace
// became its first rows (600, now 550), whose capacity the tests below weigh.
func fullTraceRunner(t *testing.T) *runner {
	t.Helper()
	cfg, _, err := Load("../configs/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Trace.First = 0
	cs := *cfg.Extra.CapacitySearch
	cs.ProbeWarmup, cs.ProbeDuration = time.Second, 4*time.Second
	cfg.Extra.CapacitySearch = &cs
	return runnerOf(t, *cfg)
}

// runnerOf is a runner over cfg, defaults filled and its trace read.
func runnerOf(t *testing.T, cfg Config) *runner {
	t.Helper()
	eff := cfg.Effective()
	r := &runner{cfg: eff, res: &report.Results{SLO: report.SLO{TTFTMs: eff.SLO.TTFTMs, TPOTMs: eff.SLO.TPOTMs, Percentile: eff.SLO.Percentile}}}
	r.base = mustBase(t, &eff)
	return r
}

// TestTruthNote: the simulator's truth is placed against the search:
// below the interval's low end, or below the highest load the probes met
// (a lower bound when no load missed), names the probes' span; above the
// high end says so; inside (or unbracketed) says nothing.
func TestTruthNote(t *testing.T) {
	t.Parallel()
	bracketed := report.CapacityArm{PassRPS: 19.3, FailRPS: 24, CapacityRPS: report.Estimate{Value: 21.5, Low: 19.3, High: 36, Interval: true}}
	open := report.CapacityArm{PassRPS: 25.6, CapacityRPS: report.Estimate{Value: 25.6, Low: 16}}
	span := CapacitySearchConfig{ProbeWarmup: time.Second, ProbeDuration: 4 * time.Second}
	for _, tc := range []struct {
		arm         report.CapacityArm
		met, missed float64
		want        string
	}{
		{bracketed, 18, 18.1, "below the searched interval's low end (19.30 req/s): probes of 5s from an idle server"},
		{bracketed, 40, 40.1, "above the searched interval's high end (36.00 req/s)"},
		{bracketed, 20, 20.1, ""},
		{bracketed, 0, 5, ""},
		{open, 18, 18.1, "below the highest load the probes met (25.60 req/s): probes of 5s"},
		{open, 26, 26.1, ""},
		// Above the lowest load missed, inside the interval (its high end
		// left open by client-bound probes): the probes missed loads the
		// server sustains.
		{report.CapacityArm{PassRPS: 16.8, FailRPS: 20, CapacityRPS: report.Estimate{Value: 18.3}}, 21.8, 21.9, "above the lowest load the probes missed (20.00 req/s)"},
	} {
		got := truthNote(report.CapacityTruth{MetRPS: tc.met, MissedRPS: tc.missed}, tc.arm, span)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("truth [%v, %v]: note %q, want %q", tc.met, tc.missed, got, tc.want)
		}
	}
	// Whole-trace probes run the truth's schedule: a truth outside says so.
	got := truthNote(report.CapacityTruth{MetRPS: 18, MissedRPS: 18.1}, bracketed, CapacitySearchConfig{WholeTrace: true})
	if !strings.Contains(got, "below the searched interval's low end (19.30 req/s): the probes replay the truth's own schedule") || strings.Contains(got, "idle server") {
		t.Errorf("whole-trace probes: note %q", got)
	}
}

// TestProbeSpanQuickstart: on the quickstart's trace, in virtual time, what
// a probe from an idle server needs to decide a load as the sustained truth
// does (DESIGN.md "Capacity at SLO, searched"): a probe of the default
// span (SafeProbeWarmup + SafeProbeDuration, 20 s + 30 s) meets each arm's
// SLO at 0.9× its sustained capacity and misses it at 1.05×, and its warm-up is above the E2E p90 it measured there (the warning's
// necessary condition holds); the quickstart's own probe span at 20 req/s
// meets the SLO with an E2E p90 above its warm-up, so shortProbeWarning
// fires for it. The trace's first 600 rows, all that probes of up to ~30 s
// replay near capacity, sustain > 15 % more than the whole trace: its head
// is lighter (a probe's bias is the rows it replays as well as its idle
// start).
func TestProbeSpanQuickstart(t *testing.T) {
	t.Parallel()
	r := fullTraceRunner(t)
	r.cfg.Load.MaxRequests = 0 // a 50 s probe near capacity replays ~1,000 rows
	eff := r.cfg
	q := eff.SLO.Percentile / 100
	quick := *eff.Extra.CapacitySearch
	long := quick
	long.ProbeWarmup, long.ProbeDuration = SafeProbeWarmup, SafeProbeDuration
	probe := func(arm ArmConfig, c CapacitySearchConfig, rate float64) report.CapacityProbe {
		sched, err := r.probeSchedule(c, rate)
		if err != nil {
			t.Fatal(err)
		}
		cfg := r.simConfig(arm)
		truth, err := replayTruth(cfg, sched)
		if err != nil {
			t.Fatal(err)
		}
		var e2e []float64
		for _, rq := range sched.Requests {
			if rq.Offset >= c.ProbeWarmup {
				e2e = append(e2e, truth[rq.ID].e2e)
			}
		}
		p := report.CapacityProbe{LoadRPS: rate, Source: "search", Attainment: truthAttainment(t, cfg, sched, c.ProbeWarmup, r.res.SLO)}
		slices.Sort(e2e)
		p.E2EP90Ms = stats.NearestRank(e2e, 0.9)
		return p
	}
	s := quick.search(eff.SLO)
	for _, arm := range eff.Arms[:3] {
		tr, err := r.simCapacityTruth(arm, quick)
		if err != nil {
			t.Fatal(err)
		}
		below, above := probe(arm, long, 0.9*tr.RPS()), probe(arm, long, 1.05*tr.RPS())
		if !analysis.Met(below.Attainment, q) || analysis.Met(above.Attainment, q) {
			t.Errorf("%s (sustained %.2f req/s): a %s + %s probe met %v at 0.9×, %v at 1.05×; want true, false", arm.Name, tr.RPS(), long.ProbeWarmup, long.ProbeDuration, analysis.Met(below.Attainment, q), analysis.Met(above.Attainment, q))
		}
		if w := shortProbeWarning(s, long, []report.CapacityProbe{below, above}, len(r.base.Requests), true); strings.Contains(w, "probe_warmup") {
			t.Errorf("%s: %s + %s probes warned: %s", arm.Name, long.ProbeWarmup, long.ProbeDuration, w)
		}
		short := probe(arm, quick, 20)
		w := shortProbeWarning(s, quick, []report.CapacityProbe{short}, len(r.base.Requests), true)
		if !analysis.Met(short.Attainment, q) || !strings.Contains(w, "raise capacity_search.probe_warmup to ≥") || !strings.Contains(w, "first 101 of its 2000 rows") {
			t.Errorf("%s: the quickstart's %s probe at 20 req/s (met %v, E2E p90 %.0f ms) gave warning %q", arm.Name, quick.ProbeWarmup+quick.ProbeDuration, analysis.Met(short.Attainment, q), short.E2EP90Ms, w)
		}
		t.Logf("%s: sustained %.2f req/s; E2E p90 of a %s + %s probe at 0.9×: %.1f s; of the quickstart's probe at 20 req/s: %.1f s", arm.Name, tr.RPS(), long.ProbeWarmup, long.ProbeDuration, below.E2EP90Ms/1000, short.E2EP90Ms/1000)
	}
	whole, err := r.simCapacityTruth(eff.Arms[0], quick)
	if err != nil {
		t.Fatal(err)
	}
	hr := *r
	hr.base = traces.First(r.base, 600)
	first, err := hr.simCapacityTruth(eff.Arms[0], quick)
	if err != nil {
		t.Fatal(err)
	}
	if !(first.RPS() > 1.15*whole.RPS()) {
		t.Errorf("baseline: the trace's first 600 rows sustain %.2f req/s, the whole trace %.2f: the head is no longer lighter; revisit DESIGN.md", first.RPS(), whole.RPS())
	}
	t.Logf("baseline: the first 600 rows sustain %.2f req/s, the whole trace %.2f", first.RPS(), whole.RPS())
}

// TestSafeProbesFindQuickstartTruth: the search itself (analysis.Search's
// Next and Capacity), its probes at the default span (SafeProbeWarmup +
// SafeProbeDuration) judged in virtual time as a perfect client would
// (no host noise, no client lateness), finds each quickstart arm's
// sustained capacity: it stops bracketed to the quickstart's precision,
// with the simulator's truth inside its bracket and its interval.
// load.max_requests is lifted (a 50 s probe near capacity replays ~1,000
// rows; the quickstart caps its cells at 600).
func TestSafeProbesFindQuickstartTruth(t *testing.T) {
	t.Parallel()
	r := fullTraceRunner(t)
	r.cfg.Load.MaxRequests = 0
	c := *r.cfg.Extra.CapacitySearch
	c.ProbeWarmup, c.ProbeDuration = SafeProbeWarmup, SafeProbeDuration
	most, ok := traceRateLimit(r.cfg.Load, c, len(r.base.Requests))
	if !ok || most >= c.MaxRPS {
		t.Fatalf("trace rate limit %v (%v): the quickstart's max_rps %v fits 50 s probes; the search below relies on lowering it", most, ok, c.MaxRPS)
	}
	c.MaxRPS = most // as searchCapacity lowers it
	s := c.search(r.cfg.SLO)
	for _, arm := range r.cfg.Arms[:3] {
		var probes []report.CapacityProbe
		stop := ""
		for range 20 {
			var load float64
			if load, stop = s.Next(probes); stop != "" {
				break
			}
			sched, err := r.probeSchedule(c, load)
			if err != nil {
				t.Fatal(err)
			}
			att := truthAttainment(t, r.simConfig(arm), sched, c.ProbeWarmup, r.res.SLO)
			probes = append(probes, report.CapacityProbe{LoadRPS: load, Source: "search", Attainment: att})
		}
		a := s.Capacity(arm.Name, probes, stop)
		tr, err := r.simCapacityTruth(arm, c)
		if err != nil {
			t.Fatal(err)
		}
		v, e := tr.RPS(), a.CapacityRPS
		t.Logf("%s: %.2f [%.2f, %.2f] req/s, bracket [%.2f, %.2f], %d probes, stopped %s; sustained %.2f", arm.Name, e.Value, e.Low, e.High, a.PassRPS, a.FailRPS, len(probes), a.Stopped, v)
		if a.Stopped != "bracketed" || a.FailRPS/a.PassRPS-1 > c.RelativePrecision+1e-9 {
			t.Errorf("%s: stopped %q, bracket [%v, %v]: want bracketed to %v", arm.Name, a.Stopped, a.PassRPS, a.FailRPS, c.RelativePrecision)
		}
		if v < a.PassRPS || v > a.FailRPS || !e.Interval || v < e.Low || v > e.High {
			t.Errorf("%s: sustained capacity %.2f req/s outside the bracket [%v, %v] or the interval %+v", arm.Name, v, a.PassRPS, a.FailRPS, e)
		}
	}
}
