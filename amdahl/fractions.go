package amdahl

import (
	"fmt"
	"time"
)

// Phase names used in Fractions.Phases. A profile or hook file may use only
// some of them.
const (
	PhasePrefill = "prefill"
	PhaseDecode  = "decode"
	PhaseMixed   = "mixed" // a step carrying both prompt and generated tokens
)

// Fractions is the addressable fraction of one target op over one profiled
// window (DESIGN.md, "Addressable fraction"). Times are GPU or wall time on the
// profile's clock; the fractions are dimensionless.
type Fractions struct {
	// Source names where the numbers came from: "sim", "hook", "chrome", "nsys".
	Source string `json:"source"`
	// Target is the op (or annotation) the fraction is of.
	Target string `json:"target"`
	// TargetGPU is |∪ target GPU intervals| inside the window (overlap of the
	// target's own kernels counted once).
	TargetGPU time.Duration `json:"target_gpu_ns"`
	// TargetActive is |∪ target intervals ∩ active wall|: the target time that
	// fell while a request was in flight (the numerator of f_wall and of f_excl's
	// parent). Equal to TargetGPU when no active intervals were given.
	TargetActive time.Duration `json:"target_active_ns"`
	// TargetExclusive is |(∪ target − ∪ other GPU work) ∩ active wall|.
	TargetExclusive time.Duration `json:"target_exclusive_ns"`
	// Busy is |∪ all GPU intervals| in the window, across streams (0: unknown).
	Busy time.Duration `json:"busy_ns"`
	// ActiveWall is the time in the window with ≥ 1 request in flight, or the
	// whole window when ActiveFrom is "window".
	ActiveWall time.Duration `json:"active_wall_ns"`
	// ActiveFrom says where ActiveWall came from: "requests" (the union of the
	// requests' [sent, end] intervals), "window" (the whole window: idle gaps
	// not removed), "server" (the server's own count) or "sim".
	ActiveFrom string `json:"active_from"`

	// FGPU = TargetGPU / Busy; undefined when Busy is unknown.
	FGPU Num `json:"f_gpu"`
	// FWall = TargetActive / ActiveWall: what the bound uses.
	FWall Num `json:"f_wall"`
	// FExcl = TargetExclusive / ActiveWall: a lower bound on f_wall that
	// ignores target time hidden under other kernels. Undefined without a
	// kernel timeline.
	FExcl Num `json:"f_excl"`
	// TargetSpan is Σ over the target's calls (Profile.TargetCalls) whose
	// first kernel starts in the window of their GPU span, first kernel start
	// to last kernel end: kernel time plus the idle gaps between a call's
	// kernels. FSpan = TargetSpan / ActiveWall is f as a candidate that
	// replaces the whole call with one kernel sees it (the gaps go too); it
	// is ≥ f_wall, undefined without call grouping. Not used by the bound.
	TargetSpan time.Duration `json:"target_span_ns,omitempty"`
	FSpan      Num           `json:"f_span"`

	// Phases holds the same split per phase where the profile tells prefill
	// from decode (keys PhasePrefill, PhaseDecode, PhaseMixed); nil otherwise.
	Phases map[string]PhaseFractions `json:"phases,omitempty"`
}

// PhaseFractions is the addressable fraction inside one phase. Busy is the
// union of GPU intervals attributed to the phase; Wall is the phase's own wall
// time (its annotation ranges ∩ active wall), 0 when unknown.
type PhaseFractions struct {
	TargetGPU time.Duration `json:"target_gpu_ns"`
	Busy      time.Duration `json:"busy_ns"`
	Wall      time.Duration `json:"wall_ns"`
	// FGPU = TargetGPU / Busy within the phase.
	FGPU Num `json:"f_gpu"`
	// FWall = target time in the phase's wall ranges / Wall.
	FWall Num `json:"f_wall"`
}

// Sample returns the window's numbers for the bootstrap over windows.
func (fr Fractions) Sample(label string) WindowSample {
	return WindowSample{Label: label, Target: fr.TargetActive, Busy: fr.Busy, ActiveWall: fr.ActiveWall}
}

// TotalsOption adjusts FromTotals.
type TotalsOption func(*Fractions)

// PhaseTotals adds one phase's totals to FromTotals' result: target and busy
// GPU time in the phase and the phase's wall time (0: unknown, FWall
// undefined). Default: no phases.
func PhaseTotals(phase string, target, busy, wall time.Duration) TotalsOption {
	return func(fr *Fractions) {
		if fr.Phases == nil {
			fr.Phases = map[string]PhaseFractions{}
		}
		fr.Phases[phase] = PhaseFractions{
			TargetGPU: target, Busy: busy, Wall: wall,
			FGPU: ratio(float64(target), float64(busy)), FWall: ratio(float64(target), float64(wall)),
		}
	}
}

// FromTotals builds Fractions from a server's per-op totals, as the simulated
// server reports them: the target op's GPU time, total GPU busy time and the
// active wall time (≥ 1 request in flight) over the same window. The simulated
// engine runs one op at a time, so nothing overlaps the target: TargetExclusive
// = target and f_excl = f_wall. Source is "sim"; errors for negative times,
// target > busy or target > activeWall. Busy may exceed activeWall when a
// simulator's modelled GPU time runs ahead of real time (an engine catching
// up); Explain then flags f_wall > f_gpu.
func FromTotals(target, busy, activeWall time.Duration, opts ...TotalsOption) (Fractions, error) {
	switch {
	case target < 0 || busy < 0 || activeWall < 0:
		return Fractions{}, fmt.Errorf("amdahl: totals: negative time (target %v, busy %v, active wall %v)", target, busy, activeWall)
	case target > busy:
		return Fractions{}, fmt.Errorf("amdahl: totals: target %v exceeds busy %v", target, busy)
	case target > activeWall:
		return Fractions{}, fmt.Errorf("amdahl: totals: target %v exceeds active wall %v (f_wall > 1)", target, activeWall)
	}
	fr := Fractions{
		Source: "sim", TargetGPU: target, TargetActive: target, TargetExclusive: target,
		Busy: busy, ActiveWall: activeWall, ActiveFrom: "sim",
		FGPU:  ratio(float64(target), float64(busy)),
		FWall: ratio(float64(target), float64(activeWall)),
		FExcl: ratio(float64(target), float64(activeWall)),
		// The simulator's op time is one span per call, no gaps inside.
		TargetSpan: target,
		FSpan:      ratio(float64(target), float64(activeWall)),
	}
	for _, o := range opts {
		o(&fr)
	}
	return fr, nil
}
