package canary

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/render"
	"github.com/transferlab/transferlab/report"
	"math"
)

func TestCompare(t *testing.T) {
	t.Parallel()
	a := analysistest.FixtureResults(t)
	b := analysistest.FixtureResults(t)
	t.Run("canary faster than production passes", func(t *testing.T) {
		c, err := Compare(a, b, CompareOptions{ArmA: "baseline", ArmB: "candidate"})
		if err != nil {
			t.Fatal(err)
		}
		v := c.Results.Verdicts
		if len(v) != 1 || v[0].Outcome != "pass" || v[0].Candidate != "B:candidate" || v[0].Baseline != "A:baseline" {
			t.Fatalf("verdicts %+v", v)
		}
		if !strings.Contains(c.Results.Stats.Method, "independently") {
			t.Errorf("compare must resample independently: %s", c.Results.Stats.Method)
		}
	})
	t.Run("identical runs: no difference by construction, no gate", func(t *testing.T) {
		c, err := Compare(a, b, CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v := c.Results.Verdicts[0]; v.Outcome != "no difference" || v.DecidingClause != "b" || !strings.HasPrefix(v.Summary, "NO DIFFERENCE by construction, not measured") {
			t.Errorf("verdict %s by %s: %s", v.Outcome, v.DecidingClause, v.Summary)
		}
		if g, _ := c.Gate(); g != GateSameRun {
			t.Errorf("gate %q, want %q", g, GateSameRun)
		}
	})
	t.Run("different traces are refused, listing the differences", func(t *testing.T) {
		b2 := b
		b2.Trace.SHA256 = "0000"
		b2.Manifest.ConfigSHA256 = "1111"
		_, err := Compare(a, b2, CompareOptions{ArmB: "candidate"})
		if err == nil {
			t.Fatal("want refusal")
		}
		for _, want := range []string{"the results differ", "trace.sha256: A=feedbeeffeedbeef, B=0000", "manifest.config_sha256", "--force"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		c, err := Compare(a, b2, CompareOptions{ArmB: "candidate", Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if !c.Forced || len(c.Differences) != 2 {
			t.Errorf("forced comparison: Forced=%v Differences=%v", c.Forced, c.Differences)
		}
	})
	t.Run("the same trace at another path compares, the path named as provenance", func(t *testing.T) {
		b2 := b
		b2.Trace.Source = "/elsewhere/" + filepath.Base(a.Trace.Source) + ".copy"
		c, err := Compare(a, b2, CompareOptions{ArmB: "candidate"})
		if err != nil {
			t.Fatalf("same trace hash, other path refused: %v", err)
		}
		if !slices.ContainsFunc(c.Results.Warnings, func(w string) bool { return strings.Contains(w, "trace paths (A=") }) {
			t.Errorf("the differing trace path is not said: %v", c.Results.Warnings)
		}
	})
	t.Run("missing arm", func(t *testing.T) {
		if _, err := Compare(a, b, CompareOptions{ArmB: "nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestCompareCarriesEnergyAndCost(t *testing.T) {
	t.Parallel()
	a, b := analysistest.FixtureResults(t), analysistest.FixtureResults(t)
	c, err := Compare(a, b, CompareOptions{ArmB: "candidate", Rule: report.DecisionRule{VRAMBudgetBytes: 60 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Results
	// 9 cells per arm in each fixture; only the compared arms come over, renamed.
	if len(r.Energy.Cells) != 18 || len(r.Cost.Cells) != 18 {
		t.Fatalf("energy %d cells, cost %d cells; want 18 each", len(r.Energy.Cells), len(r.Cost.Cells))
	}
	for _, e := range r.Energy.Cells {
		if e.Arm != "A:baseline" && e.Arm != "B:candidate" {
			t.Errorf("energy cell of arm %q", e.Arm)
		}
	}
	// The fixture's 70 GiB peak exceeds the declared 60 GiB budget: clause c decides.
	if v := r.Verdicts[0]; v.Outcome != "fail" || v.DecidingClause != "c" {
		t.Errorf("verdict %s by %s, want fail by c: %s", v.Outcome, v.DecidingClause, v.Reason)
	}
	if r.Amdahl.NotMeasured == "" || r.Validation.NotMeasured == "" || r.Hook.NotMeasured == "" {
		t.Error("sections not carried into a comparison must say why")
	}
}

// TestCompareSaysSameRun: a results.json compared with itself (or a copy)
// says plainly that A and B are one run and what that means for a canary
// gate; two runs, even of the same config and commit, do not.
func TestCompareSaysSameRun(t *testing.T) {
	t.Parallel()
	a := analysistest.FixtureResults(t)
	t.Run("the same arm of one run", func(t *testing.T) {
		c, err := Compare(a, a, CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(c.SameRun, "both created 2026-11-29T08:00:00Z") {
			t.Errorf("SameRun = %q", c.SameRun)
		}
		if len(c.Results.Warnings) == 0 {
			t.Fatal("no warning")
		}
		w := c.Results.Warnings[0]
		for _, want := range []string{"A and B are the same run", "compared with itself", "measures nothing", "canary gate (compare --exit-code)", "would pass without testing the canary, so it exits non-zero"} {
			if !strings.Contains(w, want) {
				t.Errorf("first warning %q lacks %q", w, want)
			}
		}
	})
	t.Run("two arms of one run", func(t *testing.T) {
		c, err := Compare(a, a, CompareOptions{ArmB: "candidate"})
		if err != nil {
			t.Fatal(err)
		}
		if w := c.Results.Warnings[0]; !strings.Contains(w, "the same run") || !strings.Contains(w, "run's own report compares them paired") {
			t.Errorf("first warning %q", w)
		}
	})
	t.Run("two runs", func(t *testing.T) {
		b := analysistest.FixtureResults(t)
		b.CreatedAt = b.CreatedAt.Add(time.Nanosecond)
		c, err := Compare(a, b, CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c.SameRun != "" || slices.ContainsFunc(c.Results.Warnings, func(w string) bool { return strings.Contains(w, "same run") }) {
			t.Errorf("two runs called one: %q %v", c.SameRun, c.Results.Warnings)
		}
	})
	// A run's identity is its run_id, not its start time: two runs of one
	// config started in the same instant are two runs; a copy of one run's
	// results.json is that run; a file with a run_id and one written before
	// run_id existed are two runs.
	t.Run("run_id", func(t *testing.T) {
		x := analysistest.FixtureResults(t)
		x.RunID = "RUNIDAAAAAAAAAAAAAAAAAAAAA"
		y := x // a copy: every field, run_id included
		if got := SameRun(x, y); !strings.Contains(got, "the same run_id RUNIDAAAAAAAAAAAAAAAAAAAAA, created 2026-11-29T08:00:00Z") {
			t.Errorf("a copy: SameRun = %q", got)
		}
		y.RunID = "RUNIDBBBBBBBBBBBBBBBBBBBBB"
		if !y.CreatedAt.Equal(x.CreatedAt) {
			t.Fatal("the fixture's copies differ in created_at")
		}
		if got := SameRun(x, y); got != "" {
			t.Errorf("two runs created in the same instant: SameRun = %q", got)
		}
		y.RunID = ""
		if got := SameRun(x, y); got != "" {
			t.Errorf("a run with a run_id and a file without: SameRun = %q", got)
		}
		if got := SameRun(y, y); !strings.Contains(got, "no run_id (written before it was recorded), both created 2026-11-29T08:00:00Z from the same config") {
			t.Errorf("an old file given twice: SameRun = %q", got)
		}
	})
	t.Run("no created_at: the cells' start times", func(t *testing.T) {
		x := analysistest.FixtureResults(t)
		x.CreatedAt = time.Time{}
		start := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
		for i := range x.Cells {
			s := start.Add(time.Duration(i) * time.Minute)
			x.Cells[i].StartedAt = &s
		}
		y := x
		y.Cells = slices.Clone(x.Cells)
		if got := SameRun(x, y); !strings.Contains(got, "started at the same recorded times") {
			t.Errorf("SameRun = %q", got)
		}
		s := start.Add(time.Hour)
		y.Cells[len(y.Cells)-1].StartedAt = &s
		if got := SameRun(x, y); got != "" {
			t.Errorf("a cell started at another time: SameRun = %q", got)
		}
	})
}

// TestCompareNamesConfigKeys: Compare refuses configs that differ naming
// the keys (report.ConfigKeyDiffs, tested key by key in report), not only
// their digests, and with --force carries them into the provenance warning;
// a secret's values never appear.
func TestCompareNamesConfigKeys(t *testing.T) {
	t.Parallel()
	a, b := analysistest.FixtureResults(t), analysistest.FixtureResults(t)
	a.Manifest.Requested = map[string]any{"load": map[string]any{"rates_rps": []any{3, 10, 24}},
		"request": map[string]any{"headers": map[string]any{"Authorization": "Bearer sk-AAAA"}}}
	b.Manifest.Requested = map[string]any{"load": map[string]any{"rates_rps": []any{10}},
		"request": map[string]any{"headers": map[string]any{"Authorization": "Bearer sk-BBBB"}}}
	b.Manifest.ConfigSHA256 = "1111"
	_, err := Compare(a, b, CompareOptions{ArmB: "candidate"})
	if err == nil {
		t.Fatal("want refusal")
	}
	for _, want := range []string{"config keys that differ", "load.rates_rps (A=[3 10 24], B=[10])", "request.headers.Authorization (values not shown: secret)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	for _, secret := range []string{"sk-AAAA", "sk-BBBB"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q shows %q", err, secret)
		}
	}
	c, err := Compare(a, b, CompareOptions{ArmB: "candidate", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(c.Results.Warnings, func(w string) bool { return strings.Contains(w, "load.rates_rps (A=[3 10 24], B=[10])") }) {
		t.Errorf("the provenance warning does not name the config keys: %v", c.Results.Warnings)
	}
	b.Manifest.Requested = a.Manifest.Requested
	if _, err := Compare(a, b, CompareOptions{ArmB: "candidate"}); err == nil || !strings.Contains(err.Error(), "no recorded config key differs") {
		t.Errorf("configs alike but for their files: %v", err)
	}
}

// TestCompareMissingArmListsArms: an --arm-a or --arm-b the run does not
// have is refused with the arms it has.
func TestCompareMissingArmListsArms(t *testing.T) {
	t.Parallel()
	a, b := analysistest.FixtureResults(t), analysistest.FixtureResults(t)
	_, err := Compare(a, b, CompareOptions{ArmB: "nosuch"})
	if err == nil {
		t.Fatal("want refusal")
	}
	for _, want := range []string{`arm "nosuch" is not in B (--arm-b; B's arms: baseline, candidate`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "not in A") {
		t.Errorf("error %q blames A's arm, which exists", err)
	}
}

// TestCompareSameRunVerdict: an arm compared with itself is no measured
// "0.00 % lower" that the run "can detect": the verdict says it is the
// same run.
func TestCompareSameRunVerdict(t *testing.T) {
	t.Parallel()
	a := analysistest.FixtureResults(t)
	c, err := Compare(a, a, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range c.Results.Verdicts {
		line := analysis.VerdictLine(v) + " " + v.Reason
		for _, c := range v.Clauses {
			line += " " + c.Detail
		}
		if strings.Contains(line, "can detect") || strings.Contains(line, "% lower") || strings.Contains(line, "detectable") {
			t.Errorf("verdict claims a measured difference: %s", line)
		}
		if !strings.Contains(v.Summary, "A and B are the same run") {
			t.Errorf("verdict summary %q does not say it is the same run", v.Summary)
		}
	}
}

// TestCompareUsesSearchedCapacity: when both runs searched the capacity,
// compare states each arm's searched capacity and B's gain over A from
// them (a run compared with itself: 1×), not the sweep's "unknown … sweep
// higher loads", which its stats leave out (stats.capacity_superseded);
// when only one run searched, it says so.
func TestCompareUsesSearchedCapacity(t *testing.T) {
	t.Parallel()
	a := analysistest.FixtureResults(t)
	a.SLO = report.SLO{TTFTMs: 1e6, Percentile: 90} // every swept load met: the sweep knows no capacity
	s := analysis.Search{MinRPS: 1, MaxRPS: 100, RelativePrecision: 0.25, Quantile: 0.9}
	probe := func(l float64, over int) report.CapacityProbe {
		return report.CapacityProbe{LoadRPS: l, Source: "search", Attainment: []report.SLOAttainment{{Metric: "ttft", TargetMs: 1e6, N: 400, Over: over}}}
	}
	arm := func(name string, pass, fail float64) report.CapacityArm {
		return s.Capacity(name, []report.CapacityProbe{probe(8, 0), probe(pass, 0), probe(fail, 200)}, analysis.StopBracketed)
	}
	a.CapacitySearch = &report.CapacitySearch{Method: "test search", SLO: a.SLO, RelativePrecision: 0.25, Level: 0.95,
		Arms: []report.CapacityArm{arm("baseline", 20, 24), arm("candidate", 30, 36)}}
	c, err := Compare(a, a, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// One capacity answer: the searches', not the sweep's beside it.
	if st := c.Results.Stats; len(st.Capacity) != 0 || len(st.CapacityGain) != 0 || st.CapacitySuperseded == "" {
		t.Fatalf("the comparison's stats keep the sweep's capacity beside the searches': %+v %+v", st.Capacity, st.CapacityGain)
	}
	cs := c.Results.CapacitySearch
	if cs == nil || cs.NotRun != "" || len(cs.Arms) != 2 || len(cs.Gains) != 1 {
		t.Fatalf("capacity search not carried: %+v", cs)
	}
	if g := cs.Gains[0]; g.Candidate != "B:baseline" || g.Baseline != "A:baseline" || g.Gain.Value != 1 || cs.Arms[0].CapacityRPS.Value != a.CapacitySearch.Arms[0].CapacityRPS.Value {
		t.Errorf("gain %+v of arms %+v, want B:baseline/A:baseline = 1", g, cs.Arms)
	}
	var md strings.Builder
	if err := render.WriteMarkdown(&md, c.Results); err != nil {
		t.Fatal(err)
	}
	if h := render.Headline(c.Results); strings.Contains(h, "sweep higher loads") || !strings.Contains(h, "found by search") {
		t.Errorf("headline ignores the searched capacities: %q", h)
	}
	if strings.Contains(md.String(), "sweep higher loads") || !strings.Contains(md.String(), "A:baseline") || !strings.Contains(md.String(), "Found by search") {
		t.Errorf("the report ignores the searched capacities:\n%s", md.String())
	}
	// Two runs: B's candidate against A's baseline, each from its own search.
	c, err = Compare(a, a, CompareOptions{ArmA: "baseline", ArmB: "candidate"})
	if err != nil {
		t.Fatal(err)
	}
	want := math.Sqrt(30*36) / math.Sqrt(20*24)
	if g := c.Results.CapacitySearch.Gains[0]; math.Abs(g.Gain.Value-want) > 1e-12 {
		t.Errorf("gain %v, want %v", g.Gain.Value, want)
	}
	b := a
	b.CapacitySearch = nil
	if c, err = Compare(a, b, CompareOptions{}); err != nil {
		t.Fatal(err)
	}
	if cs := c.Results.CapacitySearch; cs == nil || !strings.Contains(cs.NotRun, "only A's run searched") {
		t.Errorf("one run searched: %+v", cs)
	}
}

// TestCompareSuspectCapacity: an arm whose capacity search missed only in
// client-bound probes at its fail end, stored with a figure by a run
// written before such capacities were withheld, is carried with no
// capacity, the gain is not determined, and the gate is what the verdict
// alone makes it (a capacity neither passes nor fails it).
func TestCompareSuspectCapacity(t *testing.T) {
	t.Parallel()
	a := analysistest.FixtureResults(t)
	a.SLO = report.SLO{TTFTMs: 1e6, Percentile: 90}
	s := analysis.Search{MinRPS: 1, MaxRPS: 100, RelativePrecision: 0.25, Quantile: 0.9}
	probe := func(l float64, over int, clientBound bool) report.CapacityProbe {
		return report.CapacityProbe{LoadRPS: l, Source: "search", ClientBound: clientBound, Attainment: []report.SLOAttainment{{Metric: "ttft", TargetMs: 1e6, N: 400, Over: over}}}
	}
	arm := func(name string, pass, fail float64) report.CapacityArm {
		return s.Capacity(name, []report.CapacityProbe{probe(8, 0, false), probe(pass, 0, false), probe(fail, 200, false)}, analysis.StopBracketed)
	}
	a.CapacitySearch = &report.CapacitySearch{Method: "test search", SLO: a.SLO, RelativePrecision: 0.25, Level: 0.95,
		Arms: []report.CapacityArm{arm("baseline", 20, 24), arm("candidate", 30, 36)}}
	b := a
	b.RunID = a.RunID + "-canary"
	b.CapacitySearch = &report.CapacitySearch{Method: "test search", SLO: a.SLO, RelativePrecision: 0.25, Level: 0.95,
		Arms: []report.CapacityArm{arm("baseline", 20, 24), arm("candidate", 30, 36)}}
	clean, err := Compare(a, b, CompareOptions{ArmA: "baseline", ArmB: "candidate"})
	if err != nil {
		t.Fatal(err)
	}
	if g := clean.Results.CapacitySearch.Gains[0]; g.Gain.Value == 0 || len(g.SuspectArms) != 0 {
		t.Fatalf("clean capacities: %+v", g)
	}
	// B's candidate: its fail end's probe client-bound, its figure kept as
	// an older run stored it.
	c := &b.CapacitySearch.Arms[1]
	c.Probes[2].ClientBound = true
	if c.CapacityRPS.Value == 0 || !analysis.SuspectCapacity(*c) {
		t.Fatalf("older arm: %+v", *c)
	}
	suspect, err := Compare(a, b, CompareOptions{ArmA: "baseline", ArmB: "candidate"})
	if err != nil {
		t.Fatal(err)
	}
	cs := suspect.Results.CapacitySearch
	if got := cs.Arms[1]; got.CapacityRPS.Value != 0 || !got.SuspectFailEnd {
		t.Errorf("carried with a figure: %+v", got)
	}
	// 30 met, above the baseline's clean miss at 24: a lower bound only.
	if g := cs.Gains[0]; g.Gain.Value != 0 || g.Gain.Derived != analysis.DerivedGainLowerBound || !slices.Equal(g.SuspectArms, []string{"B:candidate"}) {
		t.Errorf("gain: %+v", g)
	}
	g1, err1 := clean.Gate()
	g2, err2 := suspect.Gate()
	if g1 != g2 || (err1 == nil) != (err2 == nil) {
		t.Errorf("the gate moved with a suspect capacity: %v (%v) → %v (%v)", g1, err1, g2, err2)
	}
	if l := render.CapacitySearchLine(suspect.Results, "B:candidate"); !strings.Contains(l, "B:candidate ≥ 30.00 req/s (met); its misses at 36.00 req/s were client-bound probes only, so no capacity") {
		t.Errorf("compare's capacity line: %q", l)
	}
}
