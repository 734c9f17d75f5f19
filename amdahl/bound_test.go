package amdahl

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

func TestBound(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		f, s    float64
		want    float64
		wantErr bool
	}{
		{"nothing addressable", 0, 10, 1, false},
		{"all addressable gives s", 1, 2.5, 2.5, false},
		{"half at 2x", 0.5, 2, 1 / (0.5 + 0.25), false},
		{"3% at 2.5x (RMSNorm-like)", 0.03, 2.5, 1 / (0.97 + 0.012), false},
		{"slower kernel", 0.5, 0.5, 1 / (0.5 + 1), false},
		{"s = 1 changes nothing", 0.7, 1, 1, false},
		{"f < 0", -0.1, 2, 0, true},
		{"f > 1", 1.1, 2, 0, true},
		{"f NaN", math.NaN(), 2, 0, true},
		{"s = 0", 0.5, 0, 0, true},
		{"s < 0", 0.5, -2, 0, true},
		{"s +Inf", 0.5, math.Inf(1), 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Bound(c.f, c.s)
			if (err != nil) != c.wantErr {
				t.Fatalf("Bound(%v, %v) error = %v, wantErr %v", c.f, c.s, err, c.wantErr)
			}
			if !c.wantErr {
				approx(t, "Bound", got, c.want, 1e-12)
			}
		})
	}
}

// TestBoundProperties: for s > 1 the bound lies in [1, s] and is
// non-decreasing in f; for s < 1 it lies in [s, 1] and is non-increasing.
func TestBoundProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 20000; i++ {
		f1, f2 := r.Float64(), r.Float64()
		if f1 > f2 {
			f1, f2 = f2, f1
		}
		s := 1 + r.ExpFloat64()*3
		if i%2 == 1 {
			s = 1 / s
		}
		b1, err1 := Bound(f1, s)
		b2, err2 := Bound(f2, s)
		if err1 != nil || err2 != nil {
			t.Fatalf("Bound errors at f=%v/%v s=%v: %v %v", f1, f2, s, err1, err2)
		}
		lo, hi := min(1, s), max(1, s)
		const eps = 1e-12
		if b1 < lo-eps || b1 > hi+eps {
			t.Fatalf("Bound(%v, %v) = %v outside [%v, %v]", f1, s, b1, lo, hi)
		}
		if s > 1 && b2 < b1-eps || s < 1 && b2 > b1+eps {
			t.Fatalf("not monotone in f: Bound(%v,%v)=%v, Bound(%v,%v)=%v", f1, s, b1, f2, s, b2)
		}
	}
}

func TestTransferEfficiency(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name            string
		measured, bound float64
		want            float64
	}{
		{"whole bound reached", 1.2, 1.2, 1},
		{"half the gain", 1.1, 1.2, 0.5},
		{"no gain", 1, 1.2, 0},
		{"slowdown", 0.9, 1.2, -0.5},
		{"above the bound", 1.3, 1.2, 1.5},
		{"bound 1 is undefined", 1.05, 1, math.NaN()},
		{"NaN measured", math.NaN(), 1.2, math.NaN()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			approx(t, "TransferEfficiency", TransferEfficiency(c.measured, c.bound), c.want, 1e-12)
		})
	}
}

func TestNumJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(struct {
		A, B, C Num
	}{0.25, NaN(), Num(math.Inf(1))})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"A":0.25,"B":null,"C":null}`; got != want {
		t.Fatalf("JSON = %s, want %s", got, want)
	}
	var back struct{ A, B Num }
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.A != 0.25 || back.B.Defined() {
		t.Fatalf("round trip = %+v", back)
	}
	if NaN().String() != "n/a" || Num(0.125).String() != "0.125" {
		t.Fatalf("String: %q %q", NaN().String(), Num(0.125).String())
	}
}
