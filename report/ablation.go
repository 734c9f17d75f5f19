package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/transferlab/transferlab/amdahl"
)

// CeilingLabel is how every rendering names the ceiling arm's role.
const CeilingLabel = "ceiling: timing-only ablation, the target's work removed, outputs meaningless, never validated, no verdict"

// ArmLabel is arm as tables print it: the ceiling arm carries its label.
func (r Results) ArmLabel(arm string) string {
	if arm != "" && arm == r.Ceiling {
		return arm + " (" + CeilingLabel + ")"
	}
	if IsAAArm(arm) {
		return arm + " (A/A replicate)"
	}
	return arm
}

// ablationSpecs are the latency statistics the ablation is taken on: the
// decode-dominated ITL p50 and TPOT mean, and E2E mean.
var ablationSpecs = [][2]string{{"itl", "p50"}, {"tpot", "mean"}, {"e2e", "mean"}}

// AblationLoad is the Amdahl figures by ablation of one candidate at one
// offered load: one entry per latency statistic (amdahl.AblationEstimate),
// with the profile's bound beside them.
type AblationLoad struct {
	Candidate      string           `json:"candidate"`
	Ceiling        string           `json:"ceiling"`
	OfferedLoadRPS float64          `json:"offered_load_rps"`
	Metrics        []AblationMetric `json:"metrics"`
}

// AblationMetric is one latency statistic's ablation figures (dimensionless
// ratios; intervals over repetitions). BoundProfile is the profile path's
// bound at this load (AmdahlLoad.Bound; nil when no profile measured f), set
// beside BoundAblation; ProfileGap, when the profile bound lies below the
// candidate's measured speedup, says by how much the profile's f and s
// differ from the ablation's.
type AblationMetric struct {
	Metric             string   `json:"metric"`
	Stat               string   `json:"stat"`
	FAblation          Estimate `json:"f_ablation"`
	SInSitu            Estimate `json:"s_in_situ"`
	BoundAblation      Estimate `json:"bound_ablation"`
	BoundProfile       *float64 `json:"bound_profile"`
	CeilingSpeedup     Estimate `json:"ceiling_speedup"`
	CandidateSpeedup   Estimate `json:"candidate_speedup"`
	TransferEfficiency Estimate `json:"transfer_efficiency_vs_ceiling"`
	ProfileGap         string   `json:"profile_gap,omitempty"`
}

// fillAblation computes a.Ablation from the ceiling arm's cells: for every
// candidate (every arm but the baseline and the ceiling) and offered load
// where the three arms have measured repetitions, the figures of each
// ablationSpecs statistic.
func fillAblation(r *Results, bs bootstrapper, byKey map[string]group, arms []string, baseline string, pair bool) {
	if r.Ceiling == "" || !slices.Contains(arms, r.Ceiling) {
		return
	}
	if r.Amdahl == nil {
		r.Amdahl = &AmdahlSection{NotMeasured: "no profile estimate"}
	}
	a := r.Amdahl
	a.Ablation = nil
	for _, cand := range arms {
		if cand == baseline || cand == r.Ceiling || IsAAArm(cand) {
			continue
		}
		for _, g := range groupCellsOf(byKey, cand) {
			base, ok1 := byKey[key(baseline, g.load)]
			ceil, ok2 := byKey[key(r.Ceiling, g.load)]
			if !ok1 || !ok2 {
				continue
			}
			al := AblationLoad{Candidate: cand, Ceiling: r.Ceiling, OfferedLoadRPS: g.load}
			prof := a.profileLoad(cand, g.load)
			for _, spec := range ablationSpecs {
				al.Metrics = append(al.Metrics, ablationMetric(bs, base, ceil, g, spec[0], spec[1], pair, prof))
			}
			a.Ablation = append(a.Ablation, al)
		}
	}
}

// groupCellsOf returns arm's groups, by offered load.
func groupCellsOf(byKey map[string]group, arm string) []group {
	var out []group
	for _, g := range byKey {
		if g.arm == arm {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b group) int { return cmp.Compare(a.load, b.load) })
	return out
}

// profileLoad is the profile estimate of cand at load, or nil.
func (a *AmdahlSection) profileLoad(cand string, load float64) *AmdahlLoad {
	for i := range a.Loads {
		if a.Loads[i].Candidate == cand && a.Loads[i].OfferedLoadRPS == load {
			return &a.Loads[i]
		}
	}
	return nil
}

func ablationMetric(bs bootstrapper, base, ceil, cand group, metric, stat string, pair bool, prof *AmdahlLoad) AblationMetric {
	m := AblationMetric{Metric: metric, Stat: stat}
	if prof != nil {
		b := prof.Bound
		m.BoundProfile = &b
	}
	vb, rb, _ := base.values(metric, stat)
	vc, rc, _ := ceil.values(metric, stat)
	vk, rk, _ := cand.values(metric, stat)
	none := func(note string) AblationMetric {
		for _, e := range []*Estimate{&m.FAblation, &m.SInSitu, &m.BoundAblation, &m.CeilingSpeedup, &m.CandidateSpeedup, &m.TransferEfficiency} {
			*e = Estimate{Note: note}
		}
		return m
	}
	for _, side := range []struct {
		g    group
		vals []float64
	}{{base, vb}, {ceil, vc}, {cand, vk}} {
		if len(side.vals) == 0 {
			return none(fmt.Sprintf("%s (%s %s of %s at %s req/s)", side.g.refusedNote(metric, stat), metric, stat, side.g.arm, num(side.g.load)))
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
func fromAmdahl(e amdahl.Estimate, note string) Estimate {
	if !e.Value.Defined() {
		return Estimate{Note: orText(note, "undefined")}
	}
	out := Estimate{Value: float64(e.Value), Low: float64(e.Value), High: float64(e.Value), Reps: max(e.N, 1), Note: note}
	if e.N >= 2 && e.Lo.Defined() && e.Hi.Defined() {
		out.Low, out.High, out.Interval = float64(e.Lo), float64(e.Hi), true
	} else if e.N >= 2 {
		out.Note = orText(note, "interval unbounded")
	}
	return out
}

// profileGap says, when the profile's bound lies below the candidate's
// measured speedup on this statistic, how far the profile's f and s are
// from the ablation's ("" otherwise).
func profileGap(p AmdahlLoad, ab amdahl.Ablation) string {
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
