package experiment

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/report"
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

// Stated errors of the ground-truth checks. f by ablation is taken from
// client-measured latencies of two runs (baseline, ceiling), each off the
// simulator's modelled step times by its host's timer lateness and stalls
// beyond max_catch_up_ms; 0.02 absolute (a fifth of f here) is far above
// what that leaves on a quiet host (< 0.005) and far below the f itself a
// wrong formula or a ceiling that removed nothing would show. The profile's
// f_wall has no hidden gaps on the simulator: it differs from the truth only
// by the HTTP time around each request that counts as active, < 0.01.
const (
	fAblationTol = 0.02
	fProfileTol  = 0.01
)

// TestAblationMatchesSimTruth: the ceiling arm's f by ablation (TPOT mean,
// decode steps; E2E mean, every step) matches the simulator's own true
// fraction of RMSNorm in its modelled step time (sim.Profile.TrueFraction,
// kept per cell in the manifest), and the profile path's f_wall matches it
// too. The truth is what the simulator did in these very cells, not a
// wall-clock expectation, so a loaded host moves both sides alike.
func TestAblationMatchesSimTruth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	for i := range 40 {
		fmt.Fprintf(&csv, "2023-11-16 18:15:%02d.0000000,32,96\n", 10+i)
	}
	trace := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(trace, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, res, _, log := runText(t, "ablation.yaml", fmt.Sprintf(ablationConfig, trace))

	truth := trueFractions(t, res, "baseline")
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
	if l := a.Loads[0]; math.Abs(l.FWall-truth.Whole) > fProfileTol {
		t.Errorf("profile f_wall %.4f, simulator's truth %.4f: off by more than %.2f", l.FWall, truth.Whole, fProfileTol)
	}
	got := map[string]report.AblationMetric{}
	for _, m := range a.Ablation[0].Metrics {
		got[m.Metric+" "+m.Stat] = m
	}
	for _, c := range []struct {
		stat string
		want float64
	}{{"tpot mean", truth.Decode}, {"e2e mean", truth.Whole}} {
		m, ok := got[c.stat]
		if !ok || m.FAblation.Reps == 0 {
			t.Errorf("%s: no f_ablation (%+v)", c.stat, m)
			continue
		}
		if math.Abs(m.FAblation.Value-c.want) > fAblationTol {
			t.Errorf("%s: f_ablation %.4f, simulator's truth %.4f: off by more than %.2f", c.stat, m.FAblation.Value, c.want, fAblationTol)
		}
		if m.BoundProfile == nil || m.CeilingSpeedup.Reps == 0 || !(m.CeilingSpeedup.Value > 1) {
			t.Errorf("%s: side by side incomplete: bound_profile %v, ceiling speedup %+v", c.stat, m.BoundProfile, m.CeilingSpeedup)
		}
	}
	t.Logf("truth whole %.4f decode %.4f; profile f_wall %.4f; ablation %+v", truth.Whole, truth.Decode, a.Loads[0].FWall, got)
}

// trueFractions is the mean of the simulator's true fractions over arm's
// cells (manifest.server.<arm>.true_fractions).
func trueFractions(t *testing.T, res *report.Results, arm string) SimTrueFraction {
	t.Helper()
	info, _ := res.Manifest.Server[arm].(map[string]any)
	recs, _ := info[trueFractionsKey].([]SimTrueFraction)
	if len(recs) == 0 {
		t.Fatalf("no true fractions for arm %s in the manifest: %v", arm, info)
	}
	var out SimTrueFraction
	for _, r := range recs {
		out.Whole += r.Whole / float64(len(recs))
		out.Decode += r.Decode / float64(len(recs))
	}
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
		{"not a factor", head + "server: {kind: sim}\narms: [{name: b}, {name: c, sim_overrides: {rmsnorm: fast}}]\n", "is not a speedup factor (a number > 0) or the word ceiling"},
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
