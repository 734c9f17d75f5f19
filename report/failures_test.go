package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/loadgen"
)

// failRecords is n measured records of one cell: the fixture's synthetic
// server, ok requests only, with the failed earliest-scheduled ones turned
// into timeouts (the very first with a distinct error text), returned in
// reverse schedule order so the first error must be found by schedule time.
func failRecords(arm string, load float64, rep, n, failed int) []loadgen.Record {
	a := fixtureBaseline
	a.name = arm
	var recs []loadgen.Record
	for _, r := range synthRecords(a, load, rep, 2*n+10, 11) {
		if r.State == loadgen.StateOK && len(recs) < n {
			recs = append(recs, r)
		}
	}
	for i := range failed {
		r := &recs[i]
		r.Events, r.OutputTokens, r.OutputTokensSource = nil, 0, ""
		r.State, r.HTTPStatus, r.Error = loadgen.StateTimeout, 200, "SSE event 4: read: i/o timeout"
		r.EndAt = r.SentAt + 150*time.Millisecond
		if i == 0 {
			r.Error = "SSE event 3: read: i/o timeout"
		}
	}
	slices.Reverse(recs)
	return recs
}

func failCell(arm string, load float64, rep, n, failed int) Cell {
	return BuildCell(failRecords(arm, load, rep, n, failed), CellOptions{Arm: arm, OfferedLoadRPS: load, Repetition: rep})
}

// TestFailureWarning: a cell is flagged when more than MaxNotOKShare (5 %)
// of its measured requests did not end ok, and the warning names the arm,
// load, repetition, every non-ok state's count and the earliest-scheduled
// failure's error; exactly 5 %, all ok, and incomplete cells are not flagged.
func TestFailureWarning(t *testing.T) {
	t.Parallel()
	incomplete := failCell("baseline", 10, 0, 47, 46)
	incomplete.Incomplete = "the run deadline passed"
	cases := []struct {
		name string
		c    Cell
		want []string // substrings; nil: no warning
	}{
		{name: "46 of 47 timed out", c: failCell("baseline", 10, 0, 47, 46), want: []string{
			"arm baseline at 10.00 req/s rep 0", "46 of 47 measured requests", "(timeout 46)", "above the 5 % limit",
			"first error: timeout (HTTP 200): SSE event 3: read: i/o timeout", "over the 1 ok request only", "refused (not comparable)"}},
		{name: "6 of 100 is above 5 %", c: failCell("cand", 4, 2, 100, 6), want: []string{"arm cand at 4.00 req/s rep 2", "6 of 100", "(timeout 6)", "over the 94 ok requests only"}},
		{name: "5 of 100 is at the limit", c: failCell("baseline", 4, 0, 100, 5)},
		{name: "all ok", c: failCell("baseline", 4, 0, 30, 0)},
		{name: "incomplete cell: already left out", c: incomplete},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := FailureWarning(tc.c)
			if tc.want == nil {
				if got != "" || tc.c.Censored() != "" {
					t.Errorf("warning %q, censored %q; want none", got, tc.c.Censored())
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
	if c := failCell("baseline", 4, 0, 30, 0); c.FirstError != "" {
		t.Errorf("all-ok cell: first_error %q, want empty", c.FirstError)
	}
	if got := FailureWarnings([]Cell{failCell("a", 1, 0, 20, 0), failCell("b", 1, 0, 20, 10), failCell("c", 1, 0, 20, 20)}); len(got) != 2 ||
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
			c := Cell{Arm: "b", OfferedLoadRPS: 4, States: map[string]int{"ok": tc.n - tc.notOK, "timeout": tc.notOK}}
			got := c.Censored()
			if !strings.Contains(got, tc.want) {
				t.Fatalf("Censored() = %q, want it to show %s", got, tc.want)
			}
			i := strings.Index(got, "(") // the share is the first parenthesis
			shown, err := strconv.ParseFloat(strings.TrimSuffix(got[i+1:strings.Index(got, ")")], " %"), 64)
			if err != nil || shown <= 5 {
				t.Errorf("shown share %v (err %v) is not above the 5 %% limit", shown, err)
			}
		})
	}
}

// failingRun is two arms at two loads, one repetition: at 10 req/s both
// cells lost 46 of 47 requests to timeouts (the new-user report), at 2 req/s
// none did; with an Amdahl row per load.
func failingRun() Results {
	r := Results{Complete: true, Simulated: true, SLO: SLO{TTFTMs: 500, Percentile: 90},
		Manifest: Manifest{ConfigSHA256: "cfg", ArmOrder: []string{"baseline", "candidate"}}, Trace: TraceInfo{SHA256: "tr"}}
	for _, arm := range []string{"baseline", "candidate"} {
		r.Cells = append(r.Cells, failCell(arm, 2, 0, 60, 0), failCell(arm, 10, 0, 47, 46))
	}
	r.Amdahl = &AmdahlSection{Loads: []AmdahlLoad{
		{Candidate: "candidate", OfferedLoadRPS: 2, FWall: 0.03, S: 2.5, Bound: 1.0183},
		{Candidate: "candidate", OfferedLoadRPS: 10, FWall: 0.03, S: 2.5, Bound: 1.0183},
	}}
	r.Warnings = FailureWarnings(r.Cells)
	return r
}

