package report

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mathext"
)

func TestMinSamples(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		q, conf float64
		want    int
	}{
		{"p99 at 99% (MLPerf: 459)", 0.99, 0.99, 459},
		{"p99.9 at 99%", 0.999, 0.99, 4603},
		{"p99 at 95%", 0.99, 0.95, 299},
		{"p99.9 at 95%", 0.999, 0.95, 2995},
		{"p90 at 99%", 0.90, 0.99, 44},
		{"p50 at 99%", 0.50, 0.99, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := MinSamples(c.q, c.conf)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("MinSamples(%v, %v) = %d, want %d", c.q, c.conf, got, c.want)
			}
			// The defining property: q^n ≤ 1 − conf < q^(n−1).
			if math.Pow(c.q, float64(got)) > 1-c.conf || math.Pow(c.q, float64(got-1)) <= 1-c.conf {
				t.Errorf("n=%d is not the smallest n with q^n ≤ 1−conf", got)
			}
		})
	}
	for _, bad := range [][2]float64{{0, 0.9}, {1, 0.9}, {0.99, 1}, {0.99, 0}} {
		if _, err := MinSamples(bad[0], bad[1]); err == nil {
			t.Errorf("MinSamples(%v, %v): want error", bad[0], bad[1])
		}
	}
}

// termSumCDF is P(Binomial(n, p) ≤ k) summed term by term in log space from
// the log-gamma form of the mass function: an independent route to
// BinomialCDF (gonum's incomplete beta function). 0 ≤ k < n, 0 < p < 1.
func termSumCDF(k, n int, p float64) float64 {
	lgn, _ := math.Lgamma(float64(n) + 1)
	lp, lq := math.Log(p), math.Log1p(-p)
	logs := make([]float64, k+1)
	maxLog := math.Inf(-1)
	for i := 0; i <= k; i++ {
		a, _ := math.Lgamma(float64(i) + 1)
		b, _ := math.Lgamma(float64(n-i) + 1)
		logs[i] = lgn - a - b + float64(i)*lp + float64(n-i)*lq
		maxLog = max(maxLog, logs[i])
	}
	var s float64
	for _, l := range logs {
		s += math.Exp(l - maxLog)
	}
	return min(math.Exp(maxLog)*s, 1)
}

// exactCDF is P(Binomial(n, p) ≤ k) through the regularised incomplete beta
// function, I_{1−p}(n − k, k + 1), written out for the early-stopping checks.
func exactCDF(k, n int, p float64) float64 {
	if k >= n {
		return 1
	}
	return mathext.RegIncBeta(float64(n-k), float64(k+1), 1-p)
}

func TestBinomialCDFAgainstTermSum(t *testing.T) {
	t.Parallel()
	cases := []struct {
		k, n int
		p    float64
	}{{0, 10, 0.5}, {5, 10, 0.5}, {3, 459, 0.01}, {1896, 200000, 0.01}, {2000, 200000, 0.01}, {150, 200000, 0.001}}
	for _, c := range cases {
		got, want := BinomialCDF(c.k, c.n, c.p), termSumCDF(c.k, c.n, c.p)
		// Relative tolerance 1e-9: two double-precision routes to the same probability.
		if math.Abs(got-want) > 1e-9*want+1e-300 {
			t.Errorf("BinomialCDF(%d, %d, %v) = %.12g, the term sum gives %.12g", c.k, c.n, c.p, got, want)
		}
	}
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
			es, err := EarlyStopping(n, over, c.q, conf)
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
	es, err := EarlyStopping(458, 0, 0.99, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	if es.Holds || es.MaxOver != -1 {
		t.Errorf("n=458 p99: Holds=%v MaxOver=%d, want false, -1", es.Holds, es.MaxOver)
	}
	es, _ = EarlyStopping(459, 0, 0.99, 0.99)
	if !es.Holds || es.MaxOver != 0 {
		t.Errorf("n=459 p99: Holds=%v MaxOver=%d, want true, 0", es.Holds, es.MaxOver)
	}
	if _, err := EarlyStopping(10, 11, 0.99, 0.99); err == nil {
		t.Error("over > n: want error")
	}
	_, err = Dist{N: 10}.Quantile("p99")
	if !errors.Is(err, ErrTooFewSamples) {
		t.Errorf("refused Quantile: err = %v, want ErrTooFewSamples", err)
	}
}
