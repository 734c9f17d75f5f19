package amdahl

import (
	"slices"
	"time"
)

// Interval is the half-open span [Start, End) on one clock, as offsets from
// that clock's zero (ns in a time.Duration). An interval with End ≤ Start is
// empty.
type Interval struct {
	Start time.Duration `json:"start_ns"`
	End   time.Duration `json:"end_ns"`
}

// Len is End − Start, or 0 for an empty interval.
func (iv Interval) Len() time.Duration {
	if iv.End <= iv.Start {
		return 0
	}
	return iv.End - iv.Start
}

// Contains reports whether t lies in [Start, End).
func (iv Interval) Contains(t time.Duration) bool { return t >= iv.Start && t < iv.End }

// Union returns the union of ivs as sorted, disjoint, non-empty intervals.
// Touching intervals ([a,b) and [b,c)) merge. The input is not modified.
func Union(ivs []Interval) []Interval {
	out := make([]Interval, 0, len(ivs))
	for _, iv := range ivs {
		if iv.Len() > 0 {
			out = append(out, iv)
		}
	}
	slices.SortFunc(out, func(a, b Interval) int {
		if a.Start != b.Start {
			return cmpDur(a.Start, b.Start)
		}
		return cmpDur(a.End, b.End)
	})
	merged := out[:0]
	for _, iv := range out {
		if n := len(merged); n > 0 && iv.Start <= merged[n-1].End {
			merged[n-1].End = max(merged[n-1].End, iv.End)
			continue
		}
		merged = append(merged, iv)
	}
	return merged
}

// UnionLength is |∪ ivs|: the total time covered by at least one interval,
// overlap counted once.
func UnionLength(ivs []Interval) time.Duration { return totalLength(Union(ivs)) }

// Intersect returns (∪ a) ∩ (∪ b) as sorted, disjoint intervals.
func Intersect(a, b []Interval) []Interval {
	ua, ub := Union(a), Union(b)
	var out []Interval
	i, j := 0, 0
	for i < len(ua) && j < len(ub) {
		lo, hi := max(ua[i].Start, ub[j].Start), min(ua[i].End, ub[j].End)
		if hi > lo {
			out = append(out, Interval{lo, hi})
		}
		if ua[i].End < ub[j].End {
			i++
		} else {
			j++
		}
	}
	return out
}

// Subtract returns (∪ a) − (∪ b) as sorted, disjoint intervals.
func Subtract(a, b []Interval) []Interval {
	ua, ub := Union(a), Union(b)
	var out []Interval
	j := 0
	for _, iv := range ua {
		cur := iv.Start
		for j < len(ub) && ub[j].End <= cur {
			j++
		}
		for k := j; k < len(ub) && ub[k].Start < iv.End; k++ {
			if ub[k].Start > cur {
				out = append(out, Interval{cur, ub[k].Start})
			}
			cur = max(cur, ub[k].End)
		}
		if cur < iv.End {
			out = append(out, Interval{cur, iv.End})
		}
	}
	return out
}

// Shift returns ivs moved by d (to put another clock's intervals on this one).
func Shift(ivs []Interval, d time.Duration) []Interval {
	out := make([]Interval, len(ivs))
	for i, iv := range ivs {
		out[i] = Interval{iv.Start + d, iv.End + d}
	}
	return out
}

// SplitEven cuts w into n windows of equal length (the last absorbs the
// rounding remainder). n < 1 or an empty w gives nil.
func SplitEven(w Interval, n int) []Interval {
	if n < 1 || w.Len() == 0 {
		return nil
	}
	out := make([]Interval, n)
	step := w.Len() / time.Duration(n)
	for i := range out {
		out[i] = Interval{w.Start + time.Duration(i)*step, w.Start + time.Duration(i+1)*step}
	}
	out[n-1].End = w.End
	return out
}

func totalLength(disjoint []Interval) time.Duration {
	var sum time.Duration
	for _, iv := range disjoint {
		sum += iv.Len()
	}
	return sum
}

func cmpDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// coveringIndex returns the index of the interval of the sorted, disjoint u
// that contains t, or -1.
func coveringIndex(u []Interval, t time.Duration) int {
	i, _ := slices.BinarySearchFunc(u, t, func(iv Interval, t time.Duration) int {
		if iv.End <= t {
			return -1
		}
		if iv.Start > t {
			return 1
		}
		return 0
	})
	if i < len(u) && u[i].Contains(t) {
		return i
	}
	return -1
}

// covering reports whether t lies in one of the sorted, disjoint intervals u.
func covering(u []Interval, t time.Duration) bool { return coveringIndex(u, t) >= 0 }
