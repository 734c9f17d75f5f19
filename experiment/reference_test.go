package experiment

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/traces"
)

// TestProfileConfigYAML checks amdahl.profile's decoding: defaults, and
// errors that name the field (and line) for each bad value.
func TestProfileConfigYAML(t *testing.T) {
	t.Parallel()
	const head = "trace: {path: t.csv}\nload: {rates_rps: [1], duration: 1s}\nserver: {kind: reference, reference: {}}\narms: [{name: baseline}]\n"
	cases := []struct {
		name string
		prof string
		want []string // substrings of the error; none: must parse
		eff  ProfileConfig
	}{
		{name: "defaults", prof: "{kernel_pattern: '^tl_'}",
			eff: ProfileConfig{Window: 2 * time.Second, KernelPattern: "^tl_", Annotation: "transferlab::target", STiming: "graph"}},
		{name: "everything", prof: "{window: 1500ms, kernel_sequence: [a, 'b.*c'], annotation: my::range, s_timing: eager}",
			eff: ProfileConfig{Window: 1500 * time.Millisecond, KernelSequence: []string{"a", "b.*c"}, Annotation: "my::range", STiming: "eager"}},
		{name: "unknown key", prof: "{windo: 1s, s_timing: cuda}", want: []string{"amdahl.profile.windo", "unknown key", "line 6", "amdahl.profile.s_timing"}},
		{name: "bad values at once", prof: "{window: 40s, kernel_sequence: ['(', ''], kernel_pattern: '[', s_timing: cuda}",
			want: []string{"amdahl.profile.window", "amdahl.profile.kernel_sequence[0]", "amdahl.profile.kernel_sequence[1] (line 6): empty", "amdahl.profile.kernel_pattern", "amdahl.profile.s_timing"}},
		{name: "negative window", prof: "{window: -1s}", want: []string{"amdahl.profile.window"}},
		{name: "not a mapping", prof: "[1]", want: []string{"amdahl.profile", "mapping"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse(strings.NewReader(head+"amdahl:\n  profile: "+tc.prof+"\n"), "test.yaml", ".")
			if len(tc.want) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not name %q:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Amdahl.Profile.effective()
			if fmt.Sprint(got) != fmt.Sprint(tc.eff) {
				t.Errorf("effective = %+v, want %+v", got, tc.eff)
			}
		})
	}
}

// valShape is one captured row of a fake validation report (µs).
type valShape struct {
	count                    int
	orig, cand, origE, candE float64
}

// geoMean is the count-weighted geometric mean of orig/cand (or the eager pair).
func geoMean(rows []valShape, eager bool) float64 {
	var num, den float64
	for _, r := range rows {
		s := r.orig / r.cand
		if eager {
			s = r.origE / r.candE
		}
		num += float64(r.count) * math.Log(s)
		den += float64(r.count)
	}
	return math.Exp(num / den)
}

