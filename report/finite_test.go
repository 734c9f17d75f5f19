package report_test

import (
	"math"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
)

func TestCheckFinite(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	if err := report.CheckFinite(r); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	r.Energy.Cells[3].IdlePowerW = math.NaN()
	r.Cells[1].TTFT.P50Ms = analysistest.Ptr(math.Inf(1))
	r.Cells[0].SLOClaims[0].PValue = math.NaN() // a field of the embedded EarlyStop
	r.Manifest.Effective = map[string]any{"rate": math.Inf(-1)}
	err := report.CheckFinite(r)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"energy.cells[3].idle_power_w is NaN", "cells[1].ttft.p50_ms is +Inf", "cells[0].slo_claims[0].p_value is NaN", "manifest.config_effective[rate] is -Inf"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
