package render

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"
)

// WriteMarkdown writes report.md for r: run facts, verdicts, capacity at SLO,
// per arm and offered load the TTFT / ITL / TPOT / E2E figures at p50, p90,
// p99 and mean (ms), throughput, goodput and state counts, ratios with
// intervals, then the Amdahl, energy, cost, validation and hook sections (or
// "not measured" with the reason). When r.Simulated every unit is labelled
// "simulated". Output is deterministic for a given r.
func WriteMarkdown(w io.Writer, r report.Results) error {
	bw := bufio.NewWriter(w)
	m := mdWriter{w: bw, sim: r.Simulated}
	m.header(r)
	m.verdicts(r)
	m.capacity(r)
	m.cells(r)
	// Sections with nothing measured are said together, one line each.
	var none []string
	for _, sec := range tableSections(r) {
		if sec.NotMeasured != "" {
			none = append(none, "- "+sec.Heading+": "+sec.NotMeasured+".")
			continue
		}
		sec.writeMarkdown(m)
	}
	if len(none) > 0 {
		m.p("## Not measured\n\n%s\n\n", strings.Join(none, "\n"))
	}
	m.aliases(r)
	return bw.Flush()
}

type mdWriter struct {
	w   *bufio.Writer
	sim bool
}

func (m mdWriter) p(format string, args ...any) { fmt.Fprintf(m.w, format, args...) }

// u labels a unit, adding "simulated" for simulated runs.
func (m mdWriter) u(unit string) string {
	if m.sim {
		if unit == "" {
			return "simulated"
		}
		return unit + ", simulated"
	}
	return unit
}

