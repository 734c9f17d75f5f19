package amdahl

import (
	"math"
	"testing"
	"time"
)

// approx fails unless got is within tol (absolute) of want. Fixture answers
// are exact rationals; tol = 1e-9 covers float64 rounding of those divisions.
func approx(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(want) {
		if !math.IsNaN(got) {
			t.Errorf("%s = %v, want NaN (undefined)", what, got)
		}
		return
	}
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.12g, want %.12g (±%g)", what, got, want, tol)
	}
}

const exact = 1e-9

// NaN64 is the float64 NaN, the expected value of an undefined result.
var NaN64 = math.NaN()

func us(n float64) time.Duration { return time.Duration(n * float64(time.Microsecond)) }
