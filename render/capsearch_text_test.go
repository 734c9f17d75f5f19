package render

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
)

// searchedResults is a run whose capacity search bracketed both arms.
func searchedResults(separable bool) report.Results {
	cost := func(v float64) *report.CapacityCost {
		return &report.CapacityCost{LoadRPS: 20, Currency: "USD", CostPer1MOutputTokens: v}
	}
	base := report.CapacityArm{Arm: "baseline", PassRPS: 20, FailRPS: 22, Stopped: "bracketed", Cost: cost(0.30),
		CapacityRPS: report.Estimate{Value: 20.98, Low: 18, High: 24, Interval: true},
		Probes: []report.CapacityProbe{
			{LoadRPS: 10, Source: "sweep", Met: true, Decided: "met", Attainment: []report.SLOAttainment{{Metric: "ttft", TargetMs: 500, N: 91, Over: 0}}},
			{LoadRPS: 22, Source: "search", Attainment: []report.SLOAttainment{{Metric: "ttft", TargetMs: 500, N: 200, Over: 30}}},
		}}
	cand := report.CapacityArm{Arm: "fast", PassRPS: 33, FailRPS: 36, Stopped: "bracketed", Cost: cost(0.24),
		CapacityRPS: report.Estimate{Value: 34.5, Low: 30, High: 40, Interval: true}}
	g := report.CapacitySearchGain{Candidate: "fast", Baseline: "baseline", Gain: report.Estimate{Value: 1.64, Low: 1.25, High: 2.22, Interval: true}, Separable: true}
	if !separable {
		cand.CapacityRPS.Low = 23
		g.Gain.Low, g.Separable = 0.96, false
	}
	pct := -20.0
	g.CostChangePct = &pct
	return report.Results{SchemaVersion: report.SchemaVersion, Complete: true, SLO: report.SLO{TTFTMs: 500, Percentile: 90},
		CapacitySearch: &report.CapacitySearch{Method: "test method", SLO: report.SLO{TTFTMs: 500, Percentile: 90}, RelativePrecision: 0.1, Level: 0.95, ProbeWarmupS: 1, ProbeDurationS: 4,
			Arms: []report.CapacityArm{base, cand}, Gains: []report.CapacitySearchGain{g}}}
}

