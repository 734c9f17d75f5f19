package render

import (
	stdhtml "html"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
)

// TestAnswerFirstScreen: the answer block per candidate puts the verdict,
// the ratio with its resolution and the simulator's truth, and a bound
// below the resolution said as such, before anything else.
func TestAnswerFirstScreen(t *testing.T) {
	t.Parallel()
	r := analysistest.AARun(t)
	r.Amdahl = &report.AmdahlSection{Loads: []report.AmdahlLoad{{Candidate: "small", OfferedLoadRPS: 4, Bound: 1.003}}}
	r.SimTruth = []report.TruthRatio{{Candidate: "big", OfferedLoadRPS: 4, Metric: "e2e", Stat: "mean", Value: 0.8}}
	if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	blocks := Answer(r)
	if len(blocks) != 2 {
		t.Fatalf("%d answer blocks, want 2", len(blocks))
	}
	text := map[string]string{}
	for _, b := range blocks {
		text[b.Candidate] = strings.Join(b.Lines, "\n")
		if !strings.HasPrefix(b.Lines[0], "verdict: ") {
			t.Errorf("%s's answer does not open with the verdict: %q", b.Candidate, b.Lines[0])
		}
	}
	for cand, want := range map[string][]string{
		"big":   {"verdict: PASS", "±", "the simulator's truth", "truth 0.800"},
		"small": {"verdict: NO DIFFERENCE", "Amdahl bound, speedup baseline/candidate (higher is better): 1.0030 (at most 0.30 % faster in service time", "below this run's resolution at every load: smaller than what it can detect"},
	} {
		for _, w := range want {
			if !strings.Contains(text[cand], w) {
				t.Errorf("%s's answer lacks %q:\n%s", cand, w, text[cand])
			}
		}
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(md.String(), "## Answer"), strings.Index(md.String(), "| field | value |"); i < 0 || i > j {
		t.Error("report.md does not open with the answer")
	}
}

// TestQuickstartReportFitsTwoHundredLines: the quickstart's report.md
// (testdata/quickstart-results.json: results.json of `transferlab run
// configs/quickstart.yaml` at commit 8b0c421, 2026-12-02 03:23 UTC: 3
// repetitions × 1 load × 4 arms with the A/A replicate, and a capacity
// search; the per-request figures and CDF points, which report.md does not
// print, left out) fits in 200 lines, opens with the answer, shows the SLO's
// p90 in the cell table, keeps the figures over repetitions to the decision
// metric (one row per arm) and says a refused percentile's reason once.
func TestQuickstartReportFitsTwoHundredLines(t *testing.T) {
	t.Parallel()
	r, err := report.ReadResults("testdata/quickstart-results.json")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if n := strings.Count(md, "\n"); n > 200 {
		t.Errorf("report.md has %d lines, want ≤ 200", n)
	}
	answer, verdicts := strings.Index(md, "## Answer"), strings.Index(md, "## Verdicts")
	if answer < 0 || verdicts < 0 || answer > verdicts || strings.Count(md[:answer], "\n") > 5 {
		t.Error("report.md does not open with the answer")
	}
	if !strings.Contains(md, "| TTFT p90 |") || strings.Contains(md, "| TTFT p99 |") {
		t.Error("the cell table does not show the SLO's p90 (or shows refused p99s)")
	}
	if n := strings.Count(md, "| e2e (ms, simulated) |"); n != 4 || strings.Contains(md, "| ttft_intended |") {
		t.Errorf("the table over repetitions has %d rows of the decision metric (want 4, one per arm) or rows of others", n)
	}
	if n := strings.Count(md, "too few for p99"); n > 1 {
		t.Errorf("the refused p99's reason is said %d times", n)
	}
	if strings.Contains(md, "(cell 1 in run order)") {
		t.Error("one section per cell")
	}
}

// TestRatioAndSpeedupDirectionsLabelled: the answer's ratios are
// candidate/baseline and the Amdahl table's speedups baseline/candidate;
// each figure says which, and which way is better, in one wording
// (report.RatioLabel, report.SpeedupLabel), in report.md and report.html.
func TestRatioAndSpeedupDirectionsLabelled(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true}); err != nil {
		t.Fatal(err)
	}
	answer := strings.Join(Answer(r)[0].Lines, "\n")
	for _, want := range []string{
		"gain, candidate/baseline mean E2E (lower is better), with its 95 % interval",
		"Amdahl bound, speedup baseline/candidate (higher is better): ",
	} {
		if !strings.Contains(answer, want) {
			t.Errorf("the answer lacks %q:\n%s", want, answer)
		}
	}
	md, html := renderBoth(t, r)
	html = stdhtml.UnescapeString(html)
	for _, doc := range []struct{ name, text string }{{"report.md", md}, {"report.html", html}} {
		for _, want := range []string{
			"measured speedup baseline/candidate mean E2E (×, simulated; higher is better)",
			"measured speedup baseline/candidate p99 E2E (×, simulated; higher is better)",
			"Each figure is candidate/baseline of the row's metric and the column's statistic (lower is better)",
		} {
			if !strings.Contains(doc.text, want) {
				t.Errorf("%s lacks %q", doc.name, want)
			}
		}
	}
	// The axis label may wrap (after "(×,"): its first line says the direction.
	if !strings.Contains(html, ">speedup baseline/candidate (×,") {
		t.Error("report.html's Amdahl chart axis does not say the speedup's direction")
	}
}

