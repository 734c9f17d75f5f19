package analysis_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
)

func TestBootstrapMeanCoversNormalInterval(t *testing.T) {
	t.Parallel()
	// 200 draws from N(10, 1): the 95 % interval of the mean is about ±1.96/√200 = ±0.139.
	// The percentile bootstrap should match that half-width within 20 % (its own
	// Monte-Carlo error at 4000 resamples is ~2 %, the sample-sd error ~5 %).
	rng := rand.New(rand.NewPCG(3, 4))
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = 10 + rng.NormFloat64()
	}
	b := analysis.NewBootstrapper(1, 4000, 0.95)
	e := b.Mean("x", xs)
	half := (e.High - e.Low) / 2
	analysistest.Near(t, "half-width", half, 1.96/math.Sqrt(200), 0.2*1.96/math.Sqrt(200))
	if e.Low > e.Value || e.High < e.Value {
		t.Errorf("interval [%v, %v] does not cover the mean %v", e.Low, e.High, e.Value)
	}
	// Seeded: the same key gives the same interval.
	if e2 := b.Mean("x", xs); e2 != e {
		t.Errorf("not reproducible: %+v vs %+v", e, e2)
	}
}

func TestBootstrapRatioPaired(t *testing.T) {
	t.Parallel()
	// Repetitions drift together (a shared offset per repetition); the candidate is
	// exactly 0.8 × baseline in each. Paired resampling sees the ratio 0.8 exactly;
	// independent resampling mixes repetitions and widens the interval.
	base := []float64{10, 14, 18, 22}
	cand := []float64{8, 11.2, 14.4, 17.6}
	b := analysis.NewBootstrapper(1, 2000, 0.95)
	p := b.Ratio("r", cand, base, true)
	analysistest.Near(t, "paired low", p.Low, 0.8, 1e-12)
	analysistest.Near(t, "paired high", p.High, 0.8, 1e-12)
	u := b.Ratio("r", cand, base, false)
	if u.High-u.Low < 0.1 {
		t.Errorf("independent interval [%v, %v] should be wide", u.Low, u.High)
	}
	if z := b.Ratio("z", cand, []float64{0, 0}, true); z.Interval || z.Note == "" {
		t.Errorf("zero baseline: %+v", z)
	}
}
