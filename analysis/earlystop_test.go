package analysis_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"

	"gonum.org/v1/gonum/mathext"
)

// exactCDF is P(Binomial(n, p) ≤ k) through the regularised incomplete beta
// function, I_{1−p}(n − k, k + 1), written out for the early-stopping checks.
func exactCDF(k, n int, p float64) float64 {
	if k >= n {
		return 1
	}
	return mathext.RegIncBeta(float64(n-k), float64(k+1), 1-p)
}

// TestEarlyStoppingLargeCase is a 200,000-request case with 1,500
// requests over the target. For a p99 claim the observed tail share (0.75 %) is
// far below 1 %; for p99.9 it is far above 0.1 %.
func TestEarlyStoppingLargeCase(t *testing.T) {
	t.Parallel()
	const n, over, conf = 200000, 1500, 0.99
	cases := []struct {
		name  string
		q     float64
		holds bool
	}{{"p99 claim holds", 0.99, true}, {"p99.9 claim refused", 0.999, false}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			es, err := analysis.EarlyStopping(n, over, c.q, conf)
			if err != nil {
				t.Fatal(err)
			}
			if es.Holds != c.holds {
				t.Errorf("Holds = %v, want %v (p-value %g)", es.Holds, c.holds, es.PValue)
			}
			p := 1 - c.q
			want := exactCDF(over, n, p)
			if math.Abs(es.PValue-want) > 1e-9*want+1e-300 {
				t.Errorf("p-value %g, beta gives %g", es.PValue, want)
			}
			// MaxOver is exactly the largest t with CDF(t) ≤ 1 − conf, by the beta route.
			if exactCDF(es.MaxOver, n, p) > 1-conf || exactCDF(es.MaxOver+1, n, p) <= 1-conf {
				t.Errorf("MaxOver = %d is not the boundary: CDF(t)=%g, CDF(t+1)=%g", es.MaxOver, exactCDF(es.MaxOver, n, p), exactCDF(es.MaxOver+1, n, p))
			}
			// Normal approximation as a sanity bound: n·p − z·√(n·p·(1−p)), z(0.99)=2.326; within ±3 counts.
			approx := float64(n)*p - 2.326*math.Sqrt(float64(n)*p*(1-p))
			if math.Abs(float64(es.MaxOver)-approx) > 3+0.05*approx {
				t.Errorf("MaxOver = %d, normal approximation %g", es.MaxOver, approx)
			}
			if (over <= es.MaxOver) != es.Holds {
				t.Errorf("Holds (%v) disagrees with over ≤ MaxOver (%d ≤ %d)", es.Holds, over, es.MaxOver)
			}
		})
	}
}

func TestEarlyStoppingSmallN(t *testing.T) {
	t.Parallel()
	// Below MinSamples no over-target count supports the claim, not even 0.
	es, err := analysis.EarlyStopping(458, 0, 0.99, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	if es.Holds || es.MaxOver != -1 {
		t.Errorf("n=458 p99: Holds=%v MaxOver=%d, want false, -1", es.Holds, es.MaxOver)
	}
	es, _ = analysis.EarlyStopping(459, 0, 0.99, 0.99)
	if !es.Holds || es.MaxOver != 0 {
		t.Errorf("n=459 p99: Holds=%v MaxOver=%d, want true, 0", es.Holds, es.MaxOver)
	}
	if _, err := analysis.EarlyStopping(10, 11, 0.99, 0.99); err == nil || !strings.HasPrefix(err.Error(), "analysis: ") {
		t.Errorf("over > n: err = %v, want one starting \"analysis: \"", err)
	}
	_, err = analysis.Quantile(report.Dist{N: 10}, "p99")
	if !errors.Is(err, stats.ErrTooFewSamples) {
		t.Errorf("refused Quantile: err = %v, want ErrTooFewSamples", err)
	}
}
