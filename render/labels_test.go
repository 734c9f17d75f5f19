package render

import (
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
)

// TestCostAndEnergyLabels: on a simulated run with an energy price the cost
// table names the configured currency (never "(currency)"), prices energy in
// currency/kWh, labels the energy cost simulated like its neighbours and
// echoes energy_price_source; the energy checks say "simulated power model"
// (there is no counter) and float noise in the disagreement reads 0.
func TestCostAndEnergyLabels(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	if !r.Simulated {
		t.Fatal("fixture is not simulated")
	}
	for i := range r.Cost.Cells {
		c := &r.Cost.Cells[i]
		c.Currency, c.EnergyPricePerKWh, c.EnergyPriceSource, c.EnergyCostPer1MOutputTokens = "EUR", 0.25, "utility tariff 2026-10", 1.5
	}
	noise, real := -3.95e-14, 1.234
	r.Energy.Cells[0].EnergyHeadline, r.Energy.Cells[0].PowerIntegralJ, r.Energy.Cells[0].DisagreementPct = "counter_delta", analysistest.Ptr(100), &noise
	r.Energy.Cells[1].EnergyHeadline, r.Energy.Cells[1].PowerIntegralJ, r.Energy.Cells[1].DisagreementPct = report.SimulatedEnergyHeadline, analysistest.Ptr(100), &real
	md, html := renderBoth(t, r)
	for _, doc := range []struct{ name, text string }{{"report.md", md}, {"report.html", html}} {
		for _, want := range []string{
			"energy cost per 1M output tokens (EUR)",
			"1.50 EUR, simulated (at 0.250 EUR/kWh)",
			"utility tariff 2026-10",
			"0.250 EUR/kWh",
			"simulated power model",
			"1.23",
		} {
			if !strings.Contains(doc.text, want) {
				t.Errorf("%s lacks %q", doc.name, want)
			}
		}
		for _, bad := range []string{"(currency)", " (at 0.250/kWh)", "e-14", "counter_delta"} {
			if strings.Contains(doc.text, bad) {
				t.Errorf("%s contains %q", doc.name, bad)
			}
		}
	}
	for _, tc := range []struct {
		in   *float64
		want string
	}{{nil, "not measured"}, {analysistest.Ptr(-3.95e-14), "0"}, {analysistest.Ptr(0.004), "0"}, {analysistest.Ptr(-0.006), "-0.01"}, {analysistest.Ptr(12.345), "12.35"}} {
		if got := pctHundredths(tc.in); got != tc.want {
			t.Errorf("pctHundredths(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestNotMeasuredReasonOneLine: a section's several reasons, one a line in
// an older results file, render as one sentence, not as bare continuation lines.
func TestNotMeasuredReasonOneLine(t *testing.T) {
	t.Parallel()
	r := report.Results{SchemaVersion: report.SchemaVersion, Amdahl: &report.AmdahlSection{NotMeasured: "no baseline profile at 3 req/s\nno baseline profile at 10 req/s"}}
	md, html := renderBoth(t, r)
	const want = "- Amdahl bound: no baseline profile at 3 req/s; no baseline profile at 10 req/s."
	if !strings.Contains(md, want) || !strings.Contains(html, "no baseline profile at 3 req/s; no baseline profile at 10 req/s") {
		t.Errorf("report.md / report.html do not join the reasons into %q:\n%s", want, md)
	}
}
