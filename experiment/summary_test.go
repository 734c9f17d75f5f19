package experiment

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/render"
	"github.com/transferlab/transferlab/report"
)

// TestPrintSummaryNotMeasured: the console table prints n/m, not 0, for a
// cell with no measured request sent, and says why below the table.
func TestPrintSummaryNotMeasured(t *testing.T) {
	t.Parallel()
	w, tp, ar, gp := 10.0, 1234.0, 2.6, 2.5
	res := &report.Results{Complete: false, IncompleteReason: "run stopped: deadline", Cells: []report.Cell{
		{Arm: "baseline", OfferedLoadRPS: 1, States: map[string]int{"ok": 20}, WindowS: &w, ThroughputTokPerS: &tp, ArrivalRateRPS: &ar, GoodputRPS: &gp},
		{Arm: "baseline", OfferedLoadRPS: 3, States: map[string]int{"not_sent": 48}, NotMeasured: analysis.NoMeasuredRequestSent, Incomplete: "run stopped: deadline"},
	}}
	var b bytes.Buffer
	PrintSummary(&b, res)
	out := b.String()
	lines := strings.Split(out, "\n")
	var measured, empty string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "0/48"):
			empty = l
		case strings.Contains(l, "20/20"):
			measured = l
		}
	}
	last3 := func(l string) string {
		f := strings.Fields(l)
		if len(f) < 3 {
			return l
		}
		return strings.Join(f[len(f)-3:], " ")
	}
	if last3(empty) != "n/m n/m n/m" {
		t.Errorf("not-measured cell's row %q: want throughput, arrival rate and goodput n/m", empty)
	}
	if last3(measured) != "1234 2.60 2.50" {
		t.Errorf("measured cell's row %q: want 1234 tok/s, arrival 2.60 req/s beside goodput 2.50 req/s", measured)
	}
	if !strings.Contains(out, "baseline at 3 req/s rep 0: no measured request was sent") {
		t.Errorf("summary does not say why the cell was not measured:\n%s", out)
	}
}

// TestPrintSummaryVerdictClientBound: the console verdict line says how many
// cells were client-bound.
func TestPrintSummaryVerdictClientBound(t *testing.T) {
	t.Parallel()
	res := &report.Results{Complete: true, Cells: []report.Cell{{Arm: "baseline", ClientBound: true}, {Arm: "cand"}},
		Verdicts: []report.Verdict{{Candidate: "cand", Baseline: "baseline", Outcome: "pass", DecidingClause: "b", Reason: "r",
			ClientBound: analysis.ClientBoundNote([]report.Cell{{ClientBound: true}, {}})}}}
	var b bytes.Buffer
	PrintSummary(&b, res)
	if !strings.Contains(b.String(), "verdict cand vs baseline: PASS (clause b: r); warning: 1 of 2 cells client-bound: their figures are suspect") {
		t.Errorf("console verdict does not flag client-bound cells:\n%s", b.String())
	}
}

// TestPrintSummaryCounts: one cell is singular.
func TestPrintSummaryCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cells, rows int
		want        string
	}{{1, 1, ": 1 cell, trace t ("}, {2, 0, ": 2 cells, trace t ("}} {
		res := &report.Results{Complete: true, Cells: make([]report.Cell, tc.cells)}
		res.Trace.Source, res.Trace.Rows = "t", tc.rows
		var b bytes.Buffer
		PrintSummary(&b, res)
		if first, _, _ := strings.Cut(b.String(), "\n"); !strings.Contains(first, tc.want) {
			t.Errorf("first line %q, want %q", first, tc.want)
		}
	}
}

// TestPrintSummaryAnswerFirstAtTheSLOPercentile: with a decision rule the
// console opens with the answer block and does not repeat the verdicts or
// the headline after the tables; the cell table shows the SLO's percentile
// (p90 here, not p99), flags client-bound cells, and a transfer efficiency
// above 1 carries why (the bound is on service time; queueing amplifies).
func TestPrintSummaryAnswerFirstAtTheSLOPercentile(t *testing.T) {
	t.Parallel()
	p50, p90 := 10.0, 42.5
	d := report.Dist{N: 100, P50Ms: &p50, P90Ms: &p90}
	rule := report.DecisionRule{Baseline: "baseline", Metric: "e2e", UseMean: true, RegressionMargin: 0.02}.WithDefaults()
	res := &report.Results{Complete: true, SLO: report.SLO{TTFTMs: 500, Percentile: 90}, Rule: &rule,
		Cells: []report.Cell{
			{Arm: "baseline", OfferedLoadRPS: 3, States: map[string]int{"ok": 100}, TTFT: d, TPOT: d, E2E: d},
			{Arm: "cand", OfferedLoadRPS: 3, States: map[string]int{"ok": 100}, TTFT: d, TPOT: d, E2E: d, ClientBound: true},
		},
		Verdicts: []report.Verdict{{Candidate: "cand", Baseline: "baseline", Outcome: "pass", DecidingClause: "b", Summary: "PASS: mean E2E vs the baseline: 5.0 % lower"}},
		Stats:    &report.Stats{},
		Amdahl: &report.AmdahlSection{Loads: []report.AmdahlLoad{{Candidate: "cand", OfferedLoadRPS: 3, FWall: 0.026, S: 2.5, Bound: 1.0157,
			TransferEfficiency: 1.44, TransferMetric: "e2e mean", Verdict: "above",
			Measured: []report.Speedup{{Metric: "e2e", Stat: "mean", Value: report.Estimate{Value: 1.0226, Low: 1.0200, High: 1.0250, Reps: 3, Interval: true}}}}}},
	}
	var b bytes.Buffer
	PrintSummary(&b, res)
	out := b.String()
	answer := strings.Index(out, "cand vs baseline:\n  verdict: PASS: mean E2E vs the baseline: 5.0 % lower")
	table := strings.Index(out, "TTFT p90 ms")
	if answer < 0 || table < 0 || answer > table {
		t.Errorf("want the answer block first, then the table with TTFT p90:\n%s", out)
	}
	if strings.Contains(out, "TTFT p99 ms") || !strings.Contains(out, "42.5") {
		t.Errorf("the table shows p99 or lacks p90 figures:\n%s", out)
	}
	flagged := false
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "cand" && f[len(f)-1] == "client-bound" {
			flagged = true
		}
	}
	if !flagged {
		t.Errorf("the client-bound cell's row is not flagged:\n%s", out)
	}
	if !strings.Contains(out, "1.44*") || !strings.Contains(out, "* "+render.AboveBoundNote) {
		t.Errorf("efficiency 1.44 unexplained:\n%s", out)
	}
	if strings.Contains(out, "\nverdict ") || strings.Contains(out, "Headline") {
		t.Errorf("the verdict is repeated after the tables:\n%s", out)
	}
}

// TestPrintSummaryResumed: the console says a run was resumed, as report.md
// does, with what was kept and what ran.
func TestPrintSummaryResumed(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 12, 2, 14, 21, 26, 0, time.UTC)
	res := &report.Results{Complete: true, Resumed: true, ResumedFrom: &report.ResumedFrom{CreatedAt: created, KeptCells: 5, RerunCells: 7}}
	var b bytes.Buffer
	PrintSummary(&b, res)
	if want := "RESUMED (run --resume): 5 cells kept from the interrupted run created 2026-12-02T14:21:26Z, 7 run by this one"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}
