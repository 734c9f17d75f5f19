package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/transferlab/transferlab/report"
)

// Search bounds one capacity search (DESIGN.md "Capacity at SLO").
type Search struct {
	// MinRPS and MaxRPS bound the loads probed (req/s, 0 < MinRPS < MaxRPS).
	MinRPS, MaxRPS float64
	// RelativePrecision: the search stops once fail/pass − 1 ≤ it (> 0).
	RelativePrecision float64
	// Growth multiplies the highest passing load while no load has missed
	// the SLO, and divides the lowest missing one while none has met it
	// (> 1; default 2).
	Growth float64
	// Quantile is the SLO percentile as a fraction (0.9 for p90).
	Quantile float64
	// Level is the capacity interval's confidence level (default 0.95).
	Level float64
}

// WithDefaults fills Growth (2) and Level (0.95).
func (s Search) WithDefaults() Search {
	if s.Growth == 0 {
		s.Growth = 2
	}
	if s.Level == 0 {
		s.Level = 0.95
	}
	return s
}

// Stop reasons of Next and report.CapacityArm.Stopped.
const (
	StopBracketed = "bracketed"
	StopMax       = "max_rps"
	StopMin       = "min_rps"
	// StopInterrupted opens the stop of an arm whose search the run's end
	// (a signal, the run deadline) cut short: "interrupted (CAUSE)".
	StopInterrupted = "interrupted"
)

// Method describes the search and its interval, for results.json.
func (s Search) Method() string {
	s = s.WithDefaults()
	return fmt.Sprintf("per arm, from the sweep's cells: while no load missed the SLO, multiply the highest passing load by %g (at most max_rps); while none met it, divide the lowest missing one by %g (at least min_rps); then step inside [pass, fail] to where the binding target's attained share, interpolated in log load, crosses the quantile (kept ≥ 1/5 of the bracket's log width from its ends; the geometric midpoint while the pass end's share is 1) until fail/pass − 1 ≤ %g; then at most one load beyond each end the interval leaves open (fail × %g, pass ÷ %g). "+
		"A load meets the SLO when, for every target, the share of its requests within the target is ≥ %g (the nearest-rank percentile ≤ the target; a failed request misses every target). "+
		"Capacity = √(pass·fail). Its %g %% interval runs from the highest load ≤ pass whose every target's one-sided Clopper–Pearson lower bound on that share is ≥ %g, to the lowest load ≥ fail where some target's upper bound is < %g; "+
		"each end at %g %% one-sided, Bonferroni-corrected over the loads on its side (and over the targets, for the upper end); it assumes the share falls as the load rises. Gain interval: [cand low/base high, cand high/base low], ≥ %.4g %% (Bonferroni over the two arms)",
		s.Growth, s.Growth, s.RelativePrecision, s.Growth, s.Growth, s.Quantile, 100*s.Level, s.Quantile, s.Quantile, 100*(1-(1-s.Level)/2), 100*(1-2*(1-s.Level)))
}

// perLoad is the probes at one load, pooled. suspect: some probe at the
// load is suspect (SuspectProbe: the client or the host may have set the
// pace), so the load gives a point outcome but its miss decides nothing at
// the interval's confidence. missAtt is att with a client-bound probe whose
// miss stands (MissRobustToLateness) counted against its loosened targets
// (AttainmentLoosened, a lower bound on what an on-time client counts
// over): what a sure miss is tested on.
type perLoad struct {
	load    float64
	att     []report.SLOAttainment
	missAtt []report.SLOAttainment
	suspect bool
}

