package analysis

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/transferlab/transferlab/report"

	"github.com/transferlab/transferlab/loadgen"
)

// MaxNotOKShare is the largest share of a cell's measured requests that may
// end in a state other than ok (timeout, http_error, stream_error, cancelled,
// not_sent) before the cell is flagged (FailureWarning) and its latency
// figures are refused in every comparison (ratios, Amdahl speedups, transfer
// efficiency, statistics over repetitions): 0.05, 5 %.
//
// Why 5 %: every latency figure of a cell is over its ok requests only, so
// the others are censored, and not at random: a timeout is by construction a
// request slower than the timeout, an error often one the server could not
// serve in time. With more than 5 % of the requests missing, the p95 of the
// measured requests can lie among the missing ones (the whole top 5 % may be
// failures), so no tail figure of the survivors bounds the arm's; and the
// survivors' mean favours whichever arm lost more of its slow requests, so an
// arm that keeps more of them (a faster one) can look slower. Below 5 % the
// tail above p95 is still in doubt, which the state counts in every report
// make visible.
const MaxNotOKShare = 0.05

// maxNotOKText is MaxNotOKShare as the warnings print it.
const maxNotOKText = "5 %"

// NotOK counts c's measured requests that did not end ok, and all its
// measured requests (warm-up records are in neither).
func NotOK(c report.Cell) (notOK, measured int) {
	for s, n := range c.States {
		measured += n
		if s != string(loadgen.StateOK) {
			notOK += n
		}
	}
	return notOK, measured
}

// Censored says why c's latency figures cannot stand for its arm in a
// comparison: more than MaxNotOKShare of its measured requests did not end
// ok. It is "" for a cell within the limit, and for an incomplete cell
// (Cell.Incomplete: already left out of every comparison, and its cancelled
// and not_sent requests are the run's ending, not the server's failures).
func Censored(c report.Cell) string {
	notOK, n := NotOK(c)
	if c.Incomplete != "" || n == 0 || float64(notOK)-MaxNotOKShare*float64(n) <= 1e-9 { // 1e-9: share × n is not exact in floating point
		return ""
	}
	return fmt.Sprintf("%s at %s req/s rep %d: %d of %d measured requests (%s) did not end ok (%s), above the %s limit (a fixed limit, not a config key: past it a cell's latency figures are refused)",
		c.Arm, report.Num(c.OfferedLoadRPS), c.Repetition, notOK, n, SharePastLimit(notOK, n), notOKCounts(c.States), maxNotOKText)
}

// sharePastLimit is notOK/n as a percentage with as many decimals as it takes
// (at least num's) for the printed figure to lie above MaxNotOKShare, as the
// share does when Censored calls it: 100 of 1,999 is "5.003 %", not
// "5.00 %". (An excess over the limit is at least 5/n percentage points, so
// 15 decimals suffice for any n below 1e14.)
func SharePastLimit(notOK, n int) string {
	const limitPct = MaxNotOKShare * 100 // exact: an untyped constant
	v := 100 * float64(notOK) / float64(n)
	s := report.Num(v)
	for d := 3; d <= 15; d++ {
		if shown, err := strconv.ParseFloat(s, 64); err == nil && shown > limitPct {
			break
		}
		s = strconv.FormatFloat(v, 'f', d, 64)
	}
	return s + " %"
}

// FailureWarning is the run warning for a cell that Censored flags: arm,
// load, repetition, the count of each state, the first error and what the
// report does about it. "" when the cell is within MaxNotOKShare or incomplete.
func FailureWarning(c report.Cell) string {
	why := Censored(c)
	if why == "" {
		return ""
	}
	ok := c.States[string(loadgen.StateOK)]
	return fmt.Sprintf("arm %s; first error: %s. Its latency figures are over the %d ok %s only, the survivors of a censored sample: comparisons, speedups and transfer efficiency that use this cell are refused (not comparable).",
		why, report.OrText(c.FirstError, "none recorded"), ok, plural(ok, "request", "requests"))
}

// FailureWarnings lists FailureWarning of every flagged cell, in cells' order.
func FailureWarnings(cells []report.Cell) []string {
	var out []string
	for _, c := range cells {
		if w := FailureWarning(c); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// censoredNote is the count of complete cells Censored flags among r's
// cells, for the headline: "not comparable: 2 of 6 cells …"; "" when none.
func CensoredNote(r report.Results) string {
	var keys []string
	for _, c := range r.Cells {
		if Censored(c) != "" {
			keys = append(keys, fmt.Sprintf("%s at %s req/s rep %d", c.Arm, report.Num(c.OfferedLoadRPS), c.Repetition))
		}
	}
	if len(keys) == 0 {
		return ""
	}
	return fmt.Sprintf("not comparable: %d of %d cells had more than %s of their measured requests not end ok (%s), so every comparison using them is refused",
		len(keys), len(r.Cells), maxNotOKText, strings.Join(keys, "; "))
}

// sentNotOK counts the requests that were sent and failed: http_error,
// stream_error and timeout (cancelled and not_sent are the run's ending, as
// SLOClaims count them).
func sentNotOK(states map[string]int) int {
	return states[string(loadgen.StateHTTPError)] + states[string(loadgen.StateStreamError)] + states[string(loadgen.StateTimeout)]
}

// notOKCounts lists the non-zero counts of the states other than ok, in
// loadgen.States order: "timeout 46, http_error 2".
func notOKCounts(states map[string]int) string {
	var parts []string
	for _, s := range loadgen.States {
		if n := states[string(s)]; s != loadgen.StateOK && n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, n))
		}
	}
	return strings.Join(parts, ", ")
}

// firstError describes the measured request that did not end ok with the
// earliest scheduled time (ties: record order): "timeout (HTTP 200): SSE
// event 10: read: i/o timeout". "" when every measured request ended ok.
func firstError(measured []*loadgen.Record) string {
	var first *loadgen.Record
	for _, r := range measured {
		if r.State != loadgen.StateOK && (first == nil || cmp.Less(r.ScheduledAt, first.ScheduledAt)) {
			first = r
		}
	}
	if first == nil {
		return ""
	}
	s := string(first.State)
	if first.HTTPStatus != 0 {
		s += fmt.Sprintf(" (HTTP %d)", first.HTTPStatus)
	}
	return s + ": " + report.OrText(first.Error, "no error text")
}

// plural is one when n == 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// groupCensored is the Censored reasons of g's cells, joined; "" when none.
func (g Group) censored() string {
	var why []string
	for _, c := range g.Cells {
		if w := Censored(c); w != "" {
			why = append(why, w)
		}
	}
	return strings.Join(why, "; ")
}

// isLatency reports whether metric is one of a cell's latency Dists (the
// figures censoring biases; throughput and goodput count failures as they are).
func IsLatency(metric string) bool {
	_, err := CellDist(report.Cell{}, metric)
	return err == nil
}
