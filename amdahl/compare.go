package amdahl

import (
	"fmt"
	"math"
	"time"
)

// Verdict places a measured speedup relative to the bound.
type Verdict string

// The verdicts. Inside: the two intervals overlap. Below: the measured
// interval lies wholly under the bound's. Above: wholly over it (Amdahl says
// this cannot happen for the modelled effect alone: f or s is off, or the
// service gained elsewhere, e.g. less queueing).
const (
	VerdictInside  Verdict = "inside"
	VerdictBelow   Verdict = "below"
	VerdictAbove   Verdict = "above"
	VerdictUnknown Verdict = "unknown"
)

// Comparison is a measured speedup set against the bound.
type Comparison struct {
	Measured Estimate `json:"measured"`
	Verdict  Verdict  `json:"verdict"`
	// GapPct = (measured/bound − 1)·100 at the point values, in percent.
	GapPct Num `json:"gap_pct"`
	// Distance is how far apart the intervals are, in speedup units: bound.Lo −
	// measured.Hi when below, measured.Lo − bound.Hi when above, 0 inside.
	Distance Num `json:"distance"`
	// Efficiency is TransferEfficiency(measured, bound) with an interval from
	// the corners of the two intervals (it is monotone in each); undefined
	// (null) when the bound's interval reaches 1, where the ratio has a pole.
	Efficiency Estimate `json:"efficiency"`
}

// Compare sets a measured speedup (with its interval) against the bound's.
func Compare(measured, bound Estimate) Comparison {
	c := Comparison{Measured: measured, Verdict: VerdictUnknown, GapPct: NaN(), Distance: NaN(), Efficiency: Undefined()}
	if !measured.Value.Defined() || !bound.Value.Defined() {
		return c
	}
	measured, bound = pointIfNoInterval(measured), pointIfNoInterval(bound)
	c.GapPct = Num((float64(measured.Value)/float64(bound.Value) - 1) * 100)
	switch {
	case measured.Hi < bound.Lo:
		c.Verdict, c.Distance = VerdictBelow, bound.Lo-measured.Hi
	case measured.Lo > bound.Hi:
		c.Verdict, c.Distance = VerdictAbove, measured.Lo-bound.Hi
	default:
		c.Verdict, c.Distance = VerdictInside, 0
	}
	eff := Estimate{Value: Num(TransferEfficiency(float64(measured.Value), float64(bound.Value))), Lo: NaN(), Hi: NaN(),
		Level: max(measured.Level, bound.Level), N: measured.N, Method: "interval corners of measured and bound"}
	if bound.Lo > 1 || bound.Hi < 1 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, m := range []Num{measured.Lo, measured.Hi} {
			for _, b := range []Num{bound.Lo, bound.Hi} {
				e := TransferEfficiency(float64(m), float64(b))
				lo, hi = min(lo, e), max(hi, e)
			}
		}
		eff.Lo, eff.Hi = Num(lo), Num(hi)
	}
	c.Efficiency = eff
	return c
}

// pointIfNoInterval treats an estimate whose interval is undefined as the
// point [Value, Value], so a verdict never rests on a comparison with NaN.
func pointIfNoInterval(e Estimate) Estimate {
	if !e.Lo.Defined() || !e.Hi.Defined() {
		e.Lo, e.Hi = e.Value, e.Value
	}
	return e
}

// Explain returns why f_gpu and f_wall differ when they differ by more than
// 2× (either way), else "".
func Explain(fr Fractions) string {
	g, w := fr.FGPU, fr.FWall
	if !g.Defined() || !w.Defined() || (g <= 2*w && w <= 2*g) {
		return ""
	}
	busyPct := 100 * float64(fr.Busy) / float64(fr.ActiveWall)
	if g > w {
		return fmt.Sprintf("f_gpu %.3g is %s f_wall %.3g: the GPU was busy only %.0f%% of the active wall time (busy %v of %v); the rest is CPU-side work (kernel launches, scheduling, sampling, HTTP) and GPU idle time that a faster kernel does not shorten, so the bound uses f_wall (a candidate with fewer launches can also save launch time, which kernel-time f does not count).",
			float64(g), times(float64(g), float64(w)), float64(w), busyPct, fr.Busy.Round(time.Microsecond), fr.ActiveWall.Round(time.Microsecond))
	}
	return fmt.Sprintf("f_wall %.3g is %s f_gpu %.3g: GPU busy time in the window (%v) is %.0f%% of the active wall time (%v), so much GPU work ran while no request was in flight (warm-up, or request intervals on a misaligned clock); check the clock offset before trusting the bound.",
		float64(w), times(float64(w), float64(g)), float64(g), fr.Busy.Round(time.Microsecond), busyPct, fr.ActiveWall.Round(time.Microsecond))
}

func times(a, b float64) string {
	if b == 0 {
		return "∞×"
	}
	return fmt.Sprintf("%.1f×", a/b)
}