// pool sums the probes' counts per load (ascending), per target.
func pool(probes []report.CapacityProbe) []perLoad {
	var out []perLoad
	for _, p := range probes {
		if p.Incomplete != "" {
			continue
		}
		miss := p.Attainment
		if p.MissRobustToLateness {
			miss = p.AttainmentLoosened
		}
		i := slices.IndexFunc(out, func(l perLoad) bool { return l.load == p.LoadRPS })
		if i < 0 {
			out = append(out, perLoad{load: p.LoadRPS, att: slices.Clone(p.Attainment), missAtt: slices.Clone(miss), suspect: SuspectProbe(p) != ""})
			continue
		}
		out[i].suspect = out[i].suspect || SuspectProbe(p) != ""
		out[i].att = addCounts(out[i].att, p.Attainment)
		out[i].missAtt = addCounts(out[i].missAtt, miss)
	}
	slices.SortFunc(out, func(a, b perLoad) int { return cmp.Compare(a.load, b.load) })
	return out
}

// addCounts adds b's counts to a's, per target.
func addCounts(a, b []report.SLOAttainment) []report.SLOAttainment {
	for _, x := range b {
		j := slices.IndexFunc(a, func(y report.SLOAttainment) bool { return y.Metric == x.Metric })
		if j < 0 {
			a = append(a, x)
			continue
		}
		a[j].N += x.N
		a[j].Over += x.Over
	}
	return a
}

// Met is the point outcome of attainment counts against quantile q: every
// target has N > 0 and (N − Over)/N ≥ q. Counts with no target are not met.
func Met(att []report.SLOAttainment, q float64) bool {
	if len(att) == 0 {
		return false
	}
	for _, a := range att {
		if a.N == 0 || float64(a.N-a.Over) < q*float64(a.N)-1e-9 { // 1e-9: 0.9·n is not exact in binary
			return false
		}
	}
	return true
}

// ClopperPearson is the one-sided Clopper–Pearson bounds on a binomial
// proportion from k successes in n trials, each at confidence 1 − alpha:
// lower = Beta(k, n−k+1) quantile alpha (0 when k = 0), upper = Beta(k+1,
// n−k) quantile 1 − alpha (1 when k = n) (Clopper & Pearson, Biometrika
// 1934; gonum's distuv.Beta). It panics on n < 1 or k outside [0, n].
func ClopperPearson(k, n int, alpha float64) (lower, upper float64) {
	if n < 1 || k < 0 || k > n {
		panic(fmt.Sprintf("analysis: ClopperPearson(%d, %d)", k, n))
	}
	lower, upper = 0, 1
	if k > 0 {
		lower = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(alpha)
	}
	if k < n {
		upper = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - alpha)
	}
	return lower, upper
}

// surelyMet: every target's lower bound on the attained share is ≥ q at alpha.
func surelyMet(att []report.SLOAttainment, q, alpha float64) bool {
	if len(att) == 0 {
		return false
	}
	for _, a := range att {
		if a.N == 0 {
			return false
		}
		if lo, _ := ClopperPearson(a.N-a.Over, a.N, alpha); lo < q {
			return false
		}
	}
	return true
}

// surelyMissed: some target's upper bound on the attained share is < q at
// alpha / (number of targets).
func surelyMissed(att []report.SLOAttainment, q, alpha float64) bool {
	for _, a := range att {
		if a.N == 0 {
			continue
		}
		if _, hi := ClopperPearson(a.N-a.Over, a.N, alpha/float64(len(att))); hi < q {
			return true
		}
	}
	return false
}

// bracket is the point bracket: the lowest load that missed (0: none) and
// the highest load below it that met (0: none).
func bracket(loads []perLoad, q float64) (pass, fail float64) {
	for _, l := range loads {
		if !Met(l.att, q) {
			fail = l.load
			break
		}
	}
	for _, l := range loads {
		if (fail == 0 || l.load < fail) && Met(l.att, q) {
			pass = l.load
		}
	}
	return pass, fail
}

