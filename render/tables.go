package render

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
)

// tableSection is a report section made of tables, rendered alike by
// WriteMarkdown and WriteHTML. NotMeasured, when set, replaces the tables.
type tableSection struct {
	ID, Heading, NotMeasured string
	Parts                    []tablePart
}

// tablePart is one table with an optional sub-heading and a note above it.
type tablePart struct {
	Heading, Note string
	Header        []string
	Rows          [][]string
}

// notMeasuredSection is a section that says why it has no figures.
func notMeasuredSection(id, heading, reason string) tableSection {
	// Several reasons, one a line (older results files), read as one sentence.
	reason = strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(reason), "\n", "; ")), " ")
	return tableSection{ID: id, Heading: heading, NotMeasured: reason}
}

// sectionReason gives the "not measured" reason of a section, "" when it has content.
func sectionReason(isNil bool, notMeasured func() string, n func() int) string {
	switch {
	case isNil:
		return "section absent from the results"
	case notMeasured() != "":
		return notMeasured()
	case n() == 0:
		return "section present but empty"
	}
	return ""
}

// units labels units, adding "simulated" for simulated runs.
type units bool

func (sim units) u(unit string) string {
	if !sim {
		return unit
	}
	if unit == "" {
		return "simulated"
	}
	return unit + ", simulated"
}

// ratioSection is one row per candidate, load and metric: the ratio of the
// mean, p50 and p99 with their intervals, the resolution of each, and
// whether the load feeds the verdict. A refused or interval-less figure is
// short in its cell; why is said once under the table.
func ratioSection(r report.Results) tableSection {
	const id, h = "ratios", "Candidate / baseline"
	if r.Stats == nil || len(r.Stats.Ratios) == 0 {
		return notMeasuredSection(id, h, report.OrText(notAnalysed(r), "no candidate arm"))
	}
	note := "Each figure is " + report.RatioLabel("of the row's metric and the column's statistic", "") + ", with its interval: below 1 the candidate is faster. ITL (per gap, not paired by request) is in results.json `stats.ratios`."
	if r.Stats.ResolutionMethod != "" {
		note += " Resolution: " + r.Stats.ResolutionMethod + "."
	}
	type key struct {
		cand, metric string
		load         float64
	}
	stats := []string{"mean", "p50", "p99"}
	var order []key
	byKey := map[key]map[string]report.Ratio{}
	for _, q := range r.Stats.Ratios {
		if q.Metric == "itl" && (r.Rule == nil || r.Rule.Metric != "itl") {
			continue // per gap, not paired by request: its ratios (no interval from one repetition) stay in results.json
		}
		k := key{q.Candidate, q.Metric, q.OfferedLoadRPS}
		if byKey[k] == nil {
			byKey[k] = map[string]report.Ratio{}
			order = append(order, k)
		}
		byKey[k][q.Stat] = q
	}
	p := tablePart{Header: []string{"candidate", "load (req/s)", "metric", "mean", "p50", "p99", "resolution (mean / p50 / p99)", "in the verdict"}}
	notes := &footnotes{}
	for _, k := range order {
		row := []string{r.ArmLabel(k.cand), report.Num(k.load), k.metric}
		var res []string
		excluded, leftOut := "", ""
		for _, st := range stats {
			q, ok := byKey[k][st]
			if !ok {
				row = append(row, "—")
				res = append(res, "—")
				continue
			}
			row = append(row, notes.estimate(q.Value))
			res = append(res, strings.TrimPrefix(report.ResolutionText(q.Resolution), "not measured"))
			excluded = report.OrText(excluded, q.Excluded)
			leftOut = report.OrText(leftOut, q.LeftOut)
		}
		if leftOut != "" {
			leftOut = "yes, without the blocks of client-bound " + leftOut
		}
		for i := range res {
			res[i] = report.OrText(res[i], "—")
		}
		row = append(row, strings.Join(res, " / "), report.OrText(excluded, report.OrText(leftOut, "yes")))
		p.Rows = append(p.Rows, row)
	}
	p.Note = note + notes.text()
	return tableSection{ID: id, Heading: h, Parts: []tablePart{p}}
}

