package experiment

import (
	"io"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/cost"
	"github.com/transferlab/transferlab/energy"
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
	r := &runner{log: io.Discard, res: &report.Results{Simulated: true, Cells: []report.Cell{
		{Arm: "baseline", OfferedLoadRPS: 1, States: map[string]int{"ok": 10}, WindowS: &w, WindowOutputTokens: 1000, InputTokens: 500},
		{Arm: "baseline", OfferedLoadRPS: 3, States: map[string]int{"not_sent": 48}, NotMeasured: report.NoMeasuredRequestSent},
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
