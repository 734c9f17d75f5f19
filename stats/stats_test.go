package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestNearestRankIsTheCeilRank checks NearestRank against the definition
// written out, the ⌈q·n⌉-th smallest sample, on random samples, and at the
// edges (q = 0, q = 1, one sample, ties).
func TestNearestRankIsTheCeilRank(t *testing.T) {
	t.Parallel()
	rank := func(xs []float64, q float64) float64 {
		k := int(math.Ceil(q*float64(len(xs)) - 1e-9))
		return xs[min(max(k, 1), len(xs))-1]
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 200 {
		n := 1 + rng.IntN(3000)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = rng.ExpFloat64() * 100
		}
		slices.Sort(xs)
		for _, q := range []float64{0, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
			if got, want := NearestRank(xs, q), rank(xs, q); got != want {
				t.Fatalf("iter %d n=%d q=%v: NearestRank %v, ⌈q·n⌉-th sample %v", iter, n, q, got, want)
			}
		}
	}
	for _, tc := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{[]float64{7}, 0.99, 7},
		{[]float64{1, 2, 3, 4}, 0.5, 2},  // ⌈2⌉ = 2nd
		{[]float64{1, 2, 3, 4}, 0.51, 3}, // ⌈2.04⌉ = 3rd
		{[]float64{1, 1, 2, 2}, 0.75, 2},
		{[]float64{1, 2, 3}, 0, 1},
	} {
		if got := NearestRank(tc.xs, tc.q); got != tc.want {
			t.Errorf("NearestRank(%v, %v) = %v, want %v", tc.xs, tc.q, got, tc.want)
		}
	}
}
