package analysis

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
)

// The clauses of DESIGN.md's decision rule, in order.
const (
	clauseValidation   = "a"
	clauseLatency      = "b"
	clauseVRAM         = "c"
	clauseReproducible = "d"
)

// decide reaches the verdict for one candidate. Every clause is evaluated; a
// clause the rule does not declare is "not declared" and decides nothing. The
// first failing clause (a, b, c, d order) decides a fail; failing none, the
// first inconclusive one decides inconclusive; otherwise the candidate passes
// and clause b, the improvement, is named.
func decide(r report.Results, rule report.DecisionRule, cand string) report.Verdict {
	v := report.Verdict{Candidate: cand, Baseline: rule.Baseline, ClientBound: ClientBoundNote(r.Cells)}
	v.Clauses = []report.ClauseResult{
		clauseA(r, rule, cand),
		clauseB(r, rule, cand),
		clauseC(r, rule, cand),
		clauseD(r, rule),
	}
	loads := classifyLoads(r, rule, cand)
	for _, outcome := range []string{report.VerdictFail, report.VerdictInconclusive, report.VerdictNoDifference} {
		for _, c := range v.Clauses {
			if c.Outcome == outcome {
				v.Outcome, v.DecidingClause = outcome, c.Clause
				v.Reason = c.Name + ": " + c.Detail
				v.Summary = verdictSummary(v, c, rule, loads)
				if outcome == report.VerdictNoDifference {
					v.Summary += belowResolution(r, cand, loads)
					v.RegressionNotRuledOut = regressionNotRuledOut(loads)
				}
				return v
			}
		}
	}
	v.Outcome, v.DecidingClause = report.VerdictPass, clauseLatency
	v.Summary = verdictSummary(v, v.Clauses[1], rule, loads)
	v.RegressionNotRuledOut = regressionNotRuledOut(loads)
	var declared []string
	for _, c := range v.Clauses {
		if c.Outcome != report.ClauseNotDeclared {
			declared = append(declared, c.Clause)
		}
	}
	v.Reason = fmt.Sprintf("%s: %s (every declared clause passed: %s)", v.Clauses[1].Name, v.Clauses[1].Detail, strings.Join(declared, ", "))
	return v
}

// belowResolution tells a candidate found no different why, when its Amdahl
// bound is known (r.Amdahl at the loads clause b compared): "; below
// resolution: its Amdahl bound 1.0157 (at most 1.5 % faster in service
// time) is within this run's resolution ±5.8 %", the most it could gain
// against the narrowest resolution among those loads; or, with a bound above
// the resolution, that a run of finer resolution (more blocks) could see it.
// "" when no bound or resolution is known.
func belowResolution(r report.Results, cand string, loads []classedLoad) string {
	if r.Amdahl == nil {
		return ""
	}
	bound, res := 0.0, math.Inf(1)
	for _, l := range loads {
		if l.class != loadSame || l.ratio.Resolution == nil {
			continue
		}
		for _, a := range r.Amdahl.Loads {
			if a.Candidate == cand && a.OfferedLoadRPS == l.ratio.OfferedLoadRPS && a.Bound > 0 {
				bound = max(bound, a.Bound)
				res = min(res, *l.ratio.Resolution)
			}
		}
	}
	if bound == 0 || math.IsInf(res, 1) {
		return ""
	}
	gain := 1 - 1/bound
	b := fmt.Sprintf("its Amdahl bound %.4f (at most %s faster in service time)", bound, report.PctOf(gain))
	if gain <= res {
		return "; below resolution: " + b + " is within this run's resolution " + report.ResolutionText(&res)
	}
	return "; " + b + " is above this run's resolution " + report.ResolutionText(&res) + ": a run with more blocks (repetitions) may resolve it"
}

