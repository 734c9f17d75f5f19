package render

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
)

// WriteHTML writes one self-contained report.html for r: no script, no
// stylesheet or font fetched, every chart an inline SVG drawn by gonum/plot:
// latency (TTFT, ITL, TPOT, E2E at p50 and p99) against offered load per arm,
// TTFT and ITL CDFs per offered load (from the CDF points BuildCell keeps),
// measured speedup against the Amdahl bound, energy per output token and cost
// per 1M output tokens per load. A section that was not measured shows
// "not measured" and the reason instead of a chart. When r.Simulated every
// chart and figure says "simulated". It also carries the verdicts, capacity
// and the per arm × load summary table.
func WriteHTML(w io.Writer, r report.Results) error {
	page, err := buildPage(r)
	if err != nil {
		return err
	}
	if err := pageTemplate.Execute(w, page); err != nil {
		return fmt.Errorf("render: writing report.html: %w", err)
	}
	return nil
}

// htmlPage is what the template renders.
type htmlPage struct {
	Title      string
	Simulated  bool
	Results    report.Results
	Incomplete string
	// Resumed is ResumedText ("" unless resumed); CellStarts its table's rows.
	Resumed      string
	CellStarts   [][]string
	SLO          string
	Verdicts     []report.Verdict
	Capacity     []capacityRow
	Gains        []string
	CapacityNote string
	Sections     []htmlSection
	Summary      []summaryRow
	Unit         func(string) string
	Headline     string
	Tables       []tableSection
	// Inputs are a comparison's input files ("A: path, created …").
	Inputs []string
	// NotRun are the planned cells that did not run (order, arm, load, rep); NotRunNote introduces them.
	NotRun     [][]string
	NotRunNote string
	// Answer is the first-screen answer, one block per candidate.
	Answer []AnswerBlock
	// VerdictLines are VerdictLine of each verdict, in order.
	VerdictLines []string
	// CapacitySearch holds the searched capacity's lines (none: not searched).
	CapacitySearch []string
	// The window figures' definitions, printed under the summary table.
	TokensDefinition, WindowDefinition, GoodputDefinition string
}

type htmlSection struct {
	ID, Heading, Note, NotMeasured string
	Charts                         []htmlChart
}

type htmlChart struct {
	ID  string
	SVG template.HTML
}

type capacityRow struct{ Arm, Value, Interval, Next, PerRep, Detail string }

// summaryRow is one cell's row of the summary, printed as two tables (one
// of 20 columns ran past a 1,280 px page): Latency (TTFT, ITL, TPOT, E2E at
// p50, p99 and mean) and Window (throughput, window tokens, window, goodput).
type summaryRow struct {
	Arm, Load, Rep, States string
	Latency, Window        []string
}

func buildPage(r report.Results) (htmlPage, error) {
	sim := r.Simulated
	u := func(unit string) string {
		if sim {
			return unit + ", simulated"
		}
		return unit
	}
	p := htmlPage{Title: "transferlab report", Simulated: sim, Results: r, SLO: sloText(r.SLO), Verdicts: r.Verdicts, Unit: u, Headline: Headline(r), Tables: tableSections(r), Answer: Answer(r),
		TokensDefinition: windowTokensDefinition, WindowDefinition: windowDefinition, GoodputDefinition: goodputDefinition}
	if sim {
		p.Title += " (simulated)"
	}
	if !r.Complete {
		p.Incomplete = report.OrText(r.IncompleteReason, "no reason recorded")
	}
	if p.Resumed = report.ResumedText(r); p.Resumed != "" {
		p.CellStarts = report.CellStartRows(r)
	}
	for _, in := range r.Inputs {
		p.Inputs = append(p.Inputs, in.Label+": "+in.Text())
	}
	if nr := report.CellsNotRun(r); len(nr) > 0 {
		p.NotRun, p.NotRunNote = notRunRows(r, nr), notRunNote(r, nr)
	}
	for _, v := range r.Verdicts {
		p.VerdictLines = append(p.VerdictLines, analysis.VerdictLine(v))
	}
	p.CapacitySearch = capacitySearchLines(r)
	p.Capacity, p.Gains, p.CapacityNote = capacityRows(r)
	p.Summary = summaryRows(r)

	arms := report.ArmOrder(r)
	colorOf := map[string]int{}
	for i, a := range arms {
		colorOf[a] = i
	}
	groups := analysis.GroupCells(r)
	lat, err := latencySection(r, groups, arms, colorOf, u)
	if err != nil {
		return p, err
	}
	p.Sections = append(p.Sections, lat)
	cdfs, err := cdfSections(r, groups, colorOf, u)
	if err != nil {
		return p, err
	}
	p.Sections = append(p.Sections, cdfs...)

	am, err := amdahlSection(r, colorOf, u)
	if err != nil {
		return p, err
	}
	p.Sections = append(p.Sections, am)
	en, err := perLoadSection(r, "energy", "Energy per output token", energyLabel(sim), arms, colorOf, energyPoints)
	if err != nil {
		return p, err
	}
	p.Sections = append(p.Sections, en)
	co, err := perLoadSection(r, "cost", "Cost per 1M output tokens", "per 1M output tokens ("+u(costCurrency(r))+")", arms, colorOf, costPoints)
	if err != nil {
		return p, err
	}
	p.Sections = append(p.Sections, co)
	return p, nil
}