// footnotes collects why figures in a table are refused or lack an
// interval, so each reason is said once under the table.
type footnotes struct{ reasons []string }

func (f *footnotes) add(reason string) {
	for _, r := range f.reasons {
		if r == reason {
			return
		}
	}
	f.reasons = append(f.reasons, reason)
}

// estimate is an Estimate in a table cell: "0.853 [0.842, 0.863]", "0.983
// (no interval)" or "refused (n=91)"; the reason goes to the footnotes.
func (f *footnotes) estimate(e report.Estimate) string { return f.estimateWith(e, report.Num) }

// estimateWith is estimate with the figures formatted by format.
func (f *footnotes) estimateWith(e report.Estimate, format func(float64) string) string {
	switch {
	case e.Reps == 0 && e.Requests > 0:
		f.add("refused (n=…): too few paired requests for that percentile at 99 % confidence (p99 needs n ≥ 459)")
		return fmt.Sprintf("refused (n=%d)", e.Requests)
	case e.Reps == 0 && strings.HasPrefix(e.Note, "refused"):
		head, _, _ := strings.Cut(e.Note, ": n =")
		f.add(head + ": too few samples for that percentile at 99 % confidence (p99 needs n ≥ 459)")
		return "refused"
	case e.Reps == 0:
		f.add("—: " + report.UndefinedText(e))
		return "—"
	case !e.Interval:
		f.add("no interval: " + report.OrText(e.Note, "too few repetitions"))
		return format(e.Value) + " (no interval)"
	}
	return format(e.Value) + " [" + format(e.Low) + ", " + format(e.High) + "]"
}

// text is the footnotes as sentences to append to a note ("" when none).
func (f *footnotes) text() string {
	if len(f.reasons) == 0 {
		return ""
	}
	return " " + strings.Join(f.reasons, ". ") + "."
}

// foldConstantColumns moves every column (but the first) whose cells are the
// same in every row of a table with two rows or more into the table's note
// ("Every row: header value; …"), so a figure or reason shared by all rows is
// said once and the table stays narrow.
func foldConstantColumns(p tablePart) tablePart {
	if len(p.Rows) < 2 || len(p.Header) < 3 {
		return p
	}
	var keep []int
	var said []string
	for c := range p.Header {
		same := c > 0
		for _, row := range p.Rows {
			if c >= len(row) || row[c] != p.Rows[0][c] {
				same = false
				break
			}
		}
		if same {
			said = append(said, p.Header[c]+": "+p.Rows[0][c])
			continue
		}
		keep = append(keep, c)
	}
	if len(said) == 0 {
		return p
	}
	out := tablePart{Heading: p.Heading, Note: p.Note}
	if out.Note != "" {
		out.Note += " "
	}
	out.Note += "Every row: " + strings.Join(said, "; ") + "."
	for _, c := range keep {
		out.Header = append(out.Header, p.Header[c])
	}
	for _, row := range p.Rows {
		var nr []string
		for _, c := range keep {
			nr = append(nr, row[c])
		}
		out.Rows = append(out.Rows, nr)
	}
	return out
}

func notAnalysed(r report.Results) string {
	if r.Stats == nil {
		return "the results were not analysed"
	}
	return ""
}

