package amdahl

import (
	"errors"
	"math"
	"testing"
)

// TestAblationFormulas: the H200 engine figures (ITL p50 at one
// request: original 12.87, candidate 11.24, removed 11.31 ms) give f by
// ablation 1 − 11.31/12.87 and an undefined s in situ (the candidate is
// faster than the ceiling); a made-up triple gives the closed forms, and the
// ablation bound equals the measured speedup on its own statistic.
func TestAblationFormulas(t *testing.T) {
	f, err := FAblation(12.87, 11.31)
	if err != nil || math.Abs(f-(1-11.31/12.87)) > 1e-12 {
		t.Errorf("FAblation = %v, %v", f, err)
	}
	if _, err := SInSitu(12.87, 11.31, 11.24); !errors.Is(err, ErrCandidateAtCeiling) {
		t.Errorf("SInSitu with the candidate below the ceiling: err = %v, want ErrCandidateAtCeiling", err)
	}
	s, err := SInSitu(10, 8, 8.5)
	if err != nil || math.Abs(s-4) > 1e-12 {
		t.Errorf("SInSitu(10, 8, 8.5) = %v, %v; want 4", s, err)
	}
	b, _ := Bound(0.2, 4)
	if math.Abs(b-10/8.5) > 1e-12 {
		t.Errorf("Bound(f_ablation, s_in_situ) = %v, want T_b/T_k = %v", b, 10/8.5)
	}
	for _, bad := range [][2]float64{{0, 1}, {1, 0}, {math.NaN(), 1}, {1, math.Inf(1)}} {
		if _, err := FAblation(bad[0], bad[1]); err == nil {
			t.Errorf("FAblation(%v, %v): no error", bad[0], bad[1])
		}
	}
}

// TestAblationEstimate: point values are the formulas of the arms' means;
// intervals come from the repetitions and hold the point; one repetition
// gives no interval; a candidate within noise of the ceiling leaves s in
// situ undefined with the reason.
func TestAblationEstimate(t *testing.T) {
	base, ceil, cand := []float64{10, 10.2, 9.9}, []float64{8, 8.1, 7.9}, []float64{8.5, 8.6, 8.4}
	a, err := AblationEstimate(base, ceil, cand, true, Seed(3))
	if err != nil {
		t.Fatal(err)
	}
	mb, mc, mk := (10+10.2+9.9)/3, 8.0, 8.5
	checks := []struct {
		name string
		e    Estimate
		want float64
	}{
		{"f", a.FAblation, 1 - mc/mb}, {"s", a.SInSitu, (mb - mc) / (mk - mc)}, {"bound", a.Bound, mb / mk},
		{"ceiling", a.CeilingSpeedup, mb / mc}, {"speedup", a.Speedup, mb / mk}, {"efficiency", a.Efficiency, (mb/mk - 1) / (mb/mc - 1)},
	}
	for _, c := range checks {
		if math.Abs(float64(c.e.Value)-c.want) > 1e-9 || !(c.e.Lo <= c.e.Value && c.e.Value <= c.e.Hi) || c.e.N != 3 {
			t.Errorf("%s = %+v, want %v inside its interval over 3 repetitions", c.name, c.e, c.want)
		}
	}
	if a.SInSituNote != "" {
		t.Errorf("s in situ note %q on a clear separation", a.SInSituNote)
	}

	one, err := AblationEstimate(base[:1], ceil[:1], cand[:1], true)
	if err != nil || one.FAblation.N != 1 || one.FAblation.Lo != one.FAblation.Hi || one.SInSituNote == "" {
		t.Errorf("one repetition: %+v, %v; want no interval and a note that noise was not judged", one, err)
	}

	near, err := AblationEstimate(base, ceil, []float64{8.05, 7.9, 8.1}, true, Seed(3))
	if err != nil || near.SInSitu.Value.Defined() || near.SInSituNote == "" || !near.FAblation.Value.Defined() {
		t.Errorf("candidate within noise of the ceiling: s in situ %+v (note %q), want undefined with a reason", near.SInSitu, near.SInSituNote)
	}
	if _, err := AblationEstimate(base, nil, cand, true); err == nil {
		t.Error("no ceiling repetition: no error")
	}
	if _, err := AblationEstimate(base, []float64{0}, cand, true); err == nil {
		t.Error("a zero latency: no error")
	}
}