// Next is the load to probe next given an arm's probes so far, or, when the
// search of the arm is over, 0 and why (StopBracketed, StopMax, StopMin).
// With no probe it starts at MinRPS. Once bracketed to the precision, it
// asks for at most one more load on each side where the interval has no end
// yet (FailRPS × Growth above, PassRPS ÷ Growth below, within the bounds) so
// the interval can close. A load already probed is never proposed again.
func (s Search) Next(probes []report.CapacityProbe) (float64, string) {
	s = s.WithDefaults()
	loads := pool(probes)
	if len(loads) == 0 {
		return s.MinRPS, ""
	}
	pass, fail := bracket(loads, s.Quantile)
	var next float64
	switch {
	case fail == 0: // nothing missed: grow from the highest load
		if pass >= s.MaxRPS {
			return 0, StopMax
		}
		next = min(pass*s.Growth, s.MaxRPS)
	case pass == 0: // nothing met below the lowest miss: shrink
		if fail <= s.MinRPS {
			return 0, StopMin
		}
		next = max(fail/s.Growth, s.MinRPS)
	case fail/pass-1 <= s.RelativePrecision*(1+1e-9):
		return s.closing(loads, probes, pass, fail)
	default:
		next = s.between(loads, pass, fail)
	}
	if probed(loads, next) {
		return 0, StopBracketed
	}
	return next, ""
}

// closing is Next once bracketed: a load beyond an open end of the
// interval, if none beyond it was probed and the bounds allow; else stop.
// It reads the interval's ends before a suspect fail end withholds them
// (Capacity), so the search probes alike whatever the client did.
func (s Search) closing(loads []perLoad, probes []report.CapacityProbe, pass, fail float64) (float64, string) {
	e := s.capacity("", probes, StopBracketed).CapacityRPS
	beyond := func(ok func(float64) bool) bool {
		return slices.ContainsFunc(loads, func(l perLoad) bool { return ok(l.load) })
	}
	if e.High == 0 && !beyond(func(l float64) bool { return l > fail }) {
		if next := min(fail*s.Growth, s.MaxRPS); next > fail && !probed(loads, next) {
			return next, ""
		}
	}
	if e.Low == 0 && !beyond(func(l float64) bool { return l < pass }) {
		if next := max(pass/s.Growth, s.MinRPS); next < pass && !probed(loads, next) {
			return next, ""
		}
	}
	return 0, StopBracketed
}

// probed reports whether load is among loads.
func probed(loads []perLoad, load float64) bool {
	return slices.ContainsFunc(loads, func(l perLoad) bool { return l.load == load })
}

// between is the next load inside (pass, fail): where the binding target's
// attained share, interpolated linearly in log load between the two ends,
// crosses the quantile (regula falsi on the share), kept at least a fifth
// of the bracket's log width from either end so every probe removes ≥ 20 %
// of it; the geometric midpoint when the pass end's share is 1 (no slope).
func (s Search) between(loads []perLoad, pass, fail float64) float64 {
	xp, xf := math.Log(pass), math.Log(fail)
	w := xf - xp
	x := xp + w/2
	fp, ff := margin(loads, pass, s.Quantile), margin(loads, fail, s.Quantile)
	// A pass end with every request within every target (share 1) says
	// nothing about the slope: bisect.
	if fp >= 0 && fp < 1-s.Quantile-1e-9 && ff < 0 {
		x = xp + w*fp/(fp-ff)
	}
	return math.Exp(min(max(x, xp+w/5), xf-w/5))
}

// margin is the binding target's attained share minus q at load.
func margin(loads []perLoad, load, q float64) float64 {
	m := math.Inf(1)
	for _, l := range loads {
		if l.load != load {
			continue
		}
		for _, a := range l.att {
			if a.N > 0 {
				m = min(m, float64(a.N-a.Over)/float64(a.N)-q)
			}
		}
	}
	return m
}

// FillTime is the longest E2E p90 (ms) among the complete probes that met
// the SLO, and the load (req/s) it was measured at; (0, 0) when none has
// one. A probe starts on an idle server, whose in-flight count rises for
// about one residence time before completions balance arrivals (Little's
// law, L = λ·W): a warm-up shorter than that measures requests that met a
// server emptier than the load keeps it, so a met load may not be
// sustained (DESIGN.md "Capacity at SLO, searched").
func (s Search) FillTime(probes []report.CapacityProbe) (e2eMs, loadRPS float64) {
	for _, p := range probes {
		if p.Incomplete == "" && p.E2EP90Ms > e2eMs && Met(p.Attainment, s.Quantile) {
			e2eMs, loadRPS = p.E2EP90Ms, p.LoadRPS
		}
	}
	return e2eMs, loadRPS
}