// TestCostTableMarksFlaggedCells: the cost table keeps the cost of a cell
// that lost more than 5 % of its requests (it divides the window's price by
// the tokens delivered) but marks it "*" with the not-ok share, and its note
// names the flagged cells; clean rows carry no mark. Both reports show it.
func TestCostTableMarksFlaggedCells(t *testing.T) {
	t.Parallel()
	r := failingRun()
	r.Cost = &CostSection{}
	for _, c := range r.Cells {
		r.Cost.Cells = append(r.Cost.Cells, CostCell{Arm: c.Arm, OfferedLoadRPS: c.OfferedLoadRPS, Repetition: c.Repetition, Currency: "USD",
			PricePerGPUHour: 3.5, PriceDate: "2026-05-01", GPUs: 1, UtilisationAssumption: 1, WindowS: 4, OutputTokens: 100, TotalTokens: 300,
			CostPer1MOutputTokens: 38.89, CostPer1MTotalTokens: 12.96})
	}
	if err := Analyze(&r, DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	sec := costTable(r, units(r.Simulated))
	if len(sec.Parts) == 0 || len(sec.Parts[0].Rows) != len(r.Cells) {
		t.Fatalf("cost table %+v, want one row per cell", sec)
	}
	p := sec.Parts[0]
	for _, row := range p.Rows {
		flagged := row[1] == "10.00"
		wantOut, wantTotal := "38.89 USD, simulated", "12.96 USD, simulated"
		if flagged {
			wantOut, wantTotal = wantOut+" * (flagged: 97.87 % not ok)", wantTotal+" *"
		}
		if row[3] != wantOut || row[4] != wantTotal {
			t.Errorf("%s at %s req/s: cost cells %q, %q; want %q, %q", row[0], row[1], row[3], row[4], wantOut, wantTotal)
		}
	}
	for _, w := range []string{"* flagged: baseline at 10.00 req/s rep 0: 46 of 47 measured requests (97.87 %) did not end ok",
		"candidate at 10.00 req/s rep 0: 46 of 47", "not the cost of serving that load"} {
		if !strings.Contains(p.Note, w) {
			t.Errorf("cost table note lacks %q:\n%s", w, p.Note)
		}
	}
	if strings.Contains(p.Note, "at 2.00 req/s") {
		t.Errorf("cost table note names a clean cell:\n%s", p.Note)
	}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"report.md": md.String(), "report.html": html.String()} {
		if n := strings.Count(text, "* (flagged: 97.87 % not ok)"); n != 2 {
			t.Errorf("%s marks %d cost rows flagged, want 2", name, n)
		}
	}
}

