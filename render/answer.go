package render

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
)

// AnswerBlock is the first-screen answer for one candidate: its lines, in
// the order a buyer asks (verdict; measured gain on the decision metric with
// interval and resolution; Amdahl bound; capacity at SLO; cost and energy
// change; the one warning that matters most). report.md, report.html and
// the console print the same lines.
type AnswerBlock struct {
	Candidate string
	Lines     []string
}

// Answer builds one AnswerBlock per verdict of r (Analyze must have run).
func Answer(r report.Results) []AnswerBlock {
	if r.Rule == nil {
		return nil
	}
	var out []AnswerBlock
	for _, v := range r.Verdicts {
		b := AnswerBlock{Candidate: v.Candidate}
		add := func(s string) {
			if s != "" {
				b.Lines = append(b.Lines, s)
			}
		}
		add("verdict: " + report.OrText(v.Summary, strings.ToUpper(v.Outcome)+" ("+v.Reason+")"))
		add(gainLine(r, v.Candidate))
		add(boundLine(r, v.Candidate))
		add(capacityGainLine(r, v.Candidate))
		add(changeLine(r, v.Candidate, "cost per 1M output tokens", costAtLoadNote, costPer1M))
		add(changeLine(r, v.Candidate, "GPU energy per output token", "", joulesPerToken))
		add(mainWarning(r, v))
		out = append(out, b)
	}
	return out
}

// AboveBoundNote says why a measured gain past the Amdahl bound
// (ExceedsBound) is not an error; printed wherever such a load is marked
// (console, report.md, report.html).
const AboveBoundNote = "the measured speedup's interval lies above the Amdahl bound's (its lower end past the bound's upper end); the bound holds for service time, and under load a shorter service also shortens the queue, so queueing amplifies the gain past the bound (the simulator's truth shows the same)"

// ExceedsBound tells whether l's measured speedup (its TransferMetric, with
// an interval over blocks) lies above the bound: the interval's lower end
// past the bound's upper end (amdahl.Compare's VerdictAbove). A point
// estimate above the bound, or an interval reaching it, does not (the
// efficiency may still read > 1).
func ExceedsBound(l report.AmdahlLoad) bool {
	if l.TransferMetric == "" || l.Verdict != string(amdahl.VerdictAbove) {
		return false
	}
	for _, m := range l.Measured {
		if m.Metric+" "+m.Stat == l.TransferMetric {
			return m.Value.Interval && m.Value.Reps > 0
		}
	}
	return false
}

