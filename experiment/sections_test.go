package experiment

import (
	"io"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/cost"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
)

// TestEnergyCostSectionsLabels: a cell whose measured requests were never
// sent gets no cost and its energy says it covers no measured request; a
// simulated energy window is labelled as the power model it is (not a
// counter); the energy price's source is echoed in each cost cell.
func TestEnergyCostSectionsLabels(t *testing.T) {
	t.Parallel()
	j, pw := 120.0, 300.0
	simWindow := func() *energy.Window {
		return &energy.Window{Source: energy.SourceSimulated, Label: "simulated power model", Available: true,
			EnergyJ: &j, EnergyHeadline: energy.HeadlineCounter, PowerIntegralJ: &j, PowerMeanW: &pw}
	}
	w := 10.0
	r := &runner{log: io.Discard, warn: io.Discard, res: &report.Results{Simulated: true, Cells: []report.Cell{
		{Arm: "baseline", OfferedLoadRPS: 1, States: map[string]int{"ok": 10}, WindowS: &w, WindowOutputTokens: 1000, InputTokens: 500},
		{Arm: "baseline", OfferedLoadRPS: 3, States: map[string]int{"not_sent": 48}, NotMeasured: analysis.NoMeasuredRequestSent},
	}}}
	r.cells = []measured{{energy: simWindow()}, {energy: simWindow()}}
	r.cfg.Extra.Cost = &cost.Inputs{PricePerGPUHour: 3.5, Currency: "USD", PriceDate: "2026-11-01", PriceSource: "quote", GPUs: 1, Utilisation: 1,
		EnergyPricePerKWh: 0.2, EnergyPriceSource: "utility tariff"}
	es, cs := r.energyCostSections()
	if len(es.Cells) != 2 {
		t.Fatalf("%d energy cells, want 2", len(es.Cells))
	}
	for i, ec := range es.Cells {
		if ec.EnergyHeadline != report.SimulatedEnergyHeadline {
			t.Errorf("energy cell %d: headline %q on the simulator, want %q", i, ec.EnergyHeadline, report.SimulatedEnergyHeadline)
		}
	}
	if got := strings.Join(es.Cells[1].Warnings, "; "); !strings.Contains(got, "covers no measured request") {
		t.Errorf("energy of a cell with no measured request sent: warnings %q", got)
	}
	if got := strings.Join(es.Cells[0].Warnings, "; "); strings.Contains(got, "covers no measured request") {
		t.Errorf("measured cell's energy warns %q", got)
	}
	if len(cs.Cells) != 1 || cs.Cells[0].OfferedLoadRPS != 1 {
		t.Fatalf("cost cells %+v: want only the measured cell", cs.Cells)
	}
	if cs.Cells[0].EnergyPriceSource != "utility tariff" || cs.Cells[0].EnergyPricePerKWh != 0.2 || cs.Cells[0].WindowS != 10 {
		t.Errorf("cost cell does not echo its energy price and source: %+v", cs.Cells[0])
	}
}

// TestAmdahlNotMeasuredText: with no complete baseline cell (a deadline
// stopped the run) the Amdahl section says that once, on one line; several
// reasons are joined on one line; the console prints an older multi-line
// reason as a list, never as bare continuation lines.
func TestAmdahlNotMeasuredText(t *testing.T) {
	t.Parallel()
	newRunner := func(cells ...measured) *runner {
		r := &runner{log: io.Discard, warn: io.Discard, res: &report.Results{IncompleteReason: "run stopped: deadline"}, cells: cells}
		r.cfg.Amdahl.TargetOp = "rmsnorm"
		r.cfg.Arms = []ArmConfig{{Name: "baseline"}, {Name: "rmsnorm-2.5x", SimOverrides: map[string]SimFactor{"rmsnorm": Factor(2.5)}}}
		r.cfg.Load.RatesRPS = []float64{3, 10, 24}
		return r
	}
	for _, tc := range []struct {
		name  string
		r     *runner
		want  string
		avoid string
	}{
		{"no baseline cell ran", newRunner(),
			"no complete baseline cell (baseline): f is measured from the baseline arm's profiled cells, and none of them ran to its end (run stopped: deadline)", "no baseline profile"},
		{"baseline cell cut short", newRunner(measured{key: cellKey{arm: "baseline", load: 0}}),
			"no complete baseline cell (baseline)", "no baseline profile"},
		{"complete baseline cells without profiles", newRunner(measured{key: cellKey{arm: "baseline", load: 0}, summary: loadgen.Summary{Complete: true}}),
			"no baseline profile at 3 req/s; no baseline profile at 10 req/s; no baseline profile at 24 req/s", "no complete baseline cell"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec := tc.r.amdahlSection()
			if sec.NotMeasured != tc.want && !strings.HasPrefix(sec.NotMeasured, tc.want) {
				t.Errorf("not measured %q, want %q", sec.NotMeasured, tc.want)
			}
			if strings.Contains(sec.NotMeasured, "\n") || strings.Contains(sec.NotMeasured, tc.avoid) {
				t.Errorf("not measured %q: several lines, or says %q", sec.NotMeasured, tc.avoid)
			}
			var b strings.Builder
			printAmdahl(&b, &report.Results{Amdahl: sec})
			if got := strings.TrimSpace(b.String()); got != "Amdahl: not measured: "+sec.NotMeasured {
				t.Errorf("console %q", got)
			}
		})
	}
	var b strings.Builder
	printAmdahl(&b, &report.Results{Amdahl: &report.AmdahlSection{NotMeasured: "no baseline profile at 3 req/s\nno baseline profile at 10 req/s"}})
	if want := "\nAmdahl: not measured:\n  - no baseline profile at 3 req/s\n  - no baseline profile at 10 req/s\n"; b.String() != want {
		t.Errorf("console %q, want %q", b.String(), want)
	}
}
