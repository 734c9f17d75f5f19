package stats

// The mechanics of transferlab's seeded percentile bootstraps, shared by
// analysis (intervals over repetitions and requests) and amdahl (intervals
// over profiled windows, kernel shapes and requests): the random stream of
// one estimate, and the percentile interval of its replicates (Efron &
// Tibshirani, "An Introduction to the Bootstrap", ch. 13). What is
// resampled, and how a replicate is computed, stays with each caller.

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// BootstrapStream returns the PCG generator (math/rand/v2) of one estimate: seed is
// the run's bootstrap seed (recorded in the report), stream tells estimates
// apart so one figure's interval does not depend on which others were drawn first.
func BootstrapStream(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

// BootstrapStreamFor is BootstrapStream with the stream taken from a key (FNV-1a 64 of key).
func BootstrapStreamFor(seed uint64, key string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(key))
	return BootstrapStream(seed, h.Sum64())
}

// BootstrapInterval is the two-sided percentile interval at level (e.g. 0.95) of the
// replicates: their (1−level)/2 and (1+level)/2 empirical quantiles (gonum
// stat.Empirical). NaN replicates are dropped; ok is false when none is left.
// reps is sorted in place.
func BootstrapInterval(reps []float64, level float64) (lo, hi float64, ok bool) {
	reps = slices.DeleteFunc(reps, math.IsNaN)
	if len(reps) == 0 {
		return math.NaN(), math.NaN(), false
	}
	slices.Sort(reps)
	a := (1 - level) / 2
	return stat.Quantile(a, stat.Empirical, reps, nil), stat.Quantile(1-a, stat.Empirical, reps, nil), true
}
