package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/traces"
)

// TestConfigsLoad decodes every shipped config with unknown keys rejected,
// from the repository root as the README runs them, and finds every file
// each names (CheckFiles).
func TestConfigsLoad(t *testing.T) {
	forShippedConfigs(t, func(t *testing.T, f string) {
		if _, _, err := Load(f, CheckFiles()); err != nil {
			t.Fatal(err)
		}
	})
}

// forShippedConfigs runs check on every configs/*.yaml, one subtest each,
// from the repository root as the README runs them.
func forShippedConfigs(t *testing.T, check func(t *testing.T, file string)) {
	t.Chdir("..")
	files, err := filepath.Glob("configs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { check(t, f) })
	}
}

// TestConfigsSupportSLOPercentile builds every shipped config's sweep
// schedules, from the repository root as the README runs them, and fails
// when a cell schedules fewer measured requests than the config's SLO
// percentile needs for a claim (sloSupport: the rule the run warns with
// before it starts, and the report refuses claims by), or a load gives
// fewer paired requests than its decision rule's statistic needs
// (decisionSupport).
func TestConfigsSupportSLOPercentile(t *testing.T) {
	forShippedConfigs(t, func(t *testing.T, f string) {
		eff, _, scheds, err := loadSchedules(t, f)
		if err != nil {
			t.Fatal(err)
		}
		if err := sloSupport(eff, scheds); err != nil {
			t.Error(err)
		}
		if err := decisionSupport(eff, scheds); err != nil {
			t.Error(err)
		}
	})
}

// TestSLOSupport: a p99 SLO over cells of 47 measured requests is named with
// the line of slo.percentile, the minimum (459 at 99 %), the cells' counts
// and the fix; p90 over the same cells, or no SLO target, passes; a cell
// whose warm-up holds the requests counts only the measured ones.
func TestSLOSupport(t *testing.T) {
	sched := func(n int, gap time.Duration) traces.Schedule {
		var s traces.Schedule
		for i := range n {
			s.Requests = append(s.Requests, traces.Request{ID: i, Offset: time.Duration(i) * gap, InputTokens: 10, OutputTokens: 10})
		}
		return s
	}
	doc := "trace: {path: t.csv}\nload: {rates_rps: [10, 100], warmup: 1s, duration: 4s}\nserver: {kind: sim}\narms: [{name: baseline}]\nslo:\n  ttft_ms: 500\n  percentile: 99\n"
	cfg, err := Parse(strings.NewReader(doc), "t.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	eff := cfg.Effective()
	// 61 requests at 10 req/s: 10 in the 1 s warm-up, 51 measured; 501 at 100 req/s: 401 measured.
	scheds := []traces.Schedule{sched(61, 100*time.Millisecond), sched(501, 10*time.Millisecond)}
	err = sloSupport(eff, scheds)
	if err == nil {
		t.Fatal("no problem for p99 over 51 and 401 measured requests")
	}
	for _, w := range []string{"slo.percentile (line 7): p99 needs ≥ 459 measured requests per cell at 99 % confidence", "2 of 2 offered loads", "51 at 10 req/s, 401 at 100 req/s", "p90 needs ≥ 44"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v\nlacks %q", err, w)
		}
	}
	eff.SLO.Percentile = 90
	if err := sloSupport(eff, scheds); err != nil {
		t.Errorf("p90 over 51 and 401 measured requests: %v", err)
	}
	// 53 requests: 10 in the warm-up, 43 measured, one short of p90's 44.
	if err := sloSupport(eff, []traces.Schedule{sched(53, 100*time.Millisecond), sched(501, 10*time.Millisecond)}); err == nil || !strings.Contains(err.Error(), "1 of 2 offered loads' cells measure fewer (43 at 10 req/s)") {
		t.Errorf("p90 over 43 measured requests (44 needed): %v", err)
	}
	eff.SLO = SLOConfig{Percentile: 99}
	if err := sloSupport(eff, scheds); err != nil {
		t.Errorf("no SLO target declared, still refused: %v", err)
	}
}

