package render

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
)

// TestResultsV1 keeps testdata/results_v1.json (the fixture as results.json,
// refreshed by -update) readable by this build and rendering to the golden report.md.
func TestResultsV1(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := report.WriteJSON(&b, analysistest.FixtureResults(t)); err != nil {
		t.Fatal(err)
	}
	golden(t, "results_v1.json", b.Bytes())
	r, err := report.ReadResults(filepath.Join("testdata", "results_v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "TestReport.golden.md", md.Bytes())
}