// TestCapacitySearchLine: the first screen's line names both capacities with
// their intervals, the gain with its interval (or "not separable" when the
// intervals overlap) and the cost per 1M output tokens at each arm's highest
// load that met the SLO (its load named: not the point capacity) with its
// change; the headline and the markdown and HTML reports carry the search.
func TestCapacitySearchLine(t *testing.T) {
	t.Parallel()
	r := searchedResults(true)
	line := CapacitySearchLine(r, "fast")
	for _, want := range []string{"TTFT ≤ 500.0 ms at p90, found by search; probes of 1s + 4s from an idle server)", "fast 34.50 [30.00, 40.00] req/s vs baseline 20.98 [18.00, 24.00] req/s", "gain 1.64× [1.25, 2.22]", "cost per 1M output tokens at each arm's highest load that met the SLO: 0.300 USD at 20.00 req/s → 0.240 at 20.00 req/s (-20.0 %; no interval)"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "not separable") {
		t.Errorf("separable gain said not separable: %q", line)
	}
	// Whole-trace probes, arms searched at once: said instead of a span.
	w := searchedResults(true)
	w.CapacitySearch.ProbeWindow, w.CapacitySearch.Concurrent = "the whole trace (600 requests) time-scaled to its load, its first 10 % unmeasured", true
	if l := CapacitySearchLine(w, "fast"); !strings.Contains(l, "found by search; each probe the whole trace (600 requests) time-scaled to its load, its first 10 % unmeasured; arms searched at once, each on a server of its own)") || strings.Contains(l, "idle server") {
		t.Errorf("whole-trace, concurrent: %q", l)
	}
	if l := CapacitySearchLine(searchedResults(false), "fast"); !strings.Contains(l, "not separable") {
		t.Errorf("overlapping intervals: %q", l)
	}
	if h := capacityHeadline(r); !strings.Contains(h, "capacity at SLO of fast vs baseline (found by search): 1.64× [1.25, 2.22]") {
		t.Errorf("headline %q", h)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Found by search", "| baseline | 20.98 | [18.00, 24.00] | [20.00, 22.00] | 0.300 USD at 20.00 req/s |", "10.00 sweep met (ttft 91/91; sure), 22.00 search missed (ttft 170/200)", "**Capacity gain fast/baseline: 1.64× [1.25, 2.22]**", "Method: test method."} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "Found by search") || !strings.Contains(html.String(), "Capacity gain fast/baseline: 1.64×") {
		t.Error("HTML report lacks the searched capacity")
	}
	// An arm that met the SLO at every load probed has a lower bound, said
	// so in the table as on the first screen.
	open := searchedResults(true)
	open.CapacitySearch.Arms[1].FailRPS, open.CapacitySearch.Arms[1].CapacityRPS = 0, report.Estimate{Value: 33, Low: 30}
	md.Reset()
	if err := WriteMarkdown(&md, open); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| fast | ≥ 33.00 | none | none |") {
		t.Errorf("markdown does not mark a lower bound:\n%s", md.String())
	}
	cut := searchedResults(true)
	cut.CapacitySearch.Gains[0].CostChangePct = nil
	if l := CapacitySearchLine(cut, "fast"); !strings.Contains(l, "0.300 USD at 20.00 req/s → 0.240 at 20.00 req/s (no change computed") {
		t.Errorf("an arm not bracketed: %q", l)
	}
	// A search whose budget ran out with the bracket wider than the
	// precision: the capacity is unknown, said with its bracket and the
	// budget; no midpoint, no interval, no gain, and the cost labelled as at
	// the highest load meeting the SLO.
	const unknown = "unknown: between 20 and 40 req/s (bracket), the search's budget ran out (capacity_search.arm_budget = 25s)"
	budget := searchedResults(true)
	for i := range budget.CapacitySearch.Arms {
		a := &budget.CapacitySearch.Arms[i]
		a.Probes = []report.CapacityProbe{{LoadRPS: 20, Source: "search", Met: true}, {LoadRPS: 40, Source: "search"}}
		a.PassRPS, a.FailRPS, a.Stopped = 20, 40, "budget: capacity_search.arm_budget = 25s"
		a.CapacityRPS = report.Estimate{Note: unknown}
	}
	budget.CapacitySearch.Gains[0].Gain, budget.CapacitySearch.Gains[0].CostChangePct = report.Estimate{Note: unknown}, nil
	// On the simulator, whose sustained capacity of the baseline (18.00
	// req/s) is below the 20 req/s its short probe met: the cost is labelled
	// simulated and said to be at a load the arm does not sustain.
	budget.Simulated = true
	budget.CapacitySearch.Arms[0].SimTruth = &report.CapacityTruth{MetRPS: 17.9, MissedRPS: 18.1, Window: "the whole trace"}
	line = CapacitySearchLine(budget, "fast")
	for _, want := range []string{"fast " + unknown + " vs baseline " + unknown, "gain " + unknown,
		"cost per 1M output tokens (simulated) at the highest load a probe met the SLO at: 0.300 USD at 20.00 req/s",
		"baseline's sustained capacity by the simulator, 18.00 req/s, is below the 20.00 req/s its probe met)"} {
		if !strings.Contains(line, want) {
			t.Errorf("budget-cut line %q lacks %q", line, want)
		}
	}
	md.Reset()
	if err := WriteMarkdown(&md, budget); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| fast | unknown: 20.00–40.00 (bracket) | none | [20.00, 40.00] | 0.240 USD at 20.00 req/s |") || strings.Contains(md.String(), "28.2") || strings.Contains(md.String(), "at capacity |") ||
		!strings.Contains(md.String(), "Found by search where it reached 10.00 %") || strings.Contains(md.String(), "bracketed to 10.00 %") {
		t.Errorf("budget-cut markdown:\n%s", md.String())
	}
	if CapacitySearchLine(report.Results{}, "fast") != "" {
		t.Error("a run without a search has a search line")
	}
}