// writeValidation writes a candidate kernel file and a passing validation
// report for it (the fields integrate.ReadValidationReport and
// CheckValidation read, with the candidate's sha256), and returns the
// override. timing "" writes a report from before graph timing (no timing,
// no s_eager, no eager columns). sOverride, when > 0, replaces speedup.s
// (an inconsistent report).
func writeValidation(t *testing.T, dir, timing string, rows []valShape, sOverride float64) ArmConfig {
	t.Helper()
	k := filepath.Join(dir, "k.py")
	src := []byte("def f(self, x):\n    return x\n")
	if err := os.WriteFile(k, src, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	var shapes []map[string]any
	for i, r := range rows {
		sh := map[string]any{"set": "captured", "signature": []any{[]int{i + 1, 4096}, "bfloat16"}, "count": r.count,
			"orig_us": r.orig, "cand_us": r.cand, "speedup": r.orig / r.cand, "first_failing_gate": nil}
		if timing != "" {
			sh["orig_eager_us"], sh["cand_eager_us"] = r.origE, r.candE
		}
		shapes = append(shapes, sh)
	}
	shapes = append(shapes, map[string]any{"set": "stress", "name": "odd", "signature": []any{[]int{3, 7}}, "count": 0,
		"orig_us": 1.0, "cand_us": 100.0, "speedup": 0.01}) // stress rows never enter s
	sp := map[string]any{"s": geoMean(rows, false), "method": "test"}
	if timing != "" {
		sp["timing"], sp["s_eager"] = timing, geoMean(rows, true)
	}
	if sOverride > 0 {
		sp["s"] = sOverride
	}
	rep := map[string]any{"format": integrate.ValidationFormat, "verdict": "pass", "reason": "every gate passed",
		"target": "m:C.forward", "candidate": k + ":f", "candidate_file": k, "candidate_sha256": hex.EncodeToString(sum[:]),
		"captured_signatures": len(rows), "validated_signatures": len(rows), "coverage": 1.0,
		"speedup": sp, "shapes": shapes}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	vp := filepath.Join(dir, "validation.json")
	if err := os.WriteFile(vp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return ArmConfig{Name: "cand", Override: &integrate.Override{Target: "m:C.forward", Candidate: "k.py:f", Mode: integrate.ModeOn,
		ValidationReport: "validation.json", BaseDir: dir}}
}

var testShapes = []valShape{
	{count: 300, orig: 28, cand: 5, origE: 74, candE: 9},
	{count: 100, orig: 12, cand: 4, origE: 60, candE: 8},
	{count: 10, orig: 90, cand: 30, origE: 150, candE: 40},
}

// TestValidatedSpeedupTiming checks that s is read from the validation
// report with the timing amdahl.profile.s_timing asks for, reproduces the
// report's own aggregate, and that mismatches are refused with the field named.
func TestValidatedSpeedupTiming(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		report    string // timing written into the report
		sOverride float64
		profile   *ProfileConfig
		want      float64 // 0: an error is expected
		wantErr   string
	}{
		{name: "no profile: report's own timing", report: "graph", want: geoMean(testShapes, false)},
		{name: "graph", report: "graph", profile: &ProfileConfig{STiming: "graph"}, want: geoMean(testShapes, false)},
		{name: "default is graph", report: "graph", profile: &ProfileConfig{}, want: geoMean(testShapes, false)},
		{name: "eager", report: "graph", profile: &ProfileConfig{STiming: "eager"}, want: geoMean(testShapes, true)},
		{name: "eager from an eager-timed report", report: "eager", profile: &ProfileConfig{STiming: "eager"}, want: geoMean(testShapes, true)},
		{name: "graph from an eager-timed report", report: "eager", profile: &ProfileConfig{STiming: "graph"}, wantErr: "speedup.timing"},
		{name: "legacy report is eager", report: "", profile: &ProfileConfig{STiming: "eager"}, want: geoMean(testShapes, false)},
		{name: "legacy report refuses graph", report: "", profile: &ProfileConfig{STiming: "graph"}, wantErr: "speedup.timing"},
		{name: "inconsistent s", report: "graph", sOverride: 2, profile: &ProfileConfig{}, wantErr: "field speedup.s is 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			arm := writeValidation(t, t.TempDir(), tc.report, testShapes, tc.sOverride)
			r := &runner{cfg: Config{Seed: 1, Amdahl: AmdahlConfig{TargetOp: "rmsnorm", Profile: tc.profile}}}
			est, err := r.validatedSpeedup(arm)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The report's aggregate and ours are the same formula on the same
			// numbers: only float rounding separates them.
			if got := float64(est.Value); math.Abs(got-tc.want) > 1e-9*tc.want {
				t.Errorf("s = %.12g, want %.12g", got, tc.want)
			}
			if !(float64(est.Lo) <= float64(est.Value) && float64(est.Value) <= float64(est.Hi)) || est.N != len(testShapes) {
				t.Errorf("interval = [%v, %v] around %v, n %d", est.Lo, est.Value, est.Hi, est.N)
			}
		})
	}
}