// PlannedProbes estimates how many search probes one arm takes when the
// sweep has left a bracket one growth factor wide: one step to it, then the
// bisections to the precision. An estimate (for progress), not a bound.
func (s Search) PlannedProbes() int {
	s = s.WithDefaults()
	return 1 + int(max(math.Ceil(math.Log2(math.Log(s.Growth)/math.Log1p(s.RelativePrecision))), 0))
}

// Capacity summarises an arm's probes: each probe's Met and Decided set, the
// bracket, and the capacity with its interval. stopped is why its search
// ended (Next's reason, or "budget: <field>"). A bracket whose fail end
// rests on suspect probes only (SuspectFailEnd) gives no capacity:
// SuspectFailEnd is set, the capacity has no value and no interval, and its
// note says what the arm met and why (NoCapacityText, SuspectMissWhy).
func (s Search) Capacity(arm string, probes []report.CapacityProbe, stopped string) report.CapacityArm {
	return WithholdSuspect(s.capacity(arm, probes, stopped))
}

// WithholdSuspect is a with its capacity withheld when it is suspect
// (SuspectCapacity): SuspectFailEnd set, no value and no interval, the note
// saying what the arm met and why. Capacity applies it; compare applies it
// to an arm read from a results.json written before the flag.
func WithholdSuspect(a report.CapacityArm) report.CapacityArm {
	if SuspectCapacity(a) {
		a.SuspectFailEnd = true
		a.CapacityRPS = report.Estimate{Unit: "req/s", Note: NoCapacityText(a) + ": " + SuspectMissWhy(a)}
	}
	return a
}

// clientBoundMisses says why a miss of a client-bound probe that its
// lateness can explain decides nothing.
const clientBoundMisses = "the client machine was too busy to send those loads on time, so the misses may be the client's, not the server's"

// ClientBoundMissWhy is SuspectMissWhy where the suspect misses are
// client-bound only.
const ClientBoundMissWhy = clientBoundMisses + "; rerun on an idle machine"

// SuspectCapacity reports whether a has no capacity because its bracket's
// fail end rests on suspect probes only (SuspectFailEnd): as Capacity
// marks it (a.SuspectFailEnd), or, in a results.json written before that
// flag, a capacity figure over such a bracket. The reports, the console,
// the gains and compare all ask it.
func SuspectCapacity(a report.CapacityArm) bool {
	return a.SuspectFailEnd || a.CapacityRPS.Value > 0 && SuspectFailEnd(a)
}

// NoCapacityText is what a suspect arm (SuspectCapacity) shows instead of
// a capacity: "≥ 16.82 req/s (met); its misses at 20.00 req/s were
// client-bound probes only, so no capacity" (host-slowed, or client-bound
// or host-slowed, as SuspectKinds finds them).
func NoCapacityText(a report.CapacityArm) string {
	return fmt.Sprintf("≥ %s req/s (met); its misses at %s req/s were %s probes only, so no capacity", report.Num(a.PassRPS), report.Num(a.FailRPS), report.OrText(SuspectKinds(a), SuspectClientBound))
}

