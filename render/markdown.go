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
	for _, sec := range tableSections(r) {
		sec.writeMarkdown(m)
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
	m.p("\n**Headline: %s.**\n\n", Headline(r))
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
	for _, v := range r.Verdicts {
		m.p("### %s vs %s: **%s**, decided by %s\n\n", v.Candidate, v.Baseline, strings.ToUpper(v.Outcome), analysis.DecidedBy(v))
		if v.ClientBound != "" {
			m.p("> **Warning:** %s (see each cell's client-bound note).\n\n", v.ClientBound)
		}
		m.p("| clause | name | outcome | detail |\n| --- | --- | --- | --- |\n")
		for _, c := range v.Clauses {
			m.p("|%s|\n", mdRow([]string{c.Clause, c.Name, c.Outcome, c.Detail}))
		}
		m.p("\n")
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
	m.p("| arm | capacity (%s) | interval | next load | per repetition |\n| --- | --- | --- | --- | --- |\n", m.u("req/s"))
	for _, c := range r.Stats.Capacity {
		next := nextLoadText(c)
		m.p("| %s | %s | %s | %s | %s |\n", c.Arm, valueText(c.CapacityRPS), report.Interval(c.CapacityRPS), next, report.Nums(c.PerRepRPS))
	}
	m.p("\n")
	for _, c := range r.Stats.Capacity {
		if c.Detail != "" {
			m.p("- %s: %s\n", c.Arm, c.Detail)
		}
	}
	m.p("\n")
	for _, g := range r.Stats.CapacityGain {
		m.p("**Capacity gain %s/%s: %s**\n\n", g.Candidate, g.Baseline, report.EstimateText(g.Gain, "×"))
	}
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
		m.p("### Over repetitions\n\n%s.\n\n", r.Stats.Method)
		m.p("| arm | load (req/s) | reps | metric | stat | value | interval |\n| --- | --- | --- | --- | --- | --- | --- |\n")
		for _, cs := range r.Stats.Cells {
			for _, ms := range cs.Metrics {
				v := report.Num(ms.Value.Value) + " " + m.u(ms.Unit)
				if ms.Value.Reps == 0 {
					v = valueText(ms.Value)
				}
				m.p("| %s | %s | %d | %s | %s | %s | %s |\n", cs.Arm, report.Num(cs.OfferedLoadRPS), cs.Reps, ms.Metric, ms.Stat, v, report.Interval(ms.Value))
			}
		}
		m.p("\n")
	}
	for _, c := range report.SortedCells(r) {
		m.p("### %s at %s req/s offered, repetition %d (cell %d in run order)\n\n", c.Arm, report.Num(c.OfferedLoadRPS), c.Repetition, c.Order+1)
		if c.Incomplete != "" {
			m.p("> **Incomplete cell, left out of statistics, ratios and verdicts:** %s\n\n", c.Incomplete)
		}
		m.p("| metric | n | p50 (%[1]s) | p90 (%[1]s) | p99 (%[1]s) | mean (%[1]s) |\n| --- | --- | --- | --- | --- | --- |\n", m.u("ms"))
		for _, d := range []struct {
			name string
			d    report.Dist
		}{{"TTFT", c.TTFT}, {"TTFT (intended)", c.TTFTIntended}, {"TTFO", c.TTFO}, {"ITL (per gap)", c.ITL}, {"TPOT", c.TPOT}, {"E2E", c.E2E}, {"schedule lag", c.ScheduleLag}, {"dispatch lag", c.DispatchLag}} {
			m.p("| %s | %d | %s | %s | %s | %s |\n", d.name, d.d.N, figure(d.d.P50Ms, d.d.N), figure(d.d.P90Ms, d.d.N), figure(d.d.P99Ms, d.d.N), figure(d.d.MeanMs, d.d.N))
		}
		m.p("\n")
		if c.ArrivalRateRPS != nil {
			m.p("- arrival rate of the measured requests: %s %s (the offered load is the mean over warm-up and measured span together; a bursty trace's measured part can differ)\n", report.Num(*c.ArrivalRateRPS), m.u("req/s"))
		} else {
			m.p("- arrival rate of the measured requests: %s\n", notMeasuredText(report.OrText(c.NotMeasured, "fewer than two measured requests, or all scheduled at one instant")))
		}
		if c.NotMeasured != "" {
			m.p("- window, throughput and goodput: %s\n", notMeasuredText(c.NotMeasured))
		} else {
			m.p("- window: %s %s (%s)\n", optWindowText(c.WindowS), m.u("s"), windowDefinition)
			m.p("- output tokens in the window: %s (%s); the numerator of throughput, J per output token and cost per output token\n", tokensText(c.WindowOutputTokens), windowTokensDefinition)
			if c.ThroughputTokPerS != nil {
				m.p("- throughput: %s %s = output tokens in the window / window = %s / %s s\n", report.Num(*c.ThroughputTokPerS), m.u("tok/s"), tokensText(c.WindowOutputTokens), optWindowText(c.WindowS))
			} else {
				m.p("- throughput: %s\n", notMeasuredText(zeroWindow))
			}
			if c.GoodputRPS != nil {
				m.p("- goodput: %s %s = arrival rate of the measured requests × %s (%s)\n", report.Num(*c.GoodputRPS), m.u("req/s"), goodText(c, r.SLO), goodputDefinition)
			} else {
				m.p("- goodput: %s (%s)\n", notMeasuredText("no arrival rate"), goodText(c, r.SLO))
			}
		}
		m.p("- states: %s (warm-up records left out: %d)\n", statesText(c.States), c.WarmupRecords)
		m.p("- output tokens of the measured requests: %d (ok measured requests' output_tokens; sources: %s; usage mismatches: %d; not throughput's numerator); input tokens: %d; multi-token events: %d\n", c.OutputTokens, countsText(c.UsageSourceCounts), c.UsageMismatches, c.InputTokens, c.MultiTokenEvents)
		for _, cl := range c.SLOClaims {
			allowed := fmt.Sprintf("at %s confidence at most %d may be", report.Pct(cl.Confidence), cl.MaxOver)
			if cl.MaxOver < 0 {
				need, _ := stats.MinSamples(cl.Quantile, cl.Confidence)
				allowed = fmt.Sprintf("n = %d is too few for any claim at %s confidence: it needs ≥ %d", cl.N, report.Pct(cl.Confidence), need)
			}
			m.p("- SLO claim %s p%s ≤ %s %s: %s (%d of %d over target; %s; early-stopping p-value %.3g)\n",
				cl.Metric, strconv.FormatFloat(cl.Quantile*100, 'f', -1, 64), report.Num(cl.TargetMs), m.u("ms"), claimWord(cl.Holds), cl.Over, cl.N, allowed, cl.PValue)
		}
		if c.QueuedByCap > 0 {
			m.p("- the in-flight cap queued %d requests (sent late, in order; their schedule lag includes the wait)\n", c.QueuedByCap)
		}
		if c.MissingUsage > 0 {
			m.p("- missing usage: %d ok requests carried no usage (their output tokens count token events)\n", c.MissingUsage)
		}
		if pc := c.PromptCheck; pc.Mismatches > 0 && pc.Diff != nil {
			d := pc.Diff
			m.p("- prompt mismatches: %d of %d requests that reported usage.prompt_tokens differed from the intended input length (prompt_tokens − intended: min %d, median %d, max %d tokens (%.1f %% to %.1f %%; median %.1f %%))",
				pc.Mismatches, pc.Reported, d.MinTokens, d.MedianTokens, d.MaxTokens, d.MinPct, d.MaxPct, d.MedianPct)
			if pc.TextPrompts > 0 {
				m.p("; %d of the %d reporting requests had text prompts: their token count depends on the server's tokenizer (and chat template), so a difference there is expected and does not mean input was lost", pc.TextPrompts, pc.Reported)
			}
			m.p("\n")
		}
		if c.ClientBound {
			m.p("- **client-bound**: the client's own %s exceeded its %s ms budget; the client, not the server, may have set the pace, so this cell's figures are suspect\n", analysis.DispatchLagFlagText(c), report.Num(analysis.DefaultClientBoundLag.Seconds()*1000))
		}
		m.p("- percentile method: %s\n\n", c.TTFT.Method)
	}
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

// goodText is goodput's numerator with its count of measured requests: "48/48
// measured requests met every SLO (TTFT ≤ 500 ms, …)".
func goodText(c report.Cell, s report.SLO) string {
	return fmt.Sprintf("%s measured requests met every SLO (%s)", goodCount(c), sloTargets(s))
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

func countsText(s map[string]int) string {
	if len(s) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
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
	m.p("## Metric names in other tools\n\n| ours | others |\n| --- | --- |\n")
	keys := make([]string, 0, len(r.Aliases))
	for k := range r.Aliases {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		m.p("| %s | %s |\n", k, r.Aliases[k])
	}
	m.p("\n")
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