// TestCommittedValidationReports reads s from the H200 validation reports the
// shipped configs name, with both timings, and checks the values the H200
// notes quote (amdahl/H200.md: 4.302 eager; results README: 6.47 graph).
func TestCommittedValidationReports(t *testing.T) {
	t.Parallel()
	cases := []struct {
		report, timing string
		want           float64
	}{
		{"validation-2026-11-29/validation-llama_rmsnorm_forward.json", "eager", 4.302},
		{"validation-2026-11-29/rerun-graph-timing/validation-llama_rmsnorm_forward.json", "graph", 6.468},
		{"validation-2026-11-29/rerun-graph-timing/validation-llama_rmsnorm_forward.json", "eager", 7.899},
	}
	for _, tc := range cases {
		t.Run(tc.report+"/"+tc.timing, func(t *testing.T) {
			t.Parallel()
			rep, err := integrate.ReadValidationReport(filepath.Join("..", "results", tc.report))
			if err != nil {
				t.Skipf("committed report not readable: %v", err)
			}
			rows, want, field, err := speedupRows(rep, tc.timing)
			if err != nil {
				t.Fatal(err)
			}
			s, err := amdahl.IsolatedSpeedup(rows)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(s-*want) > 1e-6**want || math.Abs(s-tc.want) > 1e-3 {
				t.Errorf("s = %.6g, report's %s = %.6g, notes say %.4g", s, field, *want, tc.want)
			}
		})
	}
}

// fakeShare* are integrate/testdata/fake_refserver.py's constants: the target
// sequence [fake_rms_pow, fake_rms_mul] covers fakeTargetShare of the active
// wall time, all kernels fakeBusyShare of it, and a lone fake_rms_pow decoy
// fakeDecoyShare.
const (
	fakeTargetShare = 0.25
	fakeDecoyShare  = 0.05
	fakeBusyShare   = 0.90
)

const refProfileConfig = `
name: ref-profile-test
seed: 3
trace: {path: trace.csv}
load: {mode: constant, rates_rps: [40], warmup: 1s, duration: 2s}
server:
  kind: reference
  reference:
    python: %s
    ready_timeout: 60s
    env: [FAKE_ITL_MS=5, FAKE_HOOK_RATIO=1.01]
    hook_timings: %t
arms:
  - name: baseline
  - name: cand
    override: {target: 'm:C.forward', candidate: 'k.py:f', mode: 'on', validation_report: validation.json}
amdahl:
  target_op: rmsnorm
  profile:
    window: 1s
    kernel_sequence: ['^fake_rms_pow$', '^fake_rms_mul$']
energy: {disabled: true}
resolution: {aa_replicate: false}
`

