package analysis_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"
)

// TestFailureWarning: a cell is flagged when more than MaxNotOKShare (5 %)
// of its measured requests did not end ok, and the warning names the arm,
// load, repetition, every non-ok state's count and the earliest-scheduled
// failure's error; exactly 5 %, all ok, and incomplete cells are not flagged.
func TestFailureWarning(t *testing.T) {
	t.Parallel()
	incomplete := analysistest.FailCell("baseline", 10, 0, 47, 46)
	incomplete.Incomplete = "the run deadline passed"
	cases := []struct {
		name string
		c    report.Cell
		want []string // substrings; nil: no warning
	}{
		{name: "46 of 47 timed out", c: analysistest.FailCell("baseline", 10, 0, 47, 46), want: []string{
			"arm baseline at 10.00 req/s rep 0", "46 of 47 measured requests", "(timeout 46)", "above the 5 % limit",
			"first error: timeout (HTTP 200): SSE event 3: read: i/o timeout", "over the 1 ok request only", "refused (not comparable)"}},
		{name: "6 of 100 is above 5 %", c: analysistest.FailCell("cand", 4, 2, 100, 6), want: []string{"arm cand at 4.00 req/s rep 2", "6 of 100", "(timeout 6)", "over the 94 ok requests only"}},
		{name: "5 of 100 is at the limit", c: analysistest.FailCell("baseline", 4, 0, 100, 5)},
		{name: "all ok", c: analysistest.FailCell("baseline", 4, 0, 30, 0)},
		{name: "incomplete cell: already left out", c: incomplete},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := analysis.FailureWarning(tc.c)
			if tc.want == nil {
				if got != "" || analysis.Censored(tc.c) != "" {
					t.Errorf("warning %q, censored %q; want none", got, analysis.Censored(tc.c))
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("warning lacks %q:\n%s", w, got)
				}
			}
		})
	}
	if c := analysistest.FailCell("baseline", 4, 0, 30, 0); c.FirstError != "" {
		t.Errorf("all-ok cell: first_error %q, want empty", c.FirstError)
	}
	if got := analysis.FailureWarnings([]report.Cell{analysistest.FailCell("a", 1, 0, 20, 0), analysistest.FailCell("b", 1, 0, 20, 10), analysistest.FailCell("c", 1, 0, 20, 20)}); len(got) != 2 ||
		!strings.HasPrefix(got[0], "arm b ") || !strings.HasPrefix(got[1], "arm c ") {
		t.Errorf("FailureWarnings = %q, want b's then c's", got)
	}
}

// TestFailureShareShownAboveLimit: a flagged cell's share is printed with
// enough decimals to read above the 5 % limit (100 of 1,999 is 5.0025… %:
// "5.003 %", never "5.00 %"), and with num's usual digits when those already
// do.
func TestFailureShareShownAboveLimit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		notOK, n int
		want     string
	}{
		{100, 1999, "(5.003 %)"},
		{1001, 20000, "(5.005 %)"},
		{50001, 1000000, "(5.0001 %)"},
		{500000001, 10000000000, "(5.00000001 %)"},
		{6, 100, "(6.00 %)"},
		{46, 47, "(97.87 %)"},
		{47, 47, "(100.0 %)"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d of %d", tc.notOK, tc.n), func(t *testing.T) {
			t.Parallel()
			c := report.Cell{Arm: "b", OfferedLoadRPS: 4, States: map[string]int{"ok": tc.n - tc.notOK, "timeout": tc.notOK}}
			got := analysis.Censored(c)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("Censored() = %q, want it to show %s", got, tc.want)
			}
			if strings.Contains(got, "MaxNotOKShare") {
				t.Errorf("Censored() = %q names a Go identifier, not the user-facing limit", got)
			}
			i := strings.Index(got, "(") // the share is the first parenthesis
			shown, err := strconv.ParseFloat(strings.TrimSuffix(got[i+1:strings.Index(got, ")")], " %"), 64)
			if err != nil || shown <= 5 {
				t.Errorf("shown share %v (err %v) is not above the 5 %% limit", shown, err)
			}
		})
	}
}

