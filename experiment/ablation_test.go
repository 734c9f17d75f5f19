package experiment

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
)

// ablationConfig is a light-load, decode-dominated experiment on the
// simulator with a baseline, a 2.5× RMSNorm candidate and an RMSNorm ceiling.
// The launch overhead is raised so RMSNorm (65 launches a step) is ~10 % of a
// decode step: a fraction whose errors can be told apart from f itself.
const ablationConfig = `
name: ablation-truth
seed: 5
trace: {path: %s}
load: {mode: constant, rates_rps: [3], warmup: 500ms, duration: 3s}
repetitions: 2
server:
  kind: sim
  sim: {gpu: {launch_overhead_us: 20}}
arms:
  - name: baseline
  - name: cand
    sim_overrides: {rmsnorm: 2.5}
  - name: ceil
    role: ceiling
    sim_overrides: {rmsnorm: ceiling}
amdahl: {target_op: rmsnorm}
energy: {disabled: true}
`

// Stated errors of the ground-truth checks. The truth is what the simulator
// did in these very cells: its modelled step times (the cost model's f) and
// the real duration of its decode steps (host lateness and stalls included,
// which a loaded machine adds to both arms unevenly). f by ablation from the
// client's TPOT means must match 1 − ceiling/baseline of the simulator's own
// mean real decode-step time within fAblationTol (TPOT averages a request's
// steps, the simulator averages steps: batch mix and timestamp jitter stay
// well under it; time a loaded host adds to the steps widens it by that time);
// the profile's f_wall must match the op's modelled decode
// time over the same real decode-step time within fProfileTol (the HTTP time
// around each request counts as active for f_wall); and the modelled step
// times must give the cost model's f within fModelTol (the op's share of a
// step depends on its batch, and the two arms' steps batch requests a little
// differently: exact only for identical steps, as sim's TestCeilingTrueFraction checks).
const (
	fAblationTol = 0.02
	fProfileTol  = 0.01
	fModelTol    = 0.002
)

// TestAblationMatchesSimTruth: the ceiling arm's f by ablation (TPOT mean)
// matches what removing RMSNorm took off the simulator's decode steps, the
// profile path's f_wall matches the op's share of the same steps, and the
// simulator's modelled steps give its cost model's true fraction
// (sim.Profile.TrueFraction), all from the simulator's own record of these
// cells (manifest true_fractions), not from wall-clock expectations.
func TestAblationMatchesSimTruth(t *testing.T) {
	t.Parallel()
	trace := writeAzureTrace(t, t.TempDir(), 40, func(int) (int, int) { return 32, 96 })
	_, res, _, log := runText(t, "ablation.yaml", fmt.Sprintf(ablationConfig, trace))

	if res.Ceiling != "ceil" {
		t.Errorf("results ceiling_arm = %q, want ceil", res.Ceiling)
	}
	for _, v := range res.Verdicts {
		if v.Candidate == "ceil" {
			t.Errorf("the ceiling arm was given a verdict: %+v", v)
		}
	}
	a := res.Amdahl
	if a == nil || len(a.Loads) != 1 || len(a.Ablation) != 1 {
		t.Fatalf("amdahl section: %+v\nlog:\n%s", a, log)
	}
	base, ceil := simRecord(t, res, "baseline"), simRecord(t, res, "ceil")
	// The cost model's f, from the modelled decode steps the two arms ran.
	if got := 1 - ceil.stepModel/base.stepModel; math.Abs(got-base.decode) > fModelTol {
		t.Errorf("modelled decode step %.6f vs %.6f ms: 1 − ceiling/baseline = %.6f, cost model's f %.6f", ceil.stepModel, base.stepModel, got, base.decode)
	}
	// The profile path: f_wall against the op's modelled time over the real decode steps.
	wantProfile := base.decode * base.stepModel / base.stepWall
	if l := a.Loads[0]; math.Abs(l.FWall-wantProfile) > fProfileTol {
		t.Errorf("profile f_wall %.4f, simulator's op time over its real decode steps %.4f: off by more than %.2f", l.FWall, wantProfile, fProfileTol)
	}
	// The ablation: f from the client's TPOT means against the simulator's real decode steps.
	wantAblation := 1 - ceil.stepWall/base.stepWall
	var m report.AblationMetric
	for _, x := range a.Ablation[0].Metrics {
		if x.Metric == "tpot" && x.Stat == "mean" {
			m = x
		}
	}
	// Time the host added to the decode steps beyond the model's (stalls of
	// a loaded machine) lands on steps, not requests: the step mean weighs a
	// stall once, a request's TPOT by how many of its tokens it held up. So
	// the real steps are the truth only to within that added time, as a
	// share of the baseline step; idle, it is ~0.
	hostAdded := (math.Abs(base.stepWall-base.stepModel) + math.Abs(ceil.stepWall-ceil.stepModel)) / base.stepWall
	if tol := fAblationTol + hostAdded; m.FAblation.Reps == 0 || math.Abs(m.FAblation.Value-wantAblation) > tol {
		t.Errorf("tpot mean: f_ablation %+v, what the simulator's decode steps lost %.4f (cost model's f %.4f): off by more than %.3f (%.2f + host-added step time %.3f)", m.FAblation, wantAblation, base.decode, tol, fAblationTol, hostAdded)
	}
	if m.BoundProfile == nil || m.CeilingSpeedup.Reps == 0 || !(m.CeilingSpeedup.Value > 1) {
		t.Errorf("side by side incomplete: bound_profile %v, ceiling speedup %+v", m.BoundProfile, m.CeilingSpeedup)
	}
	t.Logf("cost model f %.4f; real decode step baseline %.4f ms, ceiling %.4f ms (modelled %.4f, %.4f); profile f_wall %.4f (want %.4f); f_ablation tpot %.4f (want %.4f)",
		base.decode, base.stepWall, ceil.stepWall, base.stepModel, ceil.stepModel, a.Loads[0].FWall, wantProfile, m.FAblation.Value, wantAblation)
}