// capacityRows are the capacity table's rows, the capacity-gain lines, and
// the note that replaces both when capacity was not measured.
func capacityRows(r report.Results) (rows []capacityRow, gains []string, note string) {
	switch {
	case r.Stats == nil:
		return nil, nil, "not measured: the results were not analysed"
	case r.Stats.CapacityNotMeasured != "":
		return nil, nil, "not measured: " + r.Stats.CapacityNotMeasured
	case r.Stats.CapacitySuperseded != "":
		return nil, nil, r.Stats.CapacitySuperseded
	}
	for _, c := range r.Stats.Capacity {
		rows = append(rows, capacityRow{c.Arm, valueText(c.CapacityRPS), report.Interval(c.CapacityRPS), nextLoadText(c), report.Nums(c.PerRepRPS), c.Detail})
	}
	for _, g := range r.Stats.CapacityGain {
		gains = append(gains, fmt.Sprintf("Capacity gain %s/%s: %s", g.Candidate, g.Baseline, report.EstimateText(g.Gain, "×")))
	}
	return rows, gains, ""
}

// summaryRows are the per-cell summary table's rows, in report.SortedCells order.
func summaryRows(r report.Results) []summaryRow {
	var rows []summaryRow
	for _, c := range report.SortedCells(r) {
		row := summaryRow{Arm: c.Arm, Load: report.Num(c.OfferedLoadRPS), Rep: fmt.Sprint(c.Repetition), States: statesText(c.States)}
		for _, d := range []report.Dist{c.TTFT, c.ITL, c.TPOT, c.E2E} {
			row.Latency = append(row.Latency, figure(d.P50Ms, d.N), figure(d.P99Ms, d.N), figure(d.MeanMs, d.N))
		}
		windowTokens := tokensText(c.WindowOutputTokens)
		if c.NotMeasured != "" {
			windowTokens = "not measured"
		}
		row.Window = append(row.Window, cellRate(c, c.ThroughputTokPerS), windowTokens, optWindowText(c.WindowS), goodputText(c)+" ("+goodCount(c)+")")
		rows = append(rows, row)
	}
	return rows
}

