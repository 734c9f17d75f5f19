package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
)

// CapacityArmText is one arm's searched capacity in one line: the capacity
// (req/s) with its interval, the bracket, the probes and why the search
// stopped, e.g. "19.6 req/s [15.5, 24.0] (95 %; bracket [17.3, 22.3]
// after 3 search probes and 3 sweep loads; bracketed to 10 %)".
func CapacityArmText(a report.CapacityArm) string {
	e := a.CapacityRPS
	var s string
	switch {
	case analysis.SuspectCapacity(a):
		return analysis.NoCapacityText(a) + probesText(a) + truthText(a)
	case e.Value == 0:
		s = report.OrText(e.Note, "unknown")
		return s + probesText(a) + truthText(a)
	case e.Interval:
		s = report.Num(e.Value) + " req/s [" + report.Num(e.Low) + ", " + report.Num(e.High) + "]"
	default:
		s = report.Num(e.Value) + " req/s"
	}
	var parts []string
	if a.FailRPS > 0 {
		parts = append(parts, "bracket ["+report.Num(a.PassRPS)+", "+report.Num(a.FailRPS)+"] req/s")
	}
	if e.Note != "" {
		parts = append(parts, e.Note)
	}
	if len(parts) > 0 {
		s += "; " + strings.Join(parts, "; ")
	}
	return s + probesText(a) + truthText(a)
}

// truthText is "; the simulator's sustained capacity: 18.0 req/s (…)" for
// an arm with a simulator's truth, "" otherwise.
func truthText(a report.CapacityArm) string {
	t := a.SimTruth
	if t == nil {
		return ""
	}
	var v string
	switch {
	case t.RPS() > 0:
		v = report.Num(t.RPS()) + " req/s"
	case t.MetRPS > 0:
		v = "≥ " + report.Num(t.MetRPS) + " req/s"
	default:
		v = "< " + report.Num(t.MissedRPS) + " req/s"
	}
	if t.Note != "" {
		v += ", " + t.Note
	}
	return "; the simulator's sustained capacity: " + v
}

// probesText counts a's probes by source, and says how many were
// client-bound (their loads steer the search; a miss among them ends no interval).
func probesText(a report.CapacityArm) string {
	sweep := map[float64]bool{}
	bound, robust, slowed := 0, 0, 0
	for _, p := range a.Probes {
		if p.Source != "search" {
			sweep[p.LoadRPS] = true
		}
		switch {
		case p.ClientBound && p.MissRobustToLateness:
			robust++
		case p.ClientBound:
			bound++
		}
		if p.HostSlowed {
			slowed++
		}
	}
	cb := ""
	if bound > 0 {
		cb = fmt.Sprintf("; %d of %d probes client-bound: they steered the bracket, and a miss among them ends no interval, so the interval is wider (a less loaded client machine measures them)", bound, len(a.Probes))
	}
	if robust > 0 {
		cb += fmt.Sprintf("; %d of %d probes client-bound with a miss the client's lateness cannot explain (missed with every target loosened by it): the misses stand", robust, len(a.Probes))
	}
	if slowed > 0 {
		cb += fmt.Sprintf("; %d of %d probes host-slowed (the simulated server lost more than %g %% of the probe to host stalls): a miss among them ends no interval", slowed, len(a.Probes), 100*analysis.HostStallShare)
	}
	if analysis.SuspectFailEnd(a) && !analysis.SuspectCapacity(a) {
		cb += "; suspect: the bracket's " + suspectFailEnd(a)
	}
	cut := ""
	if n := cutShort(a); n > 0 {
		cut = fmt.Sprintf(" (%d cut short)", n)
	}
	return fmt.Sprintf(" (%d search probes%s, %d swept loads; stopped: %s%s)", searchProbes(a), cut, len(sweep), report.OrText(a.Stopped, "not run"), cb)
}

// suspectFailEnd says why a fail end that only suspect probes missed
// (analysis.SuspectFailEnd) is suspect, where the arm's capacity is
// unknown for another reason (a budget cut its search short): an arm
// bracketed to the precision has no capacity instead (SuspectCapacity).
func suspectFailEnd(a report.CapacityArm) string {
	why := "a late client makes a load look harder than it is, so the client machine, not the server, may have missed it"
	if k := analysis.SuspectKinds(a); k != analysis.SuspectClientBound {
		why = strings.TrimSuffix(analysis.SuspectMissWhy(a), "; rerun on an idle machine")
	}
	return fmt.Sprintf("fail end (%s req/s) rests on %s probes only: %s", report.Num(a.FailRPS), analysis.SuspectKinds(a), why)
}