// simTruth is one arm's record from the simulator over its cells: the cost
// model's decode fraction (mean over cells) and the mean modelled and real
// decode-step durations (ms).
type simTruth struct{ decode, stepModel, stepWall float64 }

// simRecord reads arm's manifest.server.<arm>.true_fractions.
func simRecord(t *testing.T, res *report.Results, arm string) simTruth {
	t.Helper()
	info, _ := res.Manifest.Server[arm].(map[string]any)
	recs, _ := info[trueFractionsKey].([]servers.SimTrueFraction)
	if len(recs) == 0 {
		t.Fatalf("no simulator record for arm %s in the manifest: %v", arm, info)
	}
	var out simTruth
	var steps int64
	var model, wall time.Duration
	for _, r := range recs {
		out.decode += r.Decode / float64(len(recs))
		steps += r.DecodeSteps
		model += r.DecodeStepModel
		wall += r.DecodeStepWall
	}
	if steps == 0 {
		t.Fatalf("arm %s: no decode step", arm)
	}
	out.stepModel = float64(model) / 1e6 / float64(steps)
	out.stepWall = float64(wall) / 1e6 / float64(steps)
	return out
}

// TestCeilingConfig: role ceiling is checked with the rest of the config,
// every problem named by field: a sim ceiling needs {target: ceiling}; the
// word ceiling belongs to a ceiling arm only and to the target op only; a
// launched ceiling needs an override, runs it (mode on) and has no
// validation report; one ceiling per experiment; the first arm takes no role.
func TestCeilingConfig(t *testing.T) {
	t.Parallel()
	head := "trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\namdahl: {target_op: rmsnorm}\n"
	ok := head + "server: {kind: sim}\narms: [{name: b}, {name: c, sim_overrides: {rmsnorm: 2}}, {name: k, role: ceiling, sim_overrides: {rmsnorm: ceiling}}]\n"
	cfg, err := Parse(strings.NewReader(ok), "ok.yaml", ".")
	if err != nil {
		t.Fatalf("valid ceiling config refused: %v", err)
	}
	if !cfg.Arms[2].SimOverrides["rmsnorm"].IsCeiling() || cfg.Arms[1].SimOverrides["rmsnorm"] != Factor(2) {
		t.Errorf("sim_overrides decoded as %+v", cfg.Arms)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"ceiling word on a candidate", head + "server: {kind: sim}\narms: [{name: b}, {name: c, sim_overrides: {rmsnorm: ceiling}}]\n", "arms[1].sim_overrides.rmsnorm (line 5): ceiling removes the op's work: only an arm with role: ceiling"},
		{"ceiling without the word", head + "server: {kind: sim}\narms: [{name: b}, {name: k, role: ceiling, sim_overrides: {rmsnorm: 2}}]\n", "needs sim_overrides: {rmsnorm: ceiling}"},
		{"ceiling of another op", head + "server: {kind: sim}\narms: [{name: b}, {name: k, role: ceiling, sim_overrides: {attention: ceiling}}]\n", "arms[1].sim_overrides.attention (line 5): a ceiling arm removes the target op"},
		{"not a factor", head + "server: {kind: sim}\narms: [{name: b}, {name: c, sim_overrides: {rmsnorm: fast}}]\n", `arms[1].sim_overrides.rmsnorm (line 5): "fast" is not a speedup factor (a number > 0) or the word ceiling`},
		{"unknown role", head + "server: {kind: sim}\narms: [{name: b}, {name: c, role: champion, sim_overrides: {rmsnorm: 2}}]\n", `arms[1].role (line 5): unknown role "champion"`},
		{"two ceilings", head + "server: {kind: sim}\narms: [{name: b}, {name: k, role: ceiling, sim_overrides: {rmsnorm: ceiling}}, {name: k2, role: ceiling, sim_overrides: {rmsnorm: ceiling}}]\n", "arms[2].role (line 5): a second ceiling arm"},
		{"baseline with a role", head + "server: {kind: sim}\narms: [{name: b, role: ceiling}]\n", "arms[0].role (line 5): the first arm is the baseline"},
		{"launched ceiling without override", head + "server: {kind: reference, reference: {}}\narms: [{name: b}, {name: k, role: ceiling}]\n", "needs an override whose candidate removes the target's work"},
		{"validated ceiling", head + "server: {kind: reference, reference: {}}\narms: [{name: b}, {name: k, role: ceiling, override: {target: 'm:C.f', candidate: 'k.py:f', validation_report: v.json}}]\n", "a ceiling's outputs are meaningless and it is never validated"},
		{"ceiling without target", "trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: sim}\narms: [{name: b}, {name: k, role: ceiling}]\n", "a ceiling arm needs amdahl.target_op"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.yaml), "c.yaml", ".")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestArmRolesDeclared: a ceiling arm's kernel file must declare itself a
