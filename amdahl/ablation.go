package amdahl

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"
)

// The ablation figures (DESIGN.md, "Addressable fraction"). A ceiling arm
// runs the target op with its work removed, so its served latency T_ceiling
// is the baseline's T_baseline less exactly the time the op costs inside the
// server at that load, gaps between its kernels and launch time included.
// With T_candidate from the candidate arm, on one latency statistic (ms,
// e.g. ITL p50, TPOT mean, E2E mean):
//
//	f_ablation      = 1 − T_ceiling / T_baseline
//	s_in_situ       = (T_baseline − T_ceiling) / (T_candidate − T_ceiling)
//	ceiling speedup = T_baseline / T_ceiling          (= Bound(f_ablation, ∞))
//
// Bound(f_ablation, s_in_situ) = T_baseline / T_candidate: on the statistic
// they were taken from, the ablation's bound is the measured speedup by
// construction; what the ablation adds is the split of that speedup into how
// much the op weighs in the served metric (f) and how much faster the
// kernel is where it runs (s), to set against the profile's f and the
// isolated s.

// FAblation is 1 − tCeiling/tBaseline (dimensionless; tBaseline > 0, both
// latencies in one unit). It errs on a non-finite or non-positive latency.
func FAblation(tBaseline, tCeiling float64) (float64, error) {
	if err := latencies(tBaseline, tCeiling); err != nil {
		return math.NaN(), fmt.Errorf("amdahl: f_ablation: %w", err)
	}
	return 1 - tCeiling/tBaseline, nil
}

// SInSitu is (tBaseline − tCeiling) / (tCandidate − tCeiling): the op's
// speedup inside the server. It errs (ErrCandidateAtCeiling) when the
// candidate is not slower than the ceiling, where s is unbounded.
func SInSitu(tBaseline, tCeiling, tCandidate float64) (float64, error) {
	if err := latencies(tBaseline, tCeiling, tCandidate); err != nil {
		return math.NaN(), fmt.Errorf("amdahl: s_in_situ: %w", err)
	}
	if tCandidate <= tCeiling {
		return math.NaN(), fmt.Errorf("amdahl: s_in_situ: candidate %.6g ≤ ceiling %.6g: %w", tCandidate, tCeiling, ErrCandidateAtCeiling)
	}
	return (tBaseline - tCeiling) / (tCandidate - tCeiling), nil
}

// ErrCandidateAtCeiling means the candidate was as fast as removing the op:
// s_in_situ is unbounded (undefined), the kernel left nothing to gain.
var ErrCandidateAtCeiling = fmt.Errorf("the candidate is as fast as the ceiling (the op's work removed): s in situ is unbounded")

func latencies(ts ...float64) error {
	for _, t := range ts {
		if math.IsNaN(t) || math.IsInf(t, 0) || t <= 0 {
			return fmt.Errorf("latency %v is not a finite value > 0", t)
		}
	}
	return nil
}

// Ablation holds the ablation figures of one latency statistic at one
// offered load, each with a percentile bootstrap interval over repetitions.
type Ablation struct {
	// FAblation, SInSitu and Bound (Bound(f_ablation, s_in_situ)) as above.
	FAblation Estimate `json:"f_ablation"`
	SInSitu   Estimate `json:"s_in_situ"`
	Bound     Estimate `json:"bound_ablation"`
	// CeilingSpeedup is T_baseline/T_ceiling, the most any kernel for the op
	// could give at this load (queueing included); Speedup the candidate's
	// measured T_baseline/T_candidate.
	CeilingSpeedup Estimate `json:"ceiling_speedup"`
	Speedup        Estimate `json:"candidate_speedup"`
	// Efficiency is TransferEfficiency(Speedup, CeilingSpeedup) = (measured −
	// 1)/(ceiling − 1): the share of the most the op could give that the
	// candidate delivered.
	Efficiency Estimate `json:"transfer_efficiency"`
	// SInSituNote says why SInSitu is undefined or has no interval ("" otherwise).
	SInSituNote string `json:"s_in_situ_note,omitempty"`
}

