package analysis

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"

	"github.com/transferlab/transferlab/loadgen"
)

// latencyMetrics are the latency Dists Analyze summarises, in report order.
var latencyMetrics = []string{"ttft", "ttft_intended", "itl", "tpot", "e2e"}

// summaryStats are the statistics of each latency metric Analyze summarises.
var summaryStats = []string{"p50", "p90", "p99", "mean"}

// ratioMetrics are the metrics whose candidate/baseline ratio Analyze reports.
var ratioMetrics = []string{"ttft", "itl", "tpot", "e2e"}

// cellDist returns the Dist of metric in c.
func CellDist(c report.Cell, metric string) (report.Dist, error) {
	switch metric {
	case "ttft":
		return c.TTFT, nil
	case "ttft_intended":
		return c.TTFTIntended, nil
	case "ttfo":
		return c.TTFO, nil
	case "itl":
		return c.ITL, nil
	case "tpot":
		return c.TPOT, nil
	case "e2e":
		return c.E2E, nil
	case "schedule_lag":
		return c.ScheduleLag, nil
	}
	return report.Dist{}, fmt.Errorf("unknown metric %q (want ttft, ttft_intended, ttfo, itl, tpot, e2e or schedule_lag)", metric)
}

// cellValue is one repetition's figure of metric/stat; ok is false when the
// sample size refused the statistic (or nothing was measured). A latency mean
// is refused below the sample size a p50 claim needs at DefaultConfidence
// (meanNeedsP50): fewer samples than the least the report publishes a
// percentile from.
func cellValue(c report.Cell, metric, stat string) (v float64, ok bool, err error) {
	switch metric {
	case "throughput":
		return deref(c.ThroughputTokPerS)
	case "goodput":
		return deref(c.GoodputRPS)
	}
	d, err := CellDist(c, metric)
	if err != nil {
		return 0, false, err
	}
	if need, _ := stats.MinSamples(0.5, stats.DefaultConfidence); stat == "mean" && d.N > 0 && d.N < need {
		return 0, false, nil // meanNeedsP50
	}
	v, err = Quantile(d, stat)
	if errors.Is(err, stats.ErrTooFewSamples) {
		return 0, false, nil
	}
	return v, err == nil, err
}

// group is the repetitions of one arm at one load, by repetition index.
type Group struct {
	Arm   string
	Load  float64
	Cells []report.Cell
}

