package amdahl

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func ivs(pairs ...int) []Interval {
	out := make([]Interval, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Interval{time.Duration(pairs[i]), time.Duration(pairs[i+1])})
	}
	return out
}

func TestIntervalOps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name             string
		a, b             []Interval
		union, inter, ab []Interval
	}{
		{"disjoint", ivs(0, 2, 5, 7), ivs(3, 4), ivs(0, 2, 5, 7), nil, ivs(0, 2, 5, 7)},
		{"overlap across streams counted once", ivs(0, 10, 5, 15), ivs(8, 12), ivs(0, 15), ivs(8, 12), ivs(0, 8, 12, 15)},
		{"touching merge", ivs(0, 5, 5, 9), ivs(9, 10), ivs(0, 9), nil, ivs(0, 9)},
		{"empty and inverted dropped", ivs(3, 3, 7, 4, 1, 2), ivs(0, 10), ivs(1, 2), ivs(1, 2), nil},
		{"unsorted input", ivs(20, 30, 0, 10, 5, 25), ivs(12, 14, 28, 40), ivs(0, 30), ivs(12, 14, 28, 30), ivs(0, 12, 14, 28)},
		{"b covers holes", ivs(0, 4, 6, 10), ivs(2, 8), ivs(0, 4, 6, 10), ivs(2, 4, 6, 8), ivs(0, 2, 8, 10)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Union(c.a); !slices.Equal(got, c.union) {
				t.Errorf("Union = %v, want %v", got, c.union)
			}
			if got := Intersect(c.a, c.b); !slices.Equal(got, c.inter) {
				t.Errorf("Intersect = %v, want %v", got, c.inter)
			}
			if got := Subtract(c.a, c.b); !slices.Equal(got, c.ab) {
				t.Errorf("Subtract = %v, want %v", got, c.ab)
			}
		})
	}
}

// TestIntervalOpsAgainstGrid checks the set operations against a brute-force
// count over integer time points on random inputs.
func TestIntervalOpsAgainstGrid(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	const span = 60
	random := func() []Interval {
		var out []Interval
		for range r.IntN(6) {
			s := r.IntN(span)
			out = append(out, Interval{time.Duration(s), time.Duration(s + r.IntN(15))})
		}
		return out
	}
	in := func(u []Interval, x int) bool {
		for _, iv := range u {
			if iv.Contains(time.Duration(x)) {
				return true
			}
		}
		return false
	}
	for i := 0; i < 3000; i++ {
		a, b := random(), random()
		var nu, ni, ns int
		for x := 0; x < span+20; x++ {
			ia, ib := in(a, x), in(b, x)
			if ia || ib {
				nu++
			}
			if ia && ib {
				ni++
			}
			if ia && !ib {
				ns++
			}
		}
		if got := UnionLength(append(slices.Clone(a), b...)); got != time.Duration(nu) {
			t.Fatalf("|a∪b| = %v, grid %d (a=%v b=%v)", got, nu, a, b)
		}
		if got := totalLength(Intersect(a, b)); got != time.Duration(ni) {
			t.Fatalf("|a∩b| = %v, grid %d (a=%v b=%v)", got, ni, a, b)
		}
		if got := totalLength(Subtract(a, b)); got != time.Duration(ns) {
			t.Fatalf("|a−b| = %v, grid %d (a=%v b=%v)", got, ns, a, b)
		}
	}
}

func TestSplitEvenAndShift(t *testing.T) {
	t.Parallel()
	w := SplitEven(Interval{10, 41}, 3)
	if want := ivs(10, 20, 20, 30, 30, 41); !slices.Equal(w, want) {
		t.Fatalf("SplitEven = %v, want %v", w, want)
	}
	if SplitEven(Interval{5, 5}, 3) != nil || SplitEven(Interval{0, 9}, 0) != nil {
		t.Fatal("SplitEven of an empty window or n=0 should be nil")
	}
	if got := Shift(ivs(1, 2), 10); !slices.Equal(got, ivs(11, 12)) {
		t.Fatalf("Shift = %v", got)
	}
}
