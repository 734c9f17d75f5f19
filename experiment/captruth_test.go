package experiment

import (
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/sim"
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
	cfg, _, err := Load("../configs/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eff := cfg.Effective()
	r := &runner{cfg: eff, res: &report.Results{SLO: report.SLO{TTFTMs: eff.SLO.TTFTMs, TPOTMs: eff.SLO.TPOTMs, Percentile: eff.SLO.Percentile}}}
	r.base = mustBase(t, &eff)
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

// TestTruthNote: the simulator's truth is placed against the search:
// below the interval's low end, or below the highest load the probes met
// (a lower bound when no load missed), names the probes' span; above the
// high end says so; inside (or unbracketed) says nothing.
func TestTruthNote(t *testing.T) {
	t.Parallel()
	bracketed := report.CapacityArm{PassRPS: 19.3, FailRPS: 24, CapacityRPS: report.Estimate{Value: 21.5, Low: 19.3, High: 36, Interval: true}}
	open := report.CapacityArm{PassRPS: 25.6, CapacityRPS: report.Estimate{Value: 25.6, Low: 16}}
	span := 5 * time.Second
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
	} {
		got := truthNote(report.CapacityTruth{MetRPS: tc.met, MissedRPS: tc.missed}, tc.arm, span)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("truth [%v, %v]: note %q, want %q", tc.met, tc.missed, got, tc.want)
		}
	}
}
