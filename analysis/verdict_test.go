package analysis_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
)

func TestVerdicts(t *testing.T) {
	t.Parallel()
	base := []float64{20.0, 20.4, 19.8, 20.1}
	win := []float64{15.0, 15.2, 14.9, 15.1}
	cases := []struct {
		name    string
		r       report.Results
		rule    report.DecisionRule
		edit    func(*report.Results)
		outcome string
		clause  string
		detail  string // substring of the reason
	}{
		{name: "clear win", r: analysistest.TwoArms(base, win), outcome: "pass", clause: "b", detail: "beyond the resolution and below 1"},
		{name: "clear loss", r: analysistest.TwoArms(base, []float64{26, 26.5, 25.8, 26.2}), outcome: "fail", clause: "b", detail: "regressed beyond the margin"},
		{name: "interval contains 1 and reaches past the limit: no difference, a regression not ruled out", r: analysistest.TwoArms(base, []float64{17, 23, 20.5, 19}), outcome: "no difference", clause: "b", detail: "(its high end 1.22 reaches past the limit 1.00: a regression up to 22.5 % is not ruled out at this run's resolution)"},
		{name: "small slowdown within a 2% margin passes", r: analysistest.TwoArms(base, []float64{20.2, 20.6, 20.0, 20.3}), rule: report.DecisionRule{RegressionMargin: 0.02}, outcome: "pass", clause: "b"},
		{name: "the same slowdown with no margin fails", r: analysistest.TwoArms(base, []float64{20.2, 20.6, 20.0, 20.3}), outcome: "fail", clause: "b"},
		{name: "one repetition: no interval", r: analysistest.TwoArms(base[:1], win[:1]), outcome: "inconclusive", clause: "b", detail: "needs ≥ 2"},
		{
			name: "VRAM over budget", r: analysistest.TwoArms(base, win), rule: report.DecisionRule{VRAMBudgetBytes: 80 * analysistest.Gib},
			edit: func(r *report.Results) {
				r.Energy = &report.EnergySection{Cells: []report.EnergyCell{
					{Arm: "baseline", OfferedLoadRPS: 4, Available: true, PeakVRAMBytes: 70 * analysistest.Gib},
					{Arm: "candidate", OfferedLoadRPS: 4, Available: true, PeakVRAMBytes: 90 * analysistest.Gib},
				}}
			},
			outcome: "fail", clause: "c", detail: "> budget",
		},
		{
			name: "VRAM within budget", r: analysistest.TwoArms(base, win), rule: report.DecisionRule{VRAMBudgetBytes: 80 * analysistest.Gib},
			edit: func(r *report.Results) {
				r.Energy = &report.EnergySection{Cells: []report.EnergyCell{{Arm: "candidate", OfferedLoadRPS: 4, Available: true, PeakVRAMBytes: 79 * analysistest.Gib}}}
			},
			outcome: "pass", clause: "b",
		},
		{name: "VRAM budget declared, not measured", r: analysistest.TwoArms(base, win), rule: report.DecisionRule{VRAMBudgetBytes: 80 * analysistest.Gib}, outcome: "inconclusive", clause: "c", detail: "not measured"},
		{
			name: "undeclared VRAM budget never decides", r: analysistest.TwoArms(base, win),
			edit: func(r *report.Results) {
				r.Energy = &report.EnergySection{Cells: []report.EnergyCell{{Arm: "candidate", OfferedLoadRPS: 4, Available: true, PeakVRAMBytes: 1000 * analysistest.Gib}}}
			},
			outcome: "pass", clause: "b",
		},
		{name: "validation required, missing", r: analysistest.TwoArms(base, win), rule: report.DecisionRule{RequireValidation: true}, outcome: "fail", clause: "a", detail: "no validation section"},
		{
			name: "validation uncovered shapes", r: analysistest.TwoArms(base, win), rule: report.DecisionRule{RequireValidation: true},
			edit: func(r *report.Results) {
				r.Validation = &report.ValidationSection{Candidates: []report.ValidationCandidate{{Candidate: "candidate", Verdict: "pass", UncoveredShapes: 3}}}
			},
			outcome: "fail", clause: "a", detail: "3 served shapes",
		},
		{
			name: "hook counted no calls", r: analysistest.TwoArms(base, win), rule: report.DecisionRule{RequireValidation: true},
			edit: func(r *report.Results) {
				r.Validation = &report.ValidationSection{Candidates: []report.ValidationCandidate{{Candidate: "candidate", Verdict: "pass"}}}
				r.Hook = &report.HookSection{Arms: []report.HookArm{{Arm: "candidate", Target: "m:RMSNorm.forward"}}}
			},
			outcome: "fail", clause: "a", detail: "never ran",
		},
		{
			name: "validation and hook fine", r: analysistest.TwoArms(base, win), rule: report.DecisionRule{RequireValidation: true},
			edit: func(r *report.Results) {
				r.Validation = &report.ValidationSection{Candidates: []report.ValidationCandidate{{Candidate: "candidate", Verdict: "pass"}}}
				r.Hook = &report.HookSection{Arms: []report.HookArm{{Arm: "candidate", Target: "m:RMSNorm.forward", CallsEager: 10}}}
			},
			outcome: "pass", clause: "b",
		},
		{
			name: "reproducibility required, run incomplete", r: analysistest.TwoArms(base, win), rule: report.DecisionRule{RequireReproducible: true},
			edit:    func(r *report.Results) { r.Complete, r.IncompleteReason = false, "interrupted" },
			outcome: "fail", clause: "d", detail: "interrupted",
		},
		{
			name: "p99 refused for a small sample", r: analysistest.TwoArms(base, win),
			edit: func(r *report.Results) {
				for i := range r.Cells {
					r.Cells[i].TPOT = report.Dist{N: 100, MeanMs: analysistest.Ptr(10)}
				}
			},
			outcome: "inconclusive", clause: "b",
		},
		{name: "mean TPOT decides when configured", r: analysistest.TwoArms(base, win), rule: report.DecisionRule{UseMean: true}, outcome: "pass", clause: "b", detail: "tpot mean"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tc.r
			if tc.edit != nil {
				tc.edit(&r)
			}
			if err := analysis.Analyze(&r, tc.rule); err != nil {
				t.Fatal(err)
			}
			if len(r.Verdicts) != 1 {
				t.Fatalf("%d verdicts, want 1", len(r.Verdicts))
			}
			v := r.Verdicts[0]
			if v.Outcome != tc.outcome || v.DecidingClause != tc.clause {
				t.Errorf("verdict %s by clause %s, want %s by %s: %s", v.Outcome, v.DecidingClause, tc.outcome, tc.clause, v.Reason)
			}
			if !strings.Contains(v.Reason, tc.detail) {
				t.Errorf("reason %q lacks %q", v.Reason, tc.detail)
			}
			if len(v.Clauses) != 4 {
				t.Errorf("%d clauses listed, want 4", len(v.Clauses))
			}
		})
	}
}

