package integrate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func envValue(env []string, key string) (string, bool) {
	v, ok := "", false
	for _, kv := range env {
		if k, val, _ := strings.Cut(kv, "="); k == key {
			v, ok = val, true
		}
	}
	return v, ok
}

func TestReferenceSpec(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := writeKernel(t, dir)
	cases := []struct {
		name         string
		cfg          ReferenceConfig
		ov           *Override
		wantManifest bool
		wantTimings  bool
	}{
		{name: "baseline", cfg: ReferenceConfig{}},
		{name: "candidate", cfg: ReferenceConfig{}, ov: &Override{Target: "a:C.f", Candidate: k + ":f"}, wantManifest: true},
		{name: "override off is no override", cfg: ReferenceConfig{}, ov: &Override{Target: "a:C.f", Mode: ModeOff}},
		{name: "baseline with hook timings", cfg: ReferenceConfig{HookTimings: true}, wantManifest: true, wantTimings: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "arm")
			spec, err := ReferenceSpec(tc.cfg, tc.ov, out)
			if err != nil {
				t.Fatal(err)
			}
			if spec.Argv[0] != "python3" || !strings.HasSuffix(spec.Argv[1], "refserver.py") {
				t.Errorf("argv = %v", spec.Argv)
			}
			for _, f := range []string{spec.Argv[1], filepath.Join(out, "python", "shim", "sitecustomize.py"),
				filepath.Join(out, "python", "shim", "tlhook", "__init__.py"),
				filepath.Join(out, "python", "shim", "tlhook-0.1.0.dist-info", "entry_points.txt"),
				filepath.Join(out, "python", "validate_gate.py")} {
				if _, err := os.Stat(f); err != nil {
					t.Errorf("embedded file not written: %v", err)
				}
			}
			pp, _ := envValue(spec.Env, "PYTHONPATH")
			if !strings.HasPrefix(pp, filepath.Join(out, "python", "shim")) {
				t.Errorf("PYTHONPATH = %q", pp)
			}
			man, _ := envValue(spec.Env, EnvOverrideManifest)
			if (man != "") != tc.wantManifest {
				t.Errorf("%s = %q, want set: %v", EnvOverrideManifest, man, tc.wantManifest)
			}
			tim, _ := envValue(spec.Env, EnvHookTimings)
			if (tim != "") != tc.wantTimings {
				t.Errorf("%s = %q", EnvHookTimings, tim)
			}
			var cfg map[string]any
			b, err := os.ReadFile(filepath.Join(out, "refserver-config.json"))
			must(t, err)
			must(t, json.Unmarshal(b, &cfg))
			eng := cfg["engine"].(map[string]any)
			if cfg["dtype"] != "bfloat16" || cfg["weights"] != "random" || eng["attn_implementation"] != "paged|sdpa" ||
				eng["cb"].(map[string]any)["kv_padding_interval_size"] != float64(1024) {
				t.Errorf("effective config = %v", cfg)
			}
			if spec.Port <= 0 || spec.LogPath != filepath.Join(out, "server.log") {
				t.Errorf("spec = %+v", spec)
			}
		})
	}
}

func TestReferenceConfigValidate(t *testing.T) {
	t.Parallel()
	err := ReferenceConfig{Model: ReferenceModel{Preset: "gpt-9"}, DType: "int3", Weights: "/no/such/dir",
		Engine: ReferenceEngine{WarmupRequests: -1}}.Validate()
	for _, w := range []string{"reference.model.preset", "reference.dtype", "reference.weights", "warmup"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v, want mention of %s", err, w)
		}
	}
}

func TestWaitGPUIdle(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	t.Run("falls back to idle", func(t *testing.T) {
		var n atomic.Int64
		used := func(context.Context) (uint64, error) {
			if n.Add(1) < 4 {
				return 60000 * mib, nil // the last arm's server is still freeing memory
			}
			return 700 * mib, nil
		}
		got, err := WaitGPUIdle(context.Background(), used, 500*mib, IdlePoll(time.Millisecond))
		if err != nil || got != 700*mib {
			t.Errorf("got %d, %v", got>>20, err)
		}
	})
	t.Run("stays busy", func(t *testing.T) {
		used := func(context.Context) (uint64, error) { return 60000 * mib, nil }
		_, err := WaitGPUIdle(context.Background(), used, 500*mib, IdlePoll(time.Millisecond),
			IdleTimeout(50*time.Millisecond))
		if !errors.Is(err, ErrGPUNotIdle) || !strings.Contains(err.Error(), "60000 MiB") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("reader fails", func(t *testing.T) {
		used := func(context.Context) (uint64, error) { return 0, errors.New("no driver") }
		_, err := WaitGPUIdle(context.Background(), used, 0, IdlePoll(time.Millisecond), IdleTimeout(20*time.Millisecond))
		if !errors.Is(err, ErrGPUNotIdle) || !strings.Contains(err.Error(), "no driver") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestParseSMIMiB(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]uint64{"1234\n": 1234 << 20, " 0 ": 0, "17\n18\n": 17 << 20} {
		if got, err := parseSMIMiB(in); err != nil || got != want {
			t.Errorf("parseSMIMiB(%q) = %d, %v", in, got, err)
		}
	}
	if _, err := parseSMIMiB("[N/A]"); err == nil {
		t.Error("[N/A] accepted")
	}
}

// TestReferenceSpecLaunchesFakeServer runs ReferenceSpec's argv and environment
// through Launch against testdata/fake_refserver.py (a CPU stand-in with the
// reference server's command line and endpoints), so the spec, the manifest
// hand-over and the client calls are checked without a GPU.
func TestReferenceSpecLaunchesFakeServer(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH")
	}
	fake, err := filepath.Abs(filepath.Join("testdata", "fakepython"))
	must(t, err)
	dir := t.TempDir()
	k := writeKernel(t, dir)
	ov := &Override{Target: "m:C.forward", Candidate: k + ":f", Mode: ModeOn}
	spec, err := ReferenceSpec(ReferenceConfig{Python: fake, ReadyTimeout: 60 * time.Second}, ov, filepath.Join(dir, "arm"))
	must(t, err)
	ctx := context.Background()
	p, err := Launch(ctx, spec)
	must(t, err)
	defer p.Close(ctx)
	m, err := p.Manifest(ctx)
	must(t, err)
	if m["server"] != "fake-refserver" {
		t.Errorf("manifest = %v", m)
	}
	st, err := p.HookStats(ctx)
	must(t, err)
	o := st.Override("")
	if o == nil || o.Mode != ModeOn || o.Target != "m:C.forward" || !strings.HasSuffix(o.Candidate, "k.py:f") {
		t.Errorf("hook stats = %+v", st)
	}
	must(t, p.Close(ctx))
	if p.Err() != nil {
		t.Errorf("Err after Close = %v", p.Err())
	}
}
