package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
)

func TestWriteMarkdownGolden(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "TestReport.golden.md", b.Bytes())
}

func TestWriteMarkdownLabels(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	r.Energy = &report.EnergySection{NotMeasured: "NVML unavailable: ERROR_LIBRARY_NOT_FOUND (no driver)"}
	r.Cost, r.Hook = nil, nil
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"# transferlab report (simulated)",
		"### Latency (ms, simulated)",
		"tok/s, simulated",
		"## Not measured\n\n",
		"- Energy and memory: NVML unavailable", // energy: reason kept
		"- Cost: section absent",                // cost: absent
		"- Override hook: section absent",       // hook: absent
		"| ok/n |",                              // every measured request: ok of n, the other states flagged
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// A non-simulated run never says simulated.
	r.Simulated = false
	b.Reset()
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "simulated") {
		t.Error("non-simulated report mentions simulated")
	}
}
