package render

import (
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
		"small": {"verdict: NO DIFFERENCE", "Amdahl bound: 1.0030 (at most 0.30 % faster in service time", "below this run's resolution at every load: smaller than what it can detect"},
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
// (testdata/quickstart-results.json: the quickstart's results.json of
// 2026-12-01, 23:25 UTC, with the per-request figures and CDF points that
// report.md does not print left out) fits in 200 lines, opens with the
// answer, shows the SLO's p90 in the cell table, and says the one-repetition
// reason a few times, not once per figure (146 times before).
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
	if n := strings.Count(md, "an interval over repetitions needs ≥ 2"); n > 6 {
		t.Errorf("the one-repetition reason is said %d times", n)
	}
	if strings.Contains(md, "(cell 1 in run order)") {
		t.Error("one section per cell")
	}
}