func TestRuleValidate(t *testing.T) {
	t.Parallel()
	bad := report.DecisionRule{Metric: "latency", Percentile: 97, RegressionMargin: -1, IntervalLevel: 2, Resamples: 5}
	err := analysis.ValidateRule(bad)
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"metric", "percentile", "regression_margin", "interval_level", "resamples"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	r := analysistest.TwoArms([]float64{1, 2}, []float64{1, 2})
	if err := analysis.Analyze(&r, report.DecisionRule{Baseline: "prod"}); err == nil || !strings.Contains(err.Error(), "prod") {
		t.Errorf("missing baseline arm: err = %v", err)
	}
}

func TestCapacity(t *testing.T) {
	t.Parallel()
	// SLO: TTFT p99 ≤ 200 ms. Baseline TTFT p99 by load 2, 4, 8: 100, 150, 400
	// (rep 2: 210 at load 4) → capacities 4, 4, 2. Candidate: 80, 120, 180 → 8 each.
	// TPOT is far above any target but undeclared: it must not leak into capacity.
	r := report.Results{SLO: report.SLO{TTFTMs: 200, Percentile: 99}}
	baseTTFT := map[float64][]float64{2: {100, 100, 100}, 4: {150, 150, 210}, 8: {400, 400, 400}}
	candTTFT := map[float64][]float64{2: {80, 80, 80}, 4: {120, 120, 120}, 8: {180, 180, 180}}
	for _, l := range []float64{2, 4, 8} {
		for rep := range 3 {
			r.Cells = append(r.Cells, analysistest.MkCell("baseline", l, rep, 1e6, baseTTFT[l][rep]), analysistest.MkCell("candidate", l, rep, 1e6, candTTFT[l][rep]))
		}
	}
	if err := analysis.Analyze(&r, report.DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	st := r.Stats
	if len(st.Capacity) != 2 {
		t.Fatalf("capacity for %d arms, want 2", len(st.Capacity))
	}
	b, c := st.Capacity[0], st.Capacity[1]
	analysistest.Near(t, "baseline capacity", b.CapacityRPS.Value, 10.0/3, 1e-12)
	analysistest.Near(t, "candidate capacity", c.CapacityRPS.Value, 8, 0)
	if b.NextLoadRPS != 8 || c.NextLoadRPS != 0 {
		t.Errorf("next loads %v, %v; want 8, 0", b.NextLoadRPS, c.NextLoadRPS)
	}
	// Bootstrap draws of the baseline mean lie in [2, 4]; the interval must too, and cover the mean.
	if !b.CapacityRPS.Interval || b.CapacityRPS.Low < 2 || b.CapacityRPS.High > 4 || b.CapacityRPS.Low > 10.0/3 || b.CapacityRPS.High < 10.0/3 {
		t.Errorf("baseline capacity interval %+v", b.CapacityRPS)
	}
	g := st.CapacityGain[0].Gain
	analysistest.Near(t, "capacity gain", g.Value, 8/(10.0/3), 1e-12)
	if g.Low < 2 || g.High > 4 {
		t.Errorf("gain interval [%v, %v] outside [8/4, 8/2]", g.Low, g.High)
	}

	// With no SLO declared, capacity is not measured, and says so.
	r.SLO = report.SLO{}
	if err := analysis.Analyze(&r, report.DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	if r.Stats.CapacityNotMeasured == "" || len(r.Stats.Capacity) != 0 {
		t.Errorf("no SLO: capacity %+v, reason %q", r.Stats.Capacity, r.Stats.CapacityNotMeasured)
	}
}

func TestCheckSLOAndRefusedLoads(t *testing.T) {
	t.Parallel()
	slo := report.SLO{TTFTMs: 200, TPOTMs: 50}
	small := report.Cell{OfferedLoadRPS: 1, TTFT: report.Dist{N: 40, MeanMs: analysistest.Ptr(50)}, TPOT: report.Dist{N: 40, MeanMs: analysistest.Ptr(10)}}
	cases := []struct {
		name string
		c    report.Cell
		want analysis.SLOOutcome
	}{
		{"met", analysistest.MkCell("a", 2, 0, 40, 150), analysis.SLOMet},
		{"TTFT missed", analysistest.MkCell("a", 2, 0, 40, 250), analysis.SLOMissed},
		{"TPOT missed while TTFT refused", report.Cell{TTFT: report.Dist{N: 40}, TPOT: report.Dist{N: 1000, P99Ms: analysistest.Ptr(60)}}, analysis.SLOMissed},
		{"refused", small, analysis.SLORefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := analysis.CheckSLO(tc.c, slo); got != tc.want {
				t.Errorf("CheckSLO = %s (%s), want %s", got, why, tc.want)
			}
		})
	}
	// A light load too small to claim p99 is skipped, not failed: capacity is 4, not 0.
	r := report.Results{SLO: report.SLO{TTFTMs: 200}}
	small.Arm = "baseline"
	r.Cells = []report.Cell{small, analysistest.MkCell("baseline", 2, 0, 1, 100), analysistest.MkCell("baseline", 4, 0, 1, 150), analysistest.MkCell("baseline", 8, 0, 1, 300)}
	if err := analysis.Analyze(&r, report.DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	c := r.Stats.Capacity[0]
	if c.CapacityRPS.Value != 4 || c.NextLoadRPS != 8 || !strings.Contains(c.Detail, "skipped as unknown: ttft p99 refused at load 1.00") {
		t.Errorf("capacity %+v", c)
	}
}

// TestCapacityGainCensoredAtTopLoad: when both arms meet the SLOs at the
// highest swept load, neither capacity was found, so the gain is unknown (not
// 1.00×); when only the candidate does, the gain is marked a lower bound.
func TestCapacityGainCensoredAtTopLoad(t *testing.T) {
	t.Parallel()
	build := func(candTop float64) report.Results {
		r := report.Results{SLO: report.SLO{TTFTMs: 200, Percentile: 99}}
		for _, l := range []float64{2, 4} {
			for rep := range 2 {
				base := 100.0
				if l == 4 && candTop == 0 {
					base = 400 // the baseline misses at 4: only the candidate reaches the top
				}
				r.Cells = append(r.Cells, analysistest.MkCell("baseline", l, rep, 1e6, base), analysistest.MkCell("candidate", l, rep, 1e6, 100))
			}
		}
		return r
	}
	r := build(1)
	if err := analysis.Analyze(&r, report.DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	if g := r.Stats.CapacityGain[0].Gain; g.Reps != 0 || !strings.Contains(g.Note, "both arms met the SLOs at the highest measured load") {
		t.Errorf("both at the top: gain %+v, want undefined with the reason", g)
	}
	r = build(0)
	if err := analysis.Analyze(&r, report.DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	if g := r.Stats.CapacityGain[0].Gain; g.Reps == 0 || g.Value != 2 || !strings.Contains(g.Note, "lower bound") {
		t.Errorf("candidate at the top: gain %+v, want 2 marked a lower bound", g)
	}
}

// ratioResults is a result holding only the decision metric's ratios of
// "candidate" (e2e mean), as Analyze leaves them.
func ratioResults(qs ...report.Ratio) report.Results {
	for i := range qs {
		qs[i].Candidate, qs[i].Baseline, qs[i].Metric, qs[i].Stat = "candidate", "baseline", "e2e", "mean"
	}
	return report.Results{Complete: true, Stats: &report.Stats{Ratios: qs}}
}

// TestVerdictSummaryIsOneSentence: a pass reads as the change a buyer gets,
// with its interval, load and resolution, and the loads left out, with no
// clause letters or test names.
func TestVerdictSummaryIsOneSentence(t *testing.T) {
	t.Parallel()
	res := 0.0008
	r := ratioResults(
		report.Ratio{OfferedLoadRPS: 3, Resolution: &res, Value: report.Estimate{Value: 0.853, Low: 0.842, High: 0.863, Reps: 1, Requests: 30, Interval: true}},
		report.Ratio{OfferedLoadRPS: 10, Resolution: &res, Excluded: "client-bound: candidate rep 0", Value: report.Estimate{Value: 0.842, Low: 0.831, High: 0.852, Reps: 1, Requests: 91, Interval: true}},
	)
	rule := report.DecisionRule{Baseline: "baseline", Metric: "e2e", UseMean: true, RegressionMargin: 0.02}.WithDefaults()
	v := analysis.Decide(r, rule, "candidate")
	want := "candidate vs baseline: PASS: mean E2E vs the baseline: 14.7 % lower at 3.00 req/s (ratio 0.853, 95 % interval [0.842, 0.863], resolution ±0.08 %); beyond this run's resolution, with no regression beyond the 2.0 % margin; 1 of 2 loads left out (client-bound)"
	if got := analysis.VerdictLine(v); got != want {
		t.Errorf("verdict line\n got %q\nwant %q", got, want)
	}
}

// TestClauseBNoRatioSaysNoRatio: a ratio the sample size refused (no value,
// though per-request pairs exist) is said as "no ratio (why)", never
// "ratio 0", and a client-bound load without an interval is excluded, not
// made inconclusive.
func TestClauseBNoRatioSaysNoRatio(t *testing.T) {
	t.Parallel()
	r := ratioResults(
		report.Ratio{OfferedLoadRPS: 10, Value: report.Estimate{Requests: 91, Note: "not measured (91 paired requests are too few for p99 (n ≥ 459 at 99.00 % confidence))"}},
		report.Ratio{OfferedLoadRPS: 24, Excluded: "client-bound: baseline rep 0", Value: report.Estimate{Value: 0.98, Reps: 1, Note: "1 repetition: an interval over repetitions needs ≥ 2"}},
	)
	rule := report.DecisionRule{Baseline: "baseline", Metric: "e2e", UseMean: true, RegressionMargin: 0.02}.WithDefaults()
	v := analysis.Decide(r, rule, "candidate")
	b := v.Clauses[1]
	if strings.Contains(b.Detail, "ratio 0 ") || !strings.Contains(b.Detail, "no ratio (not measured (91 paired requests") {
		t.Errorf("clause b detail: %q", b.Detail)
	}
	if !strings.Contains(b.Detail, "excluded from the verdict: 24.00 req/s (client-bound") {
		t.Errorf("a client-bound load without an interval is not excluded: %q", b.Detail)
	}
	if strings.Contains(v.Summary, "ratio 0 ") || !strings.Contains(v.Summary, "INCONCLUSIVE: no interval for mean E2E at 10.00 req/s: not measured (91 paired") {
		t.Errorf("summary: %q", v.Summary)
	}
}

// TestVerdictWithoutAA: with no A/A replicate, a run of 3 blocks still
// decides (the candidate's blocks give the run-to-run spread its interval
// is widened by) and says the resolution was not measured; a run of 1
// block has no run-to-run spread at all, so its interval (the requests'
// spread inside one cell) decides nothing: inconclusive, saying why. With
// the A/A replicate, 1 block decides (its one degree of freedom widens the
// interval by t(1) = 12.7 times the A/A offset: here no difference at a
// wide resolution).
func TestVerdictWithoutAA(t *testing.T) {
	t.Parallel()
	rule := report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02, Resamples: 400}
	run := func(blocks int, aa bool) report.Verdict {
		r := analysistest.BlocksRun(rand.New(rand.NewPCG(9, 10)), blocks, 300, 0.8, 0.01)
		if !aa {
			r.Cells = slices.DeleteFunc(r.Cells, func(c report.Cell) bool { return report.IsAAArm(c.Arm) })
			r.Manifest.ArmOrder = []string{"baseline", "cand"}
		}
		if err := analysis.Analyze(&r, rule); err != nil {
			t.Fatal(err)
		}
		return r.Verdicts[0]
	}
	if v := run(3, false); v.Outcome != report.VerdictPass || !strings.Contains(v.Summary, "this run's resolution was not measured: no A/A replicate") {
		t.Errorf("3 blocks, no A/A: %s", analysis.VerdictLine(v))
	}
	v := run(1, false)
	if v.Outcome != report.VerdictInconclusive || !strings.Contains(v.Summary, "decides nothing: this run's resolution was not measured (no A/A replicate) and 1 repetition gives no run-to-run spread") {
		t.Errorf("1 block, no A/A: %s", analysis.VerdictLine(v))
	}
	if !strings.Contains(v.Clauses[1].Detail, "1 repetition gives no run-to-run spread") {
		t.Errorf("1 block, no A/A: clause b detail %q does not say why", v.Clauses[1].Detail)
	}
	if v := run(1, true); v.Outcome == report.VerdictInconclusive || strings.Contains(v.Summary, "decides nothing") {
		t.Errorf("1 block with the A/A replicate: %s", analysis.VerdictLine(v))
	}
}

// TestClauseBClasses: clause b's rule at one load, resolution ±5.4 % and a
// 2 % margin (L = 1.054): an interval containing 1, or a ratio within the
// resolution, is no difference unless the whole interval lies above L; one
// reaching past L says which regression it leaves open, and carries it
// (Verdict.RegressionNotRuledOut) for a canary gate. A slowdown beyond the
// resolution whose interval excludes 1 and reaches below L straddles.
func TestClauseBClasses(t *testing.T) {
	t.Parallel()
	rule := report.DecisionRule{Baseline: "baseline", Metric: "e2e", UseMean: true, RegressionMargin: 0.02}.WithDefaults()
	res := 0.054
	at := func(load, v, lo, hi float64) report.Ratio {
		return report.Ratio{OfferedLoadRPS: load, Resolution: &res, Value: report.Estimate{Value: v, Low: lo, High: hi, Reps: 3, Requests: 51, Interval: true}}
	}
	for _, tc := range []struct {
		name    string
		ratios  []report.Ratio
		outcome string
		open    float64 // RegressionNotRuledOut, 0 for nil
		summary string  // substring of the summary
	}{
		{"contains 1, high end past L (the quickstart's rmsnorm-2.5x, results/quickstart-2026-12-02f)", []report.Ratio{at(10, 1.02, 0.971, 1.06)}, report.VerdictNoDifference, 0.06,
			"NO DIFFERENCE: no change in mean E2E this run can detect: 2.0 % higher at 10.00 req/s (ratio 1.02, 95 % interval [0.971, 1.06], resolution ±5.4 %), but a regression up to 6.0 % is not ruled out at this run's resolution (its high end lies past the limit 1.05)"},
		{"contains 1, inside L", []report.Ratio{at(10, 0.99, 0.95, 1.03)}, report.VerdictNoDifference, 0, "1.0 % lower at 10.00 req/s"},
		{"excludes 1, within the resolution", []report.Ratio{at(10, 0.97, 0.95, 0.99)}, report.VerdictNoDifference, 0, "3.0 % lower"},
		{"excludes 1 above, within the resolution, past L", []report.Ratio{at(10, 1.04, 1.01, 1.07)}, report.VerdictNoDifference, 0.07, "but a regression up to 7.0 % is not ruled out"},
		{"a gain beyond the resolution", []report.Ratio{at(10, 0.93, 0.88, 0.976)}, report.VerdictPass, 0, "PASS: mean E2E vs the baseline: 7.0 % lower"},
		{"a slowdown beyond the resolution, low end below L", []report.Ratio{at(10, 1.07, 1.03, 1.11)}, report.VerdictInconclusive, 0, "straddles the limit 1.05"},
		{"the whole interval above L", []report.Ratio{at(10, 1.10, 1.06, 1.14)}, report.VerdictFail, 0, "FAIL"},
		{"a pass at one load, an open no-difference at another", []report.Ratio{at(3, 1.02, 0.971, 1.06), at(10, 0.85, 0.80, 0.90)}, report.VerdictPass, 0.06,
			"; at 3.00 req/s no difference detectable (ratio 1.02 [0.971, 1.06]), but a regression up to 6.0 % is not ruled out at this run's resolution (its high end lies past the limit 1.05)"},
	} {
		v := analysis.Decide(ratioResults(tc.ratios...), rule, "candidate")
		if v.Outcome != tc.outcome || !strings.Contains(v.Summary, tc.summary) {
			t.Errorf("%s: %s, want %s with %q", tc.name, analysis.VerdictLine(v), tc.outcome, tc.summary)
		}
		got := 0.0
		if v.RegressionNotRuledOut != nil {
			got = *v.RegressionNotRuledOut
		}
		if math.Abs(got-tc.open) > 1e-12 {
			t.Errorf("%s: regression not ruled out %v, want %v", tc.name, got, tc.open)
		}
		if tc.open > 0 && !strings.Contains(v.Clauses[1].Detail, "is not ruled out at this run's resolution") {
			t.Errorf("%s: clause b detail does not say so: %q", tc.name, v.Clauses[1].Detail)
		}
	}
}

// TestUnresolvedSaysTheRunStopped: a run stopped after its first block,
// before the A/A replicate's cell and the other blocks ran, says that
// happened, not "run ≥ 2 repetitions or keep resolution.aa_replicate on"
// (both were asked for); a run planned with 1 repetition and no A/A
// replicate still says to ask for them.
func TestUnresolvedSaysTheRunStopped(t *testing.T) {
	t.Parallel()
	rule := report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02, Resamples: 400}
	r := analysistest.BlocksRun(rand.New(rand.NewPCG(9, 10)), 1, 300, 0.8, 0.01)
	r.Cells = slices.DeleteFunc(r.Cells, func(c report.Cell) bool { return report.IsAAArm(c.Arm) })
	var err error
	if r.RunOrder, err = report.RunOrder([]string{"baseline", "cand", report.AAArm("baseline")}, []float64{4}, 3); err != nil {
		t.Fatal(err)
	}
	r.Complete, r.IncompleteReason = false, "interrupted by SIGINT"
	if err := analysis.Analyze(&r, rule); err != nil {
		t.Fatal(err)
	}
	v := r.Verdicts[0]
	want := "decides nothing: the run stopped early (interrupted by SIGINT) before the A/A replicate (resolution.aa_replicate is on) and blocks (repetitions) 2–3 of 3 at this load ran"
	if v.Outcome != report.VerdictInconclusive || !strings.Contains(v.Summary, want) || !strings.Contains(v.Clauses[1].Detail, want) || strings.Contains(v.Summary, "run ≥ 2 repetitions") {
		t.Errorf("interrupted run: %s\nclause b: %s\nwant %q", analysis.VerdictLine(v), v.Clauses[1].Detail, want)
	}
	// Planned so: 1 repetition, no A/A replicate.
	r.RunOrder, _ = report.RunOrder([]string{"baseline", "cand"}, []float64{4}, 1)
	if err := analysis.Analyze(&r, rule); err != nil {
		t.Fatal(err)
	}
	if v := r.Verdicts[0]; !strings.Contains(v.Summary, "run ≥ 2 repetitions or keep resolution.aa_replicate on") {
		t.Errorf("a run planned with 1 repetition and no A/A: %s", analysis.VerdictLine(v))
	}
}

// TestCapacityOneAnswer: results.json gives one capacity per arm. A sweep
// whose every load was met in every repetition has each capacity as a
// lower bound (the highest measured load, no interval), never a
// zero-width interval; repetitions that all agree below the top give no
// interval either, nor does the gain between such capacities; and a run
// that searched the capacity leaves the sweep's reading out, saying the
// search's figures are the answer.
func TestCapacityOneAnswer(t *testing.T) {
	t.Parallel()
	build := func(baseTTFT map[float64]float64) report.Results {
		r := report.Results{SLO: report.SLO{TTFTMs: 200, Percentile: 99}}
		for _, l := range []float64{5, 10} {
			for rep := range 3 {
				r.Cells = append(r.Cells, analysistest.MkCell("baseline", l, rep, 1e6, baseTTFT[l]), analysistest.MkCell("candidate", l, rep, 1e6, 100))
			}
		}
		return r
	}
	r := build(map[float64]float64{5: 100, 10: 100})
	if err := analysis.Analyze(&r, report.DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Stats.Capacity {
		e := c.CapacityRPS
		if e.Interval || e.Value != 10 || e.Low != 10 || e.High != 0 || e.Derived != analysis.DerivedSweepLowerBound || !strings.Contains(e.Note, "a lower bound: "+c.Arm+" met the SLOs at its highest measured load (10.00 req/s) in every repetition") {
			t.Errorf("%s met at every load: capacity %+v, want ≥ 10 with no interval", c.Arm, e)
		}
	}

	r = build(map[float64]float64{5: 100, 10: 400}) // the baseline misses at 10 in every repetition
	if err := analysis.Analyze(&r, report.DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	if b := r.Stats.Capacity[0]; b.CapacityRPS.Interval || b.CapacityRPS.Value != 5 || !strings.Contains(b.CapacityRPS.Note, "between it and the next measured load (10.00 req/s)") {
		t.Errorf("baseline at 5 in every repetition: capacity %+v, want 5 with no interval", b.CapacityRPS)
	}
	if g := r.Stats.CapacityGain[0].Gain; g.Interval || g.Value != 2 || !strings.Contains(g.Note, "lower bound") || !strings.Contains(g.Note, "no interval") {
		t.Errorf("gain of agreeing repetitions: %+v, want 2, a lower bound with no interval", g)
	}

	r.CapacitySearch = &report.CapacitySearch{Arms: []report.CapacityArm{{Arm: "baseline"}, {Arm: "candidate"}}}
	if err := analysis.Analyze(&r, report.DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats; len(st.Capacity) != 0 || len(st.CapacityGain) != 0 || !strings.Contains(st.CapacitySuperseded, "capacity_search") {
		t.Errorf("a searched run: stats capacity %+v, gain %+v, superseded %q; want only the search's answer", st.Capacity, st.CapacityGain, st.CapacitySuperseded)
	}
	r.CapacitySearch = &report.CapacitySearch{NotRun: "no capacity_search block"}
	if err := analysis.Analyze(&r, report.DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats; len(st.Capacity) != 2 || st.CapacitySuperseded != "" {
		t.Errorf("a search that did not run: stats capacity %+v, superseded %q; want the sweep's", st.Capacity, st.CapacitySuperseded)
	}
}
