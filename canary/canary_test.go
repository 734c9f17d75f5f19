package canary

import (
	"math/rand/v2"
	"slices"
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

// TestCompareResolutionIsAsOwn: compare's resolution is A's own, as A's
// report gives it (its A/A replicate, widened by the spread of A's own
// interleaved blocks), whichever run B is: the two runs were not
// interleaved), so B's blocks are not pooled into it. Before, B's blocks
// replaced A's candidate's in the pooling, so this A (±9.6 % in its own
// report) read ±9.7 % and ±9.3 % against the two Bs.
func TestCompareResolutionIsAsOwn(t *testing.T) {
	t.Parallel()
	rule := report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02, Resamples: 400}
	a := analysistest.BlocksRun(rand.New(rand.NewPCG(21, 22)), 3, 200, 0.9, 0.03)
	own := a
	own.Cells = slices.Clone(a.Cells)
	if err := analysis.Analyze(&own, rule); err != nil {
		t.Fatal(err)
	}
	find := func(rs []report.Resolution) report.Resolution {
		for _, res := range rs {
			if res.Metric == "e2e" && res.Stat == "mean" {
				return res
			}
		}
		t.Fatal("no e2e mean resolution")
		return report.Resolution{}
	}
	want := find(own.Stats.Resolution)
	if want.PlusMinus == nil || want.RunToRunDF != 5 {
		t.Fatalf("A's own resolution %+v: want one from 5 degrees of freedom (A/A 3, cand 2)", want)
	}
	for _, seed := range []uint64{23, 25} {
		b := analysistest.BlocksRun(rand.New(rand.NewPCG(seed, seed+1)), 3, 200, 0.9, 0.03)
		cmp, err := Compare(a, b, CompareOptions{Rule: rule})
		if err != nil {
			t.Fatal(err)
		}
		got := find(cmp.Results.Stats.Resolution)
		if got.PlusMinus == nil || *got.PlusMinus != *want.PlusMinus || got.RunToRunDF != want.RunToRunDF {
			t.Errorf("B seed %d: compare's resolution %v (ν = %d), want A's own %v (ν = %d)", seed, analysistest.Val(got.PlusMinus), got.RunToRunDF, *want.PlusMinus, want.RunToRunDF)
		}
		for _, q := range cmp.Results.Stats.Ratios {
			if q.Metric == "e2e" && q.Stat == "mean" && (q.Resolution == nil || *q.Resolution != *want.PlusMinus) {
				t.Errorf("B seed %d: ratio's resolution %v, want A's own %v", seed, analysistest.Val(q.Resolution), *want.PlusMinus)
			}
		}
		m := cmp.Results.Stats.ResolutionMethod
		if !strings.Contains(m, "the resolution is A's own") || !strings.Contains(m, "not interleaved") || strings.Contains(m, "the arms interleaved, each cell") {
			t.Errorf("compare's resolution method %q: want it to say A's own, the runs not interleaved", m)
		}
	}
}

// TestUnknownCommitIsNotADifference: a run whose commit was not recorded
// (a binary without Go's VCS stamp) is not said to come "from a different
// commit"; the comparison says the commit is not known instead.
func TestUnknownCommitIsNotADifference(t *testing.T) {
	t.Parallel()
	var a, b report.Results
	b.Manifest.GitCommit = "6236b8e"
	for _, p := range Provenance(a, b) {
		if strings.HasPrefix(p, "commits") {
			t.Errorf("Provenance names an unrecorded commit as a difference: %q", p)
		}
	}
	if w := unknownCommits(a, b); w != "A's commit not recorded (a binary built without Go's VCS stamp): whether the two runs' code differs is not known" {
		t.Errorf("unknownCommits = %q", w)
	}
	a.Manifest.GitCommit = "6236b8e"
	if w := unknownCommits(a, b); w != "" {
		t.Errorf("both recorded: %q", w)
	}
}