// TestCapacitySearchLineTruthAndSweepOnly: the simulator's sustained
// capacity is shown beside each arm's and its ratio beside the gain, with
// the note when it lies outside the interval; a search whose budget
// admitted no probe says the brackets are the sweep's, with no midpoint.
func TestCapacitySearchLineTruthAndSweepOnly(t *testing.T) {
	t.Parallel()
	r := searchedResults(true)
	cs := r.CapacitySearch
	cs.Arms[0].SimTruth = &report.CapacityTruth{MetRPS: 17.9, MissedRPS: 18.1, Window: "the whole trace", Note: "below the searched interval's low end (18.00 req/s)"}
	cs.Arms[1].SimTruth = &report.CapacityTruth{MetRPS: 31.9, MissedRPS: 32.1, Window: "the whole trace"}
	cs.Gains[0].SimTruth = 1.78
	line := CapacitySearchLine(r, "fast")
	for _, want := range []string{"fast 34.50 [30.00, 40.00] req/s (simulator's sustained capacity 32.00)", "baseline 20.98 [18.00, 24.00] req/s (simulator's sustained capacity 18.00)", "gain 1.64× [1.25, 2.22]; the simulator's sustained ratio 1.78×"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if a := CapacityArmText(cs.Arms[0]); !strings.Contains(a, "; the simulator's sustained capacity: 18.00 req/s, below the searched interval's low end") {
		t.Errorf("arm text %q", a)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "; the simulator's sustained capacity: 18.00 req/s, below the searched interval's low end (18.00 req/s) (the whole trace)") {
		t.Errorf("markdown lacks the truth:\n%s", md.String())
	}

	sweep := searchedResults(true)
	for i := range sweep.CapacitySearch.Arms {
		a := &sweep.CapacitySearch.Arms[i]
		a.Probes = []report.CapacityProbe{{LoadRPS: 10, Source: "sweep", Met: true}, {LoadRPS: 24, Source: "sweep"}}
		a.PassRPS, a.FailRPS, a.Stopped = 10, 24, "budget: capacity_search.budget = 15s"
		a.CapacityRPS = report.Estimate{Low: 10, High: 24, Interval: true, Note: "between 10 and 24 req/s, the sweep's bracket: no search probe ran"}
	}
	sweep.CapacitySearch.Gains[0].Gain = report.Estimate{Note: "unknown: between 10 and 24 req/s, the sweep's bracket: no search probe ran"}
	line = CapacitySearchLine(sweep, "fast")
	for _, want := range []string{"bracketed by the sweep's loads: no search probe ran)", "fast between 10.00 and 24.00 req/s (the sweep's bracket, no search probe) vs baseline between 10.00 and 24.00 req/s"} {
		if !strings.Contains(line, want) {
			t.Errorf("sweep-only line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "found by search") || strings.Contains(line, "15.49") {
		t.Errorf("sweep-only line %q claims a search", line)
	}
	md.Reset()
	if err := WriteMarkdown(&md, sweep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "Bracketed by the sweep's loads, no search probe ran") || !strings.Contains(md.String(), "| fast | 10.00–24.00 (the sweep's bracket, no search probe) |") || strings.Contains(md.String(), "Found by search") {
		t.Errorf("sweep-only markdown:\n%s", md.String())
	}
}

// TestCapacityValueSurvivesResults: the point capacity the search computes
// (analysis.Search.Capacity) is what results.json holds, with its unit and
// how it was derived, and what the report and the console print from the
// results read back: never null in the file while the text shows a figure.
func TestCapacityValueSurvivesResults(t *testing.T) {
	t.Parallel()
	s := analysis.Search{MinRPS: 1, MaxRPS: 100, RelativePrecision: 0.25, Quantile: 0.9}
	probe := func(l float64, over int) report.CapacityProbe {
		return report.CapacityProbe{LoadRPS: l, Source: "search", Attainment: []report.SLOAttainment{{Metric: "ttft", TargetMs: 500, N: 400, Over: over}}}
	}
	bracketed := s.Capacity("baseline", []report.CapacityProbe{probe(10, 0), probe(20, 0), probe(24, 200), probe(40, 400)}, analysis.StopBracketed)
	lower := s.Capacity("fast", []report.CapacityProbe{probe(50, 0), probe(100, 0)}, analysis.StopMax)
	for _, tc := range []struct {
		arm            report.CapacityArm
		value, derived string
	}{
		{bracketed, "21.9089", analysis.DerivedMidpoint},
		{lower, "100", analysis.DerivedPassOnly},
	} {
		a := tc.arm
		r := report.Results{SchemaVersion: report.SchemaVersion, Complete: true, Cells: []report.Cell{},
			CapacitySearch: &report.CapacitySearch{Method: "test", Level: 0.95, Arms: []report.CapacityArm{a}}}
		var b bytes.Buffer
		if err := report.WriteJSON(&b, r); err != nil {
			t.Fatal(err)
		}
		var raw struct {
			CapacitySearch struct {
				Arms []struct {
					CapacityRPS map[string]any `json:"capacity_rps"`
				} `json:"arms"`
			} `json:"capacity_search"`
		}
		if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		got := raw.CapacitySearch.Arms[0].CapacityRPS
		if v, ok := got["value"].(float64); !ok || strconv.FormatFloat(v, 'g', 6, 64) != tc.value || got["unit"] != "req/s" || got["derived"] != tc.derived {
			t.Errorf("%s: results.json capacity_rps = %v, want value %s req/s derived %q", a.Arm, got, tc.value, tc.derived)
		}
		back := readBack(t, b.Bytes())
		if want, text := CapacityArmText(a), CapacityArmText(back.CapacitySearch.Arms[0]); text != want || strings.HasPrefix(text, "unknown") {
			t.Errorf("%s: read back from results.json the capacity reads %q, computed %q", a.Arm, text, want)
		}
	}
}

// TestCapacityBracketFromClientBoundProbes: when only client-bound probes
// missed at an arm's fail end (a loaded client machine), the arm has no
// capacity and the gain none (the loaded quickstart, /tmp/l3/out, printed
// 18.34 and 26.83 req/s and a gain of 1.46×, truth 1.20×): the first screen
// says what each arm met, why once, and the warning names it; results.json
// has no value and flags it; a client-bound probe that met, or a clean probe
// at the fail end, leaves the capacity as it was.
func TestCapacityBracketFromClientBoundProbes(t *testing.T) {
	t.Parallel()
	s := analysis.Search{MinRPS: 5, MaxRPS: 48, RelativePrecision: 0.25, Quantile: 0.9}
	probe := func(load float64, n, over int, clientBound bool) report.CapacityProbe {
		return report.CapacityProbe{LoadRPS: load, Source: "search", ClientBound: clientBound,
			Attainment: []report.SLOAttainment{{Metric: "ttft", TargetMs: 500, N: n, Over: over}}}
	}
	cost := &report.CapacityCost{LoadRPS: 16.82, Currency: "USD", CostPer1MOutputTokens: 0.226}
	results := func(base, cand []report.CapacityProbe) report.Results {
		b, c := s.Capacity("baseline", base, analysis.StopBracketed), s.Capacity("gate-up-2x", cand, analysis.StopBracketed)
		b.Cost, c.Cost = cost, cost
		b.SimTruth = &report.CapacityTruth{MetRPS: 21.8, MissedRPS: 21.84}
		c.SimTruth = &report.CapacityTruth{MetRPS: 26.2, MissedRPS: 26.32}
		return report.Results{SchemaVersion: report.SchemaVersion, Complete: true, Simulated: true, SLO: report.SLO{TTFTMs: 500, Percentile: 90},
			CapacitySearch: &report.CapacitySearch{Method: "test method", SLO: report.SLO{TTFTMs: 500, Percentile: 90}, RelativePrecision: 0.25, Level: 0.95,
				Arms: []report.CapacityArm{b, c}, Gains: []report.CapacitySearchGain{analysis.SearchGain(c, b)}}}
	}
	base := []report.CapacityProbe{probe(10, 47, 0, false), probe(16.82, 478, 0, true), probe(20, 161, 52, true)}
	cand := []report.CapacityProbe{probe(10, 47, 0, false), probe(25.67, 526, 44, true), probe(28.05, 272, 53, true)}
	r := results(base, cand)
	line := CapacitySearchLine(r, "gate-up-2x")
	for _, want := range []string{
		"gate-up-2x ≥ 25.67 req/s (met); its misses at 28.05 req/s were client-bound probes only, so no capacity (simulator's sustained capacity 26.26) vs baseline ≥ 16.82 req/s (met); its misses at 20.00 req/s were client-bound probes only, so no capacity (simulator's sustained capacity 21.82)",
		"; gain not determined (both capacities rest on client-bound misses); the simulator's sustained ratio 1.20×; client-bound misses: " + analysis.ClientBoundMissWhy + "; cost",
		"(no change computed: an arm has no capacity)",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if strings.Count(line, "too busy") != 1 || strings.Contains(line, "18.34") || strings.Contains(line, "1.46") || strings.Contains(line, "suspect") {
		t.Errorf("the reason not said once, or a figure printed: %q", line)
	}
	if h := Headline(r); !strings.Contains(h, "capacity at SLO of gate-up-2x vs baseline (found by search): not determined (both capacities rest on client-bound misses)") {
		t.Errorf("headline %q", h)
	}
	if w := mainWarning(r, report.Verdict{Candidate: "gate-up-2x"}); w != "warning: no capacity for baseline and gate-up-2x: the search's misses were client-bound probes only (the capacity line says why), so the capacity gain is not determined; rerun on an idle machine" {
		t.Errorf("warning %q", w)
	}
	// The first screen: the capacity line, and the warning last.
	r.Rule = &report.DecisionRule{Baseline: "baseline", Metric: "e2e", UseMean: true}
	r.Verdicts = []report.Verdict{{Candidate: "gate-up-2x", Outcome: "pass", Summary: "PASS: test"}}
	ans := Answer(r)
	if len(ans) != 1 || !slices.Contains(ans[0].Lines, line) || ans[0].Lines[len(ans[0].Lines)-1] != mainWarning(r, r.Verdicts[0]) {
		t.Errorf("answer block %q", ans)
	}
	// With a load left out of the verdict as well: one warning, both named.
	r.Stats = &report.Stats{Ratios: []report.Ratio{{Candidate: "gate-up-2x", Metric: "e2e", Stat: "mean", Excluded: "client-bound"}}}
	if w := mainWarning(r, r.Verdicts[0]); !strings.HasPrefix(w, "warning: 1 of 1 loads were client-bound") || !strings.Contains(w, "; and no capacity for baseline and gate-up-2x: ") {
		t.Errorf("warning %q", w)
	}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	r.Rule, r.Verdicts, r.Stats = nil, nil, nil
	for _, want := range []string{"## Answer", "- " + line, "| baseline | ≥ 16.82, not determined (client-bound misses) | none | [16.82, 20.00] |", "- baseline: ≥ 16.82 req/s (met); its misses at 20.00 req/s were client-bound probes only, so no capacity; probes", "\n\nNo capacity where an arm's misses were client-bound probes only: " + analysis.ClientBoundMissWhy + ".\n\n", "**Capacity gain gate-up-2x/baseline: not determined (both capacities rest on client-bound misses)", "Found by search: "} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(html.String(), "baseline: ≥ 16.82 req/s (met); its misses at 20.00 req/s were client-bound probes only, so no capacity (") || strings.Count(html.String(), "too busy") != 2 || strings.Contains(html.String(), "18.34") {
		t.Error("HTML report gives the suspect capacity a figure")
	}
	// results.json: no value, flagged; read back, it reads the same.
	var b bytes.Buffer
	if err := report.WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		CapacitySearch struct {
			Arms  []map[string]any `json:"arms"`
			Gains []struct {
				Gain        map[string]any `json:"gain"`
				SuspectArms []string       `json:"suspect_arms"`
			} `json:"gains"`
		} `json:"capacity_search"`
	}
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	arm0 := raw.CapacitySearch.Arms[0]
	if c := arm0["capacity_rps"].(map[string]any); c["value"] != nil || arm0["suspect_fail_end"] != true || arm0["pass_rps"] != 16.82 {
		t.Errorf("results.json arm: %v", arm0)
	}
	if g := raw.CapacitySearch.Gains[0]; g.Gain["value"] != nil || len(g.SuspectArms) != 2 {
		t.Errorf("results.json gain: %+v", g)
	}
	back := readBack(t, b.Bytes())
	if got := CapacitySearchLine(back, "gate-up-2x"); got != line {
		t.Errorf("read back:\n%q\nwant\n%q", got, line)
	}
	// Only the candidate's suspect, its met load above the baseline's clean
	// miss: the gain is a lower bound.
	clean := append(slices.Clone(base), probe(20, 160, 50, false))
	r = results(clean, cand)
	if l := CapacitySearchLine(r, "gate-up-2x"); !strings.Contains(l, "vs baseline 18.34 req/s (no interval)") ||
		!strings.Contains(l, "; gain ≥ 1.28× (gate-up-2x met 25.67 req/s, above the 20.00 req/s baseline missed, and its own capacity rests on client-bound misses: a lower bound); the simulator's sustained ratio 1.20×; client-bound misses:") {
		t.Errorf("candidate suspect: %q", l)
	}
	if w := mainWarning(r, report.Verdict{Candidate: "gate-up-2x"}); !strings.Contains(w, "no capacity for gate-up-2x: ") || !strings.Contains(w, "is a lower bound only") {
		t.Errorf("warning %q", w)
	}
	// A client-bound probe that met stands, and a clean miss at the fail end
	// decides it: figures, nothing said.
	cand = append(slices.Clone(cand), probe(28.05, 270, 50, false))
	r = results(clean, cand)
	if l := CapacitySearchLine(r, "gate-up-2x"); strings.Contains(l, "client-bound") || !strings.Contains(l, "gate-up-2x 26.83 req/s") || mainWarning(r, report.Verdict{Candidate: "gate-up-2x"}) != "" {
		t.Errorf("clean fail ends: %q", l)
	}
	// A budget-cut arm whose fail end only client-bound probes missed: its
	// capacity is unknown anyway; the probe count calls that end suspect.
	cut := s.Capacity("baseline", []report.CapacityProbe{probe(10, 47, 0, false), probe(40, 75, 53, true)}, "budget: capacity_search.arm_budget = 25s")
	if p := probesText(cut); analysis.SuspectCapacity(cut) || !strings.Contains(p, "suspect: the bracket's fail end (40.00 req/s) rests on client-bound probes only") {
		t.Errorf("budget-cut: %q %+v", p, cut.CapacityRPS)
	}
}

// readBack writes data as a results.json and reads it back (ReadResults).
func readBack(t *testing.T, data []byte) report.Results {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := report.ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// TestCapacitySuspectReasons: each probe says why its miss stands or not
// (robust to the client's lateness, host-slowed), the arm's line counts
// them, and a capacity withheld for host stalls says so once, with the
// seconds lost, not as a client-bound miss.
func TestCapacitySuspectReasons(t *testing.T) {
	t.Parallel()
	s := analysis.Search{MinRPS: 5, MaxRPS: 48, RelativePrecision: 0.25, Quantile: 0.9}
	probe := func(load float64, over, loose int, clientBound bool, stallS float64) report.CapacityProbe {
		p := report.CapacityProbe{LoadRPS: load, Source: "search", ClientBound: clientBound, DurationS: 20, HostStallS: stallS, LatenessMarginMs: 27.6,
			Attainment: []report.SLOAttainment{{Metric: "ttft", TargetMs: 500, N: 161, Over: over}}}
		if clientBound {
			p.AttainmentLoosened = []report.SLOAttainment{{Metric: "ttft", TargetMs: 500, N: 161, Over: loose}}
		}
		return p
	}
	robust := s.Capacity("baseline", []report.CapacityProbe{probe(16.82, 0, 0, true, 0), probe(20, 52, 50, true, 0)}, analysis.StopBracketed)
	if got := probeListText(robust); !strings.Contains(got, "20.00 search missed (ttft 109/161; sure; client-bound: missed with every target loosened by its lateness (27.60 ms), so the miss stands)") {
		t.Errorf("robust miss: %s", got)
	}
	if got := CapacityArmText(robust); !strings.HasPrefix(got, "18.34 req/s") || !strings.Contains(got, "1 of 2 probes client-bound with a miss the client's lateness cannot explain") {
		t.Errorf("robust arm: %s", got)
	}
	slowed := s.Capacity("baseline", []report.CapacityProbe{probe(16.82, 0, 0, false, 0), probe(20, 52, 50, false, 2.5)}, analysis.StopBracketed)
	if got := probeListText(slowed); !strings.Contains(got, "host-slowed: its server lost 2.50 s to host stalls, so its miss decides nothing") {
		t.Errorf("host-slowed miss: %s", got)
	}
	cs := &report.CapacitySearch{Arms: []report.CapacityArm{slowed}}
	want := "No capacity where an arm's misses were host-slowed probes only: the simulated server, sharing this machine's CPUs, lost 2.50 s to host stalls during those probes (more than 1 % of each), so the misses may be the host's, not the server's; rerun on an idle machine."
	if got := suspectMissesText(*cs); got != want {
		t.Errorf("why:\n%s\nwant\n%s", got, want)
	}
	if got := CapacityArmText(slowed); !strings.HasPrefix(got, "≥ 16.82 req/s (met); its misses at 20.00 req/s were host-slowed probes only, so no capacity") || strings.Contains(got, "client-bound") {
		t.Errorf("host-slowed arm: %s", got)
	}
}