// runFakeProfile runs refProfileConfig against the fake reference server
// (skipping without python3) and returns the results, the config, the output
// folder and the run's log.
func runFakeProfile(t *testing.T, hookTimings bool) (*report.Results, *Config, string, *bytes.Buffer) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH: the fake reference server cannot run")
	}
	fake, err := filepath.Abs(filepath.Join("..", "integrate", "testdata", "fakepython"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeAzureTrace(t, dir, 40, mixedLengths)
	writeValidation(t, dir, "graph", testShapes, 0)
	cfg, err := Parse(strings.NewReader(fmt.Sprintf(refProfileConfig, fake, hookTimings)), "ref.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg, Options{OutDir: out, Log: &log})
	if err != nil {
		t.Fatalf("run: %v\nlog:\n%s", err, log.String())
	}
	return res, cfg, out, &log
}

// TestReferenceProfilePassHookAgreement: with hook timings on, the profile
// window's answer carries the hook's documents (the fake says 1.01 × the
// target kernel time its trace holds over the same window), and the pass
// records the comparison over the same calls (one per synthetic step): +1 %
// against both span and kernel time (to 1e-3: timestamps are rounded to the
// ns) and f_wall from the hook = 1.01 × the constructed share.
func TestReferenceProfilePassHookAgreement(t *testing.T) {
	t.Parallel()
	res, _, _, log := runFakeProfile(t, true)
	info, _ := res.Manifest.Server["baseline"].(map[string]any)
	recs, _ := info["amdahl_profiles"].([]ProfileRecord)
	if len(recs) != 1 {
		t.Fatalf("amdahl_profiles = %v\nlog:\n%s", info["amdahl_profiles"], log)
	}
	pr := recs[0]
	if pr.HookAgreement == nil {
		t.Fatalf("no hook agreement (error %q)\nlog:\n%s", pr.HookAgreementError, log)
	}
	a := pr.HookAgreement
	// The fake's target calls are two back-to-back kernels: span = kernel time.
	if math.Abs(a.RelDiff-0.01) > 1e-3 || math.Abs(a.RelDiffSpan-0.01) > 1e-3 || a.HookWindows != 1 || !a.Complete ||
		a.ProfileCalls == 0 || int64(a.ProfileCalls) != a.HookCalls {
		t.Errorf("agreement %+v, want rel diff +0.01 (span and kernel time) over 1 window", a)
	}
	if pr.FWallHook == nil || math.Abs(*pr.FWallHook-1.01*fakeTargetShare) > 1e-3 {
		t.Errorf("f_wall_hook = %v, want %.4f", pr.FWallHook, 1.01*fakeTargetShare)
	}
	if l := res.Amdahl.Loads; len(l) != 1 || l[0].FWallHook == nil || l[0].HookVsProfilePct == nil || math.Abs(*l[0].HookVsProfilePct-1) > 0.1 ||
		l[0].HookVsProfileSpanPct == nil || math.Abs(*l[0].HookVsProfileSpanPct-1) > 0.1 {
		t.Errorf("Amdahl section does not carry the hook check: %+v", res.Amdahl)
	}
	if !strings.Contains(log.String(), "hook vs profile at 40 req/s") || !strings.Contains(log.String(), "within 2 %") {
		t.Errorf("log does not report the comparison:\n%s", log)
	}
}

// TestReferenceProfilePass runs a reference-kind experiment against the
// CPU fake server (integrate/testdata/fake_refserver.py) with amdahl.profile
// set, and checks: f in the Amdahl section equals the share the fake's
// synthetic trace has by construction; the profiling replay added nothing to
// records.jsonl or the cells; the trace is kept and named in the manifest;
// s comes from the validation report; the bound is Amdahl's formula of both.
func TestReferenceProfilePass(t *testing.T) {
	t.Parallel() // mostly real-time waits (open-loop replays): overlaps the package's other tests
	res, cfg, out, log := runFakeProfile(t, false)
	ctx := context.Background()
	eff := cfg.Effective()
	t.Logf("log:\n%s", log.String())

	// f: the fake's trace gives the target sequence exactly fakeTargetShare
	// of the server's active time (steps split each active interval evenly)
	// and fakeTargetShare/fakeBusyShare of the busy time. Timestamps are
	// written to the ns (µs with 3 decimals), so only rounding separates f
	// from the share: 1e-4 absolute is far above that and far below the 0.05
	// a decoy kernel counted by mistake would add.
	a := res.Amdahl
	if a == nil || a.NotMeasured != "" || len(a.Loads) != 1 {
		t.Fatalf("amdahl section = %+v", a)
	}
	l := a.Loads[0]
	if math.Abs(l.FWall-fakeTargetShare) > 1e-4 {
		t.Errorf("f_wall = %.6f, want %.2f (the constructed share)", l.FWall, fakeTargetShare)
	}
	if l.FGPU == nil || math.Abs(*l.FGPU-fakeTargetShare/fakeBusyShare) > 1e-4 {
		t.Errorf("f_gpu = %v, want %.6f", l.FGPU, fakeTargetShare/fakeBusyShare)
	}
	wantS := geoMean(testShapes, false)
	if math.Abs(l.S-wantS) > 1e-9*wantS {
		t.Errorf("s = %.9g, want %.9g (the fake report's graph-timed s)", l.S, wantS)
	}
	if b := 1 / ((1 - l.FWall) + l.FWall/l.S); math.Abs(l.Bound-b) > 1e-9 {
		t.Errorf("bound = %.9g, want 1/((1-f)+f/s) = %.9g", l.Bound, b)
	}

	// The profiling pass left nothing in the measured data.
	var n int
	f, err := os.Open(filepath.Join(out, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec struct {
			Arm string `json:"arm"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Arm != "baseline" && rec.Arm != "cand" {
			t.Errorf("records.jsonl holds a record of arm %q", rec.Arm)
		}
		n++
	}
	cs, err := cellSchedule(mustBase(t, &eff), eff.Load, 40, eff.Seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	sched := 2 * len(cs.Requests) // baseline and candidate cells replay the same schedule
	if len(res.Cells) != 2 || n != sched {
		t.Errorf("records.jsonl has %d records for %d cells scheduling %d requests: the profiling pass must add none", n, len(res.Cells), sched)
	}

	// The trace is kept, named in the manifest, and says what f measures.
	info, _ := res.Manifest.Server["baseline"].(map[string]any)
	recs, _ := info["amdahl_profiles"].([]ProfileRecord)
	if len(recs) != 1 {
		t.Fatalf("manifest.server.baseline.amdahl_profiles = %v", info["amdahl_profiles"])
	}
	pr := recs[0]
	if pr.Trace != filepath.Join("servers", "baseline", "profiles", "load40rps-rep0.trace.json.gz") || pr.STiming != "graph" || pr.FMeasures == "" {
		t.Errorf("profile record = %+v", pr)
	}
	if pr.Replay["not_sent"] == 0 || pr.Replay["ok"] == 0 {
		t.Errorf("profiling replay states = %v: want requests answered, and the rest never sent once the window closed", pr.Replay)
	}
	if !(pr.ActiveS > 0.5 && pr.ActiveS <= pr.WindowS) {
		t.Errorf("active_s = %v of window_s %v", pr.ActiveS, pr.WindowS)
	}
	trace := filepath.Join(out, pr.Trace)
	if _, err := os.Stat(trace); err != nil {
		t.Errorf("trace not kept: %v", err)
	}
	if _, err := os.Stat(strings.TrimSuffix(trace, ".trace.json.gz") + ".summary.json"); err != nil {
		t.Errorf("summary not kept: %v", err)
	}
	r := &runner{cfg: eff, res: res}
	if src := r.profileSource(40); !strings.Contains(src, pr.Trace) || !strings.Contains(src, "s timing graph") {
		t.Errorf("profileSource(40) = %q", src)
	}
	if src := r.profileSource(41); src != "" {
		t.Errorf("profileSource(41) = %q, want empty (no such load)", src)
	}
	raw, err := os.ReadFile(filepath.Join(out, ResultsFile))
	if err != nil || !bytes.Contains(raw, []byte(`"amdahl_profiles"`)) {
		t.Errorf("results.json does not carry the profile record (%v)", err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "load.warmup_replay is off") {
		t.Errorf("results warnings = %q, want the cold-start warning (a reference server, no warm-up replay)", res.Warnings)
	}
	if !strings.Contains(log.String(), "profiling pass (unmeasured") {
		t.Errorf("log does not label the profiling pass")
	}

	// The decoy is real: a name pattern (instead of the sequence) counts it.
	s, err := amdahl.Summarize(ctx, trace, amdahl.FormatChrome, amdahl.SummaryConfig{
		ActiveWall: time.Duration(pr.ActiveS * 1e9), Options: []amdahl.Option{amdahl.KernelPattern(regexp.MustCompile("^fake_rms_"))}})
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(s.Fractions.FWall); math.Abs(got-(fakeTargetShare+fakeDecoyShare)) > 1e-4 {
		t.Errorf("f_wall by name pattern = %.6f, want %.2f", got, fakeTargetShare+fakeDecoyShare)
	}
}

// TestShippedConfigsPairS loads every shipped config that sets amdahl.profile
// and reads each candidate's s with its s_timing, as the run's Amdahl section
// will: a config whose validation report cannot give that timing (or is
// stale for its kernel file and captured set) fails here, not on the GPU.
func TestShippedConfigsPairS(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "configs", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no configs found: %v", err)
	}
	for _, f := range files {
		cfg, _, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Amdahl.Profile == nil {
			continue
		}
		for _, arm := range cfg.Arms[1:] {
			t.Run(filepath.Base(f)+"/"+arm.Name, func(t *testing.T) {
				if arm.Override == nil {
					t.Skip("no kernel override")
				}
				if arm.IsCeiling() {
					t.Skip("a ceiling has no s: never validated, it runs the op's work removed")
				}
				r := &runner{cfg: cfg.Effective()}
				est, err := r.validatedSpeedup(arm)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("s = %.4f [%.4f, %.4f] (%s)", est.Value, est.Lo, est.Hi, est.Method)
			})
		}
	}
}

// TestH200ConfigKernelSequence applies the shipped H200 configs'
// amdahl.profile attribution to the committed H200 profile excerpts and
// checks the exact kernel counts and target times that amdahl's TestH200Known
// holds (from an independent implementation, amdahl/testdata/h200_cg_excerpt.py):
// the YAML's regular expressions find eager RMSNorm's 8 kernels in the
// CUDA-graph replays exactly as the offline analysis did.
func TestH200ConfigKernelSequence(t *testing.T) {
	t.Parallel()
	for _, cfgFile := range []string{"../configs/h200-llama.yaml", "../configs/h200-llama-short.yaml", "../configs/h200-llama-study.yaml"} {
		cfg, _, err := Load(cfgFile)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Amdahl.Profile == nil {
			t.Fatalf("%s: no amdahl.profile block", cfgFile)
		}
		opts, err := cfg.Amdahl.Profile.effective().options()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			file    string
			kernels int
			target  time.Duration
		}{
			{"profile-c1-excerpt.json.gz", 832, 2525383},
			{"profile-c16-excerpt.json.gz", 800, 2161119},
		} {
			t.Run(filepath.Base(cfgFile)+"/"+c.file, func(t *testing.T) {
				path := filepath.Join("..", "amdahl", "testdata", "h200", c.file)
				if _, err := os.Stat(path); err != nil {
					t.Skipf("%s not committed: %v", path, err)
				}
				p, err := amdahl.ReadChrome(path, opts...)
				if err != nil {
					t.Fatal(err)
				}
				fr, err := p.Fractions()
				if err != nil {
					t.Fatal(err)
				}
				if p.Attribution.BySequence != c.kernels || fr.TargetGPU != c.target || p.Attribution.GraphUnattributed != 0 {
					t.Errorf("attribution %+v, target %d ns; want %d kernels by sequence, %d ns, none unattributed",
						p.Attribution, fr.TargetGPU, c.kernels, c.target)
				}
			})
		}
	}
}

// TestProfileOpenAt: the profiler window opens at the first send at or after
// the warm-up, or at the warm-up when nothing is sent after it.
func TestProfileOpenAt(t *testing.T) {
	t.Parallel()
	s := traces.Schedule{Requests: []traces.Request{{Offset: time.Second}, {Offset: 3 * time.Second}, {Offset: 7 * time.Second}}}
	for _, c := range []struct{ warmup, want time.Duration }{
		{0, time.Second}, {time.Second, time.Second}, {4 * time.Second, 7 * time.Second}, {8 * time.Second, 8 * time.Second},
	} {
		if got := profileOpenAt(s, c.warmup); got != c.want {
			t.Errorf("profileOpenAt(warm-up %s) = %s, want %s", c.warmup, got, c.want)
		}
	}
}
