package amdahl

import (
	"encoding/json"
	"math"
	"strconv"
)

// Num is a float64 that may be undefined (NaN), e.g. f_gpu from a source
// without busy time or an efficiency whose bound is 1. JSON writes an
// undefined or infinite Num as null and reads null back as NaN, so
// results.json never carries a made-up 0.
type Num float64

// NaN is the undefined Num.
func NaN() Num { return Num(math.NaN()) }

// Defined reports whether n is a finite number.
func (n Num) Defined() bool { return !math.IsNaN(float64(n)) && !math.IsInf(float64(n), 0) }

// String formats n with 4 significant digits, or "n/a" when undefined.
func (n Num) String() string {
	if !n.Defined() {
		return "n/a"
	}
	return strconv.FormatFloat(float64(n), 'g', 4, 64)
}

// MarshalJSON writes null for an undefined n.
func (n Num) MarshalJSON() ([]byte, error) {
	if !n.Defined() {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

// UnmarshalJSON reads null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = NaN()
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// ratio is num/den as a Num, undefined when den ≤ 0.
func ratio(num, den float64) Num {
	if den <= 0 {
		return NaN()
	}
	return Num(num / den)
}
