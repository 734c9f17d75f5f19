package stats

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// ErrTooFewSamples is returned (wrapped) when a percentile claim needs more
// samples than were measured; callers print the claim as refused, never as a number.
var ErrTooFewSamples = errors.New("too few samples for the claim")

// DefaultConfidence is the one-sided confidence level of percentile claims
// (0.99, as MLPerf LoadGen's early-stopping estimate uses).
const DefaultConfidence = 0.99

// MinSamples is the smallest number of raw samples n for which the largest
// sample is a one-sided upper confidence bound, at confidence conf, for the
// q-quantile (q in (0,1), e.g. 0.99 for p99): the order-statistic rule
// P(all n samples < the true q-quantile) = q^n ≤ 1 − conf, so
// n = ⌈ln(1 − conf) / ln q⌉. It is MLPerf LoadGen's early-stopping minimum
// with zero over-target queries (p99 at 99 %: 459; p99.9 at 99 %: 4603).
// Below it a p-quantile claim is refused.
func MinSamples(q, conf float64) (int, error) {
	if !(q > 0 && q < 1) {
		return 0, fmt.Errorf("stats: MinSamples: quantile %v not in (0,1)", q)
	}
	if !(conf > 0 && conf < 1) {
		return 0, fmt.Errorf("stats: MinSamples: confidence %v not in (0,1)", conf)
	}
	n := math.Ceil(math.Log1p(-conf)/math.Log(q) - 1e-9)
	if n < 1 {
		n = 1
	}
	return int(n), nil
}

// BinomialCDF is P(X ≤ k) for X ~ Binomial(n, p): gonum's distuv.Binomial
// (the regularized incomplete beta function), with the edges (k < 0, k ≥ n,
// p ≤ 0, p ≥ 1) answered exactly.
func BinomialCDF(k, n int, p float64) float64 {
	switch {
	case k < 0:
		return 0
	case k >= n:
		return 1
	case p <= 0:
		return 1
	case p >= 1:
		return 0
	}
	return distuv.Binomial{N: float64(n), P: p}.CDF(float64(k))
}