// latencySection charts each arm's TTFT, ITL, TPOT and E2E p50 and p99
// against offered load (loadPoints), naming the figures no cell supports.
// u labels a unit (", simulated" on the simulator).
func latencySection(r report.Results, groups []analysis.Group, arms []string, colorOf map[string]int, u func(string) string) (htmlSection, error) {
	var undrawn []string
	lat := htmlSection{ID: "latency", Heading: "Latency against offered load", Note: "Mean over repetitions; bars are the Student t interval over the repetitions' values when there are ≥ 2 repetitions."}
	for _, m := range []struct{ metric, label string }{{"ttft", "TTFT"}, {"itl", "ITL (per gap)"}, {"tpot", "TPOT"}, {"e2e", "E2E"}} {
		for _, stat := range []string{"p50", "p99"} {
			ch := chart{id: "latency-" + m.metric + "-" + stat, title: m.label + " " + stat + " by offered load", xLabel: "offered load (req/s)", yLabel: m.label + " " + stat + " (" + u("ms") + ")"}
			for _, a := range arms {
				ch.series = append(ch.series, series{name: a, color: colorOf[a], points: loadPoints(r, groups, a, m.metric, stat)})
			}
			before := len(lat.Charts)
			if err := addChart(&lat, ch); err != nil {
				return lat, err
			}
			if len(lat.Charts) == before {
				undrawn = append(undrawn, m.label+" "+stat)
			}
		}
	}
	if len(undrawn) > 0 {
		lat.Note += " Not drawn, no cell could support the figure (percentile refused for too few samples, or nothing measured): " + strings.Join(undrawn, ", ") + "."
	}
	if len(lat.Charts) == 0 {
		lat.NotMeasured = "no latency figure in any cell"
	}
	return lat, nil
}

// cdfSections chart the TTFT and ITL CDFs at each offered load, one line per
// repetition coloured by arm, from the cells' CDF points.
func cdfSections(r report.Results, groups []analysis.Group, colorOf map[string]int, u func(string) string) ([]htmlSection, error) {
	var secs []htmlSection
	for _, m := range []struct{ metric, label string }{{"ttft", "TTFT"}, {"itl", "ITL (per gap)"}} {
		sec := htmlSection{ID: m.metric + "-cdf", Heading: m.label + " CDF per offered load", Note: "One line per repetition, coloured by arm; from the raw records' CDF points."}
		for _, load := range report.LoadsOf(r) {
			ch := chart{id: m.metric + "-cdf-" + report.Num(load), title: m.label + " CDF at " + report.Num(load) + " req/s offered", xLabel: m.label + " (" + u("ms") + ")", yLabel: "fraction of samples ≤ x", legendBottomRight: true}
			for _, g := range groups {
				if g.Load != load {
					continue
				}
				for i, c := range g.Cells {
					d, _ := analysis.CellDist(c, m.metric)
					s := series{color: colorOf[g.Arm], thin: true}
					if i == 0 {
						s.name = g.Arm
					}
					for _, pt := range d.CDF {
						s.points = append(s.points, point{x: pt.Ms, y: pt.Fraction})
					}
					ch.series = append(ch.series, s)
				}
			}
			if err := addChart(&sec, ch); err != nil {
				return secs, err
			}
		}
		if len(sec.Charts) == 0 {
			sec.NotMeasured = "no CDF points in the results (BuildCell keeps them for TTFT and ITL)"
		}
		secs = append(secs, sec)
	}
	return secs, nil
}

func addChart(sec *htmlSection, c chart) error {
	var n int
	for _, s := range c.series {
		n += len(s.points)
	}
	if n == 0 {
		return nil
	}
	svg, err := c.svg()
	if err != nil {
		return err
	}
	sec.Charts = append(sec.Charts, htmlChart{ID: c.id, SVG: svg})
	return nil
}

// loadPoints are one arm's metric/stat by load: Stats' estimate when analysed,
// else the plain mean over repetitions (no interval).
func loadPoints(r report.Results, groups []analysis.Group, arm, metric, stat string) []point {
	var out []point
	if r.Stats != nil {
		for _, cs := range r.Stats.Cells {
			if cs.Arm != arm {
				continue
			}
			for _, m := range cs.Metrics {
				if m.Metric == metric && m.Stat == stat && m.Value.Reps > 0 {
					out = append(out, point{x: cs.OfferedLoadRPS, y: m.Value.Value, lo: m.Value.Low, hi: m.Value.High, interval: m.Value.Interval})
				}
			}
		}
		return out
	}
	for _, g := range groups {
		if g.Arm != arm {
			continue
		}
		if vals, _, _ := g.Values(metric, stat); len(vals) > 0 {
			out = append(out, point{x: g.Load, y: analysis.Mean(vals)})
		}
	}
	return out
}