// ceiling, and a file that does is refused in a candidate arm; the shipped
// ceiling kernel declares itself, the shipped Triton kernel does not.
func TestArmRolesDeclared(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("real.py", "def f(self, x):\n    return x * 2\n")
	write("ceil.py", "\"\"\"removes the op\"\"\"\n"+CeilingDeclaration+"  # checked by transferlab\n\ndef f(self, x):\n    return x\n")
	arm := func(role, file string) ArmConfig {
		return ArmConfig{Name: "a-" + role, Role: role, Override: &integrate.Override{Target: "m:C.f", Candidate: file + ":f", BaseDir: dir}}
	}
	if err := checkArmRoles([]ArmConfig{{Name: "b"}, arm(RoleCandidate, "real.py"), arm(RoleCeiling, "ceil.py")}); err != nil {
		t.Errorf("declared roles refused: %v", err)
	}
	if err := checkArmRoles([]ArmConfig{arm(RoleCeiling, "real.py")}); err == nil || !strings.Contains(err.Error(), "does not declare itself a ceiling") {
		t.Errorf("undeclared ceiling: err = %v", err)
	}
	if err := checkArmRoles([]ArmConfig{arm("", "ceil.py")}); err == nil || !strings.Contains(err.Error(), "(line 2) declares itself a ceiling") {
		t.Errorf("ceiling file as a candidate: err = %v", err)
	}
	for file, want := range map[string]string{"../configs/kernels/rmsnorm_ceiling.py": RoleCeiling, "../configs/kernels/rmsnorm_triton.py": ""} {
		if role, _, err := declaredRole(file); err != nil || role != want {
			t.Errorf("%s declares %q (%v), want %q", file, role, err, want)
		}
	}
}

