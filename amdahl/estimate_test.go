package amdahl

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestIsolatedSpeedup(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		rows    []ShapeSpeedup
		want    float64
		wantErr string
	}{
		{"one shape", []ShapeSpeedup{{"a", 5, 10, 4}}, 2.5, ""},
		// exp((3 ln 2 + 1 ln 0.5)/4) = exp(ln 2 · 2/4) = √2
		{"weights by count", []ShapeSpeedup{{"a", 3, 10, 5}, {"b", 1, 4, 8}}, math.Sqrt2, ""},
		{"zero-count shape ignored", []ShapeSpeedup{{"a", 2, 9, 3}, {"b", 0, 1, 100}}, 3, ""},
		{"geometric, not arithmetic", []ShapeSpeedup{{"a", 1, 4, 1}, {"b", 1, 1, 4}}, 1, ""},
		{"no rows", nil, 0, "no shapes"},
		{"all zero counts", []ShapeSpeedup{{"a", 0, 1, 1}}, 0, "count 0"},
		{"zero median", []ShapeSpeedup{{"a", 1, 0, 1}}, 0, "shape row 0 (a)"},
		{"negative count", []ShapeSpeedup{{"a", -1, 1, 1}}, 0, "count -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := IsolatedSpeedup(c.rows)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			approx(t, "s", got, c.want, 1e-12)
		})
	}
}

func TestIsolatedSpeedupEstimate(t *testing.T) {
	t.Parallel()
	rows := []ShapeSpeedup{{"a", 30, 10, 4}, {"b", 10, 10, 5}, {"c", 5, 10, 8}}
	e1, err := IsolatedSpeedupEstimate(rows, Seed(42))
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := IsolatedSpeedupEstimate(rows, Seed(42))
	if e1 != e2 {
		t.Fatalf("same seed, different estimates: %+v vs %+v", e1, e2)
	}
	s, _ := IsolatedSpeedup(rows)
	approx(t, "value", float64(e1.Value), s, 1e-12)
	// Every replicate is a weighted geometric mean of per-shape speedups, so
	// the interval lies within [min, max] of them: [1.25, 2.5].
	if !(e1.Lo >= 1.25 && e1.Hi <= 2.5 && e1.Lo <= e1.Value && e1.Value <= e1.Hi && e1.Lo < e1.Hi) {
		t.Fatalf("interval %+v", e1)
	}
	one, _ := IsolatedSpeedupEstimate(rows[:1])
	if one.Lo != one.Hi || one.Lo != 2.5 {
		t.Fatalf("one shape: %+v, want degenerate at 2.5", one)
	}
	if _, err := IsolatedSpeedupEstimate(rows, Resamples(10)); err == nil {
		t.Fatal("10 resamples accepted")
	}
	if _, err := IsolatedSpeedupEstimate(rows, Level(1)); err == nil {
		t.Fatal("level 1 accepted")
	}
}

func TestFWallEstimateAndBound(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	ws := []WindowSample{
		{Label: "a", Target: 30 * ms, ActiveWall: 1000 * ms},
		{Label: "b", Target: 50 * ms, ActiveWall: 1000 * ms},
		{Label: "c", Target: 10 * ms, ActiveWall: 500 * ms},
	}
	f, err := FWallEstimate(ws, Seed(9))
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "pooled f", float64(f.Value), 90.0/2500, exact)
	if !(f.Lo >= 0.02-exact && f.Hi <= 0.05+exact && f.Lo < f.Hi) {
		t.Fatalf("f interval %+v outside the windows' [0.02, 0.05]", f)
	}
	rows := []ShapeSpeedup{{"a", 30, 10, 4}, {"b", 10, 10, 5}}
	b, err := BoundEstimate(ws, rows, Seed(9))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := IsolatedSpeedup(rows)
	want, _ := Bound(90.0/2500, s)
	approx(t, "bound", float64(b.Value), want, 1e-12)
	lo, _ := Bound(0.02, 2)
	hi, _ := Bound(0.05, 2.5)
	if !(float64(b.Lo) >= lo-exact && float64(b.Hi) <= hi+exact && b.Lo <= b.Value && b.Value <= b.Hi) {
		t.Fatalf("bound interval %+v outside corners [%v, %v]", b, lo, hi)
	}
	for _, bad := range [][]WindowSample{nil, {{Target: 2, ActiveWall: 1}}, {{Target: 1, ActiveWall: 0}}} {
		if _, err := FWallEstimate(bad); err == nil {
			t.Errorf("windows %v accepted", bad)
		}
	}
}