// CapacitySearchLine is cand's capacity at SLO against the baseline's, as
// the search found them, in one line: both capacities with their
// intervals, the gain (or "not separable"), and the cost per 1M output
// tokens at each arm's capacity with its change. "" when the run has no
// search or cand is not in it.
func CapacitySearchLine(r report.Results, cand string) string {
	cs := r.CapacitySearch
	if cs == nil {
		return ""
	}
	head := "capacity at SLO (" + sloText(cs.SLO) + ", " + searchHow(*cs) + probeSpanText(*cs) + ")"
	if cs.NotRun != "" {
		return head + ": not searched: " + cs.NotRun
	}
	var g *report.CapacitySearchGain
	for i := range cs.Gains {
		if cs.Gains[i].Candidate == cand {
			g = &cs.Gains[i]
		}
	}
	if g == nil {
		if cs.Interrupted != "" {
			return head + ": not found: the search was " + cs.Interrupted
		}
		return ""
	}
	arm := func(name string) *report.CapacityArm {
		for i := range cs.Arms {
			if cs.Arms[i].Arm == name {
				return &cs.Arms[i]
			}
		}
		return nil
	}
	c, b := arm(g.Candidate), arm(g.Baseline)
	if c == nil || b == nil {
		return ""
	}
	s := head + ": " + capText(*c) + " vs " + capText(*b) + "; gain " + searchGainText(*g)
	if analysis.SuspectCapacity(*c) || analysis.SuspectCapacity(*b) {
		s += "; " + analysis.SuspectKinds(*c, *b) + " misses: " + analysis.SuspectMissWhy(*c, *b)
	}
	for _, a := range []*report.CapacityArm{c, b} {
		if analysis.SuspectFailEnd(*a) && !analysis.SuspectCapacity(*a) {
			s += " (" + a.Arm + "'s bracket " + suspectFailEnd(*a) + ": suspect)"
		}
	}
	costLabel := "cost per 1M output tokens"
	if r.Simulated {
		costLabel += " (simulated)"
	}
	switch {
	case c.Cost != nil && b.Cost != nil && g.CostChangePct != nil:
		sep := ""
		if !g.Separable {
			sep = "; the capacities are not separable, so neither is this change"
		}
		s += fmt.Sprintf("; %s at each arm's highest load that met the SLO: %s %s at %s req/s → %s at %s req/s (%+.1f %%; no interval%s)", costLabel, report.Num(b.Cost.CostPer1MOutputTokens), b.Cost.Currency, report.Num(b.Cost.LoadRPS), report.Num(c.Cost.CostPer1MOutputTokens), report.Num(c.Cost.LoadRPS), *g.CostChangePct, sep)
	case c.Cost != nil && b.Cost != nil:
		why := "an arm's capacity is not bracketed"
		switch {
		case len(g.SuspectArms) > 0:
			why = "an arm has no capacity"
		case g.CostNote != "":
			why = g.CostNote
		}
		s += fmt.Sprintf("; %s at the highest load a probe met the SLO at: %s %s at %s req/s → %s at %s req/s (no change computed: %s%s)",
			costLabel, report.Num(b.Cost.CostPer1MOutputTokens), b.Cost.Currency, report.Num(b.Cost.LoadRPS), report.Num(c.Cost.CostPer1MOutputTokens), report.Num(c.Cost.LoadRPS),
			why, unsustainedText(*b)+unsustainedText(*c))
	}
	return s
}

// unsustainedText is "; baseline's sustained capacity by the simulator,
// 18.04 req/s, is below the 20.00 req/s its probe met" when a's cost is at a
// load above the simulator's sustained capacity (a short probe from an idle
// server met a load the arm does not sustain), "" otherwise.
func unsustainedText(a report.CapacityArm) string {
	if a.Cost == nil || a.SimTruth == nil || !(a.SimTruth.RPS() > 0) || a.SimTruth.RPS() >= a.Cost.LoadRPS {
		return ""
	}
	return fmt.Sprintf("; %s's sustained capacity by the simulator, %s req/s, is below the %s req/s its probe met", a.Arm, report.Num(a.SimTruth.RPS()), report.Num(a.Cost.LoadRPS))
}

// searchHow says how the capacities were found: "found by search", or,
// when no arm ran a search probe, that the brackets are the sweep's.
func searchHow(cs report.CapacitySearch) string {
	for _, a := range cs.Arms {
		if searchProbes(a) > 0 {
			return "found by search"
		}
	}
	return "bracketed by the sweep's loads: no search probe ran"
}

