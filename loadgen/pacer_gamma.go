package loadgen

import (
	"fmt"
	"math"
)

// GammaPacer releases hits as a renewal process with Gamma-distributed gaps of
// mean 1/RateRPS s and coefficient of variation CV (shape k = 1/CV², scale
// θ = 1/(RateRPS·k)). CV = 1 is Poisson; CV > 1 is burstier, CV < 1 smoother.
// Gaps are drawn with Marsaglia and Tsang's method ("A Simple Method for
// Generating Gamma Variables", ACM TOMS 26(3), 2000), boosted for k < 1 by
// U^(1/k), from a seeded generator.
type GammaPacer struct {
	renewal
	CV float64
}

var _ Pacer = (*GammaPacer)(nil)

// NewGammaPacer returns a Gamma pacer of mean rate rps (req/s, > 0) and
// coefficient of variation cv (> 0), seeded with seed.
func NewGammaPacer(rps, cv float64, seed uint64) (*GammaPacer, error) {
	if !(rps > 0) {
		return nil, fmt.Errorf("loadgen: gamma pacer: rate %g req/s must be > 0", rps)
	}
	if !(cv > 0) || math.IsInf(cv, 0) {
		return nil, fmt.Errorf("loadgen: gamma pacer: cv %g must be > 0 and finite", cv)
	}
	k := 1 / (cv * cv)
	theta := 1 / (rps * k)
	return &GammaPacer{renewal: newRenewal(rps, seed, func(r *rngState) float64 { return gammaRand(r, k) * theta }), CV: cv}, nil
}

// gammaRand draws from Gamma(k, 1) (Marsaglia–Tsang; k < 1 via Gamma(k+1)·U^(1/k)).
func gammaRand(r *rngState, k float64) float64 {
	if k < 1 {
		u := r.r.Float64()
		for u == 0 {
			u = r.r.Float64()
		}
		return gammaRand(r, k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