// groupCells groups the complete cells by arm and load (incomplete cells are
// left out: see Cell.Incomplete).
func GroupCells(r report.Results) []Group {
	var out []Group
	for _, c := range report.SortedCells(r) {
		if c.Incomplete != "" {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Arm == c.Arm && out[n-1].Load == c.OfferedLoadRPS {
			out[n-1].Cells = append(out[n-1].Cells, c)
			continue
		}
		out = append(out, Group{Arm: c.Arm, Load: c.OfferedLoadRPS, Cells: []report.Cell{c}})
	}
	return out
}

// values collects metric/stat over the group's repetitions, skipping refused
// ones. A latency metric of a group with a Censored cell is refused in every
// repetition: one repetition that lost more than MaxNotOKShare of its
// requests says the arm was not measured as configured at that load, and the
// others alone would be a selection.
func (g Group) Values(metric, stat string) (vals []float64, reps []int, refused int) {
	if IsLatency(metric) && g.censored() != "" {
		return nil, nil, len(g.Cells)
	}
	for _, c := range g.Cells {
		v, ok, err := cellValue(c, metric, stat)
		if err != nil || !ok {
			refused++
			continue
		}
		vals = append(vals, v)
		reps = append(reps, c.Repetition)
	}
	return vals, reps, refused
}

// refusedNote says why metric/stat has no value in any repetition of g: a
// Censored cell, the sample sizes that could not support the statistic
// (MinSamples; for a mean, meanNeedsP50), or nothing measured.
func (g Group) refusedNote(metric, stat string) string {
	if why := g.censored(); why != "" && IsLatency(metric) {
		return "refused, not comparable: " + why
	}
	ns := make([]string, 0, len(g.Cells))
	total := 0
	for _, c := range g.Cells {
		d, _ := CellDist(c, metric)
		ns = append(ns, strconv.Itoa(d.N))
		total += d.N
	}
	if total == 0 {
		return fmt.Sprintf("not measured: no %s sample in %d repetitions", metric, len(g.Cells))
	}
	s := fmt.Sprintf("refused in all %d repetitions: n = %s samples is too few for %s", len(g.Cells), strings.Join(ns, ", "), stat)
	if stat == "mean" {
		s += meanNeedsP50()
	}
	return s
}

// meanNeedsP50 is why a latency mean from a handful of samples is refused in
// comparisons: a cell publishes no percentile (its p50 first) from fewer
// samples than the order-statistic rule asks for a p50 (MinSamples(0.5,
// 0.99) = 7), and a mean of fewer is no firmer.
func meanNeedsP50() string {
	n, _ := stats.MinSamples(0.5, stats.DefaultConfidence)
	return fmt.Sprintf(" (a mean is compared only where the cell publishes its p50: n ≥ %d at %s confidence)", n, report.Pct(stats.DefaultConfidence))
}

// DecisionMetrics are the metrics a decision rule may decide on
// (report.DecisionRule.Metric): the server's latencies. A cell's
// schedule_lag is a Dist too (CellDist), but it measures the client's
// lateness, not the candidate.
func DecisionMetrics() []string {
	return []string{"ttft", "ttft_intended", "ttfo", "itl", "tpot", "e2e"}
}

// DecisionMetricList is DecisionMetrics for a person: "ttft, …, tpot or e2e".
func DecisionMetricList() string {
	m := DecisionMetrics()
	return strings.Join(m[:len(m)-1], ", ") + " or " + m[len(m)-1]
}

// ValidateRule reports every problem of r at once (errors.Join), each as
// "KEY: message", KEY the rule's key in a config's decision block
// (percentile, regression_margin), so that a config's error names the
// field's own line; Analyze says "decision rule: " before each.
func ValidateRule(r report.DecisionRule) error {
	var errs []error
	if !slices.Contains(DecisionMetrics(), r.Metric) {
		errs = append(errs, fmt.Errorf("metric: unknown metric %q (want %s)", r.Metric, DecisionMetricList()))
	}
	if !r.UseMean {
		if _, _, err := percentileName(r.Percentile); err != nil {
			errs = append(errs, fmt.Errorf("percentile: %v is not one of 50, 90, 95, 99 or 99.9", r.Percentile))
		}
	}
	if r.RegressionMargin < 0 || r.RegressionMargin >= 1 {
		errs = append(errs, fmt.Errorf("regression_margin: %v not in [0, 1)", r.RegressionMargin))
	}
	if !(r.IntervalLevel > 0 && r.IntervalLevel < 1) {
		errs = append(errs, fmt.Errorf("interval_level: %v not in (0, 1)", r.IntervalLevel))
	}
	if r.Resamples < 100 {
		errs = append(errs, fmt.Errorf("resamples: %d < 100", r.Resamples))
	}
	return errors.Join(errs...)
}

// ruleStat is r's statistic name ("p99", "mean").
func RuleStat(r report.DecisionRule) string {
	if r.UseMean {
		return "mean"
	}
	name, _, _ := percentileName(r.Percentile)
	return name
}

// Analyze computes r.Stats (per arm × load estimates over repetitions with
// bootstrap intervals, candidate/baseline ratios, capacity at SLO and the
// capacity gain), fills empty Amdahl measured speedups, and sets r.Rule and
// one Verdict per candidate arm. rule's zero fields take their defaults.
// It returns an error when the rule is invalid or the baseline arm is absent.
func Analyze(r *report.Results, rule report.DecisionRule) error {
	return analyze(r, rule, nil)
}

// AnalyzeAgainst is Analyze of a comparison of two runs (canary.Compare):
// the resolution is own, the baseline run's own (its A/A replicate against
// its baseline, widened by the spread of its own interleaved blocks, as its
// own Analyze computed it), not one pooled with the other run's blocks,
// which were not interleaved with it. own may be empty (the baseline run
// had no A/A replicate): the resolution is then not measured.
func AnalyzeAgainst(r *report.Results, rule report.DecisionRule, own []report.Resolution) error {
	if own == nil {
		own = []report.Resolution{}
	}
	return analyze(r, rule, own)
}

// analyze is Analyze; own, when not nil, is the resolution to use
// (AnalyzeAgainst).
func analyze(r *report.Results, rule report.DecisionRule, own []report.Resolution) error {
	rule = rule.WithDefaults()
	if err := ValidateRule(rule); err != nil {
		var errs []error
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			errs = append(errs, fmt.Errorf("decision rule: %w", e))
		}
		return errors.Join(errs...)
	}
	arms := report.ArmOrder(*r)
	if !slices.Contains(arms, rule.Baseline) {
		return fmt.Errorf("analysis: Analyze: baseline arm %q not among the cells' arms %v", rule.Baseline, arms)
	}
	bs := bootstrapper{seed: rule.Seed, resamples: rule.Resamples, level: rule.IntervalLevel}
	groups := GroupCells(*r)
	st := &report.Stats{Method: fmt.Sprintf("mean over repetitions of each repetition's figure with a Student t interval over the repetitions' values (%s, n − 1 degrees of freedom); ratios and capacity: percentile bootstrap interval (%s, %d resamples, seed %d; %s)",
		report.Pct(rule.IntervalLevel), report.Pct(rule.IntervalLevel), rule.Resamples, rule.Seed, pairingText(rule.Independent))}

	for _, g := range groups {
		st.Cells = append(st.Cells, g.stats(bs))
	}

	byKey := map[string]Group{}
	for _, g := range groups {
		byKey[key(g.Arm, g.Load)] = g
	}
	ratioSpecs := [][2]string{}
	for _, m := range ratioMetrics {
		for _, s := range []string{"p50", "p99", "mean"} {
			ratioSpecs = append(ratioSpecs, [2]string{m, s})
		}
	}
	if rs := [2]string{rule.Metric, RuleStat(rule)}; !slices.Contains(ratioSpecs, rs) {
		ratioSpecs = append(ratioSpecs, rs)
	}
	compare := func(k string, num, den Group, metric, stat string) report.Estimate {
		return compareGroups(bs, k, num, den, metric, stat, !rule.Independent)
	}
	// The run-to-run spread per load and metric statistic (spreadAt). A
	// comparison leaves out the blocks with a client-bound cell of either
	// arm (comparisonOf); one excluded from the verdict is over every block
	// and is widened by the spread of every block, client-bound ones too.
	// So is one whose remaining blocks pool no degree of freedom while
	// client-bound ones would (the only A/A block client-bound): its
	// interval is no narrower than its blocks, and it decides nothing
	// (classifyLoads: ν = 0 over the blocks it counts).
	aaArm := report.AAArm(rule.Baseline)
	spread := func(load float64, metric, stat string, bc blockComparison) runToRun {
		rt := spreadAt(groups, rule.Baseline, load, metric, stat, bc.excluded != "")
		if rt.df == 0 && bc.excluded == "" {
			rt = spreadAt(groups, rule.Baseline, load, metric, stat, true)
		}
		return rt
	}
	// The A/A replicate against the baseline: the run's resolution per load
	// and metric statistic, before any candidate is compared.
	resolutions := map[string]report.Resolution{}
	for _, res := range own {
		resolutions[key(res.OfferedLoadRPS, res.Metric, res.Stat)] = res
		st.Resolution = append(st.Resolution, res)
	}
	for _, g := range groups {
		base, ok := byKey[key(rule.Baseline, g.Load)]
		if g.Arm != aaArm || !ok || own != nil {
			continue
		}
		for _, spec := range ratioSpecs {
			bc := comparisonOf(g, base)
			rt := spread(g.Load, spec[0], spec[1], bc)
			h := rt.halfWidth(bc.blocks, rule.IntervalLevel)
			aa := widen(compare(key("aa", g.Load, spec[0], spec[1]), bc.num, bc.den, spec[0], spec[1]), h)
			res := resolutionOf(g.Load, spec[0], spec[1], aa, h, rt.df)
			res.Excluded, res.LeftOut = bc.excluded, bc.leftOut
			resolutions[key(g.Load, spec[0], spec[1])] = res
			st.Resolution = append(st.Resolution, res)
		}
	}
	switch {
	case len(st.Resolution) > 0 && own != nil:
		st.ResolutionMethod = comparedResolutionMethod
	case len(st.Resolution) > 0:
		st.ResolutionMethod = resolutionMethod
	}
	for _, cand := range arms {
		if cand == rule.Baseline || report.IsAAArm(cand) {
			continue
		}
		for _, g := range groups {
			if g.Arm != cand {
				continue
			}
			base, ok := byKey[key(rule.Baseline, g.Load)]
			if !ok {
				continue
			}
			bc := comparisonOf(g, base)
			for _, spec := range ratioSpecs {
				h := spread(g.Load, spec[0], spec[1], bc).halfWidth(bc.blocks, rule.IntervalLevel)
				q := report.Ratio{Candidate: cand, Baseline: rule.Baseline, OfferedLoadRPS: g.Load, Metric: spec[0], Stat: spec[1],
					Value:    widen(compare(key("ratio", cand, g.Load, spec[0], spec[1]), bc.num, bc.den, spec[0], spec[1]), h),
					Excluded: bc.excluded, LeftOut: bc.leftOut}
				if res, ok := resolutions[key(g.Load, spec[0], spec[1])]; ok && res.PlusMinus != nil {
					q.Resolution = res.PlusMinus
				}
				st.Ratios = append(st.Ratios, q)
			}
		}
	}

	capacity(st, *r, arms, groups, bs, rule.Baseline, !rule.Independent)
	r.Stats = st
	fillAmdahl(r.Amdahl, st.Ratios)
	fillAblation(r, bs, byKey, arms, rule.Baseline, !rule.Independent)
	r.Rule = &rule
	r.Verdicts = nil
	for _, cand := range arms {
		if cand != rule.Baseline && cand != r.Ceiling && !report.IsAAArm(cand) { // a ceiling is a timing-only ablation, an A/A replicate the noise floor: no verdict
			r.Verdicts = append(r.Verdicts, decide(*r, rule, cand))
		}
	}
	return nil
}

