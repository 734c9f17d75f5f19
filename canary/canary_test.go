package canary

import (
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
)

// TestCompareUsesResolutionAndSaysProvenance: a canary comparison carries
// A's A/A replicate, so its ratios stand beside A's resolution and a
// difference within it is "no difference", not a failed gate; runs from
// different commits and machines say so.
func TestCompareUsesResolutionAndSaysProvenance(t *testing.T) {
	t.Parallel()
	a := analysistest.AARun(t)
	b := analysistest.AARun(t)
	a.Manifest.GitCommit, b.Manifest.GitCommit = "aaaa", "bbbb"
	a.Manifest.Machine, b.Manifest.Machine = "box1 (linux/amd64, 2 CPUs)", "box2 (linux/amd64, 8 CPUs)"
	// B's baseline is A's small candidate: 0.3 % apart, within the resolution.
	for i := range b.Cells {
		switch b.Cells[i].Arm {
		case "baseline":
			b.Cells[i].Arm = "old"
		case "small":
			b.Cells[i].Arm = "baseline"
		}
	}
	cmp, err := Compare(a, b, CompareOptions{Rule: report.DecisionRule{Metric: "e2e", UseMean: true}})
	if err != nil {
		t.Fatal(err)
	}
	v := cmp.Results.Verdicts[0]
	if v.Outcome != "no difference" || !strings.Contains(v.Reason, "resolution ±") {
		t.Errorf("canary within the resolution: %s", analysis.VerdictLine(v))
	}
	w := strings.Join(cmp.Results.Warnings, "\n")
	for _, want := range []string{"commits (A=aaaa, B=bbbb)", "machines (A=box1", "not the arms' alone"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}
}

// TestProvenanceServersOfSharedArms: B lacking an arm A has (its A/A
// replicate, stopped early) is no server difference; a shared arm served
// by another kind is.
func TestProvenanceServersOfSharedArms(t *testing.T) {
	t.Parallel()
	sim := map[string]any{"kind": "sim"}
	a := report.Results{Manifest: report.Manifest{Server: map[string]any{"baseline": sim, "baseline~aa": sim}}}
	b := report.Results{Manifest: report.Manifest{Server: map[string]any{"baseline": sim}}}
	if p := strings.Join(Provenance(a, b), "; "); strings.Contains(p, "servers") {
		t.Errorf("B lacks only the A/A replicate: provenance %q names servers", p)
	}
	b.Manifest.Server["baseline"] = map[string]any{"kind": "vllm"}
	if p := strings.Join(Provenance(a, b), "; "); !strings.Contains(p, "servers (A=baseline: sim, B=baseline: vllm)") {
		t.Errorf("a shared arm on another server: provenance %q, want it named", p)
	}
}
