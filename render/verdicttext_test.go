package render

import (
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
)

// TestVRAMNotMeasuredNeverDecides: a peak VRAM listed as missing (its zero
// value is no measurement) leaves a declared budget inconclusive, and the
// report says "not measured" instead of 0.
func TestVRAMNotMeasuredNeverDecides(t *testing.T) {
	t.Parallel()
	r := analysistest.TwoArms([]float64{20.0, 20.4, 19.8}, []float64{15.0, 15.2, 14.9})
	r.Energy = &report.EnergySection{Cells: []report.EnergyCell{{Arm: "candidate", OfferedLoadRPS: 4, Available: true, Source: "GPU-reported", EnergyJ: 100, Missing: []string{"peak_vram_bytes", "idle_power_w"}}}}
	if err := analysis.Analyze(&r, report.DecisionRule{VRAMBudgetBytes: 80 * analysistest.Gib}); err != nil {
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

func TestCapacityUnknownWhenEveryLoadIsTooSmall(t *testing.T) {
	t.Parallel()
	tiny := func(arm string, load float64) report.Cell {
		return report.Cell{Arm: arm, OfferedLoadRPS: load, TTFT: report.Dist{N: 30, MeanMs: analysistest.Ptr(10)}}
	}
	r := report.Results{SLO: report.SLO{TTFTMs: 200}, Cells: []report.Cell{tiny("baseline", 1), tiny("baseline", 2), tiny("candidate", 1), tiny("candidate", 2)}}
	if err := analysis.Analyze(&r, report.DecisionRule{}); err != nil {
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