func TestBoundFromEstimates(t *testing.T) {
	t.Parallel()
	f := Estimate{Value: 0.1, Lo: 0.08, Hi: 0.12, Level: 0.95, N: 5, Method: "x"}
	b, err := BoundFromEstimates(f, Exact(2.5))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what    string
		got     Num
		f, s, _ float64
	}{{"value", b.Value, 0.1, 2.5, 0}, {"lo", b.Lo, 0.08, 2.5, 0}, {"hi", b.Hi, 0.12, 2.5, 0}} {
		want, _ := Bound(c.f, c.s)
		approx(t, c.what, float64(c.got), want, 1e-12)
	}
	// s interval straddling 1: corners still bound the box.
	b2, err := BoundFromEstimates(f, Estimate{Value: 1.1, Lo: 0.9, Hi: 1.3, N: 3, Method: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !(b2.Lo < 1 && b2.Hi > 1 && b2.Lo <= b2.Value && b2.Value <= b2.Hi) {
		t.Fatalf("straddling interval %+v", b2)
	}
	if _, err := BoundFromEstimates(Estimate{Value: 0.5, Lo: -0.1, Hi: 0.6}, Exact(2)); err == nil {
		t.Fatal("f.Lo < 0 accepted")
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	bound := Estimate{Value: 1.2, Lo: 1.15, Hi: 1.25, N: 1, Method: "x"}
	est := func(v, lo, hi float64) Estimate {
		return Estimate{Value: Num(v), Lo: Num(lo), Hi: Num(hi), N: 10, Method: "x"}
	}
	cases := []struct {
		name        string
		m           Estimate
		verdict     Verdict
		distance    float64
		eff, lo, hi float64
		gapPct      float64
	}{
		{"inside", est(1.18, 1.1, 1.22), VerdictInside, 0, 0.9, 0.1 / 0.25, 0.22 / 0.15, (1.18/1.2 - 1) * 100},
		{"below", est(1.05, 1.02, 1.08), VerdictBelow, 1.15 - 1.08, 0.25, 0.02 / 0.25, 0.08 / 0.15, (1.05/1.2 - 1) * 100},
		{"above", est(1.4, 1.3, 1.5), VerdictAbove, 1.3 - 1.25, 2, 0.3 / 0.25, 0.5 / 0.15, (1.4/1.2 - 1) * 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Compare(c.m, bound)
			if got.Verdict != c.verdict {
				t.Fatalf("verdict %s, want %s", got.Verdict, c.verdict)
			}
			approx(t, "distance", float64(got.Distance), c.distance, 1e-12)
			approx(t, "gap %", float64(got.GapPct), c.gapPct, 1e-9)
			approx(t, "efficiency", float64(got.Efficiency.Value), c.eff, 1e-9)
			approx(t, "efficiency lo", float64(got.Efficiency.Lo), c.lo, 1e-9)
			approx(t, "efficiency hi", float64(got.Efficiency.Hi), c.hi, 1e-9)
		})
	}
	t.Run("bound interval reaching 1 leaves efficiency unbounded", func(t *testing.T) {
		got := Compare(est(1.01, 1.0, 1.02), Estimate{Value: 1.02, Lo: 0.99, Hi: 1.05, Method: "x"})
		if got.Efficiency.Lo.Defined() || got.Efficiency.Hi.Defined() || !got.Efficiency.Value.Defined() {
			t.Fatalf("efficiency %+v", got.Efficiency)
		}
	})
	t.Run("measured without an interval is a point", func(t *testing.T) {
		got := Compare(Estimate{Value: 1.05, Lo: NaN(), Hi: NaN(), Method: "x"}, bound)
		if got.Verdict != VerdictBelow {
			t.Fatalf("verdict %s, want below (1.05 < 1.15)", got.Verdict)
		}
		approx(t, "distance", float64(got.Distance), 0.1, 1e-12)
	})
	t.Run("unmeasured", func(t *testing.T) {
		got := Compare(Undefined(), bound)
		if got.Verdict != VerdictUnknown {
			t.Fatalf("verdict %s", got.Verdict)
		}
		if _, err := json.Marshal(got); err != nil {
			t.Fatalf("undefined comparison must encode: %v", err)
		}
	})
}

func TestFromTotalsAndExplain(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	fr, err := FromTotals(30*ms, 600*ms, 1000*ms, PhaseTotals(PhaseDecode, 20*ms, 400*ms, 700*ms))
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "f_gpu", float64(fr.FGPU), 0.05, exact)
	approx(t, "f_wall", float64(fr.FWall), 0.03, exact)
	approx(t, "f_excl", float64(fr.FExcl), 0.03, exact)
	approx(t, "decode f_wall", float64(fr.Phases[PhaseDecode].FWall), 20.0/700, exact)
	for _, bad := range [][3]time.Duration{{-1, 1, 1}, {2, 1, 3}, {3, 3, 2}} {
		if _, err := FromTotals(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("FromTotals%v accepted", bad)
		}
	}

	if e := Explain(fr); e != "" {
		t.Fatalf("f_gpu/f_wall = 1.67 needs no explanation, got %q", e)
	}
	cpuBound, _ := FromTotals(30*ms, 300*ms, 1000*ms)
	if e := Explain(cpuBound); !strings.Contains(e, "busy only 30%") {
		t.Fatalf("explanation %q", e)
	}
}