// TestDecisionSupport: the default verdict (p99 TPOT, paired request by
// request over the repetitions) over 2 repetitions of 51 measured requests
// is named with the shortfall and the fix; enough repetitions, a mean, or
// no candidate (no verdict) pass.
func TestDecisionSupport(t *testing.T) {
	sched := traces.Schedule{}
	for i := range 61 { // 10 in the 1 s warm-up, 51 measured
		sched.Requests = append(sched.Requests, traces.Request{ID: i, Offset: time.Duration(i) * 100 * time.Millisecond, InputTokens: 10, OutputTokens: 10})
	}
	doc := "trace: {path: t.csv}\nload: {rates_rps: [10], warmup: 1s, duration: 5s}\nserver: {kind: sim}\narms: [{name: baseline}, {name: c, sim_overrides: {rmsnorm: 2}}]\nrepetitions: 2\n"
	cfg, err := Parse(strings.NewReader(doc), "t.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	eff := cfg.Effective()
	scheds := []traces.Schedule{sched}
	err = decisionSupport(eff, scheds)
	if err == nil || !strings.Contains(err.Error(), "decision.percentile: the verdict compares tpot p99 (the default) request by request, which needs ≥ 459 paired requests per load") ||
		!strings.Contains(err.Error(), "(measured requests × 2 repetitions: 102 at 10 req/s)") || !strings.Contains(err.Error(), "decision.use_mean: true") {
		t.Errorf("p99 over 2 × 51 pairs: %v", err)
	}
	eff.Repetitions = 9 // 459 pairs
	if err := decisionSupport(eff, scheds); err != nil {
		t.Errorf("9 × 51 = 459 pairs: %v", err)
	}
	eff.Repetitions = 2
	eff.Extra.Decision = &DecisionConfig{UseMean: true}
	if err := decisionSupport(eff, scheds); err != nil {
		t.Errorf("a mean: %v", err)
	}
	eff.Extra.Decision = nil
	eff.Arms = eff.Arms[:1]
	if err := decisionSupport(eff, scheds); err != nil {
		t.Errorf("no candidate: %v", err)
	}
}

// TestConfigErrors checks that a bad config names every bad field at once.
func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want []string
	}{
		{"unknown key", "name: x\ntrace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: sim}\narms: [{name: baseline}]\nbogus: 1\n",
			[]string{"bogus"}},
		{"unknown nested sim key", "trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: sim, sim: {gpu: {tflops: 3}}}\narms: [{name: baseline}]\n",
			[]string{"tflops"}},
		{"every problem at once", "trace: {}\nload: {rates_rps: [0, 2, 2], duration: 0s, mode: burst}\nserver: {kind: vllm}\narms: [{name: cand, sim_overrides: {rmsnorm: -1}}, {name: cand}]\nslo: {percentile: 100}\n",
			[]string{"trace.path", "load.rates_rps[0]", "load.rates_rps[2]", "load.duration", "load.mode", "server.kind", "arms[1].name", "sim_overrides.rmsnorm", "arms[0]", "slo.percentile"}},
		{"override on the sim", "trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: sim}\narms: [{name: baseline}, {name: c, sim_overrides: {rmsnorm: 2}}]\namdahl: {target_op: rmsnorm}\nenergy: {period: -1s}\n",
			[]string{"energy.period"}},
		{"capacity search bounds", "trace: {path: t.csv}\nload: {rates_rps: [4], duration: 1s}\nserver: {kind: sim}\narms: [{name: baseline}]\nslo: {ttft_ms: 100}\ncapacity_search:\n  max_rps: 1\n  budget: -1s\n",
			[]string{"capacity_search.budget (line 8)", "capacity_search.max_rps (line 7): must be above min_rps (2 req/s)"}},
		{"capacity search keys set to 0", "trace: {path: t.csv}\nload: {rates_rps: [4], duration: 1s}\nserver: {kind: sim}\narms: [{name: baseline}]\nslo: {ttft_ms: 100}\ncapacity_search:\n  growth: 0\n  budget: 0s\n",
			[]string{"capacity_search.growth (line 7): set to 0: leave it out for the default, 2", "capacity_search.budget (line 8): set to 0: leave it out for no budget for the whole search"}},
		{"repetitions set to 0", "trace: {path: t.csv}\nload: {rates_rps: [4], duration: 1s}\nserver: {kind: sim}\narms: [{name: baseline}]\nrepetitions: 0\n",
			[]string{"repetitions (line 5): set to 0: leave it out for the default, 1"}},
		{"misspelled op", "trace: {path: t.csv}\nload: {rates_rps: [4], duration: 1s}\nserver: {kind: sim}\narms:\n  - {name: baseline}\n  - name: c\n    sim_overrides: {gate_up_prj: 2}\n",
			[]string{`arms[1].sim_overrides.gate_up_prj (line 7): unknown op "gate_up_prj" (known: `}},
		{"concurrent arms off the simulator", "trace: {path: t.csv}\nload: {rates_rps: [4], duration: 1s}\nserver: {kind: endpoint, endpoint: {url: \"http://127.0.0.1:1\"}}\narms: [{name: baseline}]\nslo: {ttft_ms: 100}\ncapacity_search:\n  concurrent_arms: true\n",
			[]string{"capacity_search.concurrent_arms (line 7): only for server.kind sim (each simulated arm is its own simulated GPU); the arms of a server of kind endpoint may share one GPU"}},
		{"capacity search without an SLO", "trace: {path: t.csv}\nload: {rates_rps: [4], duration: 1s}\nserver: {kind: sim}\narms: [{name: baseline}]\ncapacity_search: {relative_precision: -0.1}\n",
			[]string{"capacity_search (line 5): needs an SLO target", "capacity_search.relative_precision"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.yaml), "test.yaml", ".")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q:\n%v", w, err)
				}
			}
		})
	}
}