func amdahlTables(s *report.AmdahlSection, u units) tableSection {
	const id, h = "amdahl-tables", "Amdahl bound"
	if reason := sectionReason(s == nil, func() string { return s.NotMeasured }, func() int { return len(s.Loads) }); reason != "" {
		if s == nil || len(s.Ablation) == 0 {
			return notMeasuredSection(id, h, reason)
		}
		parts := ablationParts(s, u)
		parts[0].Note = "Profile estimate not measured: " + reason + ". " + parts[0].Note
		return tableSection{ID: id, Heading: h, Parts: parts}
	}
	// One row per candidate and load: f, s, the bound, the measured
	// speedups (baseline/candidate) and the transfer efficiency. Bounds and
	// speedups are often within a few % of 1: four decimals, or the effect
	// itself would round away.
	metrics := []struct{ metric, stat string }{{"ttft", "mean"}, {"tpot", "mean"}, {"e2e", "mean"}, {"e2e", "p99"}}
	bound := tablePart{Header: []string{"candidate", "load (req/s)", "f_gpu", "f_wall", "f_excl", "s", "bound [interval]"}}
	for _, m := range metrics {
		bound.Header = append(bound.Header, "measured "+report.SpeedupLabel(report.MetricText(m.metric, m.stat), u.u("×")))
	}
	bound.Header = append(bound.Header, "transfer efficiency", "measured vs bound")
	notes := &footnotes{}
	above := false
	for _, l := range s.Loads {
		bi := ratio4(l.Bound)
		if l.BoundLow != 0 || l.BoundHigh != 0 {
			bi += " [" + ratio4(l.BoundLow) + ", " + ratio4(l.BoundHigh) + "]"
		}
		fgpu, fexcl := optNum(l.FGPU), optNum(l.FExcl)
		if l.FNotMeasured != "" && (l.FGPU == nil || l.FExcl == nil) {
			if l.FGPU == nil {
				fgpu = "— (see below)"
			}
			if l.FExcl == nil {
				fexcl = "— (see below)"
			}
			notes.add(l.Candidate + ": f_gpu and f_excl not measured: " + l.FNotMeasured)
		}
		row := []string{l.Candidate, report.Num(l.OfferedLoadRPS), fgpu, ratio4(l.FWall), fexcl, ratio4(l.S), bi}
		for _, m := range metrics {
			cell := "—"
			for _, sp := range l.Measured {
				if sp.Metric == m.metric && sp.Stat == m.stat {
					cell = notes.estimateWith(sp.Value, ratio4)
				}
			}
			row = append(row, cell)
		}
		te := "not computed"
		if l.TransferMetric != "" {
			te = report.TransferEfficiencyText(l) + " (" + l.TransferMetric + ")"
			if l.TransferEfficiencyNote != "" {
				notes.add(l.Candidate + " at " + report.Num(l.OfferedLoadRPS) + " req/s: transfer efficiency " + l.TransferEfficiencyNote + ": any share of the bound's gain, or none, fits it")
			}
			if ExceedsBound(l) {
				te, above = te+" *", true
			}
		}
		bound.Rows = append(bound.Rows, append(row, te, report.OrText(l.Verdict, "—")))
	}
	bound.Note = "Bound = 1 / ((1 − f_wall) + f_wall / s), a " + report.SpeedupLabel("", "") + " like the measured columns (the inverse of the answer's and the ratio table's " + report.RatioWords + " ratios); transfer efficiency = (measured − 1) / (bound − 1)." + notes.text()
	if above {
		bound.Note += " * " + AboveBoundNote + "."
	}
	parts := []tablePart{bound}
	if len(s.Ablation) > 0 {
		parts = append(parts, ablationParts(s, u)...)
	}
	// Where f and s came from: one row per candidate when every load
	// shares the same sources, else one per load.
	sources := tablePart{Header: []string{"candidate", "load (req/s)", "f from", "s timing", "f_wall from hook CUDA events (hook vs profile: calls' GPU span; kernel time)"}}
	type src struct{ from, timing, check string }
	var cands []string
	perCand := map[string][]src{}
	loadsOf := map[string][]string{}
	for _, l := range s.Loads {
		if l.FSource != "" || l.STiming != "" {
			check := "not measured (hook timings off)"
			if l.FWallHook != nil && l.HookVsProfileSpanPct != nil && l.HookVsProfilePct != nil {
				check = fmt.Sprintf("%s (%+.2f %%; %+.2f %%)", ratio4(*l.FWallHook), *l.HookVsProfileSpanPct, *l.HookVsProfilePct)
			}
			if _, ok := perCand[l.Candidate]; !ok {
				cands = append(cands, l.Candidate)
			}
			perCand[l.Candidate] = append(perCand[l.Candidate], src{report.OrText(l.FSource, "—"), report.OrText(l.STiming, "—"), check})
			loadsOf[l.Candidate] = append(loadsOf[l.Candidate], report.Num(l.OfferedLoadRPS))
		}
	}
	for _, c := range cands {
		ss := perCand[c]
		same := true
		for _, x := range ss[1:] {
			same = same && x == ss[0]
		}
		if same {
			sources.Rows = append(sources.Rows, []string{c, "all (" + strings.Join(loadsOf[c], ", ") + ")", ss[0].from, ss[0].timing, ss[0].check})
			continue
		}
		for i, x := range ss {
			sources.Rows = append(sources.Rows, []string{c, loadsOf[c][i], x.from, x.timing, x.check})
		}
	}
	if len(sources.Rows) > 0 {
		parts = append(parts, sources)
	}
	return tableSection{ID: id, Heading: h, Parts: parts}
}