func amdahlSection(r report.Results, colorOf map[string]int, u func(string) string) (htmlSection, error) {
	sec := htmlSection{ID: "amdahl", Heading: "Measured speedup against the Amdahl bound", Note: "Each series is a " + report.SpeedupLabel("", "") + ", bars its interval. Amdahl bound: 1 / ((1 − f_wall) + f_wall / s), dashed between loads, bars its interval."}
	if reason := sectionReason(r.Amdahl == nil, func() string { return r.Amdahl.NotMeasured }, func() int { return len(r.Amdahl.Loads) }); reason != "" {
		sec.NotMeasured = reason
		return sec, nil
	}
	var cands []string
	for _, l := range r.Amdahl.Loads {
		if !slices.Contains(cands, l.Candidate) {
			cands = append(cands, l.Candidate)
		}
	}
	for _, cand := range cands {
		loads := slices.DeleteFunc(slices.Clone(r.Amdahl.Loads), func(l report.AmdahlLoad) bool { return l.Candidate != cand })
		slices.SortFunc(loads, func(a, b report.AmdahlLoad) int { return cmp.Compare(a.OfferedLoadRPS, b.OfferedLoadRPS) })
		ch := chart{id: "amdahl-" + cand, title: cand + ": measured speedup vs Amdahl bound", xLabel: "offered load (req/s)", yLabel: report.SpeedupWords + " (" + u("×") + ")"}
		bound := series{name: "Amdahl bound", color: 3, dashed: true}
		measured := map[string]*series{}
		var order []string
		for _, l := range loads {
			bp := point{x: l.OfferedLoadRPS, y: l.Bound}
			if l.BoundLow > 0 && l.BoundHigh > l.BoundLow {
				bp.lo, bp.hi, bp.interval = l.BoundLow, l.BoundHigh, true
			}
			bound.points = append(bound.points, bp)
			for _, sp := range l.Measured {
				if sp.Stat != "mean" || sp.Value.Reps == 0 {
					continue
				}
				k := sp.Metric + " mean"
				if measured[k] == nil {
					measured[k] = &series{name: "measured " + k, color: len(order)}
					order = append(order, k)
				}
				measured[k].points = append(measured[k].points, point{x: l.OfferedLoadRPS, y: sp.Value.Value, lo: sp.Value.Low, hi: sp.Value.High, interval: sp.Value.Interval})
			}
		}
		ch.series = append(ch.series, bound)
		for _, k := range order {
			ch.series = append(ch.series, *measured[k])
		}
		if err := addChart(&sec, ch); err != nil {
			return sec, err
		}
	}
	return sec, nil
}

// perLoadSection draws one chart of a per-cell figure (mean over repetitions) by load, per arm.
func perLoadSection(r report.Results, id, heading, yLabel string, arms []string, colorOf map[string]int, pts func(report.Results, string) ([]point, string)) (htmlSection, error) {
	sec := htmlSection{ID: id, Heading: heading}
	ch := chart{id: id + "-by-load", title: heading + " by offered load", xLabel: "offered load (req/s)", yLabel: yLabel}
	var reason string
	for _, a := range arms {
		p, why := pts(r, a)
		reason = cmp.Or(reason, why)
		ch.series = append(ch.series, series{name: a, color: colorOf[a], points: p})
	}
	if err := addChart(&sec, ch); err != nil {
		return sec, err
	}
	if len(sec.Charts) == 0 {
		sec.NotMeasured = report.OrText(reason, "no figures")
	}
	return sec, nil
}

// byLoadMean averages vals per load and returns them in load order.
func byLoadMean(vals map[float64][]float64) []point {
	loads := make([]float64, 0, len(vals))
	for l := range vals {
		loads = append(loads, l)
	}
	slices.Sort(loads)
	out := make([]point, len(loads))
	for i, l := range loads {
		out[i] = point{x: l, y: analysis.Mean(vals[l])}
	}
	return out
}

