package amdahl

import (
	"fmt"
	"math"
)

// Bound is Amdahl's law: the whole-program speedup when a fraction f of the
// time (0 ≤ f ≤ 1, dimensionless) is sped up by a factor s > 0:
//
//	Bound(f, s) = 1 / ((1 − f) + f/s)
//
// (G. Amdahl, AFIPS 1967). For s > 1 it lies in [1, s] and grows with f; for
// s < 1 (a slower kernel) it is below 1. It returns an error for f outside
// [0, 1], s ≤ 0, or a NaN/Inf argument.
func Bound(f, s float64) (float64, error) {
	if math.IsNaN(f) || f < 0 || f > 1 {
		return math.NaN(), fmt.Errorf("amdahl: bound: f = %v is not in [0, 1]", f)
	}
	if math.IsNaN(s) || math.IsInf(s, 0) || s <= 0 {
		return math.NaN(), fmt.Errorf("amdahl: bound: s = %v is not a finite speedup > 0", s)
	}
	return 1 / ((1 - f) + f/s), nil
}

// TransferEfficiency is the share of the bound's gain that the service
// actually realised: (measured − 1) / (bound − 1), both speedups as ratios
// (baseline/candidate latency, > 1 is faster). 1 means the whole bound was
// reached, 0 no gain, < 0 a slowdown, > 1 more than Amdahl allows (an error
// in f or s, or a second-order effect such as less queueing).
//
// When bound == 1 there is no gain to transfer (f = 0 or s = 1) and the ratio
// is undefined: the result is NaN, which JSON writes as null and the report
// prints as "n/a". A NaN argument also gives NaN.
func TransferEfficiency(measured, bound float64) float64 {
	if bound == 1 || math.IsNaN(measured) || math.IsNaN(bound) {
		return math.NaN()
	}
	return (measured - 1) / (bound - 1)
}
