package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
)

func TestResultsRoundTrip(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	var b bytes.Buffer
	if err := report.WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := report.ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	var b2 bytes.Buffer
	if err := report.WriteJSON(&b2, got); err != nil {
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
			_, err := report.ReadResults(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Errorf("err = %v, want it to name %s and %q", err, p, tc.want)
			}
		})
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
		_, err := report.ReadResults(p)
		if err == nil || !strings.Contains(err.Error(), p+" is not a results.json ("+c.want) || strings.Contains(err.Error(), "invalid character") {
			t.Errorf("%s: %v", name, err)
		}
	}
	r := analysistest.FixtureResults(t)
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "results.json"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := report.ReadResults(run); err != nil || len(got.Cells) != len(r.Cells) {
		t.Errorf("a run's folder: %d cells, %v", len(got.Cells), err)
	}
}