// searchLead is the capacity section's first sentence (unit: the load's
// unit as the report writes it).
func searchLead(cs report.CapacitySearch, unit string) string {
	if searchHow(cs) != "found by search" {
		return fmt.Sprintf("Bracketed by the sweep's loads, no search probe ran (each arm's note says why): the highest offered load meeting %s lies between the loads below (%s; interval at %s).", sloText(cs.SLO), unit, report.Pct(cs.Level))
	}
	if slices.ContainsFunc(cs.Arms, func(a report.CapacityArm) bool {
		return a.CapacityRPS.Value == 0 && a.PassRPS > 0 && a.FailRPS > 0 && !analysis.SuspectCapacity(a)
	}) {
		return fmt.Sprintf("Found by search where it reached %s: the highest offered load meeting %s (%s; interval at %s, for an arm bracketed to the precision%s); an arm whose search stopped short of it has its capacity unknown, with its bracket and why.", report.Pct(cs.RelativePrecision), sloText(cs.SLO), unit, report.Pct(cs.Level), probeSpanText(cs))
	}
	return fmt.Sprintf("Found by search: the highest offered load meeting %s, bracketed to %s (%s; interval at %s%s).", sloText(cs.SLO), report.Pct(cs.RelativePrecision), unit, report.Pct(cs.Level), probeSpanText(cs))
}

// probeSpanText is "; probes of 1s + 4s from an idle server" for a run
// whose search ran a probe, "" otherwise: a probe's warm-up and measured
// span bound what it can see (DESIGN.md "Capacity at SLO, searched").
func probeSpanText(cs report.CapacitySearch) string {
	if searchHow(cs) != "found by search" {
		return ""
	}
	at := ""
	if cs.Concurrent {
		at = "; arms searched at once, each on a server of its own"
	}
	if cs.ProbeWindow != "" {
		return "; each probe " + cs.ProbeWindow + at
	}
	d := func(s float64) string {
		return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
	}
	return "; probes of " + d(cs.ProbeWarmupS) + " + " + d(cs.ProbeDurationS) + " from an idle server" + at
}

// searchProbes counts a's probes the search ran (not the sweep's cells).
func searchProbes(a report.CapacityArm) int {
	n := 0
	for _, p := range a.Probes {
		if p.Source == "search" {
			n++
		}
	}
	return n
}

// cutShort counts a's search probes that did not run to their end.
func cutShort(a report.CapacityArm) int {
	n := 0
	for _, p := range a.Probes {
		if p.Source == "search" && p.Incomplete != "" {
			n++
		}
	}
	return n
}

// capText is an arm's capacity in brief: "gate-up-2x 27.1 [24.0, 36.0]
// req/s", with the simulator's sustained capacity where known.
func capText(a report.CapacityArm) string {
	s := capValueText(a)
	if t := a.SimTruth; t != nil && t.RPS() > 0 {
		s += " (simulator's sustained capacity " + report.Num(t.RPS()) + ")"
	}
	return s
}

func capValueText(a report.CapacityArm) string {
	e := a.CapacityRPS
	switch {
	case analysis.SuspectCapacity(a):
		return a.Arm + " " + analysis.NoCapacityText(a)
	case e.Value == 0 && a.PassRPS > 0 && a.FailRPS > 0 && searchProbes(a) > 0 && e.Note != "":
		// The search stopped short of the precision: its note says the
		// capacity is unknown, the bracket and why.
		return a.Arm + " " + e.Note
	case e.Value == 0 && a.PassRPS > 0 && a.FailRPS > 0:
		return a.Arm + " between " + report.Num(a.PassRPS) + " and " + report.Num(a.FailRPS) + " req/s (" + bracketSource(a) + ")"
	case e.Value == 0:
		return a.Arm + " unknown"
	case e.Interval:
		return a.Arm + " " + report.Num(e.Value) + " [" + report.Num(e.Low) + ", " + report.Num(e.High) + "] req/s"
	case a.FailRPS == 0:
		return a.Arm + " ≥ " + report.Num(e.Value) + " req/s"
	}
	return a.Arm + " " + report.Num(e.Value) + " req/s (no interval)"
}

// bracketSource says where an unsearched bracket comes from.
func bracketSource(a report.CapacityArm) string {
	if searchProbes(a) == 0 {
		return "the sweep's bracket, no search probe"
	}
	return "bracket, not to the precision"
}

