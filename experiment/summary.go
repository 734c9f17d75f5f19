package experiment

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/transferlab/transferlab/report"
)

// PrintSummary writes the short console table of a run: per cell the state
// counts, TTFT/ITL/TPOT/E2E percentiles (ms), throughput and goodput, then
// the run's warnings (results.json's warnings: e.g. a cell whose requests
// mostly failed), the Amdahl table and the verdicts. Figures from the
// simulator are labelled simulated.
func PrintSummary(w io.Writer, res *report.Results) {
	label := ""
	if res.Simulated {
		label = " (simulated server: every figure is simulated)"
	}
	fmt.Fprintf(w, "transferlab %s: %s, trace %s (%s)%s\n", res.Manifest.ConfigPath, count(len(res.Cells), "cell"), res.Trace.Source, res.Trace.RowsText(), label)
	if !res.Complete {
		fmt.Fprintf(w, "INCOMPLETE: %s\n", res.IncompleteReason)
	}
	for _, b := range report.Answer(*res) {
		fmt.Fprintf(w, "\n%s vs %s:\n", b.Candidate, res.Rule.Baseline)
		for _, l := range b.Lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "arm\tload req/s\trep\tok/n\tTTFT p50 ms\tTTFT p90 ms\tTTFT p99 ms\tITL p50 ms\tTPOT p50 ms\tE2E p50 ms\tE2E p90 ms\tE2E p99 ms\ttok/s\tarrival req/s\tgoodput req/s\t")
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
		fmt.Fprintf(tw, "%s\t%g\t%d\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			arm, c.OfferedLoadRPS, c.Repetition, c.States["ok"], n,
			ms(c.TTFT.P50Ms), ms(c.TTFT.P90Ms), ms(c.TTFT.P99Ms), ms(c.ITL.P50Ms), ms(c.TPOT.P50Ms), ms(c.E2E.P50Ms), ms(c.E2E.P90Ms), ms(c.E2E.P99Ms),
			rate(c.ThroughputTokPerS, "%.0f"), rate(c.ArrivalRateRPS, "%.2f"), rate(c.GoodputRPS, "%.2f"))
		if c.NotMeasured != "" {
			notMeasured = append(notMeasured, fmt.Sprintf("%s at %g req/s rep %d: %s", c.Arm, c.OfferedLoadRPS, c.Repetition, c.NotMeasured))
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "(-: refused, too few samples for that percentile at 99 % confidence, e.g. p99 needs ≥ 459 requests per cell; or undefined)")
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
	if len(res.Verdicts) > 0 {
		fmt.Fprintln(w)
	}
	for _, v := range res.Verdicts {
		fmt.Fprintf(w, "verdict %s\n", report.VerdictLine(v))
	}
	if res.Stats != nil {
		fmt.Fprintf(w, "%s\n", report.Headline(*res))
	}
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
