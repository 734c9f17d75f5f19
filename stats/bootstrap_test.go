package stats

import (
	"math"
	"testing"
)

// TestBootstrapInterval checks the percentile interval against hand-counted quantiles
// of 1..100 and that NaN replicates are dropped.
func TestBootstrapInterval(t *testing.T) {
	reps := make([]float64, 0, 102)
	for i := 100; i >= 1; i-- {
		reps = append(reps, float64(i))
	}
	reps = append(reps, math.NaN(), math.NaN())
	lo, hi, ok := BootstrapInterval(reps, 0.90)
	// gonum's Empirical quantile of 1..100 at 0.05 is the 5th value, at 0.95 the 95th.
	if !ok || lo != 5 || hi != 95 {
		t.Errorf("BootstrapInterval(1..100, 0.90) = %v, %v, %v; want 5, 95, true", lo, hi, ok)
	}
	if _, _, ok := BootstrapInterval([]float64{math.NaN()}, 0.95); ok {
		t.Error("all-NaN replicates gave an interval")
	}
}

// TestBootstrapStreams checks that streams are reproducible and distinct.
func TestBootstrapStreams(t *testing.T) {
	a, b := BootstrapStreamFor(1, "x").Uint64(), BootstrapStreamFor(1, "x").Uint64()
	if a != b {
		t.Error("same seed and key gave different streams")
	}
	if BootstrapStreamFor(1, "y").Uint64() == a || BootstrapStreamFor(2, "x").Uint64() == a {
		t.Error("different key or seed gave the same first draw")
	}
}