// stats are g's figures over its repetitions (the Over repetitions table):
// each latency metric's summary statistics in ms, throughput and goodput,
// each the mean of the repetitions' values with a Student t interval
// (bootstrapper.tMean), or the note why no repetition gave one.
func (g Group) stats(bs bootstrapper) report.CellStats {
	cs := report.CellStats{Arm: g.Arm, OfferedLoadRPS: g.Load, Reps: len(g.Cells)}
	for _, m := range latencyMetrics {
		for _, s := range summaryStats {
			vals, _, refused := g.Values(m, s)
			e := bs.tMean(vals)
			if len(vals) == 0 {
				e.Note = g.refusedNote(m, s)
			}
			cs.Metrics = append(cs.Metrics, report.MetricStat{Metric: m, Stat: s, Unit: "ms", Value: e, Refused: refused})
		}
	}
	for _, m := range []struct{ metric, unit string }{{"throughput", "tok/s"}, {"goodput", "req/s"}} {
		vals, _, refused := g.Values(m.metric, "")
		e := bs.tMean(vals)
		if len(vals) == 0 {
			e.Note = fmt.Sprintf("not measured: no repetition of %d had a measured window", len(g.Cells))
		}
		cs.Metrics = append(cs.Metrics, report.MetricStat{Metric: m.metric, Stat: "mean", Unit: m.unit, Value: e, Refused: refused})
	}
	return cs
}