// capacity is Capacity before a suspect fail end withholds the figure.
func (s Search) capacity(arm string, probes []report.CapacityProbe, stopped string) report.CapacityArm {
	s = s.WithDefaults()
	out := report.CapacityArm{Arm: arm, Probes: slices.Clone(probes), Stopped: stopped}
	for i := range out.Probes {
		judgeProbe(&out.Probes[i], s.Quantile)
	}
	loads := pool(out.Probes)
	out.PassRPS, out.FailRPS = bracket(loads, s.Quantile)
	endAlpha := (1 - s.Level) / 2
	var below, above []perLoad
	for _, l := range loads {
		if out.PassRPS > 0 && l.load <= out.PassRPS {
			below = append(below, l)
		}
		if out.FailRPS > 0 && l.load >= out.FailRPS {
			above = append(above, l)
		}
	}
	// A suspect load that missed is no end of the interval (SuspectProbe):
	// a late client makes a load look harder than it is (tokens stamped
	// late, sends late), and a stalled host makes the simulated server
	// slower than its model. One that met stands: the server met the SLO
	// with the lateness counted against it. A client-bound miss robust to
	// its lateness is tested on its loosened counts (perLoad.missAtt).
	sureMet := func(l perLoad) bool {
		return surelyMet(l.att, s.Quantile, endAlpha/float64(len(below)))
	}
	sureMissed := func(l perLoad) bool {
		return !l.suspect && surelyMissed(l.missAtt, s.Quantile, endAlpha/float64(len(above)))
	}
	low, high := 0.0, 0.0
	for _, l := range below {
		if sureMet(l) {
			low = l.load
		}
	}
	for i := len(above) - 1; i >= 0; i-- {
		if sureMissed(above[i]) {
			high = above[i].load
		}
	}
	for i := range out.Probes {
		p := &out.Probes[i]
		p.Met = Met(p.Attainment, s.Quantile)
		p.Decided = ""
		if l := slices.IndexFunc(below, func(l perLoad) bool { return l.load == p.LoadRPS }); l >= 0 && sureMet(below[l]) {
			p.Decided = "met"
		}
		if l := slices.IndexFunc(above, func(l perLoad) bool { return l.load == p.LoadRPS }); l >= 0 && sureMissed(above[l]) {
			p.Decided = "missed"
		}
	}
	est := &out.CapacityRPS
	est.Unit = "req/s"
	var notes []string
	switch {
	case len(loads) == 0:
		est.Note = "unknown: no probe of " + arm + " ran to its end"
		return out
	case out.PassRPS == 0:
		est.Note = fmt.Sprintf("below %s req/s: %s missed the SLO at every load probed", num(out.FailRPS), arm)
		if stopped != StopMin {
			est.Note = "unknown: " + est.Note + "; " + stopText(stopped)
		}
		est.High = out.FailRPS
		return out
	case out.FailRPS == 0:
		est.Value, est.Derived = out.PassRPS, DerivedPassOnly
		if stopped == StopMax {
			est.Note = fmt.Sprintf("a lower bound: %s met the SLO at max_rps (%s req/s), the search's ceiling", arm, num(out.PassRPS))
		} else {
			est.Note = fmt.Sprintf("unknown: %s met the SLO at every load probed (up to %s req/s), so its capacity is at least that; %s", arm, num(out.PassRPS), stopText(stopped))
		}
		est.Low = low
		return out
	}
	est.Low, est.High = low, high
	est.Interval = high > 0
	wide := out.FailRPS/out.PassRPS-1 > s.RelativePrecision*(1+1e-9)
	if wide && !slices.ContainsFunc(probes, func(p report.CapacityProbe) bool { return p.Source == "search" }) {
		// No probe of this arm ran: the sweep's loads bracket it, and a
		// midpoint of that bracket would be a guess, not a finding.
		est.Note = fmt.Sprintf("between %s and %s req/s, the sweep's bracket: no search probe ran; %s", num(out.PassRPS), num(out.FailRPS), stopText(stopped))
		return out
	}
	if wide && stopped != StopBracketed {
		// The search stopped short of the precision (a budget ran out):
		// the capacity lies somewhere in the bracket, and a midpoint or an
		// interval of it would be a confident figure the search did not find.
		est.Low, est.High, est.Interval = 0, 0, false
		est.Note = fmt.Sprintf("unknown: between %s and %s req/s (bracket), %s", num(out.PassRPS), num(out.FailRPS), stopText(stopped))
		return out
	}
	est.Value, est.Derived = math.Sqrt(out.PassRPS*out.FailRPS), DerivedMidpoint
	if low == 0 {
		notes = append(notes, "no load was met with the interval's confidence: its lower end is 0")
	}
	if high == 0 {
		est.High = 0
		notes = append(notes, "no load was missed with the interval's confidence: no upper end")
	}
	est.Note = strings.Join(notes, "; ")
	return out
}

