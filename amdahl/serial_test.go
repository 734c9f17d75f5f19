package amdahl

import (
	"math/rand/v2"
	"testing"
	"time"
)

// serialRun lays out a serial engine's timeline: each request is a run of
// steps back to back, each step its ops one after another on one stream then
// a CPU overhead with the GPU idle; requests are separated by idle gaps. The
// target op's cost is divided by s. It returns the profile, the requests'
// [sent, end] intervals and the total time requests were in flight.
func serialRun(seed uint64, s float64) (*Profile, []Interval, time.Duration) {
	r := rand.New(rand.NewPCG(seed, 1))
	ops := []struct {
		name   string
		cost   time.Duration
		target bool
	}{
		{"gemm", 2 * time.Millisecond, false},
		{"attention", 900 * time.Microsecond, false},
		{"rmsnorm", 120 * time.Microsecond, true},
		{"silu", 80 * time.Microsecond, false},
	}
	const overhead = 400 * time.Microsecond
	p := &Profile{Source: "test"}
	var reqs []Interval
	var t, inFlight time.Duration
	for range 20 {
		t += time.Duration(r.IntN(50)) * time.Millisecond // idle gap
		start := t
		for range 1 + r.IntN(8) {
			scale := 0.5 + r.Float64() // step size varies (batch, context)
			for _, op := range ops {
				d := time.Duration(float64(op.cost) * scale)
				if op.target {
					d = time.Duration(float64(d) / s)
				}
				p.Kernels = append(p.Kernels, Kernel{Name: op.name, Start: t, End: t + d, Target: op.target})
				t += d
			}
			t += overhead
		}
		reqs = append(reqs, Interval{start, t})
		inFlight += t - start
	}
	p.Span = Interval{p.Kernels[0].Start, p.Kernels[len(p.Kernels)-1].End}
	return p, reqs, inFlight
}

// TestSerialModelMatchesBound: in a serial engine the time saved is exactly
// the target time × (1 − 1/s), so the measured speedup of in-flight time is
// Bound(f_wall, s) to rounding, while f_gpu (which ignores CPU overhead)
// overstates it. This is why the bound uses f_wall (DESIGN.md).
func TestSerialModelMatchesBound(t *testing.T) {
	t.Parallel()
	for _, s := range []float64{1.5, 2.5, 4} {
		base, reqs, baseWall := serialRun(11, 1)
		_, _, candWall := serialRun(11, s)
		fr, err := base.Fractions(Window(Interval{reqs[0].Start, reqs[len(reqs)-1].End}), Active(reqs))
		if err != nil {
			t.Fatal(err)
		}
		if fr.ActiveWall != baseWall {
			t.Fatalf("active wall %v, want the in-flight total %v", fr.ActiveWall, baseWall)
		}
		measured := float64(baseWall) / float64(candWall)
		bWall, _ := Bound(float64(fr.FWall), s)
		bGPU, _ := Bound(float64(fr.FGPU), s)
		// Durations are rounded to 1 ns per kernel (~500 kernels): relative error < 1e-6.
		approx(t, "measured vs Bound(f_wall)", measured, bWall, 1e-6)
		if !(bGPU > measured) {
			t.Errorf("s=%v: Bound(f_gpu)=%v should overstate the measured %v", s, bGPU, measured)
		}
		approx(t, "f_excl = f_wall on one stream", float64(fr.FExcl), float64(fr.FWall), exact)
	}
}