const e2eConfig = `
name: e2e-test
seed: 7
trace:
  path: ../configs/traces/AzureLLMInferenceTrace_conv-head2000.csv
  clamp_context: 7168
load:
  rates_rps: [1, 40]
  warmup: 1s
  duration: 7s
  max_requests: 240
server:
  kind: sim
arms:
  - name: baseline
  - name: gemm-2x
    sim_overrides: {gate_up_proj: 2}
amdahl:
  target_op: gate_up_proj
slo:
  ttft_ms: 500
cost:
  price_per_gpu_hour: 3.5
  currency: USD
  price_date: "2026-11-29"
  price_source: "test input, not a price"
  gpus: 1
  utilisation: 1
`

// TestRunEndToEnd runs a small experiment on the simulated server and checks
// the outputs against what must hold: one record per scheduled request per
// cell in exactly one state, queueing at overload, and at light load the
// measured E2E speedup of a 2× GEMM override and the Amdahl bound computed
// from the baseline's own profile, each within 5 % of the simulator's own
// record of the speedup its steps gave (real and modelled).
func TestRunEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator in real time for about a minute; skipped under -short")
	}
	cfg, err := Parse(strings.NewReader(e2eConfig), "e2e.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var log bytes.Buffer
	res, err := Run(context.Background(), cfg, Options{ConfigPath: "e2e.yaml", ConfigRaw: []byte(e2eConfig), OutDir: out, Log: &log})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	for _, f := range []string{RecordsFile, ResultsFile, MarkdownFile, HTMLFile} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	if !res.Complete || !res.Simulated || res.SchemaVersion != report.SchemaVersion {
		t.Errorf("complete=%v simulated=%v schema=%q", res.Complete, res.Simulated, res.SchemaVersion)
	}
	// Other tools' names for our metrics (DESIGN.md): our TPOT is their ITL.
	if a := res.Aliases["tpot"]; !strings.Contains(a, "ITL in AIPerf") {
		t.Errorf("results.json aliases[tpot] = %q, want other tools' name for TPOT", a)
	}
	if md, err := os.ReadFile(filepath.Join(out, MarkdownFile)); err != nil || !bytes.Contains(md, []byte("## Metric names in other tools")) {
		t.Errorf("report.md has no table of other tools' metric names (err %v)", err)
	}

	// Every scheduled request of every cell is in records.jsonl exactly once, in one state.
	f, err := os.Open(filepath.Join(out, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := loadgen.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		arm  string
		load float64
		id   int
	}
	seen := map[key]int{}
	perCell := map[string]int{}
	for _, r := range recs {
		seen[key{r.Arm, r.OfferedLoad, r.RequestID}]++
		perCell[r.Arm+"@"+fmtF(r.OfferedLoad)]++
		if r.State == "" {
			t.Errorf("request %d of %s has no state", r.RequestID, r.Arm)
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("request %+v recorded %d times", k, n)
		}
	}
	r := runner{cfg: cfg.Effective()}
	for li, rate := range cfg.Load.RatesRPS {
		s, err := cellSchedule(mustBase(t, cfg), r.cfg.Load, rate, cfg.Seed, li)
		if err != nil {
			t.Fatal(err)
		}
		for _, arm := range cfg.Arms {
			if got := perCell[arm.Name+"@"+fmtF(rate)]; got != len(s.Requests) {
				t.Errorf("%s at %g req/s: %d records, schedule has %d", arm.Name, rate, got, len(s.Requests))
			}
		}
	}
	for _, c := range res.Cells {
		sum := c.WarmupRecords
		for _, n := range c.States {
			sum += n
		}
		if c.States["ok"] == 0 {
			t.Errorf("%s at %g: no ok request: %v", c.Arm, c.OfferedLoadRPS, c.States)
		}
		if want := perCell[c.Arm+"@"+fmtF(c.OfferedLoadRPS)]; sum != want {
			t.Errorf("%s at %g: states+warm-up sum to %d, want %d", c.Arm, c.OfferedLoadRPS, sum, want)
		}
	}

	// Queueing: TTFT grows with offered load (overload at 40 req/s).
	light, heavy := cellOf(t, res, "baseline", 1), cellOf(t, res, "baseline", 40)
	if *heavy.TTFT.P50Ms < 3**light.TTFT.P50Ms {
		t.Errorf("no queueing: TTFT p50 %.1f ms at 40 req/s vs %.1f ms at 1 req/s", *heavy.TTFT.P50Ms, *light.TTFT.P50Ms)
	}

	// Amdahl at light load: the measured E2E mean speedup within 5 % of the
	// bound, checked against the simulator's own record of these cells so that
	// a loaded host (whose stalls lengthen the steps of one arm more than the
	// other's) cannot fail it: the bound (f_wall from the baseline's profile,
	// s = 2) within 5 % of the speedup the simulator's modelled steps gave
	// (Σ modelled step time, baseline / candidate), and the client's measured
	// speedup within 5 % of the speedup the simulator's real steps gave
	// (Σ real step time: what it did, stalls included). Without stalls the
	// two truths are one and the old check follows; with them, each side is
	// still held to the simulator's account of what happened.
	if res.Amdahl == nil || len(res.Amdahl.Loads) != 2 {
		t.Fatalf("amdahl section: %+v", res.Amdahl)
	}
	l := res.Amdahl.Loads[0]
	if l.OfferedLoadRPS != 1 || l.S != 2 {
		t.Fatalf("amdahl row: %+v", l)
	}
	if !(l.Bound > 1.05) {
		t.Fatalf("bound %.4f: the test needs an override with a visible effect", l.Bound)
	}
	var e2e float64
	var e2eNote string
	for _, m := range l.Measured {
		if m.Metric == "e2e" && m.Stat == "mean" {
			e2e, e2eNote = m.Value.Value, m.Value.Note
		}
	}
	// A loaded host can flag a cell client-bound; its block is then left out
	// of the speedup as of the verdict's ratio, and with too few blocks left
	// the speedup is refused with that reason: only then is there nothing to
	// hold against the simulator's truth.
	clientBound := false
	for _, c := range res.Cells {
		clientBound = clientBound || (c.OfferedLoadRPS == 1 && c.ClientBound)
	}
	if !(e2e > 0) && clientBound {
		t.Logf("light load: measured E2E speedup refused (%s), a cell at 1 req/s was client-bound on this host: not compared with the simulator", e2eNote)
		e2e = 0
	} else if !(e2e > 0) {
		t.Fatalf("light load: measured E2E speedup refused (%q) with no cell client-bound", e2eNote)
	}
	bModel, bWall := simSteps(t, res, "baseline", 1)
	cModel, cWall := simSteps(t, res, "gemm-2x", 1)
	modelled, real := bModel/cModel, bWall/cWall
	if rel := l.Bound/modelled - 1; rel > 0.05 || rel < -0.05 {
		t.Errorf("light load: bound %.4f (f_wall %.4f) vs the simulator's modelled speedup %.4f: %.1f %% apart, want within 5 %%", l.Bound, l.FWall, modelled, 100*rel)
	}
	// Time the host added to the steps beyond the model's lands on steps,
	// not requests (a stall holds up the requests of its batch, each by a
	// share of its E2E): the real steps are the truth of the requests' E2E
	// only to within that added time, as a share of each arm's steps; ~0
	// on an idle host (as in TestAblationMatchesSimTruth).
	hostAdded := math.Abs(bWall-bModel)/bWall + math.Abs(cWall-cModel)/cWall
	if rel, tol := e2e/real-1, 0.05+hostAdded; e2e > 0 && math.Abs(rel) > tol {
		t.Errorf("light load: measured E2E speedup %.4f vs the simulator's real step speedup %.4f: %.1f %% apart, want within %.1f %% (5 %% + host-added step time %.1f %%)", e2e, real, 100*rel, 100*tol, 100*hostAdded)
	}
	t.Logf("light load: bound %.4f, modelled speedup %.4f, simulator's real speedup %.4f, measured E2E speedup %.4f", l.Bound, modelled, real, e2e)
	if res.Cost == nil || len(res.Cost.Cells) != len(res.Cells) {
		t.Errorf("cost section: %+v", res.Cost)
	}
	if res.Energy == nil || len(res.Energy.Cells) != len(res.Cells) {
		t.Errorf("energy section: %+v", res.Energy)
	}

	// results.json round-trips.
	b, err := os.ReadFile(filepath.Join(out, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var back report.Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if len(back.Cells) != 6 { // 2 arms and the baseline's A/A replicate at 2 loads
		t.Errorf("results.json has %d cells, want 6", len(back.Cells))
	}
	if len(back.Stats.Resolution) == 0 || len(back.SimTruth) == 0 {
		t.Errorf("results.json has %d resolutions and %d simulator truths, want both", len(back.Stats.Resolution), len(back.SimTruth))
	}
}

// TestRunRefusesUnvalidatedOverride checks that run refuses a candidate whose
// validation report is missing or stale before any server starts, and says
// how to fix it.
func TestRunRefusesUnvalidatedOverride(t *testing.T) {
	dir := t.TempDir()
	kernel := filepath.Join(dir, "k.py")
	if err := os.WriteFile(kernel, []byte("def fwd(self, x):\n    return x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "stale.json")
	if err := os.WriteFile(stale, []byte(`{"format":"transferlab.validation/v1","target":"m:C.forward","candidate":"k.py:fwd","candidate_sha256":"0000000000000000000000000000000000000000000000000000000000000000","verdict":"pass"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, report string
		want         error
	}{
		{"missing", "", integrate.ErrValidationMissing},
		{"absent file", "nope.json", integrate.ErrValidationMissing},
		{"kernel changed since validation", "stale.json", integrate.ErrValidationStale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := `
trace: {path: ` + filepath.Join(mustAbs(t, "../configs/traces"), "AzureLLMInferenceTrace_conv-head2000.csv") + `}
load: {rates_rps: [1], duration: 2s}
server: {kind: reference, reference: {}}
arms:
  - name: baseline
  - name: cand
    override: {target: "m:C.forward", candidate: "k.py:fwd", mode: on, validation_report: "` + tc.report + `"}
`
			cfg, err := Parse(strings.NewReader(yaml), "refuse.yaml", dir)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out-"+strings.ReplaceAll(tc.name, " ", "-"))
			res, err := Run(context.Background(), cfg, Options{OutDir: out, Log: io.Discard})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), "transferlab validate") {
				t.Errorf("the error does not say how to fix it: %v", err)
			}
			if res != nil {
				t.Errorf("results returned for a refused run")
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("output folder created for a refused run (stat: %v)", err)
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestWarmupReplay: with load.warmup_replay, each freshly started server
// replays a load's schedule once, unmeasured, before its first measured cell
// of that load. Two arms, two repetitions run B C | C B: the servers start
// three times (C is reused for its second cell), so three replays, and
// records.jsonl holds only the four measured cells' requests.
func TestWarmupReplay(t *testing.T) {
	t.Parallel()
	const cfgText = `
name: warmup-replay-test
seed: 5
repetitions: 2
trace: {path: ../configs/traces/AzureLLMInferenceTrace_conv-head2000.csv, clamp_context: 2048}
load: {rates_rps: [6], warmup: 500ms, duration: 2s, max_requests: 20, warmup_replay: true}
server: {kind: sim}
arms:
  - name: baseline
  - name: cand
    sim_overrides: {rmsnorm: 2}
energy: {disabled: true}
resolution: {aa_replicate: false}
`
	cfg, res, out, log := runText(t, "w.yaml", cfgText)
	replays := map[string]int{}
	for _, arm := range []string{"baseline", "cand"} {
		info, _ := res.Manifest.Server[arm].(map[string]any)
		recs, _ := info["warmup_replays"].([]WarmupReplayRecord)
		for _, w := range recs {
			if w.OfferedLoadRPS != 6 || w.States["ok"] == 0 {
				t.Errorf("arm %s: replay %+v", arm, w)
			}
		}
		replays[arm] = len(recs)
	}
	if replays["baseline"] != 2 || replays["cand"] != 1 {
		t.Errorf("warm-up replays per arm = %v, want baseline 2 (started twice), cand 1 (started once, reused)\nlog:\n%s", replays, log.String())
	}
	eff := cfg.Effective()
	cs, err := cellSchedule(mustBase(t, &eff), eff.Load, 6, eff.Seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.ReadFile(filepath.Join(out, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(f, []byte("\n")); n != 4*len(cs.Requests) || len(res.Cells) != 4 {
		t.Errorf("records.jsonl has %d lines for %d cells of %d requests: the warm-up replays must add none", n, len(res.Cells), len(cs.Requests))
	}
	if got := strings.Count(log.String(), "warm-up replay (unmeasured"); got != 3 {
		t.Errorf("log announces %d warm-up replays, want 3", got)
	}
	if !strings.Contains(log.String(), "[2/4] arm cand") || !strings.Contains(log.String(), "run: 4/4 cells, 100 %") {
		t.Errorf("log lacks the whole run's progress:\n%s", log.String())
	}
	// The plan the ETA is computed from is what the run did: 3 starts, 3
	// warm-up replays, 4 cells, in this order.
	var kinds []stepKind
	for _, s := range runPlan(eff, res.RunOrder, []traces.Schedule{cs}) {
		kinds = append(kinds, s.kind)
	}
	want := []stepKind{stepStart, stepWarmup, stepCell, stepStart, stepWarmup, stepCell, stepCell, stepStart, stepWarmup, stepCell}
	if !slices.Equal(kinds, want) {
		t.Errorf("plan %v, want %v", kinds, want)
	}
}

// simSteps sums arm's steps at offered load rate over its cells, from the
// simulator's record in the manifest (true_fractions): modelled and real
// step time, ms.
func simSteps(t *testing.T, res *report.Results, arm string, rate float64) (model, wall float64) {
	t.Helper()
	info, _ := res.Manifest.Server[arm].(map[string]any)
	recs, _ := info[trueFractionsKey].([]servers.SimTrueFraction)
	for _, r := range recs {
		if r.OfferedLoadRPS == rate {
			model += float64(r.StepModel) / 1e6
			wall += float64(r.StepWall) / 1e6
		}
	}
	if !(model > 0 && wall > 0) {
		t.Fatalf("no simulator step record for arm %s at %g req/s: %v", arm, rate, info[trueFractionsKey])
	}
	return model, wall
}
