package experiment

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
)

// coverageConfig is one small run of the coverage check: Poisson arrivals
// seeded per run (so every run replays another schedule), one busy load, a
// large and a small candidate, the A/A replicate on (the default).
const coverageConfig = `
name: coverage
seed: %d
trace:
  path: ../configs/traces/AzureLLMInferenceTrace_conv-head2000.csv
  clamp_context: 7168
load:
  mode: poisson
  rates_rps: [12]
  warmup: 1s
  duration: 6s
server:
  kind: sim
arms:
  - name: baseline
  - name: gate-up-2x
    sim_overrides: {gate_up_proj: 2}
  - name: rmsnorm-2.5x
    sim_overrides: {rmsnorm: 2.5}
decision:
  metric: e2e
  use_mean: true
`

// TestIntervalCoverage is the coverage check of the run's intervals: it
// runs the simulator TRANSFERLAB_COVERAGE_RUNS times (skipped when unset:
// each run takes ~30 s of real time), each with another seed, and counts how
// often the stated 95 % interval of each candidate/baseline mean ratio (TTFT,
// TPOT, E2E; request by request, widened by the blocks' run-to-run spread) contains the
// simulator's true ratio (report.TruthRatio, from a virtual-time replay of
// the same schedule). It fails below 85 %. TRANSFERLAB_COVERAGE_OUT names a
// file that receives the table; TRANSFERLAB_COVERAGE_FIRST offsets the run
// indexes (seeds 100+i) so that slices can run side by side. results/coverage-2026-12-01 holds a run.
func TestIntervalCoverage(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("TRANSFERLAB_COVERAGE_RUNS"))
	if runs <= 0 {
		t.Skip("set TRANSFERLAB_COVERAGE_RUNS=N (≥ 20 for the committed check) to run N simulated experiments of ~30 s each")
	}
	// TRANSFERLAB_COVERAGE_FIRST (default 0) is the first run's index, so
	// several processes can each run a slice of the seeds 100+i in parallel.
	first, err := strconv.Atoi(os.Getenv("TRANSFERLAB_COVERAGE_FIRST"))
	if err != nil && os.Getenv("TRANSFERLAB_COVERAGE_FIRST") != "" {
		t.Fatalf("TRANSFERLAB_COVERAGE_FIRST: %v", err)
	}
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "| run (seed) | candidate | metric | truth | measured | 95 %% interval | resolution | covered | excluded |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	total, covered, totalKept, coveredKept := 0, 0, 0, 0
	began := time.Now()
	for i := first; i < first+runs; i++ {
		cfg, err := Parse(strings.NewReader(fmt.Sprintf(coverageConfig, 100+i)), "coverage.yaml", ".")
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir(), Log: io.Discard, Warn: io.Discard})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		for _, tr := range res.SimTruth {
			for _, q := range res.Stats.Ratios {
				if q.Candidate != tr.Candidate || q.OfferedLoadRPS != tr.OfferedLoadRPS || q.Metric != tr.Metric || q.Stat != tr.Stat {
					continue
				}
				if !q.Value.Interval {
					t.Errorf("run %d: %s %s %s: no interval (%s)", i, q.Candidate, q.Metric, q.Stat, q.Value.Note)
					continue
				}
				in := q.Value.Low <= tr.Value && tr.Value <= q.Value.High
				total++
				if in {
					covered++
				}
				if q.Excluded == "" {
					totalKept++
					if in {
						coveredKept++
					}
				}
				fmt.Fprintf(&tbl, "| %d (%d) | %s | %s %s | %.4f | %.4f | [%.4f, %.4f] | %s | %v | %s |\n", i, 100+i, q.Candidate, q.Metric, q.Stat,
					tr.Value, q.Value.Value, q.Value.Low, q.Value.High, report.ResolutionText(q.Resolution), in, q.Excluded)
			}
		}
	}
	if total == 0 {
		t.Fatal("no ratio was compared with the simulator's truth")
	}
	share := float64(covered) / float64(total)
	summary := fmt.Sprintf("\n%d runs in %s: %d of %d intervals (%.1f %%) contain the simulator's true ratio; over ratios not excluded (client-bound): %d of %d.\n",
		runs, time.Since(began).Round(time.Second), covered, total, 100*share, coveredKept, totalKept)
	tbl.WriteString(summary)
	t.Log(tbl.String())
	if out := os.Getenv("TRANSFERLAB_COVERAGE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(tbl.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	if share < 0.85 {
		t.Errorf("coverage %.1f %% < 85 %%", 100*share)
	}
}