// compareGroups is num/den of metric/stat at one load: request by request
// (requestRatio) when both groups kept per-request figures of metric and
// neither lost too many requests, else over repetitions (pairedRatio).
func compareGroups(bs bootstrapper, k string, num, den Group, metric, stat string, pair bool) report.Estimate {
	if slices.Contains(pairedMetrics, metric) && num.censored() == "" && den.censored() == "" {
		if p, ok := pairRequests(num, den, metric); ok {
			return bs.requestRatio(k, stat, p)
		}
	}
	return pairedRatio(bs, k, num, den, metric, stat, pair)
}

// pairedRatio is candidate/baseline of metric/stat over repetitions, paired by
// repetition index when both arms measured the same repetitions.
func pairedRatio(bs bootstrapper, k string, cand, base Group, metric, stat string, pair bool) report.Estimate {
	cv, cr, _ := cand.Values(metric, stat)
	bv, br, _ := base.Values(metric, stat)
	for _, side := range []struct {
		g    Group
		vals []float64
	}{{cand, cv}, {base, bv}} {
		if len(side.vals) == 0 {
			return report.Estimate{Note: fmt.Sprintf("%s (%s %s of %s at %s req/s)", side.g.refusedNote(metric, stat), metric, stat, side.g.Arm, report.Num(side.g.Load))}
		}
	}
	return bs.ratio(k, cv, bv, pair && slices.Equal(cr, br))
}

