package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"

	"github.com/transferlab/transferlab/loadgen"
)

// TestDispatchLagFlagText: the client-bound flag counts the sends dispatched
// more than 1 ms late and tests their share (loadgen.ClientBound: more than
// 1 % at 99 % confidence); the text gives the count and the p99 (labelled the
// max below 100 sends); one late send of 48 is shown, not flagged, and the
// fewest late sends that flag a cell of n are flagged, in the cell and in
// report.md.
func TestDispatchLagFlagText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n, flagAt int // flagAt: the fewest late sends that flag n (Binomial(n, 0.01) tail < 1 %)
		label     string
	}{
		{48, 4, "dispatch lag max"},
		{99, 5, "dispatch lag max"},
		{100, 5, "dispatch lag p99"},
		{480, 12, "dispatch lag p99"},
	} {
		for _, late := range []int{1, tc.flagAt - 1, tc.flagAt} {
			t.Run(fmt.Sprint(tc.n, "/", late), func(t *testing.T) {
				recs := make([]loadgen.Record, tc.n)
				for i := range recs {
					// dispatch lag i µs, the last `late` ones 1.343 ms
					at := time.Duration(i+1) * 10 * analysistest.MsD
					lag := time.Duration(i) * time.Microsecond
					if i >= tc.n-late {
						lag = 1343 * time.Microsecond
					}
					recs[i] = loadgen.Record{RequestID: i, State: loadgen.StateOK, ScheduledAt: at, DispatchedAt: at + lag, SentAt: at + lag,
						Events: []loadgen.TokenEvent{{At: at + lag + analysistest.MsD, Tokens: 1}}, EndAt: at + lag + 2*analysistest.MsD, OutputTokens: 1, OutputTokensSource: loadgen.SourceEvents}
				}
				c := analysis.BuildCell(recs, analysis.CellOptions{})
				if c.DispatchLag.N != tc.n || c.DispatchLateSends != late {
					t.Fatalf("dispatch lag n = %d, late %d; want %d, %d", c.DispatchLag.N, c.DispatchLateSends, tc.n, late)
				}
				if want := late >= tc.flagAt; c.ClientBound != want {
					t.Errorf("%d of %d sends late: client-bound %t, want %t", late, tc.n, c.ClientBound, want)
				}
				got := analysis.DispatchLagFlagText(c)
				want := fmt.Sprintf("%d of %d sends more than 1.00 ms late (%s %.3f ms)", late, tc.n, tc.label, c.DispatchLagP99ForFlagMs)
				if got != want {
					t.Errorf("DispatchLagFlagText = %q, want %q", got, want)
				}
				var md bytes.Buffer
				if err := WriteMarkdown(&md, report.Results{SchemaVersion: report.SchemaVersion, Cells: []report.Cell{c}}); err != nil {
					t.Fatal(err)
				}
				flagged := strings.Contains(md.String(), "client-bound ("+got+")") && strings.Contains(md.String(), "more than 1 % of the cell's sends left the client more than 1.00 ms late, at 99 % confidence")
				shown := strings.Contains(md.String(), "late sends, not client-bound ("+got+")")
				if flagged != c.ClientBound || shown == c.ClientBound {
					t.Errorf("report.md: client-bound flag %t, late-sends flag %t, for client-bound %t:\n%s", flagged, shown, c.ClientBound, md.String())
				}
			})
		}
	}
}

// TestVerdictNamesClauseBAndClientBound: clause b's name says what it
// tests (a difference beyond the resolution, no regression beyond the
// margin: a 1.5 % slower candidate passes a 2 % margin); a ratio whose
// client-bound cells leave fewer than 2 of its 4 blocks is shown but feeds no
// verdict (the only load's is excluded: inconclusive, naming the flagged
// cells), and the run says so
// with each verdict, in VerdictLine (console, HTML) and report.md.
func TestVerdictNamesClauseBAndClientBound(t *testing.T) {
	t.Parallel()
	base := []float64{20.0, 20.4, 19.8, 20.1}
	slower := []float64{20.3, 20.7, 20.1, 20.4} // 1.5 % slower
	r := analysistest.TwoArms(base, slower)
	r.Cells[1].ClientBound, r.Cells[4].ClientBound, r.Cells[6].ClientBound = true, true, true // baseline rep 1, candidate reps 0 and 2
	if err := analysis.Analyze(&r, report.DecisionRule{Metric: "tpot", Percentile: 99, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	v := r.Verdicts[0]
	if v.Outcome != "inconclusive" || !strings.Contains(v.Reason, "every load was excluded from the verdict: 4.00 req/s (client-bound: candidate rep 0, candidate rep 2, baseline rep 1)") {
		t.Fatalf("client-bound cells at the only load: %s", analysis.VerdictLine(v))
	}
	const name = "tpot p99: a difference beyond the run's resolution, no regression beyond the margin"
	if v.Clauses[1].Name != name {
		t.Errorf("clause b name %q, want %q", v.Clauses[1].Name, name)
	}
	const note = "3 of 8 cells client-bound: their figures are suspect"
	if v.ClientBound != note {
		t.Errorf("verdict client-bound note %q, want %q", v.ClientBound, note)
	}
	line := analysis.VerdictLine(v)
	if !strings.HasSuffix(line, "; warning: "+note) || strings.Contains(line, "improves") {
		t.Errorf("VerdictLine %q", line)
	}
	md, html := renderBoth(t, r)
	if !strings.Contains(md, "> **Warning:** "+note) {
		t.Error("report.md's verdict does not say cells were client-bound")
	}
	if !strings.Contains(html, "warning: "+note) {
		t.Error("report.html's verdict does not say cells were client-bound")
	}

	// No client-bound cell: nothing said.
	clean := analysistest.TwoArms(base, slower)
	if err := analysis.Analyze(&clean, report.DecisionRule{Metric: "tpot", Percentile: 99, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	if v := clean.Verdicts[0]; v.ClientBound != "" || strings.Contains(analysis.VerdictLine(v), "client-bound") || v.Outcome != "pass" {
		t.Errorf("1.5 %% slower with a 2 %% margin, no client-bound cell: verdict %q", analysis.VerdictLine(v))
	}
}