func (m mdWriter) header(r report.Results) {
	title := "transferlab report"
	if r.Simulated {
		title += " (simulated)"
	}
	m.p("# %s\n\n", title)
	if r.Simulated {
		m.p("> **Simulated.** Every figure in this report comes from the embedded simulator (`sim`), not from a GPU.\n\n")
	}
	if !r.Complete {
		m.p("> **Incomplete run:** %s\n\n", report.OrText(r.IncompleteReason, "no reason recorded"))
	}
	if t := report.ResumedText(r); t != "" {
		m.p("> **Resumed run:** %s\n\n", t)
	}
	for _, w := range r.Warnings {
		m.p("> **Warning:** %s\n\n", w)
	}
	if blocks := Answer(r); len(blocks) > 0 {
		m.p("## Answer\n\n")
		for _, b := range blocks {
			m.p("**%s**\n\n", b.Candidate)
			for _, l := range b.Lines {
				m.p("- %s\n", l)
			}
			m.p("\n")
		}
	}
	m.p("| field | value |\n| --- | --- |\n")
	m.p("| schema | %s |\n", r.SchemaVersion)
	if !r.CreatedAt.IsZero() {
		label := "created"
		if len(r.Inputs) > 0 {
			label = "comparison created"
		}
		m.p("| %s | %s |\n", label, r.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if r.RunID != "" {
		m.p("| run_id | %s |\n", r.RunID)
	}
	for _, in := range r.Inputs {
		m.p("| %s | %s |\n", mdCell(in.Label), mdCell(in.Text()))
	}
	m.p("| trace | %s (%s, sha256 %s) |\n", report.OrText(r.Trace.Source, "—"), report.OrText(r.Trace.Format, "—"), report.OrText(report.Short(r.Trace.SHA256), "—"))
	m.p("| trace rows | %s; clamped %d; %s s, mean %s req/s |\n", r.Trace.RowsText(), r.Trace.Clamped, report.Num(r.Trace.DurationS), report.Num(r.Trace.MeanRateRPS))
	m.p("| config | %s (sha256 %s) |\n", report.OrText(r.Manifest.ConfigPath, "—"), report.OrText(report.Short(r.Manifest.ConfigSHA256), "—"))
	m.p("| seed | %d |\n", r.Manifest.Seed)
	if len(r.Manifest.ArmOrder) > 0 {
		m.p("| arm order | %s |\n", strings.Join(r.Manifest.ArmOrder, " "))
	}
	m.p("| SLO | %s |\n", sloText(r.SLO))
	if len(Answer(r)) == 0 {
		m.p("\n**Headline: %s.**\n\n", Headline(r))
	} else {
		m.p("\n")
	}
	if r.Resumed {
		m.p("### Cell start times (resumed run)\n\n| order | arm | load (req/s) | repetition | started at (UTC) | measured by |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, row := range report.CellStartRows(r) {
			m.p("|%s|\n", mdRow(row))
		}
		m.p("\n")
	}
	if nr := report.CellsNotRun(r); len(nr) > 0 {
		m.p("### Cells not run\n\n%s\n\n| order | arm | load (req/s) | repetition |\n| --- | --- | --- | --- |\n", notRunNote(r, nr))
		for _, row := range notRunRows(r, nr) {
			m.p("|%s|\n", mdRow(row))
		}
		m.p("\n")
	}
}

// notRunNote introduces the table of planned cells that did not run.
func notRunNote(r report.Results, nr []report.CellKey) string {
	return fmt.Sprintf("%d of the %d planned cells did not run (%s); results.json's run_order lists the plan. Statistics, capacity and verdicts cover only the cells that ran to their end.",
		len(nr), len(r.RunOrder), report.OrText(r.IncompleteReason, "no reason recorded"))
}

// notRunRows are the rows (order, arm, load, repetition) of the cells not run.
func notRunRows(r report.Results, nr []report.CellKey) [][]string {
	pos := make(map[report.CellKey]int, len(r.RunOrder))
	for i, k := range r.RunOrder {
		pos[k] = i + 1
	}
	rows := make([][]string, len(nr))
	for i, k := range nr {
		rows[i] = []string{fmt.Sprint(pos[k]), k.Arm, report.Num(k.OfferedLoadRPS), fmt.Sprint(k.Repetition)}
	}
	return rows
}

// mdCell escapes "|" inside a pipe-table cell.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func sloText(s report.SLO) string {
	t := sloTargets(s)
	if t == "none declared" {
		return t
	}
	p := s.Percentile
	if p == 0 {
		p = report.DefaultSLOPercentile
	}
	return t + " at p" + strconv.FormatFloat(p, 'f', -1, 64)
}

// sloTargets lists the declared targets of s without the percentile (goodput is per request).
func sloTargets(s report.SLO) string {
	var parts []string
	if s.TTFTMs > 0 {
		parts = append(parts, "TTFT ≤ "+report.Num(s.TTFTMs)+" ms")
	}
	if s.TPOTMs > 0 {
		parts = append(parts, "TPOT ≤ "+report.Num(s.TPOTMs)+" ms")
	}
	if s.E2EMs > 0 {
		parts = append(parts, "E2E ≤ "+report.Num(s.E2EMs)+" ms")
	}
	if len(parts) == 0 {
		return "none declared"
	}
	return strings.Join(parts, ", ")
}

func (m mdWriter) verdicts(r report.Results) {
	m.p("## Verdicts\n\n")
	if len(r.Verdicts) == 0 {
		m.p("Not analysed: no verdicts in this results file.\n\n")
		return
	}
	if r.Rule != nil {
		m.p("Rule: %s.\n\n", ruleText(*r.Rule))
	}
	// One table: each candidate's declared clauses (the deciding one in
	// bold); clauses no candidate declared are named once below it, and the
	// client-bound warning, the same for every verdict, once above it.
	if v := r.Verdicts[0]; v.ClientBound != "" {
		m.p("> **Warning:** %s (the cell tables flag them).\n\n", v.ClientBound)
	}
	undeclared := map[string]string{}
	var order []string
	m.p("| candidate | verdict | clause | outcome | detail |\n| --- | --- | --- | --- | --- |\n")
	for _, v := range r.Verdicts {
		for _, c := range v.Clauses {
			if c.Outcome == "not declared" {
				if _, ok := undeclared[c.Clause]; !ok {
					order = append(order, c.Clause)
				}
				undeclared[c.Clause] = c.Name
				continue
			}
			verdict, clause := "", c.Clause+" ("+c.Name+")"
			if c.Clause == v.DecidingClause {
				verdict, clause = "**"+strings.ToUpper(v.Outcome)+"**", "**"+clause+"** (decides)"
			}
			m.p("|%s|\n", mdRow([]string{v.Candidate + " vs " + v.Baseline, verdict, clause, c.Outcome, c.Detail}))
		}
	}
	m.p("\n")
	if len(order) > 0 {
		var names []string
		for _, c := range order {
			names = append(names, c+" ("+undeclared[c]+")")
		}
		m.p("Not declared by the rule, deciding nothing: %s.\n\n", strings.Join(names, ", "))
	}
}

func ruleText(r report.DecisionRule) string {
	stat := "p" + strconv.FormatFloat(r.Percentile, 'f', -1, 64)
	if r.UseMean {
		stat = "mean"
	}
	s := fmt.Sprintf("%s %s, candidate/baseline interval must lie below 1 + %s; %s bootstrap interval, %d resamples, seed %d",
		r.Metric, stat, report.Num(r.RegressionMargin), report.Pct(r.IntervalLevel), r.Resamples, r.Seed)
	if r.VRAMBudgetBytes > 0 {
		s += fmt.Sprintf("; VRAM budget %d bytes", r.VRAMBudgetBytes)
	}
	if r.RequireValidation {
		s += "; validation required"
	}
	if r.RequireReproducible {
		s += "; reproducibility required"
	}
	return s
}

func (m mdWriter) capacity(r report.Results) {
	m.p("## Capacity at SLO\n\n")
	if cs := r.CapacitySearch; cs != nil && cs.NotRun == "" {
		m.capacitySearch(*cs)
		return
	} else if cs != nil {
		m.p("Not searched: %s. From the swept loads only:\n\n", cs.NotRun)
	}
	switch {
	case r.Stats == nil:
		m.p("Not measured: the results were not analysed.\n\n")
		return
	case r.Stats.CapacityNotMeasured != "":
		m.p("Not measured: %s.\n\n", r.Stats.CapacityNotMeasured)
		return
	}
	m.p("Highest measured offered load meeting %s (%s).", sloText(r.SLO), m.u("req/s"))
	if slices.ContainsFunc(r.Stats.Capacity, func(c report.Capacity) bool { return len(c.NotMeasuredRPS) > 0 }) {
		m.p(" Loads planned but not measured are named in the next-load column: the capacity may lie among them.")
	}
	m.p("\n\n")
	p := tablePart{Header: []string{"arm", "capacity (" + m.u("req/s") + ")", "interval", "next load", "per repetition", "gain vs the baseline"}}
	for _, c := range r.Stats.Capacity {
		gain := "—"
		for _, g := range r.Stats.CapacityGain {
			if g.Candidate == c.Arm {
				gain = report.EstimateText(g.Gain, "×")
			}
		}
		p.Rows = append(p.Rows, []string{c.Arm, valueText(c.CapacityRPS), report.Interval(c.CapacityRPS), nextLoadText(c), report.Nums(c.PerRepRPS), gain})
	}
	m.part(foldConstantColumns(p))
	for _, c := range r.Stats.Capacity {
		if c.Detail != "" {
			m.p("- %s: %s\n", c.Arm, c.Detail)
		}
	}
	m.p("\n")
}

// part writes one table with its heading (###) and note.
func (m mdWriter) part(p tablePart) {
	if p.Heading != "" {
		m.p("### %s\n\n", p.Heading)
	}
	if p.Note != "" {
		m.p("%s\n\n", p.Note)
	}
	if len(p.Header) == 0 {
		return
	}
	m.p("|%s|\n|%s|\n", mdRow(p.Header), strings.TrimSuffix(strings.Repeat(" --- |", len(p.Header)), "|"))
	for _, row := range p.Rows {
		m.p("|%s|\n", mdRow(row))
	}
	m.p("\n")
}

// capacitySearch is the capacity section of a run that searched the load.
func (m mdWriter) capacitySearch(cs report.CapacitySearch) {
	m.p("%s\n\n", searchLead(cs, m.u("req/s")))
	if cs.Interrupted != "" {
		m.p("**The search was %s.**\n\n", cs.Interrupted)
	}
	m.p("| arm | capacity (%s) | interval | bracket | cost per 1M output tokens at the highest load meeting the SLO | search |\n| --- | --- | --- | --- | --- | --- |\n", m.u("req/s"))
	for _, a := range cs.Arms {
		e := a.CapacityRPS
		iv := "none"
		if e.Interval && !analysis.SuspectCapacity(a) {
			iv = "[" + report.Num(e.Low) + ", " + report.Num(e.High) + "]"
		}
		br := "none"
		if a.FailRPS > 0 && a.PassRPS > 0 {
			br = "[" + report.Num(a.PassRPS) + ", " + report.Num(a.FailRPS) + "]"
		}
		c := "not measured"
		if a.Cost != nil {
			c = report.Num(a.Cost.CostPer1MOutputTokens) + " " + a.Cost.Currency + " at " + report.Num(a.Cost.LoadRPS) + " req/s"
		}
		v := "unknown"
		switch {
		case analysis.SuspectCapacity(a):
			v = "≥ " + report.Num(a.PassRPS) + ", not determined (" + analysis.SuspectKinds(a) + " misses)"
		case e.Value == 0 && a.PassRPS > 0 && a.FailRPS > 0 && searchProbes(a) > 0:
			v = "unknown: " + report.Num(a.PassRPS) + "–" + report.Num(a.FailRPS) + " (bracket)"
		case e.Value == 0 && a.PassRPS > 0 && a.FailRPS > 0:
			v = report.Num(a.PassRPS) + "–" + report.Num(a.FailRPS) + " (" + bracketSource(a) + ")"
		case e.Value != 0 && a.FailRPS == 0:
			v = "≥ " + report.Num(e.Value) // no load missed: a lower bound
		case e.Value != 0:
			v = report.Num(e.Value)
		}
		m.p("| %s | %s | %s | %s | %s | %s |\n", a.Arm, v, iv, br, c, strings.TrimSuffix(strings.TrimPrefix(probesText(a), " ("), ")"))
	}
	m.p("\n")
	// One bullet per arm: its note, its probes and the simulator's truth.
	for _, a := range cs.Arms {
		m.p("- %s: ", a.Arm)
		switch {
		case analysis.SuspectCapacity(a): // why: once, below the arms
			m.p("%s; ", analysis.NoCapacityText(a))
		case a.CapacityRPS.Note != "":
			m.p("%s; ", a.CapacityRPS.Note)
		}
		m.p("probes (req/s; requests within each target/judged): %s", probeListText(a))
		if t := truthText(a); t != "" {
			m.p("; %s (%s)", strings.TrimPrefix(t, "; "), a.SimTruth.Window)
		}
		m.p("\n")
	}
	m.p("\n")
	if w := suspectMissesText(cs); w != "" {
		m.p("%s\n\n", w)
	}
	for _, g := range cs.Gains {
		m.p("**Capacity gain %s/%s: %s**\n\n", g.Candidate, g.Baseline, searchGainText(g))
	}
	m.p("Method: %s.\n\n", cs.Method)
}

func (m mdWriter) cells(r report.Results) {
	m.p("## Per arm and offered load\n\n")
	if len(r.Cells) == 0 {
		m.p("Not measured: no cells in this results file.\n\n")
		return
	}
	oneRep := r.Stats != nil && !slices.ContainsFunc(r.Stats.Cells, func(cs report.CellStats) bool { return cs.Reps > 1 })
	if oneRep {
		m.p("One repetition per arm and load: the figures over repetitions would repeat each cell's own, below (results.json `stats.cells` keeps them).\n\n")
	}
	if r.Stats != nil && !oneRep {
		m.overReps(r)
	}
	for _, p := range cellParts(r, m.u)[:2] {
		m.part(foldConstantColumns(p))
	}
	m.p("TTFT (intended), TTFO, schedule and dispatch lag per cell: report.html's cell table and results.json `cells`.\n\n")
	mismatches := false
	for _, c := range report.SortedCells(r) {
		if pc := c.PromptCheck; pc.Mismatches > 0 && pc.Diff != nil {
			mismatches = true
			d := pc.Diff
			m.p("- %s at %s req/s rep %d: prompt mismatches: %d of %d requests that reported usage.prompt_tokens differed from the intended input length (prompt_tokens − intended: min %d, median %d, max %d tokens (%.1f %% to %.1f %%; median %.1f %%))",
				c.Arm, report.Num(c.OfferedLoadRPS), c.Repetition, pc.Mismatches, pc.Reported, d.MinTokens, d.MedianTokens, d.MaxTokens, d.MinPct, d.MaxPct, d.MedianPct)
			if pc.TextPrompts > 0 {
				m.p("; %d of the %d reporting requests had text prompts: their token count depends on the server's tokenizer (and chat template), so a difference there is expected and does not mean input was lost", pc.TextPrompts, pc.Reported)
			}
			m.p("\n")
		}
	}
	if mismatches {
		m.p("\n")
	}
}

// overReps writes the figures over repetitions of the decision rule's metric
// (every metric when the results carry no rule): one row per arm × load ×
// metric, one column per statistic (value [interval]). A statistic no cell
// could estimate in any repetition (too few samples) gets no column and is
// named once; the other metrics are pointed to (results.json `stats.cells`).
func (m mdWriter) overReps(r report.Results) {
	metric := ""
	if r.Rule != nil {
		metric = r.Rule.Metric
	}
	var stats []string
	estimated := map[string]bool{}
	for _, cs := range r.Stats.Cells {
		for _, ms := range cs.Metrics {
			if metric != "" && ms.Metric != metric {
				continue
			}
			if !slices.Contains(stats, ms.Stat) {
				stats = append(stats, ms.Stat)
			}
			estimated[ms.Stat] = estimated[ms.Stat] || ms.Value.Reps > 0
		}
	}
	var refused []string
	stats = slices.DeleteFunc(stats, func(st string) bool {
		if !estimated[st] {
			refused = append(refused, st)
		}
		return !estimated[st]
	})
	m.p("### Over repetitions\n\n%s.", r.Stats.Method)
	if metric != "" {
		m.p(" The decision metric (%s) only: every metric's figures over repetitions, with their intervals, are in results.json `stats.cells` (report.html charts the latencies' p50 and p99 by load).", metric)
	}
	if len(refused) > 0 {
		m.p(" No column for %s: too few samples in every repetition of every cell.", strings.Join(refused, ", "))
	}
	m.p("\n\n")
	header := append([]string{"arm", "load (req/s)", "reps", "metric"}, stats...)
	m.p("|%s|\n|%s\n", mdRow(header), strings.Repeat(" --- |", len(header)))
	for _, cs := range r.Stats.Cells {
		var metrics []string
		byStat := map[string]map[string]report.MetricStat{}
		unit := map[string]string{}
		for _, ms := range cs.Metrics {
			if metric != "" && ms.Metric != metric {
				continue
			}
			if byStat[ms.Metric] == nil {
				metrics = append(metrics, ms.Metric)
				byStat[ms.Metric] = map[string]report.MetricStat{}
				unit[ms.Metric] = ms.Unit
			}
			byStat[ms.Metric][ms.Stat] = ms
		}
		for _, mt := range metrics {
			row := []string{cs.Arm, report.Num(cs.OfferedLoadRPS), strconv.Itoa(cs.Reps), mt + " (" + m.u(unit[mt]) + ")"}
			for _, st := range stats {
				ms, ok := byStat[mt][st]
				switch {
				case !ok:
					row = append(row, "—")
				case ms.Value.Reps == 0:
					row = append(row, valueText(ms.Value))
				default:
					row = append(row, report.Num(ms.Value.Value)+" "+report.Interval(ms.Value))
				}
			}
			m.p("|%s|\n", mdRow(row))
		}
	}
	m.p("\n")
}

// cellParts are the per-cell tables, one row per arm × load × repetition:
// latency at p50, the SLO's percentile (and p99 where a cell supports it)
// and mean; rates, SLO claims and flags; the client's own timing. Each
// definition and reason is said once, in the table's note.
func cellParts(r report.Results, u func(string) string) []tablePart {
	cells := report.SortedCells(r)
	pq := r.SLO.Percentile
	if pq == 0 {
		pq = report.DefaultSLOPercentile
	}
	ps := "p" + strconv.FormatFloat(pq, 'f', -1, 64)
	return []tablePart{latencyPart(cells, ps, u), ratesPart(cells, ps, u), timingPart(cells, ps, u)}
}

// cellKey is the first three columns of a cell's row: arm, load, repetition.
func cellKey(c report.Cell) []string {
	return []string{c.Arm, report.Num(c.OfferedLoadRPS), fmt.Sprint(c.Repetition)}
}

// quantileText is d's quantile q ("p50", "p99.9", "mean", "max"), or why
// there is none (figure).
func quantileText(d report.Dist, q string) string {
	v, err := analysis.Quantile(d, q)
	if err != nil {
		return figure(nil, d.N)
	}
	return report.Num(v)
}

// latencyPart is the latency table: TTFT, TPOT and E2E at p50, ps (and p99
// where a cell has it) and mean, ITL at p50 and ps.
func latencyPart(cells []report.Cell, ps string, u func(string) string) tablePart {
	withP99 := ps != "p99" && slices.ContainsFunc(cells, func(c report.Cell) bool {
		return c.TTFT.P99Ms != nil || c.TPOT.P99Ms != nil || c.E2E.P99Ms != nil
	})
	lat := tablePart{Heading: "Latency (" + u("ms") + ")", Header: []string{"arm", "load (req/s)", "rep", "ok/n"}}
	type col struct {
		name string
		d    func(report.Cell) report.Dist
		qs   []string
	}
	qsOf := func(main bool) []string {
		q := []string{"p50", ps}
		if withP99 {
			q = append(q, "p99")
		}
		if main {
			q = append(q, "mean")
		}
		return q
	}
	cols := []col{
		{"TTFT", func(c report.Cell) report.Dist { return c.TTFT }, qsOf(true)},
		{"ITL", func(c report.Cell) report.Dist { return c.ITL }, []string{"p50", ps}},
		{"TPOT", func(c report.Cell) report.Dist { return c.TPOT }, qsOf(true)},
		{"E2E", func(c report.Cell) report.Dist { return c.E2E }, qsOf(true)},
	}
	for _, cl := range cols {
		for _, q := range cl.qs {
			lat.Header = append(lat.Header, cl.name+" "+q)
		}
	}
	methods := map[string]bool{}
	var method string
	for _, c := range cells {
		n := 0
		for _, v := range c.States {
			n += v
		}
		row := append(cellKey(c), fmt.Sprintf("%d/%d", c.States["ok"], n))
		for _, cl := range cols {
			for _, q := range cl.qs {
				row = append(row, quantileText(cl.d(c), q))
			}
		}
		lat.Rows = append(lat.Rows, row)
		if c.TTFT.Method != "" && !methods[c.TTFT.Method] {
			methods[c.TTFT.Method] = true
			method = report.OrText(method, c.TTFT.Method)
		}
	}
	lat.Note = "ok/n: requests that ended ok of the measured ones (warm-up left out); latency figures are over the ok ones, ITL per gap. refused (n=…): too few samples for that percentile at 99 % confidence (p90 needs ≥ 44, p99 ≥ 459); —: no samples."
	if method != "" {
		lat.Note += " Percentile method: " + method + "."
	}
	return lat
}

// ratesPart is the table of arrival, window, throughput, goodput, SLO
// claims at ps and flags, one row per cell.
func ratesPart(cells []report.Cell, ps string, u func(string) string) tablePart {
	rates := tablePart{Heading: "Rates, SLO claims and flags",
		Header: []string{"arm", "load (req/s)", "rep", "arrival (" + u("req/s") + ")", "window (" + u("s") + ")", "output tokens in the window", "throughput (" + u("tok/s") + ")", "goodput (" + u("req/s") + "; met SLOs / measured)", "SLO claims at " + ps, "flags"}}
	claimNote := false
	for _, c := range cells {
		arrival := notMeasuredText(report.OrText(c.NotMeasured, "fewer than two measured requests"))
		if c.ArrivalRateRPS != nil {
			arrival = report.Num(*c.ArrivalRateRPS)
		}
		window, tokens, thr := notMeasuredText(c.NotMeasured), "—", "—"
		if c.NotMeasured == "" {
			window, tokens, thr = optWindowText(c.WindowS), tokensText(c.WindowOutputTokens), cellRate(c, c.ThroughputTokPerS)
		}
		claims := claimTexts(c)
		claimNote = claimNote || len(claims) > 0
		rates.Rows = append(rates.Rows, append(cellKey(c), arrival, window, tokens, thr, goodputText(c)+" ("+goodCount(c)+")",
			report.OrText(strings.Join(claims, "; "), "none declared"), report.OrText(strings.Join(cellFlags(c), "; "), "none")))
	}
	rates.Note = "Arrival: the measured requests' rate ((n − 1) / their scheduled span); the offered load is the mean over warm-up and measured span, so a bursty trace's measured part can arrive faster. Window: " + windowDefinition + ". Output tokens in the window: " + windowTokensDefinition + "; throughput = those tokens / window. Goodput: " + goodputDefinition + "."
	if claimNote {
		rates.Note += " SLO claims: of n ok requests, how many exceeded the target, against the most that may at 99 % confidence for the percentile to hold (early stopping; p-values in results.json)."
	}
	if slices.ContainsFunc(cells, func(c report.Cell) bool { return c.ClientBound }) {
		rates.Note += " client-bound: " + analysis.ClientBoundRule() + " (an exact binomial test), so the client, not the server, may have set the pace: the cell is shown and its repetition is left out of its arm's comparisons (a load decides from the repetitions left when at least 2 are)."
	}
	if slices.ContainsFunc(cells, func(c report.Cell) bool { return !c.ClientBound && c.DispatchLateSends > 0 }) {
		rates.Note += " late sends, not client-bound: fewer late sends than that, no evidence that the client set the pace; each late request's TTFT, TPOT and E2E count from its own send."
	}
	return rates
}

// claimTexts are c's SLO claims, one text each: how many ok requests were
// over the target against the most allowed (or that too few were measured).
func claimTexts(c report.Cell) []string {
	var claims []string
	for _, cl := range c.SLOClaims {
		t := fmt.Sprintf("%s ≤ %s ms: %s (%d/%d over", strings.ToUpper(cl.Metric), report.Num(cl.TargetMs), claimWord(cl.Holds), cl.Over, cl.N)
		if cl.MaxOver < 0 {
			need, _ := stats.MinSamples(cl.Quantile, cl.Confidence)
			t += fmt.Sprintf("; n < %d: too few for a claim", need)
		} else {
			t += fmt.Sprintf(", ≤ %d allowed", cl.MaxOver)
		}
		claims = append(claims, t+")")
	}
	return claims
}

// cellFlags are what the reader must know of c beyond its figures: client-
// bound or late sends, incomplete, failed states, queued, usage and prompt
// problems.
func cellFlags(c report.Cell) []string {
	var flags []string
	if c.ClientBound {
		flags = append(flags, "client-bound ("+analysis.DispatchLagFlagText(c)+")")
	} else if c.DispatchLateSends > 0 {
		flags = append(flags, "late sends, not client-bound ("+analysis.DispatchLagFlagText(c)+")")
	}
	if c.Incomplete != "" {
		flags = append(flags, "incomplete, left out of statistics, ratios and verdicts: "+c.Incomplete)
	}
	for _, st := range []string{"http_error", "stream_error", "timeout", "cancelled", "not_sent"} {
		if c.States[st] > 0 {
			flags = append(flags, fmt.Sprintf("%s %d", st, c.States[st]))
		}
	}
	for _, f := range []struct {
		n    int
		text string
	}{
		{c.QueuedByCap, "in-flight cap queued %d (sent late, in order)"},
		{c.MissingUsage, "missing usage %d (output tokens from token events)"},
		{c.UsageMismatches, "usage mismatches %d"},
		{c.MultiTokenEvents, "multi-token events %d"},
	} {
		if f.n > 0 {
			flags = append(flags, fmt.Sprintf(f.text, f.n))
		}
	}
	if c.PromptCheck.Mismatches > 0 {
		flags = append(flags, fmt.Sprintf("prompt mismatches %d/%d (below)", c.PromptCheck.Mismatches, c.PromptCheck.Reported))
	}
	return flags
}

// timingPart is the client's own timing per cell: intended TTFT, TTFO,
// schedule and dispatch lag, warm-up records left out.
func timingPart(cells []report.Cell, ps string, u func(string) string) tablePart {
	timing := tablePart{Heading: "Client timing (" + u("ms") + ")",
		Header: []string{"arm", "load (req/s)", "rep", "TTFT (intended) p50", "TTFO p50", "schedule lag p50", "schedule lag " + ps, "dispatch lag p50", "dispatch lag max", "warm-up records left out"}}
	for _, c := range cells {
		timing.Rows = append(timing.Rows, append(cellKey(c), quantileText(c.TTFTIntended, "p50"), quantileText(c.TTFO, "p50"),
			quantileText(c.ScheduleLag, "p50"), quantileText(c.ScheduleLag, ps), quantileText(c.DispatchLag, "p50"), quantileText(c.DispatchLag, "max"), fmt.Sprint(c.WarmupRecords)))
	}
	timing.Note = "TTFT (intended) counts from the scheduled send (coordinated-omission safe); TTFO is the first message of any kind; schedule lag is how late each send left against its schedule, dispatch lag the client's own part of it."
	return timing
}

// The definitions printed next to the window figures (DESIGN.md, "Throughput", "Goodput").
const (
	windowDefinition       = "the measured window: first measured send to the last event of any measured request, drain included"
	windowTokensDefinition = "token events between the first measured send and the last measured end, warm-up requests' late tokens included"
	goodputDefinition      = "the rate of requests that met every SLO: the measured arrival rate when all did, never above it; the offered load is a mean over warm-up and measured span, so a bursty trace's measured part, and goodput with it, can exceed it"
)

// windowText formats a window length in s with ms resolution, so that
// throughput can be reproduced from the printed figures.
func windowText(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }

// zeroWindow is why a measured cell has no throughput or goodput.
const zeroWindow = "the measured window has zero length"

// notMeasuredText is "not measured: reason".
func notMeasuredText(reason string) string { return "not measured: " + reason }

// optWindowText is windowText of a window that may not have been measured.
func optWindowText(s *float64) string {
	if s == nil {
		return "not measured"
	}
	return windowText(*s)
}

// cellRate formats a per-window figure of c (throughput, goodput): the
// number, or "not measured: why" when the cell has no window or a zero one.
func cellRate(c report.Cell, v *float64) string {
	if v != nil {
		return report.Num(*v)
	}
	return notMeasuredText(report.OrText(c.NotMeasured, zeroWindow))
}

// goodputText is c's goodput, or "not measured: why".
func goodputText(c report.Cell) string {
	if c.GoodputRPS != nil {
		return report.Num(*c.GoodputRPS)
	}
	return notMeasuredText(report.OrText(c.NotMeasured, "no arrival rate (fewer than two measured requests)"))
}

// tokensText formats a token count that may be fractional (usage/events weighting).
func tokensText(v float64) string {
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// goodCount is "good/measured": requests meeting every declared SLO out of the
// measured requests (every state counted, warm-up left out).
func goodCount(c report.Cell) string {
	n := 0
	for _, v := range c.States {
		n += v
	}
	return fmt.Sprintf("%d/%d", c.GoodRequests, n)
}

func statesText(s map[string]int) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	order := map[string]int{"ok": 0, "http_error": 1, "stream_error": 2, "timeout": 3, "cancelled": 4, "not_sent": 5}
	slices.SortFunc(keys, func(a, b string) int {
		ra, oka := order[a]
		rb, okb := order[b]
		if !oka {
			ra = 99
		}
		if !okb {
			rb = 99
		}
		return cmp.Or(cmp.Compare(ra, rb), strings.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, s[k])
	}
	return strings.Join(parts, ", ")
}

func (m mdWriter) aliases(r report.Results) {
	if len(r.Aliases) == 0 {
		return
	}
	// One paragraph, not a table: a glossary, read once.
	keys := make([]string, 0, len(r.Aliases))
	for k := range r.Aliases {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, "**"+k+"**: "+r.Aliases[k])
	}
	m.p("## Metric names in other tools\n\n%s.\n", strings.Join(parts, "; "))
}

// figure formats an optional ms figure: "—" with no samples, "refused (n=…)" when too few.
func figure(v *float64, n int) string {
	if v == nil {
		if n == 0 {
			return "—"
		}
		return fmt.Sprintf("refused (n=%d)", n)
	}
	return report.Num(*v)
}

// valueText formats an Estimate's value, or, when no repetition supports it,
// "not measured"/"refused" with the reason (its Note), never a number.
func valueText(e report.Estimate) string {
	if e.Reps == 0 {
		return report.UndefinedText(e)
	}
	return report.Num(e.Value)
}

// optNum formats an optional figure; nil is "not measured".
func optNum(v *float64) string {
	if v == nil {
		return "not measured"
	}
	return report.Num(*v)
}

func claimWord(holds bool) string {
	if holds {
		return "holds"
	}
	return "not supported"
}