// VerdictLine is a verdict in one line a buyer reads: "cand vs base: " and
// Verdict.Summary (one sentence: outcome, the change on the decision metric
// with its interval and load, the run's resolution). A results file written
// before Summary existed gets "OUTCOME (clause b: <clause name>: <detail>)".
// Renderers and the console summary print this line; the clause table keeps
// the full detail.
//
// When cells were client-bound the line ends with "; warning: N of M cells
// client-bound: their figures are suspect".
func VerdictLine(v report.Verdict) string {
	s := fmt.Sprintf("%s vs %s: %s", v.Candidate, v.Baseline, v.Summary)
	if v.Summary == "" {
		s = fmt.Sprintf("%s vs %s: %s (clause %s: %s)", v.Candidate, v.Baseline, strings.ToUpper(v.Outcome), v.DecidingClause, v.Reason)
	}
	if v.ClientBound != "" {
		s += "; warning: " + v.ClientBound
	}
	return s
}

// ClientBoundNote is "N of M cells client-bound: their figures are suspect"
// over cells (Cell.ClientBound), or "" when none is flagged.
func ClientBoundNote(cells []report.Cell) string {
	n := 0
	for _, c := range cells {
		if c.ClientBound {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d cells client-bound: their figures are suspect", n, len(cells))
}

// DispatchLagFlagText is what ClientBound was decided on, labelled
// truthfully: "7 of 220 sends more than 1 ms late (dispatch lag p99 1.343
// ms)", or, below 100 samples, where the nearest-rank p99 is the largest
// sample, "3 of 30 sends more than 1 ms late (dispatch lag max 17.440 ms)".
func DispatchLagFlagText(c report.Cell) string {
	label := "dispatch lag p99"
	if c.DispatchLag.N < nearestRankP99IsMaxBelow {
		label = "dispatch lag max"
	}
	return fmt.Sprintf("%d of %d sends more than %s ms late (%s %.3f ms)", c.DispatchLateSends, c.DispatchLag.N,
		report.Num(DefaultClientBoundLag.Seconds()*1000), label, c.DispatchLagP99ForFlagMs)
}

// ClientBoundRule is the client-bound rule in words, from the constants
// loadgen.ClientBound tests with: "more than 1 % of the cell's sends left the
// client more than 1.00 ms late, at 99 % confidence".
func ClientBoundRule() string {
	return fmt.Sprintf("more than %s %% of the cell's sends left the client more than %s ms late, at %s %% confidence",
		strconv.FormatFloat(100*loadgen.ClientBoundShare, 'f', -1, 64), report.Num(DefaultClientBoundLag.Seconds()*1000),
		strconv.FormatFloat(100*loadgen.ClientBoundConfidence, 'f', -1, 64))
}

// nearestRankP99IsMaxBelow: for n < 100, ceil(0.99 n) = n, so the
// nearest-rank p99 is the n-th (largest) sample.
const nearestRankP99IsMaxBelow = 100

func clauseA(r report.Results, rule report.DecisionRule, cand string) report.ClauseResult {
	c := report.ClauseResult{Clause: clauseValidation, Name: "validation covers the served shapes"}
	if !rule.RequireValidation {
		c.Outcome, c.Detail = report.ClauseNotDeclared, "the rule does not require validation"
		return c
	}
	if r.Validation == nil || r.Validation.NotMeasured != "" {
		c.Outcome, c.Detail = report.VerdictFail, "no validation section: "+report.OrText(sectionNote(r.Validation), "absent")
		return c
	}
	i := slices.IndexFunc(r.Validation.Candidates, func(v report.ValidationCandidate) bool { return v.Candidate == cand })
	if i < 0 {
		c.Outcome, c.Detail = report.VerdictFail, "no validation report for "+cand
		return c
	}
	vc := r.Validation.Candidates[i]
	switch {
	case vc.Verdict != report.VerdictPass:
		c.Outcome, c.Detail = report.VerdictFail, fmt.Sprintf("validation report %s says %q (failed gates: %s)", report.Short(vc.ReportSHA256), vc.Verdict, report.OrText(strings.Join(vc.FailedGates, ", "), "none listed"))
		return c
	case vc.UncoveredShapes > 0:
		c.Outcome, c.Detail = report.VerdictFail, fmt.Sprintf("%d served shapes are not covered by validation report %s", vc.UncoveredShapes, report.Short(vc.ReportSHA256))
		return c
	}
	if r.Hook != nil {
		for _, h := range r.Hook.Arms {
			if h.Arm == cand && h.CallsEager+h.CallsCapture == 0 {
				c.Outcome, c.Detail = report.VerdictFail, "the hook counted no calls of "+h.Target+": the candidate never ran"
				return c
			}
		}
	}
	c.Outcome, c.Detail = report.VerdictPass, fmt.Sprintf("report %s passed and covers every served shape", report.Short(vc.ReportSHA256))
	return c
}

func sectionNote(v *report.ValidationSection) string {
	if v == nil {
		return ""
	}
	return v.NotMeasured
}

// clauseB: the rule metric's candidate/baseline ratio at every common load,
// against the threshold T = 1 + margin and the run's resolution ρ (the A/A
// noise floor, Ratio.Resolution); L = max(T, 1 + ρ) (T when ρ is not
// measured). At one load:
//   - the whole interval above L fails (a regression beyond the margin and
//     the resolution);
//   - any other interval that contains 1, or a ratio within 1 ± ρ, is no
//     difference detectable at this run's resolution: the verdict states
//     what the run detected. When its high end reaches L or past it, the
//     detail and the verdict's summary say "a regression up to X % is not
//     ruled out at this run's resolution" (X = high end − 1), and
//     Verdict.RegressionNotRuledOut carries it: a canary gate does not pass
//     it (canary.Comparison.Gate). Asking a no-difference interval to end
//     below L as well asked the B/A interval to lie inside the reach of an
//     A/A interval of about its own width, so a true no-change read "no
//     difference" only when its point landed within (resolution −
//     half-width) of 1: the quickstart's rmsnorm-2.5x in 176 of 200 seeds
//     (20 inconclusive, 4 a resolved PASS), now in 196 (experiment's
//     TestQuickstartVerdicts);
//   - any other interval below L passes (it excludes 1 below, its ratio
//     lies beyond the resolution: a difference the run can detect, no
//     regression beyond the margin);
//   - an interval that excludes 1 above with its low end at or below L (a
//     slowdown detected, beyond the resolution, not beyond L) straddles;
//   - an interval that carries no run-to-run spread from the blocks it may
//     count (ν = 0: no A/A block and fewer than 2 blocks of every arm at
//     that load once client-bound blocks are left out; unresolvedWhy) is
//     inconclusive whatever it says: the spread inside one cell, or the
//     spread of client-bound blocks, is not a cell's own shift (another
//     server start, another few minutes), which is larger on a GPU;
//   - anything else (an interval straddling L, no interval) is inconclusive.
//
// Loads whose ratio is Excluded (a client-bound cell) are listed and decide
// nothing, with or without an interval; one with no ratio at all says why
// there is none (inconclusive), as that reason comes first. Over the loads: any fail fails; else any inconclusive load makes
// the clause inconclusive; else any pass passes; else no difference.
func clauseB(r report.Results, rule report.DecisionRule, cand string) report.ClauseResult {
	c := report.ClauseResult{Clause: clauseLatency, Name: fmt.Sprintf("%s %s: a difference beyond the run's resolution, no regression beyond the margin", rule.Metric, RuleStat(rule))}
	thr := 1 + rule.RegressionMargin
	var fails, incs, passes, same, excluded []string
	// Loads without an interval share a reason (often "1 repetition: …"):
	// it is said once per reason, with the loads and their ratios.
	var notes []string
	noInterval := map[string][]string{}
	for _, l := range classifyLoads(r, rule, cand) {
		q, e := l.ratio, l.ratio.Value
		desc := fmt.Sprintf("at %s req/s ratio %s", report.Num(q.OfferedLoadRPS), report.EstimateText(e, ""))
		if q.Resolution != nil {
			desc += ", resolution " + report.ResolutionText(q.Resolution)
		}
		switch l.class {
		case loadExcluded:
			excluded = append(excluded, fmt.Sprintf("%s req/s (%s)", report.Num(q.OfferedLoadRPS), q.Excluded))
		case loadNoInterval:
			// "no interval (why): ratio 0.98 at 3.00 req/s, …" or, with no value, "no ratio (why) at …".
			note, at := "no interval ("+report.OrText(e.Note, "no reason recorded")+"): ratio ", report.Num(e.Value)+" at "+report.Num(q.OfferedLoadRPS)+" req/s"
			if e.Reps == 0 { // no value: printing "ratio 0" would contradict the note
				note, at = "no ratio ("+report.UndefinedText(e)+") at ", report.Num(q.OfferedLoadRPS)+" req/s"
			}
			if _, ok := noInterval[note]; !ok {
				notes = append(notes, note)
			}
			noInterval[note] = append(noInterval[note], at)
		case loadUnresolved:
			incs = append(incs, desc+": "+l.unresolved)
		case loadFail:
			fails = append(fails, desc)
		case loadSame:
			if l.openRegression {
				desc += " (its high end " + report.Num(q.Value.High) + " reaches past the limit " + report.Num(l.limit) + ": " + regressionOpenText(l) + ")"
			}
			same = append(same, desc)
		case loadPass:
			passes = append(passes, desc)
		default:
			lim := "straddles " + report.Num(l.limit)
			if l.limit > thr {
				lim += " (the limit is 1 + this run's resolution where that exceeds 1 + margin: a regression must lie beyond both)"
			}
			incs = append(incs, desc+" "+lim)
		}
	}
	for _, n := range notes {
		incs = append(incs, n+strings.Join(noInterval[n], ", "))
	}
	limit := "threshold 1 + margin = " + report.Num(thr)
	var tail []string
	if len(same) > 0 {
		tail = append(tail, "no difference detectable "+strings.Join(same, "; "))
	}
	if len(excluded) > 0 {
		tail = append(tail, "excluded from the verdict: "+strings.Join(excluded, "; "))
	}
	rest := ""
	if len(tail) > 0 {
		rest = "; " + strings.Join(tail, "; ")
	}
	switch {
	case len(fails) > 0:
		c.Outcome, c.Detail = report.VerdictFail, "regressed beyond the margin "+strings.Join(fails, "; ")+" ("+limit+")"+rest
	case len(incs) > 0:
		c.Outcome, c.Detail = report.VerdictInconclusive, strings.Join(incs, "; ")+" ("+limit+")"+rest
	case len(passes) > 0:
		c.Outcome, c.Detail = report.VerdictPass, "beyond the resolution and below "+report.Num(thr)+" "+strings.Join(passes, "; ")+rest
	case len(same) > 0:
		c.Outcome, c.Detail = report.VerdictNoDifference, "no difference detectable at this run's resolution "+strings.Join(same, "; ")+onlyIf(len(excluded) > 0, "; excluded from the verdict: "+strings.Join(excluded, "; "))
	case len(excluded) > 0:
		c.Outcome, c.Detail = report.VerdictInconclusive, "every load was excluded from the verdict: "+strings.Join(excluded, "; ")
	default:
		c.Outcome, c.Detail = report.VerdictInconclusive, "no offered load measured both arms"
	}
	return c
}

// How clause b classes one load's ratio (classifyLoads).
const (
	loadExcluded   = "excluded"    // a client-bound cell: shown, decides nothing
	loadNoInterval = "no interval" // no interval (or no ratio): inconclusive
	loadFail       = "fail"        // the whole interval above the limit
	loadSame       = "same"        // within the resolution, or an interval containing 1
	loadPass       = "pass"        // a detectable difference below the limit
	loadStraddle   = "straddle"    // the interval straddles the limit
	loadUnresolved = "unresolved"  // an interval with no run-to-run spread in it: inconclusive
)

// unresolvedText says why an interval with no run-to-run spread decides
// nothing (clause b's loadUnresolved) in a run that planned it so: no A/A
// replicate and 1 repetition. unresolvedWhy says it of an interrupted run
// and of one whose client-bound blocks were left out.
const unresolvedText = "decides nothing: this run's resolution was not measured (no A/A replicate) and 1 repetition gives no run-to-run spread, " +
	"so the interval holds the requests' spread inside one cell only, not how far a whole cell moves from one run to the next; " +
	"run ≥ 2 repetitions or keep resolution.aa_replicate on"

// unresolvedWhy is why q (cand's ratio) decides nothing: the blocks it may
// count at its load give no run-to-run spread (ν = 0). unresolvedText when
// the run planned no more; otherwise what took the blocks away: the run
// stopped early (r.Complete false) before cells it planned at that load ran
// (r.RunOrder: the A/A replicate's, when none of its blocks ran, or another
// block of the baseline or cand), and, when a cell at that load is
// client-bound, the blocks left out for it (the only A/A block, say). "…
// the run stopped early (interrupted by SIGINT) before the A/A replicate
// and blocks 2–3 of 3 at this load ran, so …; `run --resume DIR` runs the
// missing cells". With client-bound blocks left out, the interval shown is
// widened by the spread over every block (Analyze), and the text says so.
func unresolvedWhy(r report.Results, groups []Group, baseline, cand string, q report.Ratio) string {
	load := q.OfferedLoadRPS
	var at []Group
	for _, g := range groups {
		if g.Load == load {
			at = append(at, g)
		}
	}
	flagged := flaggedCells(at...)
	var what []string
	if !r.Complete {
		what = stoppedBefore(r, baseline, cand, load)
	}
	if len(what) == 0 && flagged == "" {
		return unresolvedText
	}
	var causes []string
	if len(what) > 0 {
		causes = append(causes, "the run stopped early ("+report.OrText(r.IncompleteReason, "no reason recorded")+") before "+strings.Join(what, " and ")+" at this load ran")
	}
	if flagged == "" {
		return "decides nothing: " + causes[0] + ", so this run's resolution was not measured and the cells that ran give no run-to-run spread: " +
			"the interval holds the requests' spread inside one cell only, not how far a whole cell moves from one run to the next; " +
			"`run --resume DIR` runs the missing cells"
	}
	causes = append(causes, "the blocks with a client-bound cell ("+flagged+") are left out")
	s := "decides nothing: " + strings.Join(causes, ", and ") + ", so the blocks that count give no run-to-run spread (ν = 0): "
	if spreadAt(groups, baseline, load, q.Metric, q.Stat, true).df > 0 {
		s += "the interval shown is widened by the spread over every block, client-bound ones included, so it is no narrower than its blocks, but a client-bound block may measure the client's pace, not the server's"
	} else {
		s += "the interval holds the requests' spread inside one cell only, not how far a whole cell moves from one run to the next"
	}
	if len(what) > 0 {
		return s + "; `run --resume DIR` runs the missing cells"
	}
	return s + "; rerun with more repetitions or on a less loaded client machine"
}

// stoppedBefore is what an interrupted run had not run at load for cand's
// comparison (r.RunOrder against r's complete cells): "the A/A replicate
// (resolution.aa_replicate is on)" when none of its blocks ran, and
// "blocks (repetitions) 2–3 of 3" of the baseline and cand.
func stoppedBefore(r report.Results, baseline, cand string, load float64) []string {
	ran := map[report.CellKey]bool{}
	for _, c := range r.Cells {
		if c.Incomplete == "" {
			ran[report.CellKey{Arm: c.Arm, OfferedLoadRPS: c.OfferedLoadRPS, Repetition: c.Repetition}] = true
		}
	}
	aa := report.AAArm(baseline)
	aaPlanned, aaRan := false, false
	planned, missing := map[int]bool{}, map[int]bool{}
	for _, k := range r.RunOrder {
		if k.OfferedLoadRPS != load {
			continue
		}
		switch k.Arm {
		case aa:
			aaPlanned = true
			aaRan = aaRan || ran[k]
		case baseline, cand:
			planned[k.Repetition] = true
			if !ran[k] {
				missing[k.Repetition] = true
			}
		}
	}
	var what []string
	if aaPlanned && !aaRan {
		what = append(what, "the A/A replicate (resolution.aa_replicate is on)")
	}
	if len(planned) > 1 && len(missing) > 0 {
		reps := slices.Sorted(maps.Keys(missing))
		b := fmt.Sprintf("block %d", reps[0]+1)
		if len(reps) > 1 {
			b = fmt.Sprintf("blocks (repetitions) %s", joinReps(reps))
		}
		what = append(what, fmt.Sprintf("%s of %d", b, len(planned)))
	}
	return what
}

// joinReps says 0-based repetitions 1-based: "2–3" for a run of them, else
// "2, 4".
func joinReps(reps []int) string {
	if reps[len(reps)-1]-reps[0] == len(reps)-1 {
		return fmt.Sprintf("%d–%d", reps[0]+1, reps[len(reps)-1]+1)
	}
	var s []string
	for _, r := range reps {
		s = append(s, strconv.Itoa(r+1))
	}
	return strings.Join(s, ", ")
}

// classedLoad is one load's decision-metric ratio, its class and the limit
// L = max(1 + margin, 1 + resolution) it was held against.
type classedLoad struct {
	ratio report.Ratio
	class string
	limit float64
	// openRegression: a loadSame whose interval's high end reaches L or
	// past it, so a regression up to High − 1 is not ruled out
	// (regressionOpenText).
	openRegression bool
	// unresolved is why a loadUnresolved decides nothing (unresolvedWhy).
	unresolved string
}

// regressionOpenText says what a no-difference interval reaching past L
// leaves open: "a regression up to 6.0 % is not ruled out at this run's
// resolution".
func regressionOpenText(l classedLoad) string {
	return "a regression up to " + pct1(l.ratio.Value.High-1) + " is not ruled out at this run's resolution"
}

// pct1 is a fraction as a percentage, one decimal from 1 % up ("6.0 %"),
// report.PctOf's precision below.
func pct1(d float64) string {
	if math.Abs(d) >= 0.01 {
		return fmt.Sprintf("%.1f %%", 100*d)
	}
	return report.PctOf(d)
}

// regressionNotRuledOut is the largest High − 1 over the loads a
// no-difference reading leaves a regression open at (openRegression), for
// Verdict.RegressionNotRuledOut; nil when none does.
func regressionNotRuledOut(loads []classedLoad) *float64 {
	var out *float64
	for _, l := range loads {
		if l.class == loadSame && l.openRegression {
			d := l.ratio.Value.High - 1
			if out == nil || d > *out {
				out = &d
			}
		}
	}
	return out
}

// classifyLoads classes the rule metric's ratio of cand at every load, as
// clauseB's doc says; clauseB and verdictSummary read the one classing.
func classifyLoads(r report.Results, rule report.DecisionRule, cand string) []classedLoad {
	if r.Stats == nil {
		return nil
	}
	stat := RuleStat(rule)
	thr := 1 + rule.RegressionMargin
	groups := GroupCells(r)
	var out []classedLoad
	for _, q := range r.Stats.Ratios {
		if q.Candidate != cand || q.Metric != rule.Metric || q.Stat != stat {
			continue
		}
		e := q.Value
		within := q.Resolution != nil && math.Abs(e.Value-1) <= *q.Resolution
		// A regression is one beyond both the margin and the resolution.
		lim := thr
		if q.Resolution != nil {
			lim = max(thr, 1+*q.Resolution)
		}
		l := classedLoad{ratio: q, limit: lim}
		switch {
		case q.Excluded != "" && (e.Interval || e.Reps > 0):
			// A client-bound ratio is shown and decides nothing; with no
			// ratio at all, why there is none (e.g. failed requests) comes first.
			l.class = loadExcluded
		case !e.Interval:
			l.class = loadNoInterval
		case spreadAt(groups, rule.Baseline, q.OfferedLoadRPS, q.Metric, q.Stat, false).df == 0 && (q.Resolution == nil || hasLoad(groups, q.OfferedLoadRPS)):
			// The blocks it may count give no run-to-run spread (ν = 0):
			// too narrow to decide on, whatever took them away (no A/A
			// replicate and 1 repetition, a stop, client-bound blocks: a
			// resolution measured on a client-bound A/A block alone does
			// not count). Ratios without cells (a stats section alone)
			// are taken at their resolution's word.
			l.class, l.unresolved = loadUnresolved, unresolvedWhy(r, groups, rule.Baseline, cand, q)
		case e.Low > lim:
			l.class = loadFail
		case (e.Low <= 1 && 1 <= e.High) || within:
			l.class = loadSame
			l.openRegression = e.High >= lim
		case e.High < lim:
			l.class = loadPass
		default:
			l.class = loadStraddle
		}
		out = append(out, l)
	}
	return out
}

// hasLoad says whether groups hold a cell at load.
func hasLoad(groups []Group, load float64) bool {
	return slices.ContainsFunc(groups, func(g Group) bool { return g.Load == load })
}

// verdictSummary is the verdict in one sentence (Verdict.Summary): decided
// by clause b, the change on the decision metric at the loads of the
// deciding class ("mean E2E vs the baseline: 14.7 % lower at 3.00 req/s (ratio
// 0.853, 95 % interval [0.842, 0.863]; resolution ±0.08 %)"), then the loads
// left out; decided by another clause, that clause's name and detail.
func verdictSummary(v report.Verdict, decider report.ClauseResult, rule report.DecisionRule, loads []classedLoad) string {
	out := strings.ToUpper(v.Outcome)
	if v.DecidingClause != clauseLatency {
		return out + ": " + decider.Name + ": " + decider.Detail
	}
	metric := metricLabel(rule)
	pick := func(class string) []string {
		var s []string
		for _, l := range loads {
			if l.class == class {
				c := changeAt(l, rule)
				if l.openRegression {
					c += ", but " + regressionOpenText(l) + " (its high end lies past the limit " + report.Num(l.limit) + ")"
				}
				s = append(s, c)
			}
		}
		return s
	}
	n, left := 0, 0
	for _, l := range loads {
		n++
		if l.class == loadExcluded {
			left++
		}
	}
	var s string
	switch v.Outcome {
	case report.VerdictPass:
		beyond := "beyond this run's resolution"
		if slices.ContainsFunc(loads, func(l classedLoad) bool { return l.class == loadPass && l.ratio.Resolution == nil }) {
			beyond = "its interval excludes no change (this run's resolution was not measured: no A/A replicate)"
		}
		s = fmt.Sprintf("%s: %s vs the baseline: %s; %s, with no regression beyond the %s margin", out, metric, strings.Join(pick(loadPass), "; "), beyond, report.PctOf(rule.RegressionMargin))
		for _, l := range loads {
			if l.class == loadSame && l.openRegression {
				s += fmt.Sprintf("; at %s req/s no difference detectable (ratio %s), but %s (its high end lies past the limit %s)", report.Num(l.ratio.OfferedLoadRPS), report.EstimateText(l.ratio.Value, ""), regressionOpenText(l), report.Num(l.limit))
			}
		}
	case report.VerdictFail:
		s = fmt.Sprintf("%s: %s vs the baseline: %s: a regression beyond the %s margin", out, metric, strings.Join(pick(loadFail), "; "), report.PctOf(rule.RegressionMargin))
	case report.VerdictNoDifference:
		s = fmt.Sprintf("%s: no change in %s this run can detect: %s", out, metric, strings.Join(pick(loadSame), "; "))
	default:
		switch {
		case n == 0:
			return out + ": no offered load measured both arms"
		case left == n:
			return fmt.Sprintf("%s: at every load (%d) the blocks left once those with a client-bound cell are left out are fewer than 2, so none decides; a less loaded client machine measures them", out, n)
		}
		// Loads without an interval share a reason: said once, with the loads.
		var why, reasons []string
		byReason := map[string][]string{}
		for _, l := range loads {
			e := l.ratio.Value
			switch l.class {
			case loadUnresolved:
				why = append(why, fmt.Sprintf("%s ratio %s at %s req/s %s", metric, report.EstimateText(e, ""), report.Num(l.ratio.OfferedLoadRPS), l.unresolved))
			case loadStraddle:
				why = append(why, fmt.Sprintf("%s ratio %s at %s req/s straddles the limit %s, so the run cannot tell a gain from a regression", metric, report.EstimateText(e, ""), report.Num(l.ratio.OfferedLoadRPS), report.Num(l.limit)))
			case loadNoInterval:
				reason := report.OrText(e.Note, "no reason recorded")
				if e.Reps == 0 {
					reason = report.UndefinedText(e)
				}
				if _, ok := byReason[reason]; !ok {
					reasons = append(reasons, reason)
				}
				byReason[reason] = append(byReason[reason], report.Num(l.ratio.OfferedLoadRPS))
			}
		}
		for _, reason := range reasons {
			why = append(why, fmt.Sprintf("no interval for %s at %s req/s: %s", metric, strings.Join(byReason[reason], ", "), reason))
		}
		s = out + ": " + strings.Join(why, "; ")
	}
	if left > 0 {
		s += fmt.Sprintf("; %d of %d loads left out (client-bound)", left, n)
	}
	var blocks []string
	for _, l := range loads {
		if l.class != loadExcluded && l.ratio.LeftOut != "" {
			blocks = append(blocks, l.ratio.LeftOut+" at "+report.Num(l.ratio.OfferedLoadRPS)+" req/s")
		}
	}
	if len(blocks) > 0 {
		s += "; blocks left out (a client-bound cell: the client may have set the pace; the other blocks decide): " + strings.Join(blocks, "; ")
	}
	return s
}

// metricLabel is the rule's decision metric as a reader says it: "mean E2E", "TTFT p99".
func metricLabel(rule report.DecisionRule) string {
	m := strings.ToUpper(rule.Metric)
	if rule.UseMean {
		return "mean " + m
	}
	return m + " " + RuleStat(rule)
}

// changeAt says one load's ratio as a change: "14.7 % lower at 3.00 req/s (ratio 0.853, 95 % interval [0.842, 0.863],
// resolution ±0.08 %)".
func changeAt(l classedLoad, rule report.DecisionRule) string {
	e := l.ratio.Value
	dir := "lower"
	if e.Value > 1 {
		dir = "higher"
	}
	ds := pct1(math.Abs(e.Value - 1))
	s := fmt.Sprintf("%s %s at %s req/s (ratio %s, %s %% interval [%s, %s]", ds, dir, report.Num(l.ratio.OfferedLoadRPS), report.Num(e.Value), strconv.FormatFloat(100*rule.IntervalLevel, 'f', -1, 64), report.Num(e.Low), report.Num(e.High))
	if l.ratio.Resolution != nil {
		s += ", resolution " + report.ResolutionText(l.ratio.Resolution)
	}
	return s + ")"
}

func clauseC(r report.Results, rule report.DecisionRule, cand string) report.ClauseResult {
	c := report.ClauseResult{Clause: clauseVRAM, Name: "peak VRAM within budget"}
	if rule.VRAMBudgetBytes == 0 {
		c.Outcome, c.Detail = report.ClauseNotDeclared, "no VRAM budget declared"
		return c
	}
	var peak uint64
	measured := 0
	if r.Energy != nil && r.Energy.NotMeasured == "" {
		for _, e := range r.Energy.Cells {
			if e.Arm == cand && e.Available && e.Has("peak_vram_bytes") {
				measured++
				peak = max(peak, e.PeakVRAMBytes)
			}
		}
	}
	switch {
	case measured == 0:
		c.Outcome, c.Detail = report.VerdictInconclusive, fmt.Sprintf("budget %d bytes declared but the candidate's VRAM was not measured", rule.VRAMBudgetBytes)
	case peak > rule.VRAMBudgetBytes:
		c.Outcome, c.Detail = report.VerdictFail, fmt.Sprintf("peak VRAM %d bytes > budget %d bytes", peak, rule.VRAMBudgetBytes)
	default:
		c.Outcome, c.Detail = report.VerdictPass, fmt.Sprintf("peak VRAM %d bytes ≤ budget %d bytes over %d cells", peak, rule.VRAMBudgetBytes, measured)
	}
	return c
}

func clauseD(r report.Results, rule report.DecisionRule) report.ClauseResult {
	c := report.ClauseResult{Clause: clauseReproducible, Name: "reproducible from the manifest"}
	if !rule.RequireReproducible {
		c.Outcome, c.Detail = report.ClauseNotDeclared, "the rule does not require reproducibility"
		return c
	}
	var missing []string
	if !r.Complete {
		missing = append(missing, "run incomplete ("+report.OrText(r.IncompleteReason, "no reason")+")")
	}
	if r.Manifest.ConfigSHA256 == "" {
		missing = append(missing, "config hash missing")
	}
	if r.Trace.SHA256 == "" {
		missing = append(missing, "trace hash missing")
	}
	if len(missing) > 0 {
		c.Outcome, c.Detail = report.VerdictFail, strings.Join(missing, "; ")
		return c
	}
	c.Outcome, c.Detail = report.VerdictPass, fmt.Sprintf("complete; config %s, trace %s, seed %d recorded", report.Short(r.Manifest.ConfigSHA256), report.Short(r.Trace.SHA256), r.Manifest.Seed)
	return c
}
