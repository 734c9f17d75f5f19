package experiment

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/render"
	"github.com/transferlab/transferlab/report"
)

// PrintSummary writes the console summary of a run in report.md's order:
// the answer per candidate (render.Answer: verdict, gain, resolution, bound,
// capacity, cost, energy, the main warning), then per cell the state counts,
// TTFT/ITL/TPOT/E2E at p50 and the SLO's percentile (ms), throughput,
// arrival rate and goodput, the client-bound flag, then the run's warnings
// (results.json's warnings: e.g. a cell whose requests mostly failed) and
// the Amdahl table. Verdict lines and the headline are printed only when
// there is no answer block (no decision rule). Figures from the simulator
// are labelled simulated.
func PrintSummary(w io.Writer, res *report.Results) {
	label := ""
	if res.Simulated {
		label = " (simulated server: every figure is simulated)"
	}
	fmt.Fprintf(w, "transferlab %s: %s, trace %s (%s)%s\n", res.Manifest.ConfigPath, count(len(res.Cells), "cell"), res.Trace.Source, res.Trace.RowsText(), label)
	if !res.Complete {
		fmt.Fprintf(w, "INCOMPLETE: %s\n", res.IncompleteReason)
	}
	if f := res.ResumedFrom; res.Resumed && f != nil {
		fmt.Fprintf(w, "RESUMED (run --resume): %s kept from the interrupted run created %s, %d run by this one (report.md lists each cell's start)\n",
			count(f.KeptCells, "cell"), f.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), f.RerunCells)
	}
	for _, b := range render.Answer(*res) {
		fmt.Fprintf(w, "\n%s vs %s:\n", b.Candidate, res.Rule.Baseline)
		for _, l := range b.Lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintln(w)
	pq := res.SLO.Percentile
	if pq == 0 {
		pq = report.DefaultSLOPercentile
	}
	p := "p" + strconv.FormatFloat(pq, 'f', -1, 64)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "arm\tload req/s\trep\tok/n\tTTFT p50 ms\tTTFT %[1]s ms\tITL p50 ms\tTPOT p50 ms\tTPOT %[1]s ms\tE2E p50 ms\tE2E %[1]s ms\ttok/s\tarrival req/s\tgoodput req/s\t\t\n", p)
	bound := false
	var notMeasured []string
	for _, c := range byArmAndLoad(res.Cells) {
		n := 0
		for _, v := range c.States {
			n += v
		}
		arm := c.Arm
		if c.Incomplete != "" {
			arm += " (incomplete)"
		}
		flag := ""
		if c.ClientBound {
			flag, bound = "client-bound", true
		}
		fmt.Fprintf(tw, "%s\t%g\t%d\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			arm, c.OfferedLoadRPS, c.Repetition, c.States["ok"], n,
			ms(c.TTFT.P50Ms), ms(pctl(c.TTFT, pq)), ms(c.ITL.P50Ms), ms(c.TPOT.P50Ms), ms(pctl(c.TPOT, pq)), ms(c.E2E.P50Ms), ms(pctl(c.E2E, pq)),
			rate(c.ThroughputTokPerS, "%.0f"), rate(c.ArrivalRateRPS, "%.2f"), rate(c.GoodputRPS, "%.2f"), flag)
		if c.NotMeasured != "" {
			notMeasured = append(notMeasured, fmt.Sprintf("%s at %g req/s rep %d: %s", c.Arm, c.OfferedLoadRPS, c.Repetition, c.NotMeasured))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "(%s: the SLO's percentile; -: refused, too few samples for that percentile at 99 %% confidence, e.g. p99 needs ≥ 459 requests per cell, or undefined; arrival: the measured requests' rate, which goodput never exceeds)\n", p)
	if bound {
		fmt.Fprintf(w, "(client-bound: %s; the cell is shown; its repetition is left out of its arm's comparisons, and a load decides from the repetitions left when at least 2 are)\n", analysis.ClientBoundRule())
	}
	if len(notMeasured) > 0 {
		fmt.Fprintln(w, "n/m: not measured (no window, so no throughput or goodput):")
		for _, s := range notMeasured {
			fmt.Fprintf(w, "  - %s\n", s)
		}
	}
	if len(res.Warnings) > 0 {
		fmt.Fprintln(w)
	}
	for _, wmsg := range res.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", wmsg)
	}
	printAmdahl(w, res)
	if len(render.Answer(*res)) > 0 {
		return // the answer blocks above said the verdicts and capacity
	}
	if len(res.Verdicts) > 0 {
		fmt.Fprintln(w)
	}
	for _, v := range res.Verdicts {
		fmt.Fprintf(w, "verdict %s\n", analysis.VerdictLine(v))
	}
	if res.Stats != nil {
		fmt.Fprintf(w, "%s\n", render.Headline(*res))
	}
}

// pctl is d's percentile q (50, 90, 95, 99 or 99.9) in ms; nil when refused
// or not kept.
func pctl(d report.Dist, q float64) *float64 {
	v, err := analysis.Quantile(d, "p"+strconv.FormatFloat(q, 'f', -1, 64))
	if err != nil {
		return nil
	}
	return &v
}

// ms formats an optional millisecond figure; "-" when it is not defined or refused.
func ms(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

// rate formats an optional per-window figure with format; "n/m" (not
// measured) when the cell had no window or a zero-length one.
func rate(v *float64, format string) string {
	if v == nil {
		return "n/m"
	}
	return fmt.Sprintf(format, *v)
}

// byArmAndLoad orders cells by arm (config order of first appearance), then
// offered load, then repetition, for reading; results.json keeps run order.
func byArmAndLoad(cells []report.Cell) []report.Cell {
	rank := map[string]int{}
	for _, c := range cells {
		if _, ok := rank[c.Arm]; !ok {
			rank[c.Arm] = len(rank)
		}
	}
	out := slices.Clone(cells)
	slices.SortStableFunc(out, func(a, b report.Cell) int {
		return cmp.Or(cmp.Compare(rank[a.Arm], rank[b.Arm]), cmp.Compare(a.OfferedLoadRPS, b.OfferedLoadRPS), cmp.Compare(a.Repetition, b.Repetition))
	})
	return out
}

// count is n and noun, with an s unless n is 1: "1 cell", "6 cells".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// PrintWritten names the files the run wrote into out, as its writers
// recorded them (Written.Names), and those it did not write whole (a full
// disk: FilesNotWritten of runErr) with the reason.
func PrintWritten(w io.Writer, out string, recorded *Written, runErr error) {
	written := recorded.Names(runErr)
	if len(written) > 0 {
		fmt.Fprintf(w, "\nwritten to %s: %s\n", out, strings.Join(written, ", "))
	}
	if failed := FilesNotWritten(runErr); len(failed) > 0 {
		fmt.Fprintf(w, "NOT written whole in %s: %s (see the error below)\n", out, strings.Join(failed, ", "))
	}
}