// fillAmdahl sets the measured baseline/candidate speedups of mean and p99
// TTFT, TPOT and E2E on Amdahl loads that came without them. Each is the
// reciprocal of the candidate/baseline ratio in ratios (speedupOf): the same
// blocks (a client-bound cell's block left out), the same widened interval,
// inverted, so the Amdahl table and the verdict show one figure.
func fillAmdahl(a *report.AmdahlSection, ratios []report.Ratio) {
	if a == nil {
		return
	}
	for i := range a.Loads {
		l := &a.Loads[i]
		if len(l.Measured) > 0 {
			continue
		}
		for _, m := range []string{"ttft", "tpot", "e2e"} {
			for _, s := range []string{"mean", "p99"} {
				for _, q := range ratios {
					if q.Candidate == l.Candidate && q.OfferedLoadRPS == l.OfferedLoadRPS && q.Metric == m && q.Stat == s {
						l.Measured = append(l.Measured, report.Speedup{Metric: m, Stat: s, Value: speedupOf(q)})
					}
				}
			}
		}
	}
}

// speedupOf is baseline/candidate, the reciprocal of q's candidate/baseline
// ratio: value 1/v, interval [1/high, 1/low]. A refused ratio, or one that
// feeds no verdict (q.Excluded), gives no speedup either (Reps 0, the
// reasons in Note, the ratio's own refusal first); one
// whose blocks left out client-bound cells says so in Note.
func speedupOf(q report.Ratio) report.Estimate {
	e := q.Value
	if e.Reps == 0 || !(e.Value > 0) {
		// The ratio's own refusal (e.g. a cell over the failure limit)
		// says more than a client-bound flag on the same cells: it holds
		// whatever the client.
		if q.Excluded != "" {
			return report.Estimate{Note: strings.TrimPrefix(e.Note+"; also not comparable: "+q.Excluded, "; also ")}
		}
		return report.Estimate{Note: e.Note}
	}
	if q.Excluded != "" {
		return report.Estimate{Note: "not comparable: " + q.Excluded}
	}
	out := report.Estimate{Value: 1 / e.Value, Reps: e.Reps, Requests: e.Requests, Interval: e.Interval, Note: e.Note}
	if e.Interval && e.Low > 0 && e.High > 0 {
		out.Low, out.High = 1/e.High, 1/e.Low
	} else {
		out.Low, out.High, out.Interval = out.Value, out.Value, false
	}
	if q.LeftOut != "" {
		out.Note = strings.TrimPrefix(out.Note+"; client-bound block left out: "+q.LeftOut, "; ")
	}
	return out
}

// sloChecks lists the declared SLO targets as (metric, target ms).
func sloChecks(s report.SLO) []struct {
	metric string
	ms     float64
} {
	var out []struct {
		metric string
		ms     float64
	}
	for _, t := range []struct {
		metric string
		ms     float64
	}{{"ttft", s.TTFTMs}, {"tpot", s.TPOTMs}, {"e2e", s.E2EMs}} {
		if t.ms > 0 {
			out = append(out, t)
		}
	}
	return out
}

// SLOOutcome is how one cell stands against the declared SLOs at the SLO percentile.
type SLOOutcome string

// The SLO outcomes of CheckSLO.
const (
	// SLOMet: every declared target is met at the SLO percentile.
	SLOMet SLOOutcome = "met"
	// SLOMissed: some declared target is exceeded at the SLO percentile.
	SLOMissed SLOOutcome = "missed"
	// SLORefused: no target is exceeded, but the sample is too small to claim
	// the percentile for some target (MinSamples): neither met nor missed.
	SLORefused SLOOutcome = "refused"
)