// searchGainText is a searched capacity gain: "1.40× [1.00, 2.32] (not
// separable: …)", or why it is unknown.
func searchGainText(g report.CapacitySearchGain) string {
	switch {
	case g.Gain.Value == 0 && g.Gain.Derived == analysis.DerivedGainLowerBound:
		return "≥ " + report.Num(g.Gain.Low) + "× (" + g.Gain.Note + ")" + gainTruthText(g)
	case g.Gain.Value == 0 && len(g.SuspectArms) > 0:
		return g.Gain.Note + gainTruthText(g)
	case g.Gain.Value == 0:
		return report.OrText(g.Gain.Note, "unknown")
	case g.Gain.Interval:
		s := report.Num(g.Gain.Value) + "× [" + report.Num(g.Gain.Low) + ", " + report.Num(g.Gain.High) + "]"
		if !g.Separable {
			s += " (not separable: the arms' capacity intervals overlap)"
		}
		return s + gainTruthText(g)
	}
	return report.Num(g.Gain.Value) + "× (" + report.OrText(g.Gain.Note, "no interval") + ")" + gainTruthText(g)
}

// gainTruthText is "; the simulator's sustained ratio 1.19×" where known.
func gainTruthText(g report.CapacitySearchGain) string {
	if g.SimTruth <= 0 {
		return ""
	}
	return "; the simulator's sustained ratio " + report.Num(g.SimTruth) + "×"
}

// probeListText lists a's probes in load order: "10 sweep met (sure), 15.5
// search met, 24 sweep missed (sure)".
func probeListText(a report.CapacityArm) string {
	ps := slices.Clone(a.Probes)
	slices.SortStableFunc(ps, func(x, y report.CapacityProbe) int { return cmp.Compare(x.LoadRPS, y.LoadRPS) })
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		s := report.Num(p.LoadRPS) + " " + p.Source + " "
		switch {
		case p.Incomplete != "":
			s += "incomplete"
		case p.Met:
			s += "met"
		default:
			s += "missed"
		}
		var att []string
		for _, x := range p.Attainment {
			att = append(att, fmt.Sprintf("%s %d/%d", x.Metric, x.N-x.Over, x.N))
		}
		if len(att) > 0 {
			s += " (" + strings.Join(att, ", ")
			if p.Decided != "" {
				s += "; sure"
			}
			switch {
			case p.HostSlowed && p.Met:
				s += "; host-slowed: met though its server lost " + report.Num(p.HostStallS) + " s to host stalls"
			case p.HostSlowed:
				s += "; host-slowed: its server lost " + report.Num(p.HostStallS) + " s to host stalls, so its miss decides nothing"
			case p.ClientBound && p.Met:
				s += "; client-bound: met with the client's lateness against it"
			case p.ClientBound && p.MissRobustToLateness:
				s += "; client-bound: missed with every target loosened by its lateness (" + report.Num(p.LatenessMarginMs) + " ms), so the miss stands"
			case p.ClientBound:
				s += "; client-bound: its miss decides nothing"
			}
			s += ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// capacitySearchLines are the HTML report's capacity lines for a searched
// run: the SLO and precision, each arm's capacity and probes, each gain, the
// method; nil when the run did not search.
func capacitySearchLines(r report.Results) []string {
	cs := r.CapacitySearch
	if cs == nil {
		return nil
	}
	if cs.NotRun != "" {
		return []string{"Not searched: " + cs.NotRun}
	}
	out := []string{searchLead(*cs, "req/s")}
	if cs.Interrupted != "" {
		out = append(out, "The search was "+cs.Interrupted+".")
	}
	for _, a := range cs.Arms {
		out = append(out, a.Arm+": "+CapacityArmText(a)+". Probes (req/s; requests within each target/judged): "+probeListText(a))
	}
	if w := suspectMissesText(*cs); w != "" {
		out = append(out, w)
	}
	for _, g := range cs.Gains {
		out = append(out, "Capacity gain "+g.Candidate+"/"+g.Baseline+": "+searchGainText(g))
	}
	return append(out, "Method: "+cs.Method+".")
}

// suspectMissesText says once, under the arms, why an arm with only
// suspect misses at its fail end (client-bound, host-slowed) has no
// capacity; "" when none has.
func suspectMissesText(cs report.CapacitySearch) string {
	var suspect []report.CapacityArm
	for _, a := range cs.Arms {
		if analysis.SuspectCapacity(a) {
			suspect = append(suspect, a)
		}
	}
	if len(suspect) == 0 {
		return ""
	}
	return "No capacity where an arm's misses were " + analysis.SuspectKinds(suspect...) + " probes only: " + analysis.SuspectMissWhy(suspect...) + "."
}