func energyTable(r report.Results) tableSection {
	s, u := r.Energy, units(r.Simulated)
	const id, h = "energy-table", "Energy and memory"
	if reason := sectionReason(s == nil, func() string { return s.NotMeasured }, func() int { return len(s.Cells) }); reason != "" {
		return notMeasuredSection(id, h, reason)
	}
	note := "Energy is the GPU board counter (GPU-reported), not facility energy."
	if u {
		note = "Energy is simulated (each cell's source names the model); on a GPU it is the board counter (GPU-reported), never facility energy."
	}
	aa := aaRowsNote
	p := tablePart{Note: note,
		Header: []string{"arm", "load (req/s)", "rep", "source", "energy (J)", "output tokens in the window", "J/output token (energy / output tokens in the window)", "J/request", "mean power (W)", "peak power (W)", "idle power (W)", "peak VRAM (bytes)", "steady VRAM (bytes)", "sampler warnings"}}
	for _, c := range byArmLoad(r, s.Cells, func(c report.EnergyCell) (string, float64, int) { return c.Arm, c.OfferedLoadRPS, c.Repetition }) {
		if report.IsAAArm(c.Arm) {
			p.Note, aa = p.Note+aa, ""
			continue
		}
		if !c.Available {
			p.Rows = append(p.Rows, []string{r.ArmLabel(c.Arm), report.Num(c.OfferedLoadRPS), fmt.Sprint(c.Repetition), "unavailable: " + report.OrText(c.UnavailableReason, "no reason recorded"), "", "", "", "", "", "", "", "", "", ""})
			continue
		}
		src := c.Source
		if bool(u) && !strings.Contains(src, "simulated") {
			src += ", simulated"
		}
		f := func(key, v string) string {
			if !c.Has(key) {
				return "not measured"
			}
			return v
		}
		p.Rows = append(p.Rows, []string{r.ArmLabel(c.Arm), report.Num(c.OfferedLoadRPS), fmt.Sprint(c.Repetition), src,
			f("energy_j", report.Num(c.EnergyJ)), windowTokensOf(r, c.Arm, c.OfferedLoadRPS, c.Repetition), f("j_per_output_token", report.Num(c.JPerOutputToken)), f("j_per_request", report.Num(c.JPerRequest)),
			f("mean_power_w", report.Num(c.MeanPowerW)), f("peak_power_w", report.Num(c.PeakPowerW)), f("idle_power_w", report.Num(c.IdlePowerW)),
			f("peak_vram_bytes", fmt.Sprint(c.PeakVRAMBytes)), f("steady_vram_bytes", fmt.Sprint(c.SteadyVRAMBytes)), report.OrText(strings.Join(c.Warnings, "; "), "none")})
	}
	return tableSection{ID: id, Heading: h, Parts: append([]tablePart{p}, energyNotes(s.Cells, u)...)}
}

// aaRowsNote says where the A/A replicate's energy and cost rows are: they
// repeat the baseline's (the same arm run twice) and are left out of the
// tables.
const aaRowsNote = " The A/A replicate's rows (the baseline run twice) are in results.json."