// TestMeanNeedsP50Samples: a mean is compared only from cells with at least
// the samples a p50 claim needs (MinSamples(0.5, 0.99) = 7), as percentiles are.
func TestMeanNeedsP50Samples(t *testing.T) {
	t.Parallel()
	need, err := stats.MinSamples(0.5, stats.DefaultConfidence)
	if err != nil || need != 7 {
		t.Fatalf("MinSamples(0.5, 0.99) = %d, %v; want 7", need, err)
	}
	for _, tc := range []struct {
		n       int
		refused bool
	}{{1, true}, {need - 1, true}, {need, false}} {
		r := report.Results{Complete: true, Cells: []report.Cell{analysistest.FailCell("baseline", 1, 0, tc.n, 0), analysistest.FailCell("candidate", 1, 0, tc.n, 0)}}
		if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true}); err != nil {
			t.Fatal(err)
		}
		for _, q := range r.Stats.Ratios {
			if q.Stat != "mean" || q.Metric != "e2e" {
				continue
			}
			if got := q.Value.Reps == 0; got != tc.refused {
				t.Errorf("n = %d: e2e mean ratio refused = %v (%s), want %v", tc.n, got, q.Value.Note, tc.refused)
			}
			if tc.refused && !strings.Contains(q.Value.Note, "n ≥ 7") {
				t.Errorf("n = %d: note %q does not give the minimum", tc.n, q.Value.Note)
			}
		}
	}
}

// TestCheckSLOCountsFailures: a failed request misses every target, so a
// cell whose sent requests failed more often than 1 − percentile misses the
// SLO whatever its ok requests did (p90: more than 10 %).
func TestCheckSLOCountsFailures(t *testing.T) {
	t.Parallel()
	slo := report.SLO{TTFTMs: 60_000, Percentile: 90}
	for _, tc := range []struct {
		failed int
		want   analysis.SLOOutcome
		why    string
	}{
		{11, analysis.SLOMissed, "11 of 100 sent requests did not end ok (timeout 11) at load 4.00 rep 0: more than the 10.00 % a p90 target allows"},
		{10, analysis.SLOMet, ""},
		{0, analysis.SLOMet, ""},
	} {
		got, why := analysis.CheckSLO(analysistest.FailCell("baseline", 4, 0, 100, tc.failed), slo)
		if got != tc.want || !strings.Contains(why, tc.why) {
			t.Errorf("%d of 100 failed: %s (%s), want %s (%s)", tc.failed, got, why, tc.want, tc.why)
		}
	}
}

// TestSpeedupRefusalNamesFailuresFirst: a ratio refused because a cell lost
// too many requests, whose cells are also client-bound, gives a speedup that
// names the failures first (they hold whatever the client) and the
// client-bound cells after; client-bound alone is named alone.
func TestSpeedupRefusalNamesFailuresFirst(t *testing.T) {
	refused := report.Estimate{Note: "refused, not comparable: cand at 6.00 req/s rep 0: 15 of 15 measured requests did not end ok"}
	both := analysis.SpeedupOf(report.Ratio{Value: refused, Excluded: "client-bound: cand rep 0"})
	if both.Reps != 0 || !strings.HasPrefix(both.Note, refused.Note) || !strings.HasSuffix(both.Note, "; also not comparable: client-bound: cand rep 0") {
		t.Errorf("refused and client-bound: %+v", both)
	}
	ok := report.Estimate{Value: 0.8, Low: 0.75, High: 0.85, Interval: true, Reps: 3}
	cb := analysis.SpeedupOf(report.Ratio{Value: ok, Excluded: "client-bound: cand rep 0"})
	if cb.Reps != 0 || cb.Note != "not comparable: client-bound: cand rep 0" {
		t.Errorf("client-bound only: %+v", cb)
	}
}
