package report

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	t.Parallel()
	a := fixtureResults(t)
	b := fixtureResults(t)
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
	t.Run("identical runs are inconclusive", func(t *testing.T) {
		c, err := Compare(a, b, CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v := c.Results.Verdicts[0]; v.Outcome != "inconclusive" || v.DecidingClause != "b" {
			t.Errorf("verdict %s by %s: %s", v.Outcome, v.DecidingClause, v.Reason)
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
		for _, want := range []string{"trace.sha256: A=feedbeeffeedbeef, B=0000", "manifest.config_sha256", "--force"} {
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

func TestResultsRoundTrip(t *testing.T) {
	t.Parallel()
	r := fixtureResults(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	var b2 bytes.Buffer
	if err := WriteJSON(&b2, got); err != nil {
		t.Fatal(err)
	}
	if b.String() != b2.String() {
		t.Error("results.json does not round-trip")
	}
	cases := []struct{ name, body, want string }{
		{"unknown field", "{\n\"schema_version\": \"transferlab.results/v1\",\n\"bogus\": 1}", "line 3"},
		{"wrong type", "{\n\"schema_version\": \"transferlab.results/v1\",\n\"simulated\": \"yes\"}", "field simulated"},
		{"wrong schema", `{"schema_version": "transferlab.results/v0"}`, "schema_version"},
		{"syntax", "{\n\n\"cells\": [}", "line 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".json")
			if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadResults(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("err = %v, want it to name %s and %q", err, p, tc.want)
			}
		})
	}
}

// TestResultsV1 keeps testdata/results_v1.json (the fixture as results.json,
// refreshed by -update) readable by this build and rendering to the golden report.md.
func TestResultsV1(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := WriteJSON(&b, fixtureResults(t)); err != nil {
		t.Fatal(err)
	}
	golden(t, "results_v1.json", b.Bytes())
	r, err := ReadResults(filepath.Join("testdata", "results_v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "TestReport.golden.md", md.Bytes())
}

func TestCompareCarriesEnergyAndCost(t *testing.T) {
	t.Parallel()
	a, b := fixtureResults(t), fixtureResults(t)
	c, err := Compare(a, b, CompareOptions{ArmB: "candidate", Rule: DecisionRule{VRAMBudgetBytes: 60 << 30}})
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

// TestReadResultsSaysWhatIsNotAResultsFile: records.jsonl, report.md, a
// compare.json or an object without schema_version is named as not a
// results.json (what it looks like), never a raw JSON parse error; a folder
// reads its results.json.
func TestReadResultsSaysWhatIsNotAResultsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, c := range map[string]struct{ data, want string }{
		"records.jsonl": {"{\"request_id\":0}\n{\"request_id\":1}\n", "it holds several JSON objects, one per line"},
		"report.md":     {"# transferlab report\n", "it does not hold a JSON object"},
		"compare.json":  {"{\"results\":{}}", "it is a compare.json"},
		"other.json":    {"{\"a\":1}", "no schema_version field"},
		"empty.json":    {"", "the file is empty"},
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadResults(p)
		if err == nil || !strings.Contains(err.Error(), p+" is not a results.json ("+c.want) || strings.Contains(err.Error(), "invalid character") {
			t.Errorf("%s: %v", name, err)
		}
	}
	r := fixtureResults(t)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "results.json"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadResults(run); err != nil || len(got.Cells) != len(r.Cells) {
		t.Errorf("a run's folder: %d cells, %v", len(got.Cells), err)
	}
}