// TestFNotMeasuredSaysWhy: a candidate whose f comes from the cost model
// (it changes another op than amdahl.target_op) shows f_gpu and f_excl as
// not measured with the reason, said once under the table, not per load.
func TestFNotMeasuredSaysWhy(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	why := "it changes gate_up_proj, and the baseline's profile measures only amdahl.target_op (rmsnorm); its f_wall is gate_up_proj's share of the simulator's modelled step time"
	for i := range r.Amdahl.Loads {
		r.Amdahl.Loads[i].FGPU, r.Amdahl.Loads[i].FExcl, r.Amdahl.Loads[i].FNotMeasured = nil, nil, why
	}
	md, html := renderBoth(t, r)
	html = stdhtml.UnescapeString(html)
	for _, doc := range []struct{ name, text string }{{"report.md", md}, {"report.html", html}} {
		if n := strings.Count(doc.text, "candidate: f_gpu and f_excl not measured: "+why); n != 1 {
			t.Errorf("%s says the reason %d times, want once", doc.name, n)
		}
	}
	if !strings.Contains(md, "— (see below)") {
		t.Error("report.md's f_gpu cells do not point to the reason")
	}
}

// TestExceedsBound: a load is marked as exceeding the Amdahl bound only when
// its measured speedup's interval lies above the bound's (amdahl.Compare's
// "above"), not on an efficiency above 1 alone: the answer block and the
// bound table agree.
func TestExceedsBound(t *testing.T) {
	t.Parallel()
	sp := func(lo, v, hi float64, interval bool) []report.Speedup {
		return []report.Speedup{{Metric: "e2e", Stat: "mean", Value: report.Estimate{Value: v, Low: lo, High: hi, Reps: 3, Interval: interval}}}
	}
	for _, c := range []struct {
		name string
		l    report.AmdahlLoad
		want bool
	}{
		{"interval above", report.AmdahlLoad{Verdict: "above", Measured: sp(1.02, 1.03, 1.04, true)}, true},
		// The quickstart's case: efficiency 1.47 but the interval reaches the bound.
		{"efficiency > 1, interval overlaps", report.AmdahlLoad{Verdict: "inside", Measured: sp(0.98, 1.0234, 1.05, true)}, false},
		{"point estimate above", report.AmdahlLoad{Verdict: "above", Measured: sp(1.03, 1.03, 1.03, false)}, false},
	} {
		l := c.l
		l.Candidate, l.OfferedLoadRPS, l.Bound, l.BoundLow, l.BoundHigh = "c", 4, 1.016, 1.014, 1.018
		l.TransferEfficiency, l.TransferMetric = 1.47, "e2e mean"
		if got := ExceedsBound(l); got != c.want {
			t.Errorf("%s: ExceedsBound %v, want %v", c.name, got, c.want)
		}
		r := report.Results{Amdahl: &report.AmdahlSection{Loads: []report.AmdahlLoad{l}}}
		line := boundLine(r, "c")
		if got := strings.Contains(line, "exceeds it at 1 of 1 loads"); got != c.want {
			t.Errorf("%s: answer line says exceeds %v, want %v: %s", c.name, got, c.want, line)
		}
		table := amdahlTables(r.Amdahl, units(false))
		if got := strings.Contains(table.Parts[0].Note, AboveBoundNote); got != c.want {
			t.Errorf("%s: bound table marks it %v, want %v", c.name, got, c.want)
		}
	}
}