// windowTokensOf is the window output-token count (throughput's numerator)
// of the cell arm × load × rep, or why there is none.
func windowTokensOf(r report.Results, arm string, load float64, rep int) string {
	c, ok := cellAt(r, arm, load, rep)
	switch {
	case !ok:
		return "not in the results (no such cell)"
	case c.NotMeasured != "":
		return notMeasuredText(c.NotMeasured)
	}
	return tokensText(c.WindowOutputTokens)
}

// cellAt is r's cell arm × load × rep; false when there is none.
func cellAt(r report.Results, arm string, load float64, rep int) (report.Cell, bool) {
	for _, c := range r.Cells {
		if c.Arm == arm && c.OfferedLoadRPS == load && c.Repetition == rep {
			return c, true
		}
	}
	return report.Cell{}, false
}

// energyNotes is the table of each cell's energy checks and warnings
// (energy.Window): the counter reading used, the power-integral cross-check
// and its disagreement, the counter's quantisation, throttling, the sampler's
// warnings. Empty when no cell has any.
func energyNotes(cells []report.EnergyCell, sim units) []tablePart {
	p := tablePart{Heading: "Energy checks and warnings",
		Note:   "Per cell: which reading the energy figure uses, the power-integral cross-check, the counter's quantisation and the sampler's warnings.",
		Header: []string{"arm", "load (req/s)", "rep", "energy from", "power integral (J)", "disagreement (%)", "quantisation (% of energy)", "flags", "warnings"}}
	for _, c := range cells {
		var flags []string
		if c.DisagreementFlagged {
			flags = append(flags, "counter and power integral disagree beyond the threshold")
		}
		if c.BelowResolution {
			flags = append(flags, "window shorter than the counter's resolution")
		}
		if c.Throttled {
			flags = append(flags, "GPU throttled ("+report.OrText(strings.Join(c.ThrottleReasons, ", "), "reason not given")+")")
		}
		material := c.DisagreementPct != nil && math.Abs(*c.DisagreementPct) >= 0.005 || c.QuantisationPct != nil
		if len(flags) == 0 && !material {
			continue // nothing to check: the reading is in results.json, the warnings in the energy table
		}
		from := c.EnergyHeadline
		if sim && from == "counter_delta" {
			from = report.SimulatedEnergyHeadline // a results file from before the simulator said so itself
		}
		p.Rows = append(p.Rows, []string{c.Arm, report.Num(c.OfferedLoadRPS), fmt.Sprint(c.Repetition), report.OrText(from, "not recorded"),
			optNum(c.PowerIntegralJ), pctHundredths(c.DisagreementPct), optNum(c.QuantisationPct), report.OrText(strings.Join(flags, "; "), "none"), report.OrText(strings.Join(c.Warnings, "; "), "none")})
	}
	if len(p.Rows) == 0 {
		return nil
	}
	return []tablePart{p}
}

