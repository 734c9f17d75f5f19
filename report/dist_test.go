package report

import (
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// TestNearestRankMatchesGonum checks our nearest-rank percentile against
// gonum's empirical quantile (the smallest sample with at least a fraction q
// of samples at or below it: the same definition) on random samples.
func TestNearestRankMatchesGonum(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 200 {
		n := 1 + rng.IntN(3000)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = rng.ExpFloat64() * 100
		}
		slices.Sort(xs)
		for _, q := range []float64{0.5, 0.9, 0.95, 0.99, 0.999} {
			if got, want := NearestRank(xs, q), stat.Quantile(q, stat.Empirical, xs, nil); got != want {
				t.Fatalf("iter %d n=%d q=%v: NearestRank %v, gonum %v", iter, n, q, got, want)
			}
		}
	}
}