// TestAnalyzeRefusesCensoredCells: ratios, Amdahl speedups and the latency
// statistics of a load whose cells lost more than 5 % of their requests are
// refused (null in results.json, with the reason), the verdict is
// inconclusive saying why, the headline says "not comparable", and both
// reports print the warnings; the clean load and throughput are unaffected.
func TestAnalyzeRefusesCensoredCells(t *testing.T) {
	t.Parallel()
	r := failingRun()
	if err := Analyze(&r, DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	for _, q := range r.Stats.Ratios {
		switch {
		case q.OfferedLoadRPS == 10 && (q.Value.Reps != 0 || !strings.Contains(q.Value.Note, "refused, not comparable") || !strings.Contains(q.Value.Note, "46 of 47")):
			t.Errorf("ratio %s %s at 10 req/s: %+v, want refused as not comparable", q.Metric, q.Stat, q.Value)
		case q.OfferedLoadRPS == 2 && q.Stat == "mean" && q.Value.Reps != 1:
			t.Errorf("ratio %s mean at 2 req/s: %+v, want a value (no request failed)", q.Metric, q.Value)
		}
	}
	for _, cs := range r.Stats.Cells {
		for _, m := range cs.Metrics {
			refused := m.Value.Reps == 0
			switch {
			case cs.OfferedLoadRPS == 10 && isLatency(m.Metric) && !refused:
				t.Errorf("%s %s %s at 10 req/s = %v, want refused", cs.Arm, m.Metric, m.Stat, m.Value.Value)
			case !isLatency(m.Metric) && refused:
				t.Errorf("%s %s at %v req/s refused (%s): censoring does not bias throughput or goodput", cs.Arm, m.Metric, cs.OfferedLoadRPS, m.Value.Note)
			}
		}
	}
	for _, l := range r.Amdahl.Loads {
		for _, sp := range l.Measured {
			if l.OfferedLoadRPS == 10 && (sp.Value.Reps != 0 || !strings.Contains(sp.Value.Note, "not comparable")) {
				t.Errorf("speedup %s %s at 10 req/s: %+v, want refused", sp.Metric, sp.Stat, sp.Value)
			}
			if l.OfferedLoadRPS == 2 && sp.Stat == "mean" && sp.Value.Reps != 1 {
				t.Errorf("speedup %s mean at 2 req/s: %+v, want a value", sp.Metric, sp.Value)
			}
		}
	}
	b, err := json.Marshal(r.Amdahl.Loads[1])
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		TransferEfficiency *float64 `json:"transfer_efficiency"`
		Measured           []struct {
			Value struct {
				Value *float64 `json:"value"`
				Note  string   `json:"note"`
			} `json:"value"`
		} `json:"measured"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.TransferEfficiency != nil || len(back.Measured) == 0 {
		t.Errorf("results.json Amdahl row at 10 req/s: %s; want transfer_efficiency null and the speedups listed", b)
	}
	for _, m := range back.Measured {
		if m.Value.Value != nil || m.Value.Note == "" {
			t.Errorf("results.json speedup at 10 req/s: value %v note %q, want null with the reason", m.Value.Value, m.Value.Note)
		}
	}
	if v := r.Verdicts[0]; v.Outcome != verdictInconclusive || !strings.Contains(v.Reason, "not comparable") {
		t.Errorf("verdict %s: %s; want inconclusive, not comparable", v.Outcome, v.Reason)
	}
	if h := Headline(r); !strings.HasPrefix(h, "not comparable: 2 of 4 cells") || !strings.Contains(h, "baseline at 10.00 req/s rep 0; candidate at 10.00 req/s rep 0") {
		t.Errorf("headline %q does not say which cells are not comparable", h)
	}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		md.String():   {"> **Warning:** arm baseline at 10.00 req/s rep 0: 46 of 47", "> **Warning:** arm candidate at 10.00 req/s rep 0", "refused, not comparable: candidate at 10.00 req/s rep 0"},
		html.String(): {"Warning: arm baseline at 10.00 req/s rep 0: 46 of 47", "refused, not comparable"},
	} {
		for _, w := range want {
			if !strings.Contains(name, w) {
				t.Errorf("report lacks %q", w)
			}
		}
	}

	// A canary comparison of such runs flags the cells again.
	cmp, err := Compare(failingRun(), failingRun(), CompareOptions{ArmB: "candidate"})
	if err != nil {
		t.Fatal(err)
	}
	// The third warning says A ran no A/A replicate (TestCompareUsesResolutionAndSaysProvenance).
	if w := cmp.Results.Warnings; len(w) != 3 || !strings.HasPrefix(w[0], "arm A:baseline at 10.00 req/s") || !strings.HasPrefix(w[1], "arm B:candidate at 10.00 req/s") || !strings.HasPrefix(w[2], "A has no A/A replicate") {
		t.Errorf("comparison warnings = %q", w)
	}
}

// TestMeanNeedsP50Samples: a mean is compared only from cells with at least
// the samples a p50 claim needs (MinSamples(0.5, 0.99) = 7), as percentiles are.
func TestMeanNeedsP50Samples(t *testing.T) {
	t.Parallel()
	need, err := MinSamples(0.5, DefaultConfidence)
	if err != nil || need != 7 {
		t.Fatalf("MinSamples(0.5, 0.99) = %d, %v; want 7", need, err)
	}
	for _, tc := range []struct {
		n       int
		refused bool
	}{{1, true}, {need - 1, true}, {need, false}} {
		r := Results{Complete: true, Cells: []Cell{failCell("baseline", 1, 0, tc.n, 0), failCell("candidate", 1, 0, tc.n, 0)}}
		if err := Analyze(&r, DecisionRule{Metric: "e2e", UseMean: true}); err != nil {
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
	slo := SLO{TTFTMs: 60_000, Percentile: 90}
	for _, tc := range []struct {
		failed int
		want   SLOOutcome
		why    string
	}{
		{11, SLOMissed, "11 of 100 sent requests did not end ok (timeout 11) at load 4.00 rep 0: more than the 10.00 % a p90 target allows"},
		{10, SLOMet, ""},
		{0, SLOMet, ""},
	} {
		got, why := CheckSLO(failCell("baseline", 4, 0, 100, tc.failed), slo)
		if got != tc.want || !strings.Contains(why, tc.why) {
			t.Errorf("%d of 100 failed: %s (%s), want %s (%s)", tc.failed, got, why, tc.want, tc.why)
		}
	}
}