// refCeilingConfig is a baseline, a validated candidate and a ceiling on the
// CPU fake reference server.
const refCeilingConfig = `
name: ref-ceiling-test
seed: 3
trace: {path: trace.csv}
load: {mode: constant, rates_rps: [40], warmup: 500ms, duration: 1s}
server:
  kind: reference
  reference:
    python: %s
    ready_timeout: 60s
    env: [FAKE_ITL_MS=5]
arms:
  - name: baseline
  - name: cand
    override: {target: 'm:C.forward', candidate: 'k.py:f', mode: 'on', validation_report: validation.json}
  - name: ceil
    role: ceiling
    override: {target: 'm:C.forward', candidate: 'ceil.py:f', mode: 'on'}
amdahl: {target_op: rmsnorm}
energy: {disabled: true}
resolution: {aa_replicate: false}
`

// TestReferenceCeilingArm runs a ceiling arm on a launched server (the CPU
// fake reference server, through the same launch path as the GPU's): the
// run starts the ceiling's server with the hook and no validation report,
// leaves it out of the validation section and the verdicts, counts its hook
// calls, and takes the ablation from its cells.
func TestReferenceCeilingArm(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH: the fake reference server cannot run")
	}
	fake, err := filepath.Abs(filepath.Join("..", "integrate", "testdata", "fakepython"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeAzureTrace(t, dir, 40, mixedLengths)
	if err := os.WriteFile(filepath.Join(dir, "ceil.py"), []byte(CeilingDeclaration+"\n\ndef f(self, x):\n    return x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeValidation(t, dir, "graph", testShapes, 0)
	cfg, err := Parse(strings.NewReader(fmt.Sprintf(refCeilingConfig, fake)), "ref.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg, Options{OutDir: filepath.Join(dir, "out"), Log: &log})
	if err != nil {
		t.Fatalf("run: %v\nlog:\n%s", err, log.String())
	}
	arms := map[string]int{}
	for _, c := range res.Cells {
		arms[c.Arm]++
	}
	if res.Ceiling != "ceil" || arms["ceil"] != 1 || arms["cand"] != 1 || arms["baseline"] == 0 {
		t.Fatalf("ceiling %q, cells per arm %v", res.Ceiling, arms)
	}
	for _, v := range res.Verdicts {
		if v.Candidate == "ceil" {
			t.Errorf("the ceiling was given a verdict: %+v", v)
		}
	}
	if res.Validation == nil || len(res.Validation.Candidates) != 1 || res.Validation.Candidates[0].Candidate != "cand" {
		t.Errorf("validation section %+v: want the candidate only", res.Validation)
	}
	hooked := false
	if res.Hook != nil {
		for _, h := range res.Hook.Arms {
			hooked = hooked || (h.Arm == "ceil" && h.Candidate != "")
		}
	}
	if !hooked {
		t.Errorf("no hook record of the ceiling arm: %+v", res.Hook)
	}
	if res.Amdahl == nil || len(res.Amdahl.Ablation) != 1 || res.Amdahl.Ablation[0].Ceiling != "ceil" {
		t.Errorf("no ablation from the ceiling's cells: %+v", res.Amdahl)
	}
}

// TestBoundVerdictOverlapText: a measured speedup whose point lies outside
// the bound's interval but whose interval overlaps it is "inside", and the
// note says the intervals overlap instead of calling the point within the
// bound's interval (the H200 study's 1.0827 [1.0326, 1.1388] against
// 1.0973 [1.0942, 1.1039]).
func TestBoundVerdictOverlapText(t *testing.T) {
	t.Parallel()
	m := report.Estimate{Value: 1.0827, Low: 1.0326, High: 1.1388, Reps: 3, Interval: true}
	l := report.AmdahlLoad{OfferedLoadRPS: 1.5, Bound: 1.0973, BoundLow: 1.0942, BoundHigh: 1.1039}
	v, note := boundVerdict(m, l, []float64{1.5})
	if v != "inside" || !strings.Contains(note, "the two intervals overlap") || strings.Contains(note, "is within the bound's interval") {
		t.Errorf("verdict %q, note %q", v, note)
	}
}