// CheckSLO tells whether one cell meets every declared SLO target at the SLO
// percentile (default p99), with the reason when it does not. Undeclared
// targets never decide; more than 1 − percentile of the sent requests
// failing (http_error, stream_error, timeout) misses every target; a
// percentile refused for its sample size gives SLORefused unless another
// target is missed.
func CheckSLO(c report.Cell, s report.SLO) (SLOOutcome, string) {
	p := s.Percentile
	if p == 0 {
		p = report.DefaultSLOPercentile
	}
	name, q, err := percentileName(p)
	if err != nil {
		return SLOMissed, err.Error()
	}
	if len(sloChecks(s)) > 0 {
		// A failed request missed every target (as in SLOClaims): when more
		// than 1 − q of the sent requests failed, the percentile is missed
		// whatever the ok ones did.
		failed, okN := sentNotOK(c.States), c.States[string(loadgen.StateOK)]
		if n := failed + okN; failed > 0 && float64(failed)-(1-q)*float64(n) > 1e-9 { // 1e-9: 1 − 0.9 is not exactly 0.1
			return SLOMissed, fmt.Sprintf("%d of %d sent requests did not end ok (%s) at load %s rep %d: more than the %s a %s target allows (a failed request misses every target)",
				failed, n, notOKCounts(c.States), report.Num(c.OfferedLoadRPS), c.Repetition, report.Pct(1-q), name)
		}
	}
	out, why := SLOMet, ""
	for _, chk := range sloChecks(s) {
		v, ok, err := cellValue(c, chk.metric, name)
		switch {
		case err != nil:
			return SLOMissed, err.Error()
		case !ok:
			d, _ := CellDist(c, chk.metric)
			out, why = SLORefused, fmt.Sprintf("%s %s refused at load %s rep %d (n=%d too few samples)", chk.metric, name, report.Num(c.OfferedLoadRPS), c.Repetition, d.N)
		case v > chk.ms:
			return SLOMissed, fmt.Sprintf("%s %s %s ms > %s ms at load %s rep %d", chk.metric, name, report.Num(v), report.Num(chk.ms), report.Num(c.OfferedLoadRPS), c.Repetition)
		}
	}
	return out, why
}

// capacity fills st.Capacity and st.CapacityGain: per repetition, the highest
// swept load that meets the SLOs with no lower load missing them (a sweep read
// as monotone; a load whose sample is too small to claim the percentile is
// unknown and skipped); the estimate is the mean over repetitions with its interval.
//
// A run that searched the capacity (r.CapacitySearch ran) has its answer
// there: st.CapacitySuperseded says so and the sweep's reading is left out,
// so that results.json gives one capacity per arm (the search's probes
// include the swept loads). Every figure here says only what the sweep
// knows: a capacity met at the highest measured load in every repetition
// is a lower bound, and repetitions that all agree give no interval (a
// zero-width one would claim the swept loads pinned the capacity down).
func capacity(st *report.Stats, r report.Results, arms []string, groups []Group, bs bootstrapper, baseline string, pair bool) {
	if len(sloChecks(r.SLO)) == 0 {
		st.CapacityNotMeasured = "no SLO declared"
		return
	}
	if cs := r.CapacitySearch; cs != nil && cs.NotRun == "" {
		st.CapacitySuperseded = "the capacity search's figures (capacity_search: arms[].capacity_rps and gains) are this run's capacity answer; " +
			"its probes include the swept loads, so the sweep's own reading is not given"
		return
	}
	top := measuredTop(r, groups)
	perArm := map[string][]float64{}
	perArmReps := map[string][]int{}
	for _, arm := range arms {
		capa, reps := armCapacity(r, groups, bs, arm)
		st.Capacity = append(st.Capacity, capa)
		perArm[arm], perArmReps[arm] = capa.PerRepRPS, reps
	}
	for _, arm := range arms {
		if arm == baseline || report.IsAAArm(arm) {
			continue
		}
		g := bs.ratio(key("capacity-gain", arm), perArm[arm], perArm[baseline], pair && slices.Equal(perArmReps[arm], perArmReps[baseline]))
		g = capacityGainNote(g, groups, top, arm, baseline, perArm[arm], perArm[baseline])
		g = noZeroWidth(g, "every repetition gave the same capacities, each known only to lie between its highest met load and the next measured one, so the gain has no interval")
		st.CapacityGain = append(st.CapacityGain, report.CapacityGain{Candidate: arm, Baseline: baseline, Gain: g})
	}
}

// DerivedSweepLowerBound is a sweep capacity's Estimate.Derived when every
// repetition met the SLOs at the arm's highest measured load: the value is
// that load, a lower bound (Low; no interval, no upper end).
const DerivedSweepLowerBound = "the highest measured load, met in every repetition: a lower bound"

// noZeroWidth drops e's interval when it has zero width (every repetition
// gave the same value), saying why in Note.
func noZeroWidth(e report.Estimate, why string) report.Estimate {
	if e.Interval && e.Low == e.High {
		e.Interval = false
		e.Note = strings.TrimPrefix(e.Note+"; "+why, "; ")
	}
	return e
}