// gainLine is the decision metric's candidate/baseline ratio at every load
// in one line, labelled with its direction (report.RatioLabel): value,
// interval, resolution, the simulator's truth where known, and the loads
// that feed no verdict.
func gainLine(r report.Results, cand string) string {
	if r.Stats == nil {
		return ""
	}
	stat := analysis.RuleStat(*r.Rule)
	var parts []string
	for _, q := range r.Stats.Ratios {
		if q.Candidate != cand || q.Metric != r.Rule.Metric || q.Stat != stat {
			continue
		}
		s := report.EstimateText(q.Value, "") + " at " + report.Num(q.OfferedLoadRPS) + " req/s"
		var notes []string
		if q.Value.Reps > 0 {
			notes = append(notes, report.ResolutionText(q.Resolution))
		}
		for _, t := range r.SimTruth {
			if t.Candidate == cand && t.OfferedLoadRPS == q.OfferedLoadRPS && t.Metric == q.Metric && t.Stat == q.Stat {
				notes = append(notes, "truth "+fmt.Sprintf("%.3f", t.Value))
			}
		}
		if q.Excluded != "" {
			notes = append(notes, "client-bound: not in the verdict")
		}
		if len(notes) > 0 {
			s += " (" + strings.Join(notes, "; ") + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	what := "resolution"
	if len(r.SimTruth) > 0 {
		what += "; the simulator's truth"
	}
	return fmt.Sprintf("gain, %s, with its %s %% interval (%s): %s", report.RatioLabel(report.MetricText(r.Rule.Metric, stat), ""), strconv.FormatFloat(100*r.Rule.IntervalLevel, 'f', -1, 64), what, strings.Join(parts, "; "))
}

// boundLine is the Amdahl bound of cand over the loads (and the ceiling
// speedup where an ablation measured one), labelled as a speedup
// (report.SpeedupLabel), against the resolution, or why it is not measured.
func boundLine(r report.Results, cand string) string {
	if r.Amdahl == nil || (r.Amdahl.NotMeasured != "" && len(r.Amdahl.Ablation) == 0) {
		why := "not measured"
		if r.Amdahl != nil {
			why += ": " + r.Amdahl.NotMeasured
		}
		return "Amdahl bound: " + why
	}
	lo, hi, n, below, above := math.Inf(1), math.Inf(-1), 0, 0, 0
	var f, s float64
	var from string
	for _, l := range r.Amdahl.Loads {
		if l.Candidate != cand || !(l.Bound > 0) {
			continue
		}
		n++
		lo, hi, f, s, from = min(lo, l.Bound), max(hi, l.Bound), l.FWall, l.S, l.FFrom
		if res := resolutionAt(r, l.OfferedLoadRPS); res != nil && 1-1/l.Bound < *res {
			below++
		}
		if ExceedsBound(l) {
			above++
		}
	}
	var out string
	if n == 0 {
		out = "Amdahl bound: not measured for " + cand + " (no profile of the op it changes)"
	} else {
		out = fmt.Sprintf("Amdahl bound, %s: %s (at most %s faster in service time; f_wall %.3f%s, s %.3g)", report.SpeedupLabel("", ""), rangeText(lo, hi, "%.4f"), report.PctOf(1-1/hi), f, fFromText(from, r.Simulated), s)
		switch {
		case below == n:
			out += "; below this run's resolution at every load: smaller than what it can detect"
		case below > 0:
			out += fmt.Sprintf("; below this run's resolution at %d of %d loads", below, n)
		}
		if above > 0 {
			out += fmt.Sprintf("; the measured gain exceeds it at %d of %d loads: the bound is on service time and queueing amplifies the gain", above, n)
		}
	}
	for _, al := range r.Amdahl.Ablation {
		if al.Candidate != cand {
			continue
		}
		for _, m := range al.Metrics {
			if m.Metric == "e2e" && m.Stat == "mean" && m.CeilingSpeedup.Reps > 0 {
				out += fmt.Sprintf("; ceiling (the op removed) %s at %s req/s", ratio4(m.CeilingSpeedup.Value), report.Num(al.OfferedLoadRPS))
			}
		}
	}
	return out
}

// fFromText says which estimate an f_wall is (report.AmdahlLoad.FFrom), so
// the answer's bound and the one printed before a simulated run read as two
// estimates, not one figure twice: "" when the file does not say.
func fFromText(from string, simulated bool) string {
	switch from {
	case report.FFromCostModel:
		return " from the simulator's cost model, as printed before the run"
	case report.FFromProfile:
		if simulated {
			return " measured from the baseline's profile in this run (the bound printed before the run is the cost model's estimate; their last digits can differ)"
		}
		return " measured from the baseline's profile in this run"
	}
	return ""
}

// rangeText is "a" when a and b print alike, else "a–b".
func rangeText(a, b float64, format string) string {
	sa, sb := fmt.Sprintf(format, a), fmt.Sprintf(format, b)
	if sa == sb {
		return sa
	}
	return sa + "–" + sb
}

// resolutionAt is the decision metric's resolution at load, or nil.
func resolutionAt(r report.Results, load float64) *float64 {
	if r.Stats == nil || r.Rule == nil {
		return nil
	}
	for _, res := range r.Stats.Resolution {
		if res.OfferedLoadRPS == load && res.Metric == r.Rule.Metric && res.Stat == analysis.RuleStat(*r.Rule) {
			return res.PlusMinus
		}
	}
	return nil
}

// capacityGainLine is cand's capacity-at-SLO gain, or why it is unknown.
func capacityGainLine(r report.Results, cand string) string {
	if s := CapacitySearchLine(r, cand); s != "" {
		return s
	}
	if r.Stats == nil {
		return ""
	}
	if r.Stats.CapacityNotMeasured != "" {
		return "capacity at SLO: not measured (" + r.Stats.CapacityNotMeasured + ")"
	}
	for _, g := range r.Stats.CapacityGain {
		if g.Candidate == cand {
			s := "capacity at SLO (" + sloText(r.SLO) + "), candidate/baseline: " + report.EstimateText(g.Gain, "×")
			if g.Gain.Interval && g.Gain.Note != "" {
				s += " — " + g.Gain.Note
			}
			return s
		}
	}
	return ""
}

// perCell reads one figure of the cost or energy cell of arm at load,
// repetition rep; ok false when absent.
type perCell func(r report.Results, arm string, load float64, rep int) (v float64, unit string, ok bool)

func costPer1M(r report.Results, arm string, load float64, rep int) (float64, string, bool) {
	if r.Cost == nil || r.Cost.NotMeasured != "" {
		return 0, "", false
	}
	for _, c := range r.Cost.Cells {
		if c.Arm == arm && c.OfferedLoadRPS == load && c.Repetition == rep && c.CostPer1MOutputTokens > 0 {
			return c.CostPer1MOutputTokens, " " + c.Currency, true
		}
	}
	return 0, "", false
}

func joulesPerToken(r report.Results, arm string, load float64, rep int) (float64, string, bool) {
	if r.Energy == nil || r.Energy.NotMeasured != "" {
		return 0, "", false
	}
	for _, c := range r.Energy.Cells {
		if c.Arm == arm && c.OfferedLoadRPS == load && c.Repetition == rep && c.Available && c.JPerOutputToken > 0 {
			return c.JPerOutputToken, " J", true
		}
	}
	return 0, "", false
}

// armMean is the mean of get over the repetitions of arm at load that the
// ratios use (analysis.GroupCells: complete cells only), and the cells with
// a figure that it leaves out ("arm rep N (incomplete)"); ok false when no
// used repetition has the figure.
func armMean(r report.Results, arm string, load float64, get perCell) (mean float64, unit string, ok bool, left []string) {
	used := map[int]bool{}
	for _, g := range analysis.GroupCells(r) {
		if g.Arm == arm && g.Load == load {
			for _, c := range g.Cells {
				used[c.Repetition] = true
			}
		}
	}
	var vs []float64
	for _, c := range report.SortedCells(r) {
		if c.Arm != arm || c.OfferedLoadRPS != load {
			continue
		}
		v, u, has := get(r, arm, load, c.Repetition)
		switch {
		case !has:
		case used[c.Repetition]:
			vs, unit = append(vs, v), u
		default:
			left = append(left, fmt.Sprintf("%s rep %d (incomplete)", arm, c.Repetition))
		}
	}
	if len(vs) == 0 {
		return 0, "", false, left
	}
	return meanOf(vs), unit, true, left
}

func meanOf(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
}

// costAtLoadNote says what a cost change at one offered load is: an
// open-loop load below capacity keeps the GPU for the same time whichever arm
// serves it, so the change is the cell's window (its drain after the last
// arrival), not a saving; the saving is at capacity.
const costAtLoadNote = " (at one offered load both arms serve the same requests on a GPU kept as long: this change is the measuring window's drain after the last arrival, not a saving; the saving shows at capacity, in the capacity line)"

// changeLine is "<what>: base → cand (±x %) at L req/s; …" over the loads
// both arms measured, said per load because a per-token figure at a fixed
// offered load moves with the load far more than with the arm. Each arm's
// figure is the mean over the complete repetitions (armMean, the cells the
// ratios use); the cells it leaves out are named after the load; note
// ends a measured line.
func changeLine(r report.Results, cand, what, note string, get perCell) string {
	base := r.Rule.Baseline
	var loads []float64
	for _, c := range r.Cells {
		if c.Arm == cand && !slices.Contains(loads, c.OfferedLoadRPS) {
			loads = append(loads, c.OfferedLoadRPS)
		}
	}
	slices.Sort(loads)
	var parts []string
	for _, l := range loads {
		b, unit, ok1, leftB := armMean(r, base, l, get)
		c, _, ok2, leftC := armMean(r, cand, l, get)
		if !ok1 || !ok2 || b == 0 {
			continue
		}
		part := fmt.Sprintf("%s%s (%+.1f %%; %s → %s; %s) at %s req/s", signed(c-b), unit, 100*(c/b-1), report.Num(b), report.Num(c), noIntervalText(r, l, c/b-1), report.Num(l))
		if left := append(leftB, leftC...); len(left) > 0 {
			part += " (left out, as from the ratios: " + strings.Join(left, ", ") + ")"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return what + ": not measured"
	}
	label := what
	if r.Simulated {
		label += " (simulated)"
	}
	return label + ", candidate − baseline (%; baseline → candidate), each at one offered load: " + strings.Join(parts, "; ") + note
}

// noIntervalText says that a cost or energy change (a fraction) at load has
// no interval, so noise can read as a result: "no interval; within this
// run's resolution ±1.2 %" when it lies within the decision metric's
// resolution there (resolutionAt), else "no interval: not a tested
// difference".
func noIntervalText(r report.Results, load, change float64) string {
	if res := resolutionAt(r, load); res != nil && math.Abs(change) <= *res {
		return "no interval; within this run's resolution ±" + report.PctOf(*res)
	}
	return "no interval: not a tested difference"
}

// signed is a difference with its sign: "+0.012", "-0.081" (the ASCII
// hyphen-minus, as Go's %+f prints the percentage beside it and
// report.Num every other figure: one sign convention).
func signed(d float64) string {
	if d < 0 {
		return report.Num(d)
	}
	return "+" + report.Num(d)
}

// mainWarning is the one warning that matters most for v, or "": loads left
// out of the verdict (client-bound) first, then a capacity withheld for
// client-bound misses (both, when both: one remedy), then lost requests,
// then an incomplete run.
func mainWarning(r report.Results, v report.Verdict) string {
	capW := noCapacityWarning(r, v.Candidate)
	n, total := 0, 0
	if r.Stats != nil {
		for _, q := range r.Stats.Ratios {
			if q.Candidate == v.Candidate && r.Rule != nil && q.Metric == r.Rule.Metric && q.Stat == analysis.RuleStat(*r.Rule) {
				total++
				if q.Excluded != "" {
					n++
				}
			}
		}
	}
	switch {
	case n > 0:
		w := fmt.Sprintf("warning: %d of %d loads were client-bound (%s, so it may have set the pace) and feed no verdict; a less loaded client machine measures them", n, total, analysis.ClientBoundRule())
		if capW != "" {
			w += "; and " + capW
		}
		return w
	case capW != "":
		return "warning: " + capW
	case analysis.CensoredNote(r) != "":
		return "warning: " + analysis.CensoredNote(r)
	case !r.Complete:
		return "warning: incomplete run: " + report.OrText(r.IncompleteReason, "no reason recorded")
	}
	return ""
}

// noCapacityWarning says, for cand's capacity gain, which arms have no
// capacity because their searches missed in suspect probes only
// (analysis.SuspectCapacity: client-bound or host-slowed) and what that leaves of the gain; "" when
// none. The capacity line says why such a miss decides nothing.
func noCapacityWarning(r report.Results, cand string) string {
	cs := r.CapacitySearch
	if cs == nil {
		return ""
	}
	for _, g := range cs.Gains {
		if g.Candidate != cand {
			continue
		}
		var names []string
		var suspect []report.CapacityArm
		for _, a := range cs.Arms {
			if (a.Arm == g.Candidate || a.Arm == g.Baseline) && analysis.SuspectCapacity(a) {
				names = append(names, a.Arm)
				suspect = append(suspect, a)
			}
		}
		if len(names) == 0 {
			return ""
		}
		left := "not determined"
		if g.Gain.Derived == analysis.DerivedGainLowerBound {
			left = "a lower bound only"
		}
		return "no capacity for " + strings.Join(names, " and ") + ": the search's misses were " + analysis.SuspectKinds(suspect...) + " probes only (the capacity line says why), so the capacity gain is " + left + "; rerun on an idle machine"
	}
	return ""
}