func energyPoints(r report.Results, arm string) ([]point, string) {
	if reason := sectionReason(r.Energy == nil, func() string { return r.Energy.NotMeasured }, func() int { return len(r.Energy.Cells) }); reason != "" {
		return nil, reason
	}
	vals := map[float64][]float64{}
	var why []string
	for _, c := range r.Energy.Cells {
		if c.Arm != arm {
			continue
		}
		if !c.Available || !c.Has("j_per_output_token") {
			why = append(why, report.OrText(c.UnavailableReason, "J per output token not measured"))
			continue
		}
		vals[c.OfferedLoadRPS] = append(vals[c.OfferedLoadRPS], c.JPerOutputToken)
	}
	return byLoadMean(vals), "unavailable: " + strings.Join(slices.Compact(why), "; ")
}

func costPoints(r report.Results, arm string) ([]point, string) {
	if reason := sectionReason(r.Cost == nil, func() string { return r.Cost.NotMeasured }, func() int { return len(r.Cost.Cells) }); reason != "" {
		return nil, reason
	}
	vals := map[float64][]float64{}
	for _, c := range r.Cost.Cells {
		if c.Arm == arm {
			vals[c.OfferedLoadRPS] = append(vals[c.OfferedLoadRPS], c.CostPer1MOutputTokens)
		}
	}
	return byLoadMean(vals), ""
}

// energyLabel is the energy chart's y label: GPU-reported on a GPU, simulated otherwise.
func energyLabel(sim bool) string {
	if sim {
		return "J per output token (simulated)"
	}
	return "J per output token (GPU-reported)"
}

func costCurrency(r report.Results) string {
	if r.Cost != nil && len(r.Cost.Cells) > 0 {
		return r.Cost.Cells[0].Currency
	}
	return "currency"
}

var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; color: #111; background: #fff; margin: 1.5em auto; max-width: 1100px; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.banner { border: 2px solid #111; padding: 0.5em 1em; font-weight: bold; }
.not-measured { font-style: italic; color: #444; }
figure { margin: 0 1em 1.5em 0; display: inline-block; vertical-align: top; }
svg.chart { width: 499px; height: 288px; display: block; }
.verdict-pass, .verdict-fail, .verdict-inconclusive { font-weight: bold; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{if .Simulated}}<p class="banner">Simulated: every figure and chart in this report comes from the embedded simulator (sim), not from a GPU.</p>{{end}}
{{if .Incomplete}}<p class="banner">Incomplete run: {{.Incomplete}}</p>{{end}}
{{range .Results.Warnings}}<p class="banner">Warning: {{.}}</p>{{end}}
{{with .Resumed}}<p class="banner">Resumed run: {{.}}</p>
<table><tr><th>order</th><th>arm</th><th>load (req/s)</th><th>repetition</th><th>started at (UTC)</th><th>measured by</th></tr>
{{range $.CellStarts}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end -}}
{{if .Answer}}<h2 id="answer">Answer</h2>
{{range .Answer}}<h3>{{.Candidate}}</h3>
<ul>{{range .Lines}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{end}}
<table>
<tr><th>trace</th><td>{{.Results.Trace.Source}} ({{.Results.Trace.Format}}, sha256 {{.Results.Trace.SHA256}})</td></tr>
<tr><th>trace rows</th><td>{{.Results.Trace.RowsText}}; clamped {{.Results.Trace.Clamped}}</td></tr>
<tr><th>config</th><td>{{.Results.Manifest.ConfigPath}} (sha256 {{.Results.Manifest.ConfigSHA256}})</td></tr>
<tr><th>seed</th><td>{{.Results.Manifest.Seed}}</td></tr>
{{with .Results.RunID}}<tr><th>run_id</th><td>{{.}}</td></tr>
{{end}}<tr><th>SLO</th><td>{{.SLO}}</td></tr>
{{if .Inputs}}{{with .Results.CreatedAt}}{{if not .IsZero}}<tr><th>comparison created</th><td>{{.UTC.Format "2006-01-02T15:04:05Z"}}</td></tr>{{end}}{{end}}{{end}}
{{range .Inputs}}<tr><th>input</th><td>{{.}}</td></tr>
{{end}}</table>
<p><strong>Headline: {{.Headline}}.</strong></p>
{{if .NotRun}}<h3 id="not-run">Cells not run</h3>
<p>{{.NotRunNote}}</p>
<table><tr><th>order</th><th>arm</th><th>load (req/s)</th><th>repetition</th></tr>
{{range .NotRun}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}