// costTable is the cost section's table. A row whose cell Censored flags
// (more than MaxNotOKShare of its requests did not end ok) keeps its figures,
// which divide the window's price by the tokens actually delivered, but they
// are marked "*" with the cell's not-ok share, and a legend under the table
// names each flagged cell: that cost is not the cost of serving the load.
func costTable(r report.Results, u units) tableSection {
	const id, h = "cost-table", "Cost"
	s := r.Cost
	if reason := sectionReason(s == nil, func() string { return s.NotMeasured }, func() int { return len(s.Cells) }); reason != "" {
		return notMeasuredSection(id, h, reason)
	}
	p := tablePart{Note: "Cost per 1M tokens = (price per GPU-hour × GPUs × window hours) / tokens × 10⁶; every input is echoed. Output tokens are those in the window (" + windowTokensDefinition + "), throughput's numerator; total tokens are input + output tokens as the cost inputs count them.",
		Header: []string{"arm", "load (req/s)", "rep", "per 1M output tokens", "per 1M total tokens", "energy cost per 1M output tokens" + currencyOf(s.Cells), "price per GPU-hour", "price date", "GPUs", "utilisation", "window (" + u.u("s") + ")", "output tokens in the window", "total tokens"}}
	var flagged []string
	aa := aaRowsNote
	for _, c := range byArmLoad(r, s.Cells, func(c report.CostCell) (string, float64, int) { return c.Arm, c.OfferedLoadRPS, c.Repetition }) {
		if report.IsAAArm(c.Arm) {
			p.Note, aa = p.Note+aa, ""
			continue
		}
		energy := "not computed: needs energy_price_per_kwh (cost.energy_price_per_kwh in the config), not given"
		if c.EnergyPricePerKWh > 0 {
			energy = fmt.Sprintf("%s %s (at %s %s/kWh)", report.Num(c.EnergyCostPer1MOutputTokens), u.u(c.Currency), report.Num(c.EnergyPricePerKWh), c.Currency)
		}
		mark, outMark := "", ""
		if cell, ok := cellAt(r, c.Arm, c.OfferedLoadRPS, c.Repetition); ok {
			if why := analysis.Censored(cell); why != "" {
				notOK, n := analysis.NotOK(cell)
				mark, outMark = " *", fmt.Sprintf(" * (flagged: %s not ok)", analysis.SharePastLimit(notOK, n))
				flagged = append(flagged, why)
			}
		}
		p.Rows = append(p.Rows, []string{r.ArmLabel(c.Arm), report.Num(c.OfferedLoadRPS), fmt.Sprint(c.Repetition),
			report.Num(c.CostPer1MOutputTokens) + " " + u.u(c.Currency) + outMark, report.Num(c.CostPer1MTotalTokens) + " " + u.u(c.Currency) + mark, energy,
			report.Num(c.PricePerGPUHour) + " " + c.Currency, report.OrText(c.PriceDate, "—"), fmt.Sprint(c.GPUs), report.Num(c.UtilisationAssumption), report.Num(c.WindowS),
			fmt.Sprint(c.OutputTokens), fmt.Sprint(c.TotalTokens)})
	}
	if len(flagged) > 0 {
		p.Note += " * flagged: " + strings.Join(flagged, "; ") + ". A flagged row's cost counts only the tokens its ok requests delivered: it is not the cost of serving that load."
	}
	parts := []tablePart{p}
	sources := tablePart{Header: []string{"price per GPU-hour", "price date", "price source", "energy price", "energy price source"}}
	seen := map[string]bool{}
	for _, c := range s.Cells {
		energyPrice, energySource := "not given", "—"
		if c.EnergyPricePerKWh > 0 {
			energyPrice, energySource = report.Num(c.EnergyPricePerKWh)+" "+c.Currency+"/kWh", report.OrText(c.EnergyPriceSource, "not given")
		}
		row := []string{report.Num(c.PricePerGPUHour) + " " + c.Currency, report.OrText(c.PriceDate, "—"), report.OrText(c.PriceSource, "not given"), energyPrice, energySource}
		if k := strings.Join(row, "\x00"); !seen[k] {
			seen[k] = true
			sources.Rows = append(sources.Rows, row)
		}
	}
	switch {
	case len(sources.Rows) == 1: // one price for every row: said in the note
		var said []string
		for i, hd := range sources.Header {
			said = append(said, hd+": "+sources.Rows[0][i])
		}
		parts[0].Note += " " + strings.Join(said, "; ") + "."
	case len(sources.Rows) > 1:
		parts = append(parts, sources)
	}
	return tableSection{ID: id, Heading: h, Parts: parts}
}

// byArmLoad orders a section's cells as the cell tables are: by arm
// (report.ArmOrder), offered load, repetition.
func byArmLoad[T any](r report.Results, cells []T, key func(T) (string, float64, int)) []T {
	rank := map[string]int{}
	for i, a := range report.ArmOrder(r) {
		rank[a] = i
	}
	out := slices.Clone(cells)
	slices.SortStableFunc(out, func(a, b T) int {
		aa, al, ar := key(a)
		ba, bl, br := key(b)
		return cmp.Or(cmp.Compare(rank[aa], rank[ba]), cmp.Compare(al, bl), cmp.Compare(ar, br))
	})
	return out
}

