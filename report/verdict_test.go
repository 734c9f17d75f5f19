package report

import (
	"strings"
	"testing"
)

// mkCell is a cell with the given TPOT p99 and TTFT p99 (ms); other figures are left empty.
func mkCell(arm string, load float64, rep int, tpotP99, ttftP99 float64) Cell {
	return Cell{Arm: arm, OfferedLoadRPS: load, Repetition: rep, WindowS: ptr(10),
		TPOT: Dist{N: 1000, P99Ms: ptr(tpotP99), MeanMs: ptr(tpotP99 / 2)},
		TTFT: Dist{N: 1000, P99Ms: ptr(ttftP99), MeanMs: ptr(ttftP99 / 2)}}
}

// twoArms builds a complete result with one load and the given per-repetition TPOT p99s.
func twoArms(base, cand []float64) Results {
	r := Results{Complete: true, Manifest: Manifest{ConfigSHA256: "cfg", ArmOrder: []string{"baseline", "candidate"}}, Trace: TraceInfo{SHA256: "tr"}}
	for i := range base {
		r.Cells = append(r.Cells, mkCell("baseline", 4, i, base[i], 100))
	}
	for i := range cand {
		r.Cells = append(r.Cells, mkCell("candidate", 4, i, cand[i], 100))
	}
	return r
}

const gib = 1 << 30