// armCapacity is arm's capacity at the SLOs (as capacity defines it), with
// the next swept load above it, the planned loads left unmeasured below that,
// and the detail of each repetition's first failure and skipped loads; reps
// are the repetitions that decided it, in order.
func armCapacity(r report.Results, groups []Group, bs bootstrapper, arm string) (capa report.Capacity, reps []int) {
	byRep := map[int][]report.Cell{}
	var loads []float64
	for _, g := range groups {
		if g.Arm != arm {
			continue
		}
		loads = append(loads, g.Load)
		for _, c := range g.Cells {
			byRep[c.Repetition] = append(byRep[c.Repetition], c)
		}
	}
	capa = report.Capacity{Arm: arm}
	var firstFail, refused []string
	for _, rep := range slices.Sorted(maps.Keys(byRep)) {
		best, decided, fail, skipped := repCapacity(byRep[rep], r.SLO)
		firstFail, refused = append(firstFail, fail...), append(refused, skipped...)
		if decided { // a repetition with every load unknown says nothing about capacity
			capa.PerRepRPS = append(capa.PerRepRPS, best)
			reps = append(reps, rep)
		}
	}
	capa.CapacityRPS = bs.mean(key("capacity", arm), capa.PerRepRPS)
	switch {
	case len(loads) == 0:
		capa.CapacityRPS.Note = "not measured: no complete cell of " + arm
	case len(capa.PerRepRPS) == 0:
		capa.CapacityRPS.Note = "unknown: no measured load had enough samples to claim the SLO percentile"
	}
	hi := 0.0
	if len(capa.PerRepRPS) > 0 {
		hi = slices.Max(capa.PerRepRPS)
		for _, l := range loads {
			if l > hi {
				capa.NextLoadRPS = l
				break
			}
		}
	}
	for _, l := range plannedLoads(r, arm) {
		if !slices.Contains(loads, l) && (capa.NextLoadRPS == 0 || l < capa.NextLoadRPS) && l > hi {
			capa.NotMeasuredRPS = append(capa.NotMeasuredRPS, l)
		}
	}
	switch {
	case len(loads) > 0 && atTop(capa.PerRepRPS, slices.Max(loads)):
		// Met at the arm's highest measured load in every repetition: the
		// sweep never found where it stops meeting them.
		at := fmt.Sprintf("its highest measured load (%s req/s)", report.Num(hi))
		next := "sweep higher loads"
		if len(capa.NotMeasuredRPS) > 0 {
			next = "run the planned loads (" + report.Nums(capa.NotMeasuredRPS) + " req/s not measured)"
		}
		capa.CapacityRPS = report.Estimate{Value: hi, Low: hi, Reps: len(capa.PerRepRPS), Derived: DerivedSweepLowerBound,
			Note: fmt.Sprintf("a lower bound: %s met the SLOs at %s in every repetition, so its capacity is at least that; %s", arm, at, next)}
	case capa.NextLoadRPS > 0:
		capa.CapacityRPS = noZeroWidth(capa.CapacityRPS, fmt.Sprintf("every repetition's highest met load was %s req/s: the capacity lies between it and the next measured load (%s req/s), which repetitions that agree cannot narrow",
			report.Num(hi), report.Num(capa.NextLoadRPS)))
	}
	var detail []string
	if len(firstFail) > 0 {
		detail = append(detail, "first failure per repetition: "+strings.Join(firstFail, "; "))
	}
	if len(refused) > 0 {
		detail = append(detail, "skipped as unknown: "+strings.Join(refused, "; "))
	}
	capa.Detail = strings.Join(detail, ". ")
	return capa, reps
}

// repCapacity walks one repetition's cells by ascending load: best is the
// highest load that meets slo before the first that misses it (whose reason
// is fail); a load whose sample is too small to claim the percentile is
// unknown, skipped with its reason in refused. decided is false when no load
// was known either way.
func repCapacity(cells []report.Cell, slo report.SLO) (best float64, decided bool, fail, refused []string) {
	slices.SortFunc(cells, func(a, b report.Cell) int { return cmp.Compare(a.OfferedLoadRPS, b.OfferedLoadRPS) })
	for _, c := range cells {
		switch out, why := CheckSLO(c, slo); out {
		case SLOMet:
			best, decided = c.OfferedLoadRPS, true
		case SLORefused:
			refused = append(refused, why) // unknown, not failed: the sweep goes on
		default:
			return best, true, []string{why}, refused
		}
	}
	return best, decided, nil, refused
}

// sweepTop is the highest measured load of a run and how the capacity notes
// name it: with the loads planned above it that an incomplete run did not
// measure (a capacity at the top of what was measured is not at the top of
// the sweep).
type sweepTop struct {
	maxLoad float64
	above   []float64
	text    string
}