func validationTables(s *report.ValidationSection) tableSection {
	const id, h = "validation", "Validation"
	if reason := sectionReason(s == nil, func() string { return s.NotMeasured }, func() int { return len(s.Candidates) }); reason != "" {
		return notMeasuredSection(id, h, reason)
	}
	sec := tableSection{ID: id, Heading: h}
	for _, c := range s.Candidates {
		p := tablePart{Heading: fmt.Sprintf("%s: %s (report sha256 %s)", c.Candidate, c.Verdict, report.OrText(report.Short(c.ReportSHA256), "—"))}
		if len(c.FailedGates) > 0 {
			p.Note = "Failed gates: " + strings.Join(c.FailedGates, ", ") + ". "
		}
		p.Note += fmt.Sprintf("s = %s (frequency-weighted geometric mean); shapes not covered: %d.", report.Num(c.S), c.UncoveredShapes)
		if len(c.Shapes) > 0 {
			p.Header = []string{"shape", "count", "stress", "isolated speedup (×)"}
			for _, sh := range c.Shapes {
				p.Rows = append(p.Rows, []string{sh.Shape, fmt.Sprint(sh.Count), fmt.Sprint(sh.Stress), report.Num(sh.Speedup)})
			}
		}
		sec.Parts = append(sec.Parts, p)
	}
	return sec
}

func hookTable(s *report.HookSection) tableSection {
	const id, h = "hook", "Override hook"
	if reason := sectionReason(s == nil, func() string { return s.NotMeasured }, func() int { return len(s.Arms) }); reason != "" {
		return notMeasuredSection(id, h, reason)
	}
	p := tablePart{Header: []string{"arm", "target", "candidate", "report sha256", "calls (eager)", "calls (capture)", "receipts"}}
	for _, a := range s.Arms {
		p.Rows = append(p.Rows, []string{a.Arm, a.Target, report.OrText(a.Candidate, "—"), report.OrText(report.Short(a.ReportSHA256), "—"),
			fmt.Sprint(a.CallsEager), fmt.Sprint(a.CallsCapture), report.OrText(strings.Join(a.Receipts, "; "), "—")})
	}
	return tableSection{ID: id, Heading: h, Parts: []tablePart{p}}
}

// nextLoadText says where the sweep bracketed capacity from above.
func nextLoadText(c report.Capacity) string {
	gap := ""
	if len(c.NotMeasuredRPS) > 0 {
		gap = "planned " + report.Nums(c.NotMeasuredRPS) + " req/s not measured"
	}
	switch {
	case len(c.PerRepRPS) == 0:
		return report.OrText(gap, "—")
	case c.NextLoadRPS > 0 && gap != "":
		return report.Num(c.NextLoadRPS) + " (" + gap + " in between)"
	case c.NextLoadRPS > 0:
		return report.Num(c.NextLoadRPS)
	case gap != "":
		return "none measured above (" + gap + "; capacity may be higher)"
	}
	return "none above (highest planned load passed)"
}

// tableSections are the table sections both reports carry, in order, each
// table's constant columns folded into its note (foldConstantColumns).
func tableSections(r report.Results) []tableSection {
	u := units(r.Simulated)
	secs := []tableSection{ratioSection(r), amdahlTables(r.Amdahl, u), energyTable(r), costTable(r, u), validationTables(r.Validation), hookTable(r.Hook)}
	for i := range secs {
		for j := range secs[i].Parts {
			secs[i].Parts[j] = foldConstantColumns(secs[i].Parts[j])
		}
	}
	return secs
}

// writeMarkdown renders the section as Markdown (## heading, ### parts, pipe tables).
func (s tableSection) writeMarkdown(m mdWriter) {
	m.p("## %s\n\n", s.Heading)
	if s.NotMeasured != "" {
		m.p("Not measured: %s.\n\n", s.NotMeasured)
		return
	}
	for _, p := range s.Parts {
		m.part(p)
	}
}

// mdRow joins cells as a pipe-table row body, escaping "|" inside cells.
func mdRow(cells []string) string {
	var b strings.Builder
	for _, c := range cells {
		b.WriteString(" ")
		b.WriteString(mdCell(c))
		b.WriteString(" |")
	}
	return strings.TrimSuffix(b.String(), "|")
}

