package report

import (
	"bytes"
	"os"
	"path/filepath"
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