// measuredTop is r's sweepTop over groups.
func measuredTop(r report.Results, groups []Group) sweepTop {
	var t sweepTop
	for _, g := range groups {
		t.maxLoad = max(t.maxLoad, g.Load)
	}
	for _, k := range r.RunOrder {
		if k.OfferedLoadRPS > t.maxLoad && !slices.Contains(t.above, k.OfferedLoadRPS) {
			t.above = append(t.above, k.OfferedLoadRPS)
		}
	}
	slices.Sort(t.above)
	t.text = fmt.Sprintf("the highest measured load (%s req/s)", report.Num(t.maxLoad))
	if len(t.above) > 0 {
		t.text = fmt.Sprintf("the highest measured load (%s req/s; planned %s req/s not measured)", report.Num(t.maxLoad), report.Nums(t.above))
	}
	return t
}

// capacityGainNote says why arm's capacity gain g over baseline is undefined,
// unknown or only a lower bound, from the arms' per-repetition capacities
// (capArm, capBase) and the top of the measured sweep.
func capacityGainNote(g report.Estimate, groups []Group, top sweepTop, arm, baseline string, capArm, capBase []float64) report.Estimate {
	switch {
	case !measuredArm(groups, arm) || !measuredArm(groups, baseline):
		g.Note = "not measured: no complete cell of " + strings.Join(unmeasuredOf(groups, arm, baseline), " or ") + ", so the capacity gain is undefined"
	case len(capArm) == 0 || len(capBase) == 0:
		g.Note = "unknown: an arm's capacity is unknown (no measured load had enough samples to claim the SLO percentile), so the gain is undefined"
	case g.Note == "baseline mean is 0: ratio undefined":
		g.Note = "undefined: the baseline met the SLOs at no measured load"
	case atTop(capArm, top.maxLoad) && atTop(capBase, top.maxLoad):
		g = report.Estimate{Note: fmt.Sprintf("unknown: both arms met the SLOs at %s: each capacity is at least that, so the gain is unknown; %s", top.text, report.OrText(onlyIf(len(top.above) > 0, "run the planned loads"), "sweep higher loads"))}
	case atTop(capArm, top.maxLoad):
		lower := fmt.Sprintf("a lower bound: %s met the SLOs at %s, so its capacity may be higher", arm, top.text)
		if g.Note != "" {
			lower = g.Note + "; " + lower
		}
		g.Note = lower
	}
	return g
}

// plannedLoads lists the loads r.RunOrder planned for arm, ascending.
func plannedLoads(r report.Results, arm string) []float64 {
	var out []float64
	for _, k := range r.RunOrder {
		if k.Arm == arm && !slices.Contains(out, k.OfferedLoadRPS) {
			out = append(out, k.OfferedLoadRPS)
		}
	}
	slices.Sort(out)
	return out
}

// measuredArm reports whether arm has a complete cell.
func measuredArm(groups []Group, arm string) bool {
	return slices.ContainsFunc(groups, func(g Group) bool { return g.Arm == arm })
}

// unmeasuredOf lists the arms among arms with no complete cell.
func unmeasuredOf(groups []Group, arms ...string) []string {
	var out []string
	for _, a := range arms {
		if !measuredArm(groups, a) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// onlyIf is s when cond holds, else "".
func onlyIf(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}

// key joins parts into a bootstrap stream key.
func key(parts ...any) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		switch v := p.(type) {
		case float64:
			s[i] = strconv.FormatFloat(v, 'g', -1, 64)
		default:
			s[i] = fmt.Sprint(v)
		}
	}
	return strings.Join(s, "|")
}

func pairingText(independent bool) string {
	if independent {
		return "repetitions resampled independently: the runs were not interleaved; request-by-request ratios pair the two runs' requests by ID, both runs replaying one schedule"
	}
	return "ratios paired by repetition when both arms ran the same ones"
}

// atTop reports whether every repetition's capacity is the highest swept
// load: the sweep never found where the arm stops meeting its SLOs.
func atTop(perRep []float64, maxLoad float64) bool {
	if len(perRep) == 0 {
		return false
	}
	for _, v := range perRep {
		if v < maxLoad {
			return false
		}
	}
	return true
}

// deref is cellValue's answer for an optional per-window figure: not ok when nil.
func deref(v *float64) (float64, bool, error) {
	if v == nil {
		return 0, false, nil
	}
	return *v, true, nil
}

func Mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