func TestVerdicts(t *testing.T) {
	t.Parallel()
	base := []float64{20.0, 20.4, 19.8, 20.1}
	win := []float64{15.0, 15.2, 14.9, 15.1}
	cases := []struct {
		name    string
		r       Results
		rule    DecisionRule
		edit    func(*Results)
		outcome string
		clause  string
		detail  string // substring of the reason
	}{
		{name: "clear win", r: twoArms(base, win), outcome: "pass", clause: "b", detail: "beyond the resolution and below 1"},
		{name: "clear loss", r: twoArms(base, []float64{26, 26.5, 25.8, 26.2}), outcome: "fail", clause: "b", detail: "regressed beyond the margin"},
		{name: "inconclusive: interval straddles 1", r: twoArms(base, []float64{17, 23, 20.5, 19}), outcome: "inconclusive", clause: "b", detail: "straddles 1"},
		{name: "small slowdown within a 2% margin passes", r: twoArms(base, []float64{20.2, 20.6, 20.0, 20.3}), rule: DecisionRule{RegressionMargin: 0.02}, outcome: "pass", clause: "b"},
		{name: "the same slowdown with no margin fails", r: twoArms(base, []float64{20.2, 20.6, 20.0, 20.3}), outcome: "fail", clause: "b"},
		{name: "one repetition: no interval", r: twoArms(base[:1], win[:1]), outcome: "inconclusive", clause: "b", detail: "needs ≥ 2"},
		{
			name: "VRAM over budget", r: twoArms(base, win), rule: DecisionRule{VRAMBudgetBytes: 80 * gib},
			edit: func(r *Results) {
				r.Energy = &EnergySection{Cells: []EnergyCell{
					{Arm: "baseline", OfferedLoadRPS: 4, Available: true, PeakVRAMBytes: 70 * gib},
					{Arm: "candidate", OfferedLoadRPS: 4, Available: true, PeakVRAMBytes: 90 * gib},
				}}
			},
			outcome: "fail", clause: "c", detail: "> budget",
		},
		{
			name: "VRAM within budget", r: twoArms(base, win), rule: DecisionRule{VRAMBudgetBytes: 80 * gib},
			edit: func(r *Results) {
				r.Energy = &EnergySection{Cells: []EnergyCell{{Arm: "candidate", OfferedLoadRPS: 4, Available: true, PeakVRAMBytes: 79 * gib}}}
			},
			outcome: "pass", clause: "b",
		},
		{name: "VRAM budget declared, not measured", r: twoArms(base, win), rule: DecisionRule{VRAMBudgetBytes: 80 * gib}, outcome: "inconclusive", clause: "c", detail: "not measured"},
		{
			name: "undeclared VRAM budget never decides", r: twoArms(base, win),
			edit: func(r *Results) {
				r.Energy = &EnergySection{Cells: []EnergyCell{{Arm: "candidate", OfferedLoadRPS: 4, Available: true, PeakVRAMBytes: 1000 * gib}}}
			},
			outcome: "pass", clause: "b",
		},
		{name: "validation required, missing", r: twoArms(base, win), rule: DecisionRule{RequireValidation: true}, outcome: "fail", clause: "a", detail: "no validation section"},
		{
			name: "validation uncovered shapes", r: twoArms(base, win), rule: DecisionRule{RequireValidation: true},
			edit: func(r *Results) {
				r.Validation = &ValidationSection{Candidates: []ValidationCandidate{{Candidate: "candidate", Verdict: "pass", UncoveredShapes: 3}}}
			},
			outcome: "fail", clause: "a", detail: "3 served shapes",
		},
		{
			name: "hook counted no calls", r: twoArms(base, win), rule: DecisionRule{RequireValidation: true},
			edit: func(r *Results) {
				r.Validation = &ValidationSection{Candidates: []ValidationCandidate{{Candidate: "candidate", Verdict: "pass"}}}
				r.Hook = &HookSection{Arms: []HookArm{{Arm: "candidate", Target: "m:RMSNorm.forward"}}}
			},
			outcome: "fail", clause: "a", detail: "never ran",
		},
		{
			name: "validation and hook fine", r: twoArms(base, win), rule: DecisionRule{RequireValidation: true},
			edit: func(r *Results) {
				r.Validation = &ValidationSection{Candidates: []ValidationCandidate{{Candidate: "candidate", Verdict: "pass"}}}
				r.Hook = &HookSection{Arms: []HookArm{{Arm: "candidate", Target: "m:RMSNorm.forward", CallsEager: 10}}}
			},
			outcome: "pass", clause: "b",
		},
		{
			name: "reproducibility required, run incomplete", r: twoArms(base, win), rule: DecisionRule{RequireReproducible: true},
			edit:    func(r *Results) { r.Complete, r.IncompleteReason = false, "interrupted" },
			outcome: "fail", clause: "d", detail: "interrupted",
		},
		{
			name: "p99 refused for a small sample", r: twoArms(base, win),
			edit: func(r *Results) {
				for i := range r.Cells {
					r.Cells[i].TPOT = Dist{N: 100, MeanMs: ptr(10)}
				}
			},
			outcome: "inconclusive", clause: "b",
		},
		{name: "mean TPOT decides when configured", r: twoArms(base, win), rule: DecisionRule{UseMean: true}, outcome: "pass", clause: "b", detail: "tpot mean"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tc.r
			if tc.edit != nil {
				tc.edit(&r)
			}
			if err := Analyze(&r, tc.rule); err != nil {
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
	bad := DecisionRule{Metric: "latency", Percentile: 97, RegressionMargin: -1, IntervalLevel: 2, Resamples: 5}
	err := bad.Validate()
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"metric", "percentile", "regression_margin", "interval_level", "resamples"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	r := twoArms([]float64{1, 2}, []float64{1, 2})
	if err := Analyze(&r, DecisionRule{Baseline: "prod"}); err == nil || !strings.Contains(err.Error(), "prod") {
		t.Errorf("missing baseline arm: err = %v", err)
	}
}

func TestCapacity(t *testing.T) {
	t.Parallel()
	// SLO: TTFT p99 ≤ 200 ms. Baseline TTFT p99 by load 2, 4, 8: 100, 150, 400
	// (rep 2: 210 at load 4) → capacities 4, 4, 2. Candidate: 80, 120, 180 → 8 each.
	// TPOT is far above any target but undeclared: it must not leak into capacity.
	r := Results{SLO: SLO{TTFTMs: 200, Percentile: 99}}
	baseTTFT := map[float64][]float64{2: {100, 100, 100}, 4: {150, 150, 210}, 8: {400, 400, 400}}
	candTTFT := map[float64][]float64{2: {80, 80, 80}, 4: {120, 120, 120}, 8: {180, 180, 180}}
	for _, l := range []float64{2, 4, 8} {
		for rep := range 3 {
			r.Cells = append(r.Cells, mkCell("baseline", l, rep, 1e6, baseTTFT[l][rep]), mkCell("candidate", l, rep, 1e6, candTTFT[l][rep]))
		}
	}
	if err := Analyze(&r, DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	st := r.Stats
	if len(st.Capacity) != 2 {
		t.Fatalf("capacity for %d arms, want 2", len(st.Capacity))
	}
	b, c := st.Capacity[0], st.Capacity[1]
	near(t, "baseline capacity", b.CapacityRPS.Value, 10.0/3, 1e-12)
	near(t, "candidate capacity", c.CapacityRPS.Value, 8, 0)
	if b.NextLoadRPS != 8 || c.NextLoadRPS != 0 {
		t.Errorf("next loads %v, %v; want 8, 0", b.NextLoadRPS, c.NextLoadRPS)
	}
	// Bootstrap draws of the baseline mean lie in [2, 4]; the interval must too, and cover the mean.
	if !b.CapacityRPS.Interval || b.CapacityRPS.Low < 2 || b.CapacityRPS.High > 4 || b.CapacityRPS.Low > 10.0/3 || b.CapacityRPS.High < 10.0/3 {
		t.Errorf("baseline capacity interval %+v", b.CapacityRPS)
	}
	g := st.CapacityGain[0].Gain
	near(t, "capacity gain", g.Value, 8/(10.0/3), 1e-12)
	if g.Low < 2 || g.High > 4 {
		t.Errorf("gain interval [%v, %v] outside [8/4, 8/2]", g.Low, g.High)
	}

	// With no SLO declared, capacity is not measured, and says so.
	r.SLO = SLO{}
	if err := Analyze(&r, DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	if r.Stats.CapacityNotMeasured == "" || len(r.Stats.Capacity) != 0 {
		t.Errorf("no SLO: capacity %+v, reason %q", r.Stats.Capacity, r.Stats.CapacityNotMeasured)
	}
}

// TestVRAMNotMeasuredNeverDecides: a peak VRAM listed as missing (its zero
// value is no measurement) leaves a declared budget inconclusive, and the
// report says "not measured" instead of 0.
func TestVRAMNotMeasuredNeverDecides(t *testing.T) {
	t.Parallel()
	r := twoArms([]float64{20.0, 20.4, 19.8}, []float64{15.0, 15.2, 14.9})
	r.Energy = &EnergySection{Cells: []EnergyCell{{Arm: "candidate", OfferedLoadRPS: 4, Available: true, Source: "GPU-reported", EnergyJ: 100, Missing: []string{"peak_vram_bytes", "idle_power_w"}}}}
	if err := Analyze(&r, DecisionRule{VRAMBudgetBytes: 80 * gib}); err != nil {
		t.Fatal(err)
	}
	if v := r.Verdicts[0]; v.Outcome != "inconclusive" || v.DecidingClause != "c" {
		t.Errorf("verdict %s by %s, want inconclusive by c: %s", v.Outcome, v.DecidingClause, v.Reason)
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| GPU-reported | 100.0 | 0 | 0 | 0 | 0 | 0 | not measured | not measured | 0 |") {
		t.Errorf("energy row does not say not measured:\n%s", b.String()[strings.Index(b.String(), "## Energy"):][:600])
	}
}

func TestCheckSLOAndRefusedLoads(t *testing.T) {
	t.Parallel()
	slo := SLO{TTFTMs: 200, TPOTMs: 50}
	small := Cell{OfferedLoadRPS: 1, TTFT: Dist{N: 40, MeanMs: ptr(50)}, TPOT: Dist{N: 40, MeanMs: ptr(10)}}
	cases := []struct {
		name string
		c    Cell
		want SLOOutcome
	}{
		{"met", mkCell("a", 2, 0, 40, 150), SLOMet},
		{"TTFT missed", mkCell("a", 2, 0, 40, 250), SLOMissed},
		{"TPOT missed while TTFT refused", Cell{TTFT: Dist{N: 40}, TPOT: Dist{N: 1000, P99Ms: ptr(60)}}, SLOMissed},
		{"refused", small, SLORefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := CheckSLO(tc.c, slo); got != tc.want {
				t.Errorf("CheckSLO = %s (%s), want %s", got, why, tc.want)
			}
		})
	}
	// A light load too small to claim p99 is skipped, not failed: capacity is 4, not 0.
	r := Results{SLO: SLO{TTFTMs: 200}}
	small.Arm = "baseline"
	r.Cells = []Cell{small, mkCell("baseline", 2, 0, 1, 100), mkCell("baseline", 4, 0, 1, 150), mkCell("baseline", 8, 0, 1, 300)}
	if err := Analyze(&r, DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	c := r.Stats.Capacity[0]
	if c.CapacityRPS.Value != 4 || c.NextLoadRPS != 8 || !strings.Contains(c.Detail, "skipped as unknown: ttft p99 refused at load 1.00") {
		t.Errorf("capacity %+v", c)
	}
}

func TestCapacityUnknownWhenEveryLoadIsTooSmall(t *testing.T) {
	t.Parallel()
	tiny := func(arm string, load float64) Cell {
		return Cell{Arm: arm, OfferedLoadRPS: load, TTFT: Dist{N: 30, MeanMs: ptr(10)}}
	}
	r := Results{SLO: SLO{TTFTMs: 200}, Cells: []Cell{tiny("baseline", 1), tiny("baseline", 2), tiny("candidate", 1), tiny("candidate", 2)}}
	if err := Analyze(&r, DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Stats.Capacity {
		if c.CapacityRPS.Reps != 0 || !strings.Contains(c.CapacityRPS.Note, "unknown") || c.NextLoadRPS != 0 {
			t.Errorf("%s: capacity %+v next %v, want unknown", c.Arm, c.CapacityRPS, c.NextLoadRPS)
		}
	}
	if g := r.Stats.CapacityGain[0].Gain; g.Reps != 0 || !strings.Contains(g.Note, "capacity is unknown") {
		t.Errorf("gain %+v, want undefined", g)
	}
	if h := Headline(r); !strings.Contains(h, "unknown: an arm's capacity is unknown") {
		t.Errorf("headline %q", h)
	}
}

// TestCapacityGainCensoredAtTopLoad: when both arms meet the SLOs at the
// highest swept load, neither capacity was found, so the gain is unknown (not
// 1.00×); when only the candidate does, the gain is marked a lower bound.
func TestCapacityGainCensoredAtTopLoad(t *testing.T) {
	t.Parallel()
	build := func(candTop float64) Results {
		r := Results{SLO: SLO{TTFTMs: 200, Percentile: 99}}
		for _, l := range []float64{2, 4} {
			for rep := range 2 {
				base := 100.0
				if l == 4 && candTop == 0 {
					base = 400 // the baseline misses at 4: only the candidate reaches the top
				}
				r.Cells = append(r.Cells, mkCell("baseline", l, rep, 1e6, base), mkCell("candidate", l, rep, 1e6, 100))
			}
		}
		return r
	}
	r := build(1)
	if err := Analyze(&r, DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	if g := r.Stats.CapacityGain[0].Gain; g.Reps != 0 || !strings.Contains(g.Note, "both arms met the SLOs at the highest measured load") {
		t.Errorf("both at the top: gain %+v, want undefined with the reason", g)
	}
	r = build(0)
	if err := Analyze(&r, DecisionRule{}); err != nil {
		t.Fatal(err)
	}
	if g := r.Stats.CapacityGain[0].Gain; g.Reps == 0 || g.Value != 2 || !strings.Contains(g.Note, "lower bound") {
		t.Errorf("candidate at the top: gain %+v, want 2 marked a lower bound", g)
	}
}

// ratioResults is a result holding only the decision metric's ratios of
// "candidate" (e2e mean), as Analyze leaves them.
func ratioResults(qs ...Ratio) Results {
	for i := range qs {
		qs[i].Candidate, qs[i].Baseline, qs[i].Metric, qs[i].Stat = "candidate", "baseline", "e2e", "mean"
	}
	return Results{Complete: true, Stats: &Stats{Ratios: qs}}
}

// TestVerdictSummaryIsOneSentence: a pass reads as the change a buyer gets,
// with its interval, load and resolution, and the loads left out, with no
// clause letters or test names.
func TestVerdictSummaryIsOneSentence(t *testing.T) {
	t.Parallel()
	res := 0.0008
	r := ratioResults(
		Ratio{OfferedLoadRPS: 3, Resolution: &res, Value: Estimate{Value: 0.853, Low: 0.842, High: 0.863, Reps: 1, Requests: 30, Interval: true}},
		Ratio{OfferedLoadRPS: 10, Resolution: &res, Excluded: "client-bound: candidate rep 0", Value: Estimate{Value: 0.842, Low: 0.831, High: 0.852, Reps: 1, Requests: 91, Interval: true}},
	)
	rule := DecisionRule{Baseline: "baseline", Metric: "e2e", UseMean: true, RegressionMargin: 0.02}.WithDefaults()
	v := decide(r, rule, "candidate")
	want := "candidate vs baseline: PASS: mean E2E vs the baseline: 14.7 % lower at 3.00 req/s (ratio 0.853, 95 % interval [0.842, 0.863], resolution ±0.08 %); beyond this run's resolution, with no regression beyond the 2.0 % margin; 1 of 2 loads left out (client-bound)"
	if got := VerdictLine(v); got != want {
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
		Ratio{OfferedLoadRPS: 10, Value: Estimate{Requests: 91, Note: "not measured (91 paired requests are too few for p99 (n ≥ 459 at 99.00 % confidence))"}},
		Ratio{OfferedLoadRPS: 24, Excluded: "client-bound: baseline rep 0", Value: Estimate{Value: 0.98, Reps: 1, Note: "1 repetition: an interval over repetitions needs ≥ 2"}},
	)
	rule := DecisionRule{Baseline: "baseline", Metric: "e2e", UseMean: true, RegressionMargin: 0.02}.WithDefaults()
	v := decide(r, rule, "candidate")
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