// designConfig is the design-efficiency check's run: three repetitions of a
// baseline, a large candidate and the A/A replicate at one busy load.
const designConfig = `
name: design
seed: 21
trace:
  path: ../configs/traces/AzureLLMInferenceTrace_conv-head2000.csv
  clamp_context: 7168
load:
  mode: poisson
  rates_rps: [12]
  warmup: 1s
  duration: 6s
server:
  kind: sim
repetitions: 3
arms:
  - name: baseline
  - name: gate-up-2x
    sim_overrides: {gate_up_proj: 2}
decision:
  metric: e2e
  use_mean: true
`

// TestDesignEfficiency puts today's design (a percentile bootstrap over
// repetitions, no A/A replicate) beside the request-by-request design with
// the A/A replicate, on one simulated run of three repetitions (skipped
// unless TRANSFERLAB_DESIGN_CHECK=1; ~2 min): for each design, the cells
// it uses, their measured time, the mean E2E ratio's interval, whether it
// contains the simulator's truth, and the time it would need for a ±1 %
// interval (half-width ∝ 1/√time). TRANSFERLAB_COVERAGE_OUT names a file
// for the table. It fails if the request-by-request design, with one
// repetition, does not reach a narrower interval per minute than today's
// with three.
func TestDesignEfficiency(t *testing.T) {
	if os.Getenv("TRANSFERLAB_DESIGN_CHECK") != "1" {
		t.Skip("set TRANSFERLAB_DESIGN_CHECK=1 to run a ~2 min simulated experiment")
	}
	cfg, err := Parse(strings.NewReader(designConfig), "design.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, Options{OutDir: t.TempDir(), Log: io.Discard, Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	var truth float64
	for _, tr := range res.SimTruth {
		if tr.Metric == "e2e" && tr.Stat == "mean" {
			truth = tr.Value
		}
	}
	cellS := (cfg.Effective().Load.Warmup + cfg.Effective().Load.Duration).Seconds()
	type design struct {
		name string
		keep func(c report.Cell) bool
		// perRequest false strips the per-request figures: today's estimator.
		perRequest bool
	}
	designs := []design{
		{"today: bootstrap over 3 repetitions, no A/A", func(c report.Cell) bool { return !report.IsAAArm(c.Arm) }, false},
		{"request by request, 1 repetition, with A/A", func(c report.Cell) bool { return c.Repetition == 0 }, true},
		{"request by request, 3 repetitions, with A/A", func(report.Cell) bool { return true }, true},
	}
	var tbl strings.Builder
	fmt.Fprintf(&tbl, "simulator's true mean E2E ratio gate-up-2x/baseline at 12 req/s: %.4f\n\n", truth)
	fmt.Fprintf(&tbl, "| design | cells | measured time (s) | ratio | 95 %% interval | half-width | contains truth | time for ±1 %% (min) |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	perMinute := make([]float64, len(designs))
	for i, d := range designs {
		r := *res
		r.Cells = nil
		for _, c := range res.Cells {
			if d.keep(c) {
				if !d.perRequest {
					c.Requests = nil
				}
				r.Cells = append(r.Cells, c)
			}
		}
		r.Stats, r.Verdicts = nil, nil
		if err := analysis.Analyze(&r, report.DecisionRule{Metric: "e2e", UseMean: true}); err != nil {
			t.Fatal(err)
		}
		var e report.Estimate
		for _, q := range r.Stats.Ratios {
			if q.Metric == "e2e" && q.Stat == "mean" {
				e = q.Value
			}
		}
		if !e.Interval {
			t.Fatalf("%s: no interval: %s", d.name, e.Note)
		}
		hw := (e.High - e.Low) / 2 / e.Value
		secs := float64(len(r.Cells)) * cellS
		need := secs / 60 * (hw / 0.01) * (hw / 0.01)
		perMinute[i] = need
		fmt.Fprintf(&tbl, "| %s | %d | %.0f | %.4f | [%.4f, %.4f] | ±%.2f %% | %v | %.2f |\n", d.name, len(r.Cells), secs, e.Value, e.Low, e.High, 100*hw, e.Low <= truth && truth <= e.High, need)
	}
	t.Log("\n" + tbl.String())
	if out := os.Getenv("TRANSFERLAB_COVERAGE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(tbl.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	if !(perMinute[1] < perMinute[0]) {
		t.Errorf("request by request with 1 repetition needs %.2f min for ±1 %%, today's design %.2f min: not more efficient", perMinute[1], perMinute[0])
	}
}