// How an arm's point capacity (capacity_rps.value, stored in
// capacity_rps.derived) is derived from its bracket: the one definition the
// results, the reports and the console read.
const (
	// DerivedMidpoint: bracketed, the geometric midpoint of [pass, fail].
	DerivedMidpoint = "√(pass_rps·fail_rps): the geometric midpoint of the bracket"
	// DerivedPassOnly: no load missed, the highest load met (a lower bound).
	DerivedPassOnly = "pass_rps: no load missed the SLO, so the highest load met (a lower bound)"
)

// stopText says why a search ended early.
func stopText(stopped string) string {
	if b, ok := strings.CutPrefix(stopped, "budget: "); ok {
		return "the search's budget ran out (" + b + ")"
	}
	if strings.HasPrefix(stopped, StopInterrupted+" (") {
		return "the search was " + stopped
	}
	return "the search ended: " + stopped
}

// Gain is cand's capacity over base's: the ratio of the point capacities,
// its interval [cand low / base high, cand high / base low] when both
// intervals are closed and base low > 0, and Separable when the arms'
// intervals do not overlap.
func Gain(cand, base report.CapacityArm) report.CapacitySearchGain {
	g := report.CapacitySearchGain{Candidate: cand.Arm, Baseline: base.Arm}
	c, b := cand.CapacityRPS, base.CapacityRPS
	if suspectGain(&g, cand, base) {
		return g
	}
	switch {
	case b.Value == 0 || c.Value == 0,
		c.Note != "" && strings.HasPrefix(c.Note, "unknown") || b.Note != "" && strings.HasPrefix(b.Note, "unknown"):
		// A gain is a ratio of capacities: unknown when either is.
		var unknown []string
		for _, a := range []report.CapacityArm{cand, base} {
			if a.CapacityRPS.Value == 0 || strings.HasPrefix(a.CapacityRPS.Note, "unknown") {
				unknown = append(unknown, a.Arm)
			}
		}
		note := "the capacity of " + unknown[0] + " is unknown, so is the ratio of the capacities"
		if len(unknown) == 2 {
			note = "the capacities of " + unknown[0] + " and " + unknown[1] + " are unknown, so is their ratio"
		}
		g.Gain = report.Estimate{Note: "unknown: " + note}
		return g
	}
	g.Gain.Value = c.Value / b.Value
	g.Gain.Reps = 1
	if c.Interval && b.Interval && b.Low > 0 {
		g.Gain.Low, g.Gain.High, g.Gain.Interval = c.Low/b.High, c.High/b.Low, true
		g.Separable = c.Low > b.High || c.High < b.Low
		if !g.Separable {
			g.Gain.Note = fmt.Sprintf("not separable: the capacity intervals overlap (%s [%s, %s], %s [%s, %s] req/s)", cand.Arm, num(c.Low), num(c.High), base.Arm, num(b.Low), num(b.High))
		}
		return g
	}
	// One side open or starting at 0: the gain has one bound at most, and
	// no zero-width range around its value (results.json writes the
	// missing bounds as null).
	switch {
	case cand.FailRPS == 0 && b.Interval && b.High > 0:
		g.Gain.Low = c.Low / b.High
		g.Separable = c.Low > b.High
		g.Gain.Note = fmt.Sprintf("a lower bound: %s", c.Note)
	default:
		g.Gain.Note = "no interval: " + firstNote(c.Note, b.Note, "an arm's interval is open")
	}
	return g
}

// DerivedGainLowerBound is how a gain's lower bound (Gain.Low, no value)
// is derived when only the candidate's capacity rests on suspect misses
// (client-bound or host-slowed: SuspectCapacity).
const DerivedGainLowerBound = "candidate pass_rps / baseline fail_rps: a lower bound (the candidate's capacity rests on suspect misses)"