<h2 id="verdicts">Verdicts</h2>
{{if not .Verdicts}}<p class="not-measured">Not analysed: no verdicts in this results file.</p>{{end}}
{{range $i, $v := .Verdicts}}<h3>{{.Candidate}} vs {{.Baseline}}: <span class="verdict-{{.Outcome}}">{{.Outcome}}</span> (clause {{.DecidingClause}})</h3>
<p>{{index $.VerdictLines $i}}</p>
<table><tr><th>clause</th><th>name</th><th>outcome</th><th>detail</th></tr>
{{range .Clauses}}<tr><td>{{.Clause}}</td><td>{{.Name}}</td><td>{{.Outcome}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>
{{end}}

<h2 id="capacity">Capacity at SLO</h2>
{{if .CapacitySearch}}<ul>{{range .CapacitySearch}}<li>{{.}}</li>
{{end}}</ul>{{else if .CapacityNote}}<p class="not-measured">{{.CapacityNote}}</p>{{else}}
<table><tr><th>arm</th><th>capacity ({{call .Unit "req/s"}})</th><th>interval</th><th>next load</th><th>per repetition</th><th>first failure</th></tr>
{{range .Capacity}}<tr><td>{{.Arm}}</td><td>{{.Value}}</td><td>{{.Interval}}</td><td>{{.Next}}</td><td>{{.PerRep}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>
{{range .Gains}}<p><strong>{{.}}</strong></p>{{end}}{{end}}

{{range .Sections}}<h2 id="{{.ID}}">{{.Heading}}</h2>
{{if .NotMeasured}}<p class="not-measured">Not measured: {{.NotMeasured}}.</p>{{else}}{{if .Note}}<p>{{.Note}}</p>{{end}}
{{range .Charts}}<figure id="{{.ID}}">{{.SVG}}</figure>
{{end}}{{end}}{{end}}

{{range .Tables}}<h2 id="{{.ID}}">{{.Heading}}</h2>
{{if .NotMeasured}}<p class="not-measured">Not measured: {{.NotMeasured}}.</p>{{else}}{{range .Parts}}{{if .Heading}}<h3>{{.Heading}}</h3>{{end}}
{{if .Note}}<p>{{.Note}}</p>{{end}}{{if .Header}}<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{end}}{{end}}{{end}}
<h2 id="summary">Per arm, offered load and repetition</h2>
<h3>Latency ({{call .Unit "ms"}})</h3>
<table>
<tr><th>arm</th><th>load (req/s)</th><th>rep</th><th>TTFT p50</th><th>TTFT p99</th><th>TTFT mean</th><th>ITL p50</th><th>ITL p99</th><th>ITL mean</th><th>TPOT p50</th><th>TPOT p99</th><th>TPOT mean</th><th>E2E p50</th><th>E2E p99</th><th>E2E mean</th></tr>
{{range .Summary}}<tr><td>{{.Arm}}</td><td>{{.Load}}</td><td>{{.Rep}}</td>{{range .Latency}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
<h3>Throughput, goodput and request states</h3>
<table>
<tr><th>arm</th><th>load (req/s)</th><th>rep</th><th>throughput ({{call .Unit "tok/s"}})</th><th>output tokens in the window</th><th>window ({{call .Unit "s"}})</th><th>goodput ({{call .Unit "req/s"}}; met SLOs / measured)</th><th>states</th></tr>
{{range .Summary}}<tr><td>{{.Arm}}</td><td>{{.Load}}</td><td>{{.Rep}}</td>{{range .Window}}<td>{{.}}</td>{{end}}<td>{{.States}}</td></tr>
{{end}}</table>
<p>Latencies in {{call .Unit "ms"}}; percentiles are exact nearest-rank over raw records and refused when the sample is too small for them.
Throughput = output tokens in the window / window, where output tokens in the window are {{.TokensDefinition}} (also the numerator of J per output token and cost per output token) and the window is {{.WindowDefinition}}.
Goodput = arrival rate of the measured requests × share that met every SLO: {{.GoodputDefinition}}.</p>
</body>
</html>
`))
