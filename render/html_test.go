package render

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
)

func TestWriteHTMLGolden(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := WriteHTML(&b, analysistest.FixtureResults(t)); err != nil {
		t.Fatal(err)
	}
	golden(t, "TestReport.golden.html", b.Bytes())
}

// TestWriteHTMLSelfContained checks the page fetches nothing and carries every chart.
func TestWriteHTMLSelfContained(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", "<link", "src=", "@import", "url(http", "cdn"} {
		if strings.Contains(strings.ToLower(page), bad) {
			t.Errorf("report.html contains %q: it must be self-contained", bad)
		}
	}
	// Every http(s) URL is an XML namespace, never a resource.
	for _, u := range regexp.MustCompile(`https?://[^"' )]+`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" && u != "http://www.w3.org/1999/xlink" {
			t.Errorf("report.html references %s", u)
		}
	}
	// 8 latency charts, 3 loads × (TTFT, ITL) CDFs, 1 Amdahl, 1 energy, 1 cost.
	const wantCharts = 8 + 6 + 1 + 1 + 1
	if got := strings.Count(page, `<svg class="chart"`); got != wantCharts {
		t.Errorf("%d charts, want %d", got, wantCharts)
	}
	for _, id := range []string{"latency-ttft-p99", "latency-itl-p50", "ttft-cdf-4.00", "itl-cdf-8.00", "amdahl-candidate", "energy-by-load", "cost-by-load"} {
		if !strings.Contains(page, `<figure id="`+id+`">`) {
			t.Errorf("chart %s missing", id)
		}
	}
	if !strings.Contains(page, "ms, simulated") || !strings.Contains(page, "Simulated: every figure") {
		t.Error("simulated report.html does not say simulated")
	}

	// Sections that were not measured say so, with the reason, and draw no chart.
	r.Energy = &report.EnergySection{NotMeasured: "NVML unavailable: no driver"}
	r.Cost, r.Amdahl = nil, nil
	b.Reset()
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page = b.String()
	for _, want := range []string{"Not measured: NVML unavailable: no driver.", "Not measured: section absent from the results."} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if got := strings.Count(page, `<svg class="chart"`); got != 8+6 {
		t.Errorf("%d charts with energy, cost and Amdahl missing, want %d", got, 8+6)
	}
}

// TestReportsOfAnEmptyRun: a run that ended before measuring anything still
// renders, saying what was not measured, and draws no chart.
func TestReportsOfAnEmptyRun(t *testing.T) {
	t.Parallel()
	r := report.Results{SchemaVersion: report.SchemaVersion, IncompleteReason: "server died during warm-up"}
	var h, m bytes.Buffer
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&m, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h.String(), "<svg") {
		t.Error("empty run drew a chart")
	}
	for _, page := range []string{h.String(), m.String()} {
		for _, want := range []string{"server died during warm-up", "Not analysed", "Not measured"} {
			if !strings.Contains(page, want) {
				t.Errorf("report lacks %q", want)
			}
		}
	}
}
