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
		"big":   {"verdict: PASS", "resolution ±", "simulator's truth 0.800"},
		"small": {"verdict: NO DIFFERENCE", "1.0030 at 4.00 req/s", "below the resolution ±", "smaller than what this run can detect"},
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
