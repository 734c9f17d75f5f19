package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/canary"
	"github.com/transferlab/transferlab/report"

	"github.com/transferlab/transferlab/loadgen"
)

// The defects a fresh-clone test of the quickstart found, one test each:
// every printed figure reproducible from the figures printed next to it, no 0
// where nothing was measured, incomplete runs described as such.

// renderBoth returns report.md and report.html of r.
func renderBoth(t *testing.T, r report.Results) (md, html string) {
	t.Helper()
	var m, h bytes.Buffer
	if err := WriteMarkdown(&m, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	return m.String(), h.String()
}

// quickstartCell is the quickstart's 24 req/s baseline cell as results.json
// recorded it: 99512 output tokens of measured requests, 100019 token events
// in the 21.683221918 s window (warm-up stragglers included).
func quickstartCell() report.Cell {
	return report.Cell{Arm: "baseline", OfferedLoadRPS: 24, WindowS: analysistest.Ptr(21.683221918), WindowOutputTokens: 100019, OutputTokens: 99512,
		ThroughputTokPerS: analysistest.Ptr(100019 / 21.683221918), GoodRequests: 352, GoodputRPS: analysistest.Ptr(352 / 21.683221918),
		States: map[string]int{"ok": 367, "timeout": 0}}
}

// TestThroughputReproducibleFromPrintedFigures: report.md prints the
// throughput's numerator (window output tokens, with its definition) and the
// window to enough digits that numerator / window gives the printed
// throughput; the measured requests' output tokens keep their own label.
func TestThroughputReproducibleFromPrintedFigures(t *testing.T) {
	t.Parallel()
	r := report.Results{SchemaVersion: report.SchemaVersion, Complete: true, Cells: []report.Cell{quickstartCell()}, SLO: report.SLO{TTFTMs: 500, TPOTMs: 50}}
	md, html := renderBoth(t, r)
	for _, want := range []string{
		"Output tokens in the window: token events between the first measured send and the last measured end, warm-up requests' late tokens included; throughput = those tokens / window.",
		"| 21.683 | 100019 | 4612.7 |", // window, output tokens in the window, throughput
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(md, "99512") {
		t.Error("the measured requests' output tokens are printed next to a throughput they do not give")
	}
	// Reproduce: numerator / printed window = printed throughput. Tolerance:
	// the window printed to ±0.0005 s moves the quotient by ≤ 4613 × 0.0005 /
	// 21.683 ≈ 0.11 tok/s, the throughput printed to ±0.05 tok/s: 0.16.
	analysistest.Near(t, "100019 / 21.683", 100019/21.683, 4612.7, 0.16)
	for _, want := range []string{"<td>100019</td><td>21.683</td>", "output tokens in the window are token events between the first measured send"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// J per output token and cost per output token name the same numerator.
	r.Energy = &report.EnergySection{Cells: []report.EnergyCell{{Arm: "baseline", OfferedLoadRPS: 24, Available: true, Source: "GPU-reported", EnergyJ: 12090.3, JPerOutputToken: 12090.3 / 100019}}}
	r.Cost = &report.CostSection{Cells: []report.CostCell{{Arm: "baseline", OfferedLoadRPS: 24, Currency: "USD", PricePerGPUHour: 3.5, GPUs: 1, UtilisationAssumption: 1, WindowS: 21.683221918, OutputTokens: 100019, TotalTokens: 442568}}}
	md, _ = renderBoth(t, r)
	for _, want := range []string{"| output tokens in the window | J/output token (energy / output tokens in the window) |", "| 12090.3 | 100019 | 0.121 |", "| output tokens in the window | total tokens |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// TestGoodputIsTheArrivalRateWhenAllAreGood: every request met the SLOs,
// so goodput equals the measured arrival rate (not good / a window whose
// drain makes it read lower); the report prints 48/48 and says why goodput
// can exceed the offered load (a bursty trace's measured part).
func TestGoodputIsTheArrivalRateWhenAllAreGood(t *testing.T) {
	t.Parallel()
	var recs []loadgen.Record
	for i := range 48 {
		at := time.Duration(i) * 270 * time.Millisecond // 3.70 req/s, offered 3 over warm-up and measured span
		recs = append(recs, loadgen.Record{RequestID: i, State: loadgen.StateOK, ScheduledAt: at, SentAt: at, OutputTokensSource: "usage",
			EndAt: at + 5*time.Second, OutputTokens: 2, Events: []loadgen.TokenEvent{{At: at + 20*time.Millisecond, Tokens: 1}, {At: at + 5*time.Second, Tokens: 1}}})
	}
	c := analysis.BuildCell(recs, analysis.CellOptions{Arm: "baseline", OfferedLoadRPS: 3, SLO: report.SLO{TTFTMs: 500, TPOTMs: 5000}})
	if c.GoodRequests != 48 || c.GoodputRPS == nil || c.ArrivalRateRPS == nil || *c.GoodputRPS != *c.ArrivalRateRPS {
		t.Fatalf("48/48 good: goodput %v, arrival rate %v (good %d): want them equal", c.GoodputRPS, c.ArrivalRateRPS, c.GoodRequests)
	}
	r := report.Results{SchemaVersion: report.SchemaVersion, Complete: true, Cells: []report.Cell{c}, SLO: report.SLO{TTFTMs: 500, TPOTMs: 5000}}
	md, html := renderBoth(t, r)
	want := "| 3.70 | 17.690 | 96 | 5.43 | 3.70 (48/48) |" // arrival, window, output tokens, throughput, goodput
	if !strings.Contains(md, want) || !strings.Contains(md, "Goodput: the rate of requests that met every SLO: the measured arrival rate when all did, never above it") || !strings.Contains(md, "can exceed it") {
		t.Errorf("report.md lacks %q and why goodput can exceed the offered load", want)
	}
	if !strings.Contains(html, "<td>3.70 (48/48)</td>") || !strings.Contains(html, "Goodput = arrival rate of the measured requests × share that met every SLO") {
		t.Error("report.html lacks goodput's count or its definition")
	}
}

// TestUnmeasuredEstimatesAreNull: in results.json, every Estimate without a
// supporting repetition (refused percentiles, Amdahl speedups of refused
// p99s, an unknown capacity gain) is null, never 0; the file reads back with
// them undefined; the reports say "refused"/"not measured" with the reason.
func TestUnmeasuredEstimatesAreNull(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	// 20 requests per cell: p99 (and p90) are refused in every repetition.
	for i := range r.Cells {
		recs := analysistest.SynthRecords(analysistest.FixtureBaseline, r.Cells[i].OfferedLoadRPS, r.Cells[i].Repetition, 20, 3)
		r.Cells[i] = analysis.BuildCell(recs, analysis.CellOptions{Arm: r.Cells[i].Arm, OfferedLoadRPS: r.Cells[i].OfferedLoadRPS, Repetition: r.Cells[i].Repetition, SLO: r.SLO})
	}
	for i := range r.Amdahl.Loads {
		r.Amdahl.Loads[i].Measured = nil
		r.Amdahl.Loads[i].BoundLow, r.Amdahl.Loads[i].BoundHigh = 0, 0
	}
	if err := analysis.Analyze(&r, *r.Rule); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Stats struct {
			Cells []struct {
				Metrics []struct {
					Metric, Stat string
					Value        map[string]any
				}
			}
			Ratios   []struct{ Value map[string]any }
			Capacity []map[string]any
		}
		Amdahl struct {
			Loads []struct {
				BoundLow any `json:"bound_low"`
				Measured []struct {
					Stat  string
					Value map[string]any
				}
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	checkEstimate := func(where string, v map[string]any) (undefined bool) {
		t.Helper()
		if v["reps"].(float64) > 0 {
			return false
		}
		if v["value"] != nil || v["low"] != nil || v["high"] != nil {
			t.Errorf("%s: value/low/high = %v/%v/%v with no supporting repetition, want null", where, v["value"], v["low"], v["high"])
		}
		if v["note"] == nil || v["note"] == "" {
			t.Errorf("%s: undefined with no note saying why", where)
		}
		return true
	}
	nulls := 0
	for _, cs := range doc.Stats.Cells {
		for _, m := range cs.Metrics {
			if checkEstimate("stats "+m.Metric+" "+m.Stat, m.Value) {
				nulls++
			}
		}
	}
	for _, q := range doc.Stats.Ratios {
		checkEstimate("ratio", q.Value)
	}
	for _, l := range doc.Amdahl.Loads {
		if l.BoundLow != nil {
			t.Errorf("bound_low = %v with no bound interval given, want null", l.BoundLow)
		}
		for _, s := range l.Measured {
			if checkEstimate("amdahl measured "+s.Stat, s.Value) {
				nulls++
			}
		}
	}
	if nulls == 0 {
		t.Fatal("no refused estimate: the test would prove nothing")
	}
	// Round trip: ReadResults accepts the nulls and reads them as undefined.
	back := readBack(t, b.Bytes())
	var again bytes.Buffer
	if err := report.WriteJSON(&again, back); err != nil {
		t.Fatal(err)
	}
	if again.String() != b.String() {
		t.Error("results.json does not round-trip through ReadResults and WriteJSON unchanged")
	}
	md, html := renderBoth(t, back)
	for _, doc := range []struct{ name, text string }{{"report.md", md}, {"report.html", html}} {
		// The Amdahl speedups are the ratios' reciprocals: refused with the ratio's reason.
		if !strings.Contains(doc.text, "paired requests are too few for p99") {
			t.Errorf("%s does not say why a statistic was refused", doc.name)
		}
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.Contains(line, "| p99 |") && (strings.Contains(line, "| 0 ms") || strings.Contains(line, "| 0.0000 |")) {
			t.Errorf("a refused p99 renders as 0: %s", line)
		}
	}
}

// TestIncompleteRunHeadline: a run stopped after 3 of 6 planned cells (the
// candidate's only cell cut short) says so in its headline, lists the cells
// not run, and tells the loads measured from those planned.
func TestIncompleteRunHeadline(t *testing.T) {
	t.Parallel()
	order, err := report.RunOrder([]string{"baseline", "candidate"}, []float64{3, 10, 24}, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := report.Results{SchemaVersion: report.SchemaVersion, Complete: false, IncompleteReason: "the run deadline (--deadline 45s) passed",
		Manifest: report.Manifest{ArmOrder: []string{"baseline"}}, SLO: report.SLO{TTFTMs: 500, Percentile: 90}, RunOrder: order}
	for i, k := range order[:2] {
		recs := analysistest.SynthRecords(analysistest.FixtureBaseline, k.OfferedLoadRPS, 0, 100, uint64(i))
		r.Cells = append(r.Cells, analysis.BuildCell(recs, analysis.CellOptions{Arm: k.Arm, OfferedLoadRPS: k.OfferedLoadRPS, Order: i, SLO: r.SLO}))
	}
	r.Cells[1].Incomplete = "the run deadline (--deadline 45s) passed" // candidate at 3 req/s cut short
	if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true}); err != nil {
		t.Fatal(err)
	}
	h := Headline(r)
	for _, want := range []string{
		"incomplete run: 4 of 6 planned cells not run: candidate at 10.00 req/s, rep 0; baseline at 10.00 req/s, rep 0; baseline at 24.00 req/s, rep 0; candidate at 24.00 req/s, rep 0",
		"cut short and left out: candidate at 3.00 req/s, rep 0",
		"no complete cell of candidate",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("headline %q lacks %q", h, want)
		}
	}
	if strings.Contains(h, "no candidate arm") {
		t.Errorf("headline %q denies the planned candidate", h)
	}
	md, html := renderBoth(t, r)
	for _, doc := range []struct{ name, text string }{{"report.md", md}, {"report.html", html}} {
		if !strings.Contains(doc.text, "Cells not run") {
			t.Errorf("%s has no list of cells not run", doc.name)
		}
		if !strings.Contains(doc.text, "planned 10.00, 24.00 req/s not measured") {
			t.Errorf("%s does not tell the planned loads from the measured ones", doc.name)
		}
	}
	if !strings.Contains(md, "| 6 | candidate | 24.00 | 0 |") {
		t.Error("report.md's cells-not-run table lacks the last planned cell")
	}
	for _, c := range r.Stats.Capacity {
		if c.Arm == "baseline" && fmt.Sprint(c.NotMeasuredRPS) != "[10 24]" {
			t.Errorf("baseline's planned-not-measured loads %v, want [10 24]", c.NotMeasuredRPS)
		}
	}
	if strings.Contains(md, "highest swept load") {
		t.Error("capacity wording calls the highest measured load the highest swept one")
	}
}

// TestVerdictLineSaysEachThingOnce: the verdict line is one sentence a buyer
// reads: the outcome, the decision metric and the shared no-interval reason
// each once, every load once, no clause letter or test name (the clause
// table says those).
func TestVerdictLineSaysEachThingOnce(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	for i := range r.Cells { // one repetition and no per-request figures (an older results.json): no intervals anywhere
		if r.Cells[i].Repetition > 0 {
			r.Cells[i].Incomplete = "test: keep one repetition"
		}
		r.Cells[i].Requests = nil
	}
	r.Complete = true
	if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true, RegressionMargin: 0.02}); err != nil {
		t.Fatal(err)
	}
	v := r.Verdicts[0]
	line := analysis.VerdictLine(v)
	if v.Outcome != "inconclusive" || v.DecidingClause != "b" {
		t.Fatalf("verdict %s", line)
	}
	if strings.Contains(line, "improves") {
		t.Errorf("clause b's name claims an improvement its test does not require: %q", line)
	}
	for _, once := range []string{"INCONCLUSIVE", "mean E2E", "1 repetition: an interval over repetitions needs ≥ 2", "2.00", "4.00", "8.00"} {
		if n := strings.Count(line, once); n != 1 {
			t.Errorf("%q appears %d times in %q", once, n, line)
		}
	}
	for _, never := range []string{"clause b", "((", "ratio 0 "} {
		if strings.Contains(line, never) {
			t.Errorf("verdict line says %q: %q", never, line)
		}
	}
	md, html := renderBoth(t, r)
	if strings.Count(md, "1 repetition: an interval over repetitions needs ≥ 2): ratio") != 1 {
		t.Error("report.md repeats clause b's detail")
	}
	if !strings.Contains(html, "INCONCLUSIVE: no interval for mean E2E at 2.00, 4.00, 8.00 req/s: 1 repetition") {
		t.Error("report.html does not print the verdict line")
	}
}

// TestEnergyCostLabelAndNotes: the cost table names the energy COST column
// and the missing input; energy warnings and checks reach both reports.
func TestEnergyCostLabelAndNotes(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	r.Energy.Cells[0].Warnings = []string{"trimmed window covers 16.200 s of the 16.259 s asked for (sampling period 50 ms)"}
	r.Energy.Cells[1].Throttled, r.Energy.Cells[1].ThrottleReasons = true, []string{"hw_slowdown"}
	md, html := renderBoth(t, r)
	for _, doc := range []struct{ name, text string }{{"report.md", md}, {"report.html", html}} {
		for _, want := range []string{
			"energy cost per 1M output tokens (USD)",
			"not computed: needs energy_price_per_kwh",
			"trimmed window covers 16.200 s of the 16.259 s",
			"GPU throttled (hw_slowdown)",
		} {
			if !strings.Contains(doc.text, want) {
				t.Errorf("%s lacks %q", doc.name, want)
			}
		}
		if strings.Contains(doc.text, "(currency)") {
			t.Errorf("%s prints the placeholder (currency) instead of the configured currency", doc.name)
		}
		if strings.Contains(doc.text, "energy per 1M output") {
			t.Errorf("%s labels the energy cost column as energy", doc.name)
		}
	}
}

// TestCompareNamesItsInputs: a comparison records both files as inputs
// labelled A and B, with their created times; its own created time is unset.
func TestCompareNamesItsInputs(t *testing.T) {
	t.Parallel()
	a, b := analysistest.FixtureResults(t), analysistest.FixtureResults(t)
	b.CreatedAt = a.CreatedAt.Add(26 * time.Hour)
	c, err := canary.Compare(a, b, canary.CompareOptions{ArmB: "candidate", PathA: "runs/prod/results.json", PathB: "runs/canary/results.json"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Results.CreatedAt.IsZero() {
		t.Errorf("comparison created_at %v: one input's time with nothing saying so", c.Results.CreatedAt)
	}
	md, html := renderBoth(t, c.Results)
	for _, want := range []string{
		"| A | runs/prod/results.json, created 2026-11-29T08:00:00Z, arm baseline as A:baseline |",
		"| B | runs/canary/results.json, created 2026-11-30T10:00:00Z, arm candidate as B:candidate |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !strings.Contains(html, "B: runs/canary/results.json, created 2026-11-30T10:00:00Z") {
		t.Error("report.html does not name input B")
	}
	if strings.Contains(md, "| created |") {
		t.Error("report.md prints an unlabelled created time")
	}
}

// TestRunIDShown: a run's report names its run_id (what compare tells runs
// apart by), and a comparison names each input's, so a reader sees why two
// files are, or are not, one run.
func TestRunIDShown(t *testing.T) {
	t.Parallel()
	r := analysistest.FixtureResults(t)
	r.RunID = "RUNIDAAAAAAAAAAAAAAAAAAAAA"
	md, html := renderBoth(t, r)
	if !strings.Contains(md, "| run_id | RUNIDAAAAAAAAAAAAAAAAAAAAA |") || !strings.Contains(html, "<tr><th>run_id</th><td>RUNIDAAAAAAAAAAAAAAAAAAAAA</td></tr>") {
		t.Error("the report does not name the run's run_id")
	}
	in := report.Input{Label: "A", Path: "a/results.json", CreatedAt: r.CreatedAt, RunID: r.RunID, Arm: "baseline", Name: "A:baseline", Complete: true}
	if got := in.Text(); got != "a/results.json, created 2026-11-29T08:00:00Z, run_id RUNIDAAAAAAAAAAAAAAAAAAAAA, arm baseline as A:baseline" {
		t.Errorf("input text %q", got)
	}
}
