package stats

import (
	"math"
	"strings"
	"testing"
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
		if _, err := MinSamples(bad[0], bad[1]); err == nil || !strings.HasPrefix(err.Error(), "stats: ") {
			t.Errorf("MinSamples(%v, %v): err = %v, want one starting \"stats: \"", bad[0], bad[1], err)
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
