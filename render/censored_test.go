package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/canary"
	"github.com/transferlab/transferlab/report"
)

// failingRun is two arms at two loads, one repetition: at 10 req/s both
// cells lost 46 of 47 requests to timeouts (the new-user report), at 2 req/s
// none did; with an Amdahl row per load.
func failingRun() report.Results {
	r := report.Results{Complete: true, Simulated: true, SLO: report.SLO{TTFTMs: 500, Percentile: 90},
		Manifest: report.Manifest{ConfigSHA256: "cfg", ArmOrder: []string{"baseline", "candidate"}}, Trace: report.TraceInfo{SHA256: "tr"}}
	for _, arm := range []string{"baseline", "candidate"} {
		r.Cells = append(r.Cells, analysistest.FailCell(arm, 2, 0, 60, 0), analysistest.FailCell(arm, 10, 0, 47, 46))
	}
	r.Amdahl = &report.AmdahlSection{Loads: []report.AmdahlLoad{
		{Candidate: "candidate", OfferedLoadRPS: 2, FWall: 0.03, S: 2.5, Bound: 1.0183},
		{Candidate: "candidate", OfferedLoadRPS: 10, FWall: 0.03, S: 2.5, Bound: 1.0183},
	}}
	r.Warnings = analysis.FailureWarnings(r.Cells)
	return r
}

// TestCostTableMarksFlaggedCells: the cost table keeps the cost of a cell
// that lost more than 5 % of its requests (it divides the window's price by
// the tokens delivered) but marks it "*" with the not-ok share, and its note
// names the flagged cells; clean rows carry no mark. Both reports show it.
func TestCostTableMarksFlaggedCells(t *testing.T) {
	t.Parallel()
	r := failingRun()
	r.Cost = &report.CostSection{}
	for _, c := range r.Cells {
		r.Cost.Cells = append(r.Cost.Cells, report.CostCell{Arm: c.Arm, OfferedLoadRPS: c.OfferedLoadRPS, Repetition: c.Repetition, Currency: "USD",
			PricePerGPUHour: 3.5, PriceDate: "2026-05-01", GPUs: 1, UtilisationAssumption: 1, WindowS: 4, OutputTokens: 100, TotalTokens: 300,
			CostPer1MOutputTokens: 38.89, CostPer1MTotalTokens: 12.96})
	}
	if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
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
	if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
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
			case cs.OfferedLoadRPS == 10 && analysis.IsLatency(m.Metric) && !refused:
				t.Errorf("%s %s %s at 10 req/s = %v, want refused", cs.Arm, m.Metric, m.Stat, m.Value.Value)
			case !analysis.IsLatency(m.Metric) && refused:
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
	if v := r.Verdicts[0]; v.Outcome != report.VerdictInconclusive || !strings.Contains(v.Reason, "not comparable") {
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
	cmp, err := canary.Compare(failingRun(), failingRun(), canary.CompareOptions{ArmB: "candidate"})
	if err != nil {
		t.Fatal(err)
	}
	// The third says neither run recorded its commit (these synthetic runs
	// have none), the fourth that A ran no A/A replicate
	// (TestCompareUsesResolutionAndSaysProvenance).
	if w := cmp.Results.Warnings; len(w) != 4 || !strings.HasPrefix(w[0], "arm A:baseline at 10.00 req/s") || !strings.HasPrefix(w[1], "arm B:candidate at 10.00 req/s") ||
		!strings.HasPrefix(w[2], "A's and B's commit not recorded") || !strings.HasPrefix(w[3], "A has no A/A replicate") {
		t.Errorf("comparison warnings = %q", w)
	}
}
