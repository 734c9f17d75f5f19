package render

import (
	"strings"
	"testing"

	"github.com/transferlab/transferlab/report"
)

// TestAblationTable: the Amdahl section sets the profile estimate and the
// ablation side by side, says why s in situ is undefined, carries the
// profile-gap note, names the ceiling a timing-only ablation, and shows the
// ablation even when no profile estimate was measured.
func TestAblationTable(t *testing.T) {
	fg := 0.133
	bp := 1.089
	e := func(v float64) report.Estimate {
		return report.Estimate{Value: v, Low: v - 0.01, High: v + 0.01, Reps: 3, Interval: true}
	}
	abl := []report.AblationLoad{{Candidate: "triton", Ceiling: "ceil", OfferedLoadRPS: 1.5, Metrics: []report.AblationMetric{{
		Metric: "itl", Stat: "p50", FAblation: e(0.12), SInSitu: report.Estimate{Note: "undefined: the candidate is within noise of the ceiling"},
		BoundAblation: e(1.13), BoundProfile: &bp, CeilingSpeedup: e(1.14), CandidateSpeedup: e(1.13), TransferEfficiency: e(0.93),
		ProfileGap: "the profile bound 1.0890 is below the measured speedup 1.1300",
	}}}}
	sec := &report.AmdahlSection{Loads: []report.AmdahlLoad{{Candidate: "triton", OfferedLoadRPS: 1.5, FGPU: &fg, FWall: 0.096, S: 6.47, Bound: bp}}, Ablation: abl}
	text := renderSection(amdahlTables(sec, false))
	for _, want := range []string{"Profile estimate and ablation, side by side", "0.0960 / 0.133", "6.4700", "1.0890", "0.1200 [0.1100, 0.1300]",
		"undefined: the candidate is within noise of the ceiling", "1.1400 [1.1300, 1.1500]", "the profile bound 1.0890 is below", report.CeilingLabel} {
		if !strings.Contains(text, want) {
			t.Errorf("Amdahl section lacks %q:\n%s", want, text)
		}
	}
	only := renderSection(amdahlTables(&report.AmdahlSection{NotMeasured: "no profile", Ablation: abl}, false))
	if !strings.Contains(only, "Profile estimate not measured: no profile") || !strings.Contains(only, "0.1200 [0.1100, 0.1300]") {
		t.Errorf("ablation without a profile estimate:\n%s", only)
	}
	r := report.Results{Ceiling: "ceil"}
	if got := r.ArmLabel("ceil"); !strings.Contains(got, "timing-only ablation") || r.ArmLabel("triton") != "triton" {
		t.Errorf("ArmLabel: %q, %q", got, r.ArmLabel("triton"))
	}
}

// renderSection flattens a table section for substring checks.
func renderSection(s tableSection) string {
	var b strings.Builder
	b.WriteString(s.NotMeasured + "\n")
	for _, p := range s.Parts {
		b.WriteString(p.Heading + "\n" + p.Note + "\n" + strings.Join(p.Header, " | ") + "\n")
		for _, r := range p.Rows {
			b.WriteString(strings.Join(r, " | ") + "\n")
		}
	}
	return b.String()
}
