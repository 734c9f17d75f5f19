// Package stats holds the project's one percentile definition
// (docs/DESIGN.md, "Percentiles": exact, from raw samples, never an
// interpolation), computed by gonum, the binomial bounds on a percentile
// claim (binomial.go: MinSamples, BinomialCDF) and the mechanics of the
// seeded percentile bootstrap (bootstrap.go: BootstrapStream,
// BootstrapStreamFor, BootstrapInterval; gonum's empirical quantile). analysis,
// amdahl, loadgen and bench-client take every percentile from here. It
// knows nothing of requests, records or reports: it sees numbers.
package stats

import "gonum.org/v1/gonum/stat"

// NearestRank is the q-quantile (q in [0, 1]) of sorted by the nearest-rank
// method: the ⌈q·n⌉-th smallest sample (1-based; the smallest for q = 0),
// always a measured value. It is gonum's empirical quantile
// (stat.Quantile with stat.Empirical: the smallest sample with at least a
// fraction q of the samples at or below it), the same definition. sorted
// must be non-empty and ascending (gonum panics otherwise), in any unit;
// the result is in that unit.
func NearestRank(sorted []float64, q float64) float64 {
	return stat.Quantile(min(max(q, 0), 1), stat.Empirical, sorted, nil)
}
