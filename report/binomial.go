package report

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// ErrTooFewSamples is returned (wrapped) when a percentile claim needs more
// samples than were measured; callers print the claim as refused, never as a number.
var ErrTooFewSamples = errors.New("report: too few samples for the claim")

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
		return 0, fmt.Errorf("report: MinSamples: quantile %v not in (0,1)", q)
	}
	if !(conf > 0 && conf < 1) {
		return 0, fmt.Errorf("report: MinSamples: confidence %v not in (0,1)", conf)
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

// EarlyStop is the outcome of MLPerf LoadGen's early-stopping test for the
// claim "the q-quantile of the metric is ≤ the target".
type EarlyStop struct {
	// N is the number of samples; Over how many exceeded the target.
	N    int `json:"n"`
	Over int `json:"over_target"`
	// Quantile is the claimed quantile (0.99 for p99); Confidence the one-sided level.
	Quantile   float64 `json:"quantile"`
	Confidence float64 `json:"confidence"`
	// MaxOver is the largest over-target count at which the claim holds for N
	// samples (−1 when no count does: N is below MinSamples).
	MaxOver int `json:"max_over_target"`
	// PValue is P(X ≤ Over) for X ~ Binomial(N, 1 − Quantile): the chance of
	// seeing this few over-target samples if the true q-quantile were the target.
	PValue float64 `json:"p_value"`
	// Holds is true when PValue ≤ 1 − Confidence, i.e. the claim is supported.
	Holds bool `json:"holds"`
}

// EarlyStopping tests the claim "q-quantile ≤ target" from n samples of which
// over exceeded the target: it holds when P(Binomial(n, 1−q) ≤ over) ≤ 1 − conf
// (MLPerf LoadGen, "early stopping", loadgen/early_stopping.cc). MaxOver is
// found by bisection on the monotone CDF.
func EarlyStopping(n, over int, q, conf float64) (EarlyStop, error) {
	if n < 0 || over < 0 || over > n {
		return EarlyStop{}, fmt.Errorf("report: EarlyStopping: need 0 ≤ over (%d) ≤ n (%d)", over, n)
	}
	if _, err := MinSamples(q, conf); err != nil {
		return EarlyStop{}, err
	}
	alpha := 1 - conf
	p := 1 - q
	es := EarlyStop{N: n, Over: over, Quantile: q, Confidence: conf, MaxOver: -1}
	es.PValue = BinomialCDF(over, n, p)
	es.Holds = es.PValue <= alpha
	// Largest t with CDF(t) ≤ alpha; CDF is non-decreasing in t.
	lo, hi := -1, n // invariant: CDF(lo) ≤ alpha (CDF(−1)=0), CDF(hi) > alpha (CDF(n)=1)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if BinomialCDF(mid, n, p) <= alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	es.MaxOver = lo
	return es, nil
}
