package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMissingFiguresAreNull: figures listed as missing, and an efficiency
// that was not computed, are null in JSON, and read back as not measured.
func TestMissingFiguresAreNull(t *testing.T) {
	t.Parallel()
	e := EnergyCell{Arm: "a", Available: true, EnergyJ: 12, Missing: []string{"idle_power_w", "peak_vram_bytes"}}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"idle_power_w":null`, `"peak_vram_bytes":null`, `"energy_j":12`} {
		if !strings.Contains(s, want) {
			t.Errorf("energy cell JSON lacks %s: %s", want, s)
		}
	}
	var back EnergyCell
	if err := json.Unmarshal(b, &back); err != nil || back.Has("idle_power_w") || back.EnergyJ != 12 {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	a, err := json.Marshal(AmdahlLoad{Candidate: "c", Bound: 1.1})
	if err != nil || !strings.Contains(string(a), `"transfer_efficiency":null`) {
		t.Errorf("uncomputed efficiency: %s, %v", a, err)
	}
	a, err = json.Marshal(AmdahlLoad{Candidate: "c", Bound: 1.1, TransferEfficiency: 0.5, TransferMetric: "e2e mean"})
	if err != nil || !strings.Contains(string(a), `"transfer_efficiency":0.5`) {
		t.Errorf("computed efficiency: %s, %v", a, err)
	}
}

// TestEstimateWithoutIntervalHasNoBounds: an estimate with a value and no
// interval (a capacity gain with an open side) writes its missing bounds
// as null, and a lower bound it has as a number.
func TestEstimateWithoutIntervalHasNoBounds(t *testing.T) {
	for _, tc := range []struct {
		e    Estimate
		want string
	}{
		{Estimate{Value: 1, Reps: 1, Note: "no interval: open"}, `"low":null`},
		{Estimate{Value: 1, Reps: 1, Note: "no interval: open"}, `"high":null`},
		{Estimate{Value: 1.3, Low: 1.1, Reps: 1, Note: "a lower bound"}, `"low":1.1`},
		{Estimate{Value: 1.3, Low: 1.1, Reps: 1, Note: "a lower bound"}, `"high":null`},
	} {
		b, err := json.Marshal(tc.e)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tc.want) {
			t.Errorf("%+v: %s lacks %s", tc.e, b, tc.want)
		}
	}
}