// AblationEstimate computes the ablation figures from one statistic's value
// per repetition of each arm (ms; the same statistic in each). The point
// values use each arm's mean over its repetitions; the intervals resample
// repetitions, with one draw of indices for all three arms when paired (the
// arms ran the same repetitions, interleaved) and each arm on its own
// otherwise. With fewer than 2 repetitions in any arm the figures have no
// interval (Lo = Hi = Value, N = 1). s_in_situ is Undefined, with the reason
// in SInSituNote, when the candidate is within noise of the ceiling: its
// T_candidate − T_ceiling interval reaches 0 (or, with one repetition, the
// difference is not > 0).
func AblationEstimate(baseline, ceiling, candidate []float64, paired bool, opts ...BootOption) (Ablation, error) {
	c := newBootConfig(opts)
	if err := c.validate(); err != nil {
		return Ablation{}, err
	}
	for _, side := range []struct {
		name string
		xs   []float64
	}{{"baseline", baseline}, {"ceiling", ceiling}, {"candidate", candidate}} {
		if len(side.xs) == 0 {
			return Ablation{}, fmt.Errorf("amdahl: ablation: no %s repetition", side.name)
		}
		if err := latencies(side.xs...); err != nil {
			return Ablation{}, fmt.Errorf("amdahl: ablation: %s: %w", side.name, err)
		}
	}
	paired = paired && len(baseline) == len(ceiling) && len(ceiling) == len(candidate)
	figures := func(tb, tc, tk float64) (f, s, b, ceil, sp, eff float64) {
		f, _ = FAblation(tb, tc)
		s, err := SInSitu(tb, tc, tk)
		if err != nil {
			s = math.NaN()
		}
		b = math.NaN()
		if bb, err := Bound(f, s); err == nil {
			b = bb
		}
		ceil, sp = tb/tc, tb/tk
		eff = TransferEfficiency(sp, ceil)
		return
	}
	mb, mc, mk := stat.Mean(baseline, nil), stat.Mean(ceiling, nil), stat.Mean(candidate, nil)
	f, s, b, ceil, sp, eff := figures(mb, mc, mk)
	n := min(len(baseline), len(ceiling), len(candidate))
	method := "percentile bootstrap over repetitions, " + map[bool]string{true: "paired by repetition", false: "each arm resampled on its own"}[paired]
	est := func(v float64) Estimate {
		return Estimate{Value: Num(v), Lo: Num(v), Hi: Num(v), Level: c.level, N: n, Method: method}
	}
	out := Ablation{FAblation: est(f), SInSitu: est(s), Bound: est(b), CeilingSpeedup: est(ceil), Speedup: est(sp), Efficiency: est(eff)}
	gap := mk - mc
	if n < 2 {
		for _, e := range []*Estimate{&out.FAblation, &out.SInSitu, &out.Bound, &out.CeilingSpeedup, &out.Speedup, &out.Efficiency} {
			e.N, e.Level, e.Method = 1, 0, "one repetition: no interval"
		}
		if gap <= 0 {
			out.SInSitu, out.SInSituNote = Undefined(), fmt.Sprintf("undefined: the candidate (%.4g) is not slower than the ceiling (%.4g): as fast as removing the op", mk, mc)
		} else {
			out.SInSituNote = "one repetition: noise not judged (s in situ needs the candidate's distance from the ceiling to exceed run-to-run noise)"
		}
		return out, nil
	}
	r := c.rng()
	draws := make([][]float64, 7)
	for i := range draws {
		draws[i] = make([]float64, c.resamples)
	}
	mean := func(xs []float64, idx []int) float64 {
		var s float64
		for _, j := range idx {
			s += xs[j]
		}
		return s / float64(len(idx))
	}
	pick := func(k int) []int {
		idx := make([]int, k)
		for i := range idx {
			idx[i] = r.IntN(k)
		}
		return idx
	}
	for d := range c.resamples {
		var ib, ic, ik []int
		if paired {
			ib = pick(len(baseline))
			ic, ik = ib, ib
		} else {
			ib, ic, ik = pick(len(baseline)), pick(len(ceiling)), pick(len(candidate))
		}
		tb, tc, tk := mean(baseline, ib), mean(ceiling, ic), mean(candidate, ik)
		f, s, b, ceil, sp, eff := figures(tb, tc, tk)
		if math.IsNaN(s) {
			s, b = math.Inf(1), 1/(1-f) // the candidate at (or past) the ceiling: Bound(f, ∞)
		}
		for i, v := range []float64{f, s, b, ceil, sp, eff, tk - tc} {
			draws[i][d] = v
		}
	}
	for i, e := range []*Estimate{&out.FAblation, &out.SInSitu, &out.Bound, &out.CeilingSpeedup, &out.Speedup, &out.Efficiency} {
		e.Lo, e.Hi = c.interval(draws[i])
	}
	if gLo, gHi := c.interval(draws[6]); !(gLo > 0) || gap <= 0 {
		out.SInSitu = Undefined()
		out.SInSituNote = fmt.Sprintf("undefined: the candidate is within noise of the ceiling (T_candidate − T_ceiling = %.4g [%.4g, %.4g] reaches 0): it cannot be told apart from removing the op at this noise, so s in situ has no upper bound", gap, float64(gLo), float64(gHi))
	}
	if ceil <= 1 || !(out.CeilingSpeedup.Lo > 1) {
		out.Efficiency = Undefined()
	}
	return out, nil
}
