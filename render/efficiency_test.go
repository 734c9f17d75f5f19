package render

import (
	"strings"
	"testing"

	"github.com/transferlab/transferlab/report"
)

// TestTransferEfficiencyNotSeparable: a transfer efficiency whose measured
// gain's interval contains 1 reads "not separable from 0" with its
// interval and a footnote saying why, never its point alone; a resolved
// one reads with its interval.
func TestTransferEfficiencyNotSeparable(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	sec := &report.AmdahlSection{Loads: []report.AmdahlLoad{
		{Candidate: "rmsnorm-2.5x", OfferedLoadRPS: 10, FWall: 0.026, S: 2.5, Bound: 1.016, BoundLow: 1.016, BoundHigh: 1.016,
			TransferEfficiency: -1.38, TransferMetric: "e2e mean", TransferEfficiencyLow: f(-4.37), TransferEfficiencyHigh: f(1.88),
			TransferEfficiencyNote: "not separable from 0: the measured e2e mean speedup's interval [0.930, 1.03] contains 1 (no change)"},
		{Candidate: "gate-up-2x", OfferedLoadRPS: 10, FWall: 0.27, S: 2, Bound: 1.158, BoundLow: 1.158, BoundHigh: 1.158,
			TransferEfficiency: 1.2, TransferMetric: "e2e mean", TransferEfficiencyLow: f(0.888), TransferEfficiencyHigh: f(1.52)},
	}}
	text := renderSection(amdahlTables(sec, false))
	for _, want := range []string{"not separable from 0 [-4.37, 1.88] (e2e mean)", "1.20 [0.888, 1.52] (e2e mean)",
		"rmsnorm-2.5x at 10.00 req/s: transfer efficiency not separable from 0: the measured e2e mean speedup's interval [0.930, 1.03] contains 1 (no change)"} {
		if !strings.Contains(text, want) {
			t.Errorf("Amdahl table lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "-1.38") {
		t.Errorf("the point of an efficiency not separable from 0 is printed:\n%s", text)
	}
}