// suspectGain fills g when cand's or base's capacity rests on suspect
// misses (SuspectCapacity: client-bound or host-slowed, its notes say
// which: SuspectKinds) and reports whether it did. The gain then has
// no value: not determined, except when only the candidate's is suspect,
// the baseline's was bracketed by a miss of its own, and the candidate met
// a load above that miss: its capacity is at least the load it met and the
// baseline's below the load it missed, so the gain is at least their ratio,
// above 1 (a point bound, as the bracket is; DESIGN.md).
func suspectGain(g *report.CapacitySearchGain, cand, base report.CapacityArm) bool {
	for _, a := range []report.CapacityArm{cand, base} {
		if SuspectCapacity(a) {
			g.SuspectArms = append(g.SuspectArms, a.Arm)
		}
	}
	switch {
	case len(g.SuspectArms) == 0:
		return false
	case len(g.SuspectArms) == 2:
		g.Gain = report.Estimate{Note: "not determined (both capacities rest on " + SuspectKinds(cand, base) + " misses)"}
	case g.SuspectArms[0] == cand.Arm && base.CapacityRPS.Value > 0 && base.FailRPS > 0 && cand.PassRPS > base.FailRPS:
		g.Gain = report.Estimate{Low: cand.PassRPS / base.FailRPS, Derived: DerivedGainLowerBound,
			Note: fmt.Sprintf("%s met %s req/s, above the %s req/s %s missed, and its own capacity rests on %s misses: a lower bound", cand.Arm, report.Num(cand.PassRPS), report.Num(base.FailRPS), base.Arm, SuspectKinds(cand))}
	default:
		a := cand
		if g.SuspectArms[0] == base.Arm {
			a = base
		}
		g.Gain = report.Estimate{Note: "not determined (" + a.Arm + "'s capacity rests on " + SuspectKinds(a) + " misses)"}
	}
	return true
}

// SearchGain is Gain with what a capacity search states beside the ratio:
// the ratio of the arms' simulator's sustained capacities when both have
// one, and the change in cost per 1M output tokens at each arm's highest
// load that met the SLO when both arms were bracketed (a budget-cut arm's
// pass load may lie far below its capacity) at different loads. Two costs
// at the same load are not a capacity saving: both arms served the same
// requests on a GPU kept as long, and what differs is the measuring
// window's drain after the last arrival (noise as large as the whole Amdahl
// bound: −5.6 % for a 1.6 % candidate), so no change is computed and
// CostNote says why. A run's search and a comparison of two runs' searches
// both state their gains by it.
func SearchGain(cand, base report.CapacityArm) report.CapacitySearchGain {
	g := Gain(cand, base)
	if cand.SimTruth != nil && base.SimTruth != nil && base.SimTruth.RPS() > 0 {
		g.SimTruth = cand.SimTruth.RPS() / base.SimTruth.RPS()
	}
	if cand.Cost != nil && base.Cost != nil && base.Cost.CostPer1MOutputTokens > 0 && cand.Cost.Currency == base.Cost.Currency &&
		cand.Stopped == StopBracketed && base.Stopped == StopBracketed && len(g.SuspectArms) == 0 {
		if cand.Cost.LoadRPS == base.Cost.LoadRPS {
			g.CostNote = "both at the same offered load, " + report.Num(base.Cost.LoadRPS) + " req/s: there both arms serve the same requests on a GPU kept as long, so the difference is the measuring window's drain, not a saving"
		} else {
			v := 100 * (cand.Cost.CostPer1MOutputTokens/base.Cost.CostPer1MOutputTokens - 1)
			g.CostChangePct = &v
		}
	}
	return g
}

func firstNote(notes ...string) string {
	for _, n := range notes {
		if n != "" {
			return n
		}
	}
	return ""
}

// num prints a load compactly (3 significant digits).
func num(v float64) string { return fmt.Sprintf("%.3g", v) }