// TestChangeLinesLeaveOutIncompleteCells: the answer's energy and cost
// changes average each arm over the cells the ratios use (complete ones
// only), and name the interrupted cell they leave out; averaging in the cut
// cell would read +50 %.
func TestChangeLinesLeaveOutIncompleteCells(t *testing.T) {
	t.Parallel()
	r := analysistest.AARun(t)
	cut := r.Cells[1] // big, rep 0
	cut.Repetition, cut.Incomplete = 1, "interrupted"
	r.Cells = append(r.Cells, cut)
	r.Energy = &report.EnergySection{}
	r.Cost = &report.CostSection{}
	for _, c := range []struct {
		arm string
		rep int
		v   float64
	}{{"baseline", 0, 1}, {"big", 0, 1}, {"small", 0, 1}, {"big", 1, 2}} {
		r.Energy.Cells = append(r.Energy.Cells, report.EnergyCell{Arm: c.arm, OfferedLoadRPS: 4, Repetition: c.rep, Available: true, JPerOutputToken: c.v})
		r.Cost.Cells = append(r.Cost.Cells, report.CostCell{Arm: c.arm, OfferedLoadRPS: 4, Repetition: c.rep, Currency: "USD", CostPer1MOutputTokens: c.v})
	}
	if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	// Neither change has an interval: each says so, and that it lies within
	// the run's resolution of the decision metric.
	pm := resolutionAt(r, 4)
	if pm == nil {
		t.Fatal("no resolution at 4 req/s")
	}
	res := report.PctOf(*pm)
	if got := noIntervalText(r, 4, 2*(*pm)); got != "no interval: not a tested difference" {
		t.Errorf("a change beyond the resolution: %q", got)
	}
	if got := noIntervalText(report.Results{}, 4, 0); got != "no interval: not a tested difference" {
		t.Errorf("no resolution: %q", got)
	}
	for _, b := range Answer(r) {
		if b.Candidate != "big" {
			continue
		}
		text := strings.Join(b.Lines, "\n")
		for _, w := range []string{
			"GPU energy per output token, candidate − baseline (%; baseline → candidate), each at one offered load: +0 J (+0.0 %; 1.00 → 1.00; no interval; within this run's resolution ±" + res + ") at 4.00 req/s (left out, as from the ratios: big rep 1 (incomplete))",
			"cost per 1M output tokens, candidate − baseline (%; baseline → candidate), each at one offered load: +0 USD (+0.0 %; 1.00 → 1.00; no interval; within this run's resolution ±" + res + ") at 4.00 req/s (left out, as from the ratios: big rep 1 (incomplete))" + costAtLoadNote,
		} {
			if !strings.Contains(text, w) {
				t.Errorf("big's answer lacks %q:\n%s", w, text)
			}
		}
		return
	}
	t.Fatal("no answer block for big")
}

// TestAnswerBoundSaysItsSource: on the simulator a candidate's bound is
// printed twice, before the run from the cost model and in the answer from
// the baseline's measured profile (1.0160 and 1.0159 in one quickstart):
// the answer says which estimate its bound is, so the two read as two
// estimates, not a contradiction; a bound from the cost model says so.
func TestAnswerBoundSaysItsSource(t *testing.T) {
	t.Parallel()
	r := analysistest.AARun(t)
	r.Simulated = true
	r.Amdahl = &report.AmdahlSection{Loads: []report.AmdahlLoad{
		{Candidate: "small", OfferedLoadRPS: 4, FWall: 0.026, S: 2.5, Bound: 1.0159, FFrom: report.FFromProfile},
		{Candidate: "big", OfferedLoadRPS: 4, FWall: 0.272, S: 2, Bound: 1.1577, FFrom: report.FFromCostModel},
	}}
	if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	text := map[string]string{}
	for _, b := range Answer(r) {
		text[b.Candidate] = strings.Join(b.Lines, "\n")
	}
	for cand, want := range map[string]string{
		"small": "1.0159 (at most 1.6 % faster in service time; f_wall 0.026 measured from the baseline's profile in this run (the bound printed before the run is the cost model's estimate; their last digits can differ), s 2.5)",
		"big":   "1.1577 (at most 14 % faster in service time; f_wall 0.272 from the simulator's cost model, as printed before the run, s 2)",
	} {
		if !strings.Contains(text[cand], want) {
			t.Errorf("%s's answer lacks %q:\n%s", cand, want, text[cand])
		}
	}
}
