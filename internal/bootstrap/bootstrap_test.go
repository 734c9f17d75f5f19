package bootstrap

import (
	"math"
	"testing"
)

// TestInterval checks the percentile interval against hand-counted quantiles
// of 1..100 and that NaN replicates are dropped.
func TestInterval(t *testing.T) {
	reps := make([]float64, 0, 102)
	for i := 100; i >= 1; i-- {
		reps = append(reps, float64(i))
	}
	reps = append(reps, math.NaN(), math.NaN())
	lo, hi, ok := Interval(reps, 0.90)
	// gonum's Empirical quantile of 1..100 at 0.05 is the 5th value, at 0.95 the 95th.
	if !ok || lo != 5 || hi != 95 {
		t.Errorf("Interval(1..100, 0.90) = %v, %v, %v; want 5, 95, true", lo, hi, ok)
	}
	if _, _, ok := Interval([]float64{math.NaN()}, 0.95); ok {
		t.Error("all-NaN replicates gave an interval")
	}
}

// TestStreams checks that streams are reproducible and distinct.
func TestStreams(t *testing.T) {
	a, b := StreamFor(1, "x").Uint64(), StreamFor(1, "x").Uint64()
	if a != b {
		t.Error("same seed and key gave different streams")
	}
	if StreamFor(1, "y").Uint64() == a || StreamFor(2, "x").Uint64() == a {
		t.Error("different key or seed gave the same first draw")
	}
}
