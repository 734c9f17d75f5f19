package experiment

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
)

// quickstartSeeded is configs/quickstart.yaml with its seed set to seed and
// amdahl.target_op left unset, so that rmsnorm-2.5x's Amdahl bound comes
// from the simulator's cost model (virtualRun keeps no profile to measure f
// from; the run's own, from the baseline's profiles, is the same 1.016).
func quickstartSeeded(t testing.TB, seed int) Config {
	t.Helper()
	b, err := os.ReadFile("../configs/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	txt := string(b)
	for old, repl := range map[string]string{"\nseed: 1\n": fmt.Sprintf("\nseed: %d\n", seed), "\n  target_op: rmsnorm\n": "\n  target_op: \"\"\n"} {
		if !strings.Contains(txt, old) {
			t.Fatalf("configs/quickstart.yaml has no %q: this test sets it", strings.TrimSpace(old))
		}
		txt = strings.Replace(txt, old, repl, 1)
	}
	cfg, err := Parse(strings.NewReader(txt), "quickstart.yaml", "../configs")
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Effective()
}

// TestQuickstartVerdicts counts the quickstart's verdicts over many seeds
// of its own design (configs/quickstart.yaml: the trace's 600 rows at
// 10 req/s, 3 blocks of baseline, gate-up-2x, rmsnorm-2.5x and the A/A
// replicate, the noise model on; seeds 1, 2, …, each another draw of the
// noise), replayed in virtual time (virtualRun: the runner's servers and
// seeds, the verdicts analysis.Analyze reaches on them). What a user is
// told the quickstart shows must be what it shows nearly every time:
// rmsnorm-2.5x (true ratio 0.982, Amdahl bound 1.016: a gain below the
// run's resolution of about ±5–7 %) NO DIFFERENCE with "below resolution"
// in ≥ 90 % of the runs, gate-up-2x (true mean-E2E ratio 0.842) PASS in
// ≥ 90 %.
//
// Measured with this test (seeds 1–48; TRANSFERLAB_VERDICT_RUNS=200 for
// seeds 1–200): under the rule that asked a no-difference interval's high
// end to lie below L = max(1 + margin, 1 + resolution) as well,
// rmsnorm-2.5x read NO DIFFERENCE below resolution in 42 of 48 (176 of
// 200; 20 inconclusive, 4 PASS); under the rule kept (DESIGN.md, the
// decision rule) in 47 of 48 (196 of 200, 20 of them saying a regression
// is not ruled out; 4 PASS, each a real gain resolved in a run whose A/A
// replicate agreed closely). gate-up-2x passed in 45 of 48 (187 of 200)
// under both: in the other runs its ratio (0.87–0.90, interval excluding
// 1) lay within a resolution of ±17–19 % (an A/A replicate that moved
// ~9 %), which reads NO DIFFERENCE by the rule's "beyond the resolution";
// so its floor is 90 %, not 95 %. The resolution as the A/A interval's
// radius instead of its farther end from 1 passed gate-up-2x in 200 of 200
// but read rmsnorm-2.5x NO DIFFERENCE below resolution in 185 (14 PASS), so
// it was not adopted (results/verdicts-2026-12-02/README.md).
//
// decision.resamples is 400 here (2,000 in the quickstart), as in
// TestVirtualIntervalCoverage: the 200 runs' verdicts were the same with
// 2,000 (the run-to-run term dominates the half-width), at a fifth of the
// time. TRANSFERLAB_VERDICT_RUNS=N replays N runs instead of 48,
// TRANSFERLAB_VERDICT_RESAMPLES=N sets the resamples.
func TestQuickstartVerdicts(t *testing.T) {
	t.Parallel()
	runs := 48
	if n, err := strconv.Atoi(os.Getenv("TRANSFERLAB_VERDICT_RUNS")); err == nil && n > 0 {
		runs = n
	}
	resamples := 400
	if n, err := strconv.Atoi(os.Getenv("TRANSFERLAB_VERDICT_RESAMPLES")); err == nil && n > 0 {
		resamples = n
	}
	type outcome struct {
		gate, gateSummary, rms, rmsSummary string
		rmsOpen                            bool // a regression not ruled out
	}
	out := make([]outcome, runs)
	inParallel(runs, func(i int) {
		eff := quickstartSeeded(t, 1+i)
		eff.Extra.Decision.Resamples = resamples
		for _, v := range virtualRun(t, eff).Verdicts {
			switch v.Candidate {
			case "gate-up-2x":
				out[i].gate, out[i].gateSummary = v.Outcome, analysis.VerdictLine(v)
			case "rmsnorm-2.5x":
				out[i].rms, out[i].rmsSummary, out[i].rmsOpen = v.Outcome, analysis.VerdictLine(v), v.RegressionNotRuledOut != nil
			}
		}
	})
	gate, rms := map[string]int{}, map[string]int{}
	below, open := 0, 0
	for i, o := range out {
		gate[o.gate]++
		if o.gate != report.VerdictPass {
			t.Logf("seed %d: %s", 1+i, o.gateSummary)
		}
		rms[o.rms]++
		if o.rms == report.VerdictNoDifference && strings.Contains(o.rmsSummary, "; below resolution: its Amdahl bound") {
			below++
			if o.rmsOpen {
				open++
			}
		} else {
			t.Logf("seed %d: %s", 1+i, o.rmsSummary)
		}
	}
	t.Logf("%d virtual-time quickstart runs: gate-up-2x %v; rmsnorm-2.5x %v, %d of them no difference below resolution (%d of these with a regression not ruled out: a canary gate would not pass them)", runs, gate, rms, below, open)
	if n := gate[report.VerdictPass]; float64(n) < 0.90*float64(runs) {
		t.Errorf("gate-up-2x passed in %d of %d runs, want ≥ 90 %%", n, runs)
	}
	if float64(below) < 0.90*float64(runs) {
		t.Errorf("rmsnorm-2.5x read NO DIFFERENCE below resolution in %d of %d runs, want ≥ 90 %%", below, runs)
	}
}

// TestTransferEfficiencyInterval: a candidate's transfer efficiency carries
// the interval of its measured speedup (against an exact bound: the cost
// model's), and when that speedup's interval contains 1 it is said to be
// not separable from 0 instead of a point like −1.38 that reads as
// measured: the console and report.md print the interval and the reason.
func TestTransferEfficiencyInterval(t *testing.T) {
	t.Parallel()
	sp := func(v, lo, hi float64) report.Estimate {
		return report.Estimate{Value: v, Low: lo, High: hi, Reps: 3, Interval: true}
	}
	for _, tc := range []struct {
		name     string
		bound    float64
		m        report.Estimate
		text     string
		separate bool
	}{
		{"rmsnorm-2.5x: a gain not resolved", 1.016, sp(0.978, 0.93, 1.03), "not separable from 0 [-4.37, 1.88]", false},
		{"gate-up-2x: a gain resolved", 1.1577, sp(1.19, 1.14, 1.24), "1.20 [0.888, 1.52]", true},
		{"one repetition: no interval", 1.1577, report.Estimate{Value: 1.19, Reps: 1}, "1.20", true},
	} {
		l := report.AmdahlLoad{Candidate: "c", OfferedLoadRPS: 10, Bound: tc.bound, BoundLow: tc.bound, BoundHigh: tc.bound,
			TransferEfficiency: amdahl.TransferEfficiency(tc.m.Value, tc.bound), TransferMetric: "e2e mean"}
		efficiencyInterval(&l, tc.m)
		if got := report.TransferEfficiencyText(l); got != tc.text {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.text)
		}
		if (l.TransferEfficiencyNote == "") != tc.separate {
			t.Errorf("%s: note %q", tc.name, l.TransferEfficiencyNote)
		}
		if !tc.separate {
			var b strings.Builder
			printAmdahl(&b, &report.Results{Amdahl: &report.AmdahlSection{Loads: []report.AmdahlLoad{l}}})
			if !strings.Contains(b.String(), "not separable from 0 [-4.37, 1.88]") ||
				!strings.Contains(b.String(), "c at 10 req/s: transfer efficiency not separable from 0: the measured e2e mean speedup's interval [0.930, 1.03] contains 1 (no change)") {
				t.Errorf("%s: console table\n%s", tc.name, b.String())
			}
		}
	}
}