// ratio4 formats a ratio near 1 (speedup, bound, fraction) with four decimals.
func ratio4(v float64) string { return fmt.Sprintf("%.4f", v) }

// currencyOf is " (USD)" when every cost cell is in one currency, else ""
// (each value then names its own).
func currencyOf(cells []report.CostCell) string {
	if len(cells) == 0 {
		return ""
	}
	for _, c := range cells[1:] {
		if c.Currency != cells[0].Currency {
			return ""
		}
	}
	return " (" + cells[0].Currency + ")"
}

// pctHundredths formats a percentage rounded to 0.01 %, so that float noise
// such as -3.95e-14 reads 0; "not measured" when nil.
func pctHundredths(v *float64) string {
	if v == nil {
		return "not measured"
	}
	r := math.Round(*v*100) / 100
	if r == 0 {
		return "0"
	}
	return strconv.FormatFloat(r, 'f', 2, 64)
}

// ablationParts are the Amdahl section's side-by-side table (profile
// estimate, ablation, ceiling, candidate) and the profile-gap notes.
func ablationParts(s *report.AmdahlSection, u units) []tablePart {
	est := func(e report.Estimate) string {
		if e.Reps == 0 {
			return report.UndefinedText(e)
		}
		if e.Interval {
			return ratio4(e.Value) + " [" + ratio4(e.Low) + ", " + ratio4(e.High) + "]"
		}
		return ratio4(e.Value) + " (no interval)"
	}
	side := tablePart{Heading: "Profile estimate and ablation, side by side",
		Note:   "Ablation: the ceiling arm (" + report.CeilingLabel + ") measures what removing the op saves in the server. f_ablation = 1 − T_ceiling / T_baseline; s in situ = (T_baseline − T_ceiling) / (T_candidate − T_ceiling); bound (ablation) = 1 / ((1 − f_ablation) + f_ablation / s in situ), which on its own statistic equals the measured speedup by construction; ceiling speedup = T_baseline / T_ceiling, the most any kernel for the op could give at this load, queueing included; transfer efficiency = (measured − 1) / (ceiling − 1). Profile: f_wall, f_gpu and f_excl from the baseline's profiles and the isolated s (the bound table above). Intervals over repetitions.",
		Header: []string{"candidate", "load (req/s)", "statistic", "profile: f_wall / f_gpu / f_excl", "profile: isolated s", "profile: bound", "ablation: f_ablation", "ablation: s in situ", "ablation: bound", "ceiling speedup (" + u.u("×") + ")", "candidate speedup (" + u.u("×") + ")", "transfer efficiency vs ceiling"}}
	gaps := tablePart{Header: []string{"candidate", "load (req/s)", "statistic", "profile vs ablation"}}
	for _, al := range s.Ablation {
		prof := s.ProfileLoad(al.Candidate, al.OfferedLoadRPS)
		fs, is := "not measured", "not measured"
		if prof != nil {
			fs = ratio4(prof.FWall) + " / " + optNum(prof.FGPU) + " / " + optNum(prof.FExcl)
			is = ratio4(prof.S)
		}
		for _, m := range al.Metrics {
			bp := "not measured"
			if m.BoundProfile != nil {
				bp = ratio4(*m.BoundProfile)
			}
			stat := m.Metric + " " + m.Stat
			side.Rows = append(side.Rows, []string{al.Candidate, report.Num(al.OfferedLoadRPS), stat, fs, is, bp,
				est(m.FAblation), est(m.SInSitu), est(m.BoundAblation), est(m.CeilingSpeedup), est(m.CandidateSpeedup), est(m.TransferEfficiency)})
			if m.ProfileGap != "" {
				gaps.Rows = append(gaps.Rows, []string{al.Candidate, report.Num(al.OfferedLoadRPS), stat, m.ProfileGap})
			}
		}
	}
	parts := []tablePart{side}
	if len(gaps.Rows) > 0 {
		parts = append(parts, gaps)
	}
	return parts
}
