package loadgen

import (
	"fmt"
	"math/rand/v2"
)

// rngState is the seeded generator the pacers draw from (PCG, math/rand/v2).
type rngState struct{ r *rand.Rand }

func newRNG(seed uint64) rngState {
	return rngState{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// PoissonPacer releases hits as a Poisson process of RateRPS req/s:
// exponential gaps of mean 1/RateRPS s, drawn from a seeded generator, so
// the same seed gives the same arrival times. The first hit comes after one gap.
type PoissonPacer struct {
	renewal
}

var _ Pacer = (*PoissonPacer)(nil)

// NewPoissonPacer returns a Poisson pacer of rate rps (req/s, > 0) seeded with seed.
func NewPoissonPacer(rps float64, seed uint64) (*PoissonPacer, error) {
	if !(rps > 0) {
		return nil, fmt.Errorf("loadgen: poisson pacer: rate %g req/s must be > 0", rps)
	}
	return &PoissonPacer{newRenewal(rps, seed, func(r *rngState) float64 { return r.r.ExpFloat64() / rps })}, nil
}
