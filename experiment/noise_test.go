package experiment

import (
	"fmt"
	"testing"

	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
)

// noiseRunConfig is a tiny simulated run with the noise model on.
const noiseRunConfig = `
name: noise-seeds
seed: 9
trace: {path: %s}
load: {mode: constant, rates_rps: [4], warmup: 200ms, duration: 800ms}
repetitions: 2
server:
  kind: sim
  sim: {noise: {run_sigma: 0.03, step_sigma: 0.015}}
arms:
  - name: baseline
  - name: cand
    sim_overrides: {rmsnorm: 2.5}
amdahl: {target_op: rmsnorm}
energy: {disabled: true}
`

// TestNoiseSeededPerCell: with server.sim.noise on, each cell of a run gets
// its own run factor (recorded in the manifest's true_fractions), the same
// config draws the same factors again, and the simulator's truth (sim_truth)
// is a ratio of the noiseless virtual-time replay.
func TestNoiseSeededPerCell(t *testing.T) {
	t.Parallel()
	trace := writeAzureTrace(t, t.TempDir(), 20, func(int) (int, int) { return 64, 16 })
	factors := func() (map[string][]float64, *report.Results) {
		_, res, _, _ := runText(t, "noise.yaml", fmt.Sprintf(noiseRunConfig, trace))
		out := map[string][]float64{}
		for _, arm := range []string{"baseline", "cand", report.AAArm("baseline")} {
			info, _ := res.Manifest.Server[arm].(map[string]any)
			recs, _ := info[trueFractionsKey].([]servers.SimTrueFraction)
			for _, r := range recs {
				out[arm] = append(out[arm], r.NoiseRunFactor)
			}
			if len(out[arm]) != 2 {
				t.Fatalf("arm %s: %d cells recorded, want 2: %v", arm, len(out[arm]), info)
			}
		}
		return out, res
	}
	a, res := factors()
	b, _ := factors()
	seen := map[float64]string{}
	for arm, fs := range a {
		for i, f := range fs {
			if f == 1 || f < 0.8 || f > 1.25 {
				t.Errorf("%s cell %d: run factor %v, want a draw near 1 (σ 0.03)", arm, i, f)
			}
			if f != b[arm][i] {
				t.Errorf("%s cell %d: run factor %v, then %v with the same config", arm, i, f, b[arm][i])
			}
			if other, dup := seen[f]; dup {
				t.Errorf("%s cell %d drew %v as %s did", arm, i, f, other)
			}
			seen[f] = arm
		}
	}
	// The truth is the noiseless replay (sim.Config.Replay ignores the
	// noise model: sim's TestReplayIgnoresNoise).
	if len(res.SimTruth) == 0 {
		t.Fatal("no sim_truth")
	}
	for _, tr := range res.SimTruth {
		if !(tr.Value > 0.9 && tr.Value < 1) {
			t.Errorf("sim_truth %s %s %s = %v: want the noiseless RMSNorm gain, a ratio just below 1", tr.Candidate, tr.Metric, tr.Stat, tr.Value)
		}
	}
}
