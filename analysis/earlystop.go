package analysis

import (
	"fmt"

	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"
)

// EarlyStopping tests the claim "q-quantile ≤ target" from n samples of which
// over exceeded the target: it holds when P(Binomial(n, 1−q) ≤ over) ≤ 1 − conf
// (MLPerf LoadGen, "early stopping", loadgen/early_stopping.cc). MaxOver is
// found by bisection on the monotone CDF.
func EarlyStopping(n, over int, q, conf float64) (report.EarlyStop, error) {
	if n < 0 || over < 0 || over > n {
		return report.EarlyStop{}, fmt.Errorf("analysis: EarlyStopping: need 0 ≤ over (%d) ≤ n (%d)", over, n)
	}
	if _, err := stats.MinSamples(q, conf); err != nil {
		return report.EarlyStop{}, err
	}
	alpha := 1 - conf
	p := 1 - q
	es := report.EarlyStop{N: n, Over: over, Quantile: q, Confidence: conf, MaxOver: -1}
	es.PValue = stats.BinomialCDF(over, n, p)
	es.Holds = es.PValue <= alpha
	// Largest t with CDF(t) ≤ alpha; CDF is non-decreasing in t.
	lo, hi := -1, n // invariant: CDF(lo) ≤ alpha (CDF(−1)=0), CDF(hi) > alpha (CDF(n)=1)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if stats.BinomialCDF(mid, n, p) <= alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	es.MaxOver = lo
	return es, nil
}
