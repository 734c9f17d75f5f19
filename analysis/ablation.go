package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/transferlab/transferlab/report"

	"github.com/transferlab/transferlab/amdahl"
)

// ablationSpecs are the latency statistics the ablation is taken on: the
// decode-dominated ITL p50 and TPOT mean, and E2E mean.
var ablationSpecs = [][2]string{{"itl", "p50"}, {"tpot", "mean"}, {"e2e", "mean"}}

// fillAblation computes a.Ablation from the ceiling arm's cells: for every
// candidate (every arm but the baseline and the ceiling) and offered load
// where the three arms have measured repetitions, the figures of each
// ablationSpecs statistic.
func fillAblation(r *report.Results, bs bootstrapper, byKey map[string]Group, arms []string, baseline string, pair bool) {
	if r.Ceiling == "" || !slices.Contains(arms, r.Ceiling) {
		return
	}
	if r.Amdahl == nil {
		r.Amdahl = &report.AmdahlSection{NotMeasured: "no profile estimate"}
	}
	a := r.Amdahl
	a.Ablation = nil
	for _, cand := range arms {
		if cand == baseline || cand == r.Ceiling || report.IsAAArm(cand) {
			continue
		}
		for _, g := range groupCellsOf(byKey, cand) {
			base, ok1 := byKey[key(baseline, g.Load)]
			ceil, ok2 := byKey[key(r.Ceiling, g.Load)]
			if !ok1 || !ok2 {
				continue
			}
			al := report.AblationLoad{Candidate: cand, Ceiling: r.Ceiling, OfferedLoadRPS: g.Load}
			prof := a.ProfileLoad(cand, g.Load)
			for _, spec := range ablationSpecs {
				al.Metrics = append(al.Metrics, ablationMetric(bs, base, ceil, g, spec[0], spec[1], pair, prof))
			}
			a.Ablation = append(a.Ablation, al)
		}
	}
}

// groupCellsOf returns arm's groups, by offered load.
func groupCellsOf(byKey map[string]Group, arm string) []Group {
	var out []Group
	for _, g := range byKey {
		if g.Arm == arm {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b Group) int { return cmp.Compare(a.Load, b.Load) })
	return out
}

func ablationMetric(bs bootstrapper, base, ceil, cand Group, metric, stat string, pair bool, prof *report.AmdahlLoad) report.AblationMetric {
	m := report.AblationMetric{Metric: metric, Stat: stat}
	if prof != nil {
		b := prof.Bound
		m.BoundProfile = &b
	}
	vb, rb, _ := base.Values(metric, stat)
	vc, rc, _ := ceil.Values(metric, stat)
	vk, rk, _ := cand.Values(metric, stat)
	none := func(note string) report.AblationMetric {
		for _, e := range []*report.Estimate{&m.FAblation, &m.SInSitu, &m.BoundAblation, &m.CeilingSpeedup, &m.CandidateSpeedup, &m.TransferEfficiency} {
			*e = report.Estimate{Note: note}
		}
		return m
	}
	for _, side := range []struct {
		g    Group
		vals []float64
	}{{base, vb}, {ceil, vc}, {cand, vk}} {
		if len(side.vals) == 0 {
			return none(fmt.Sprintf("%s (%s %s of %s at %s req/s)", side.g.refusedNote(metric, stat), metric, stat, side.g.Arm, report.Num(side.g.Load)))
		}
	}
	paired := pair && slices.Equal(rb, rc) && slices.Equal(rb, rk)
	ab, err := amdahl.AblationEstimate(vb, vc, vk, paired, amdahl.Seed(uint64(bs.seed)), amdahl.Resamples(bs.resamples), amdahl.Level(bs.level))
	if err != nil {
		return none("not computed: " + err.Error())
	}
	m.FAblation, m.SInSitu, m.BoundAblation = fromAmdahl(ab.FAblation, ""), fromAmdahl(ab.SInSitu, ab.SInSituNote), fromAmdahl(ab.Bound, "")
	if !ab.SInSitu.Value.Defined() {
		m.BoundAblation.Note = "s in situ is undefined; the bound with s = ∞ is the ceiling speedup"
	}
	m.CeilingSpeedup, m.CandidateSpeedup = fromAmdahl(ab.CeilingSpeedup, ""), fromAmdahl(ab.Speedup, "")
	m.TransferEfficiency = fromAmdahl(ab.Efficiency, "")
	if !ab.Efficiency.Value.Defined() {
		m.TransferEfficiency.Note = "undefined: the ceiling speedup's interval reaches 1 (removing the op gave nothing measurable at this load)"
	}
	if prof != nil {
		m.ProfileGap = profileGap(*prof, ab)
	}
	return m
}

// fromAmdahl converts an amdahl estimate to the report's (Reps 0 and note
// when undefined: never a NaN or an infinity in results.json).
func fromAmdahl(e amdahl.Estimate, note string) report.Estimate {
	if !e.Value.Defined() {
		return report.Estimate{Note: report.OrText(note, "undefined")}
	}
	out := report.Estimate{Value: float64(e.Value), Low: float64(e.Value), High: float64(e.Value), Reps: max(e.N, 1), Note: note}
	if e.N >= 2 && e.Lo.Defined() && e.Hi.Defined() {
		out.Low, out.High, out.Interval = float64(e.Lo), float64(e.Hi), true
	} else if e.N >= 2 {
		out.Note = report.OrText(note, "interval unbounded")
	}
	return out
}

// profileGap says, when the profile's bound lies below the candidate's
// measured speedup on this statistic, how far the profile's f and s are
// from the ablation's ("" otherwise).
func profileGap(p report.AmdahlLoad, ab amdahl.Ablation) string {
	sp := float64(ab.Speedup.Value)
	if !(p.Bound < sp) || math.IsNaN(sp) {
		return ""
	}
	fa := float64(ab.FAblation.Value)
	if !(fa > 0) {
		return fmt.Sprintf("the profile bound %.4f is below the measured speedup %.4f, and removing the op gave no measurable gain on this statistic (f_ablation %.4f): the gain is not the op's service time (queueing, or noise)", p.Bound, sp, fa)
	}
	out := fmt.Sprintf("the profile bound %.4f is below the measured speedup %.4f: the profile's f_wall %.4f is %+.0f %% off f_ablation %.4f",
		p.Bound, sp, p.FWall, 100*(p.FWall/fa-1), fa)
	if s := float64(ab.SInSitu.Value); ab.SInSitu.Value.Defined() {
		out += fmt.Sprintf(", its isolated s %.3g is %+.0f %% off s in situ %.3g", p.S, 100*(p.S/s-1), s)
	} else {
		out += fmt.Sprintf(", and its isolated s %.3g is finite where in the server the candidate was as fast as removing the op (s in situ unbounded)", p.S)
	}
	return out + "; the ablation measures both in the server, the profile estimates them (kernel time misses the gaps between an op's kernels, and the profiler stretches the window)"
}
