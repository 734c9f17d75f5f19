package sim

import (
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(*Config)
		want   []string // substrings that must all appear; none: valid
	}{
		{"default is valid", func(*Config) {}, nil},
		{"override of a known op", func(c *Config) { c.Overrides = map[string]float64{"rmsnorm": 2.5} }, nil},
		{"every problem at once", func(c *Config) {
			c.Model.Layers = 0
			c.GPU.GEMMTFLOPS = -1
			c.Scheduler.MaxNumSeqs = 0
			c.Scheduler.KVCacheTokens = -5
			c.TruthCapacity = 0
		}, []string{"model.layers", "gpu.gemm_tflops", "scheduler.max_num_seqs", "scheduler.kv_cache_tokens", "truth_capacity"}},
		{"unknown op", func(c *Config) { c.Overrides = map[string]float64{"layernorm": 2} }, []string{"overrides.layernorm: unknown op"}},
		{"zero factor", func(c *Config) { c.Overrides = map[string]float64{"rmsnorm": 0} }, []string{"overrides.rmsnorm"}},
		{"kv heads must divide heads", func(c *Config) { c.Model.KVHeads = 5 }, []string{"model.kv_heads"}},
		{"negative launch overhead", func(c *Config) { c.GPU.LaunchOverheadUs = -1 }, []string{"gpu.launch_overhead_us"}},
		{"empty name", func(c *Config) { c.Model.Name = "" }, []string{"model.name"}},
		{"ceiling of a known op", func(c *Config) { c.Ceilings = []string{"rmsnorm"} }, nil},
		{"ceiling problems", func(c *Config) {
			c.Ceilings = []string{"layernorm", "rmsnorm", "rmsnorm"}
			c.Overrides = map[string]float64{"rmsnorm": 2}
		}, []string{"ceilings[0]: unknown op", "ceilings[2]: op \"rmsnorm\" listed twice", "ceilings[1]: op \"rmsnorm\" is also in overrides"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := DefaultConfig()
			tc.mutate(&c)
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: nil, want errors %v", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestDecodeConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		yaml    string
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{"empty keeps defaults", "", "", func(t *testing.T, c Config) {
			if c.Model.Layers != 32 || c.Scheduler.MaxBatchTokens != 2048 {
				t.Errorf("defaults lost: %+v", c)
			}
		}},
		{"partial override", "scheduler:\n  max_num_seqs: 8\n  cpu_overhead_ms: 1.5\noverrides:\n  rmsnorm: 2.5\n", "", func(t *testing.T, c Config) {
			if c.Scheduler.MaxNumSeqs != 8 || c.Scheduler.CPUOverheadMs != 1.5 || c.Overrides["rmsnorm"] != 2.5 {
				t.Errorf("got %+v", c)
			}
			if c.Scheduler.MaxBatchTokens != 2048 || c.Model.HiddenSize != 4096 {
				t.Errorf("defaults lost: %+v", c)
			}
		}},
		{"unknown key names its line", "scheduler:\n  max_seqs: 8\n", "line 2", nil},
		{"invalid value", "gpu:\n  gemm_tflops: 0\n", "gpu.gemm_tflops", nil},
		{"unknown op", "overrides:\n  softmax: 2\n", "overrides.softmax", nil},
		// The checks a run config's server.sim block gets: a decimal is
		// refused, never truncated (yaml.v3 alone made layers 31).
		{"decimal whole number refused", "model:\n  layers: 31.9\n", "model.layers (line 2): 31.9 is not a whole number", nil},
		{"text for a number", "gpu:\n  gemm_tflops: fast\n", `gpu.gemm_tflops (line 2): "fast" is not a number`, nil},
		{"unknown key: field and line", "scheduler:\n  max_seqs: 8\n", "scheduler.max_seqs (line 2): unknown key", nil},
		{"range error: field and line", "gpu:\n  name: g\n  gemm_tflops: 0\n", "gpu.gemm_tflops (line 3): must be a finite number > 0, got 0", nil},
		{"null keeps the default", "model:\n  layers: ~\n", "", func(t *testing.T, c Config) {
			if c.Model.Layers != 32 {
				t.Errorf("layers = %d, want the default 32", c.Model.Layers)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := DecodeConfig(strings.NewReader(tc.yaml), "test.yaml")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "test.yaml") {
					t.Fatalf("err = %v, want one naming test.yaml and %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeConfig: %v", err)
			}
			tc.check(t, c)
		})
	}
}

// TestConfigYAMLRoundTrip checks that every field has a YAML key that decodes back (KnownFields).
func TestConfigYAMLRoundTrip(t *testing.T) {
	t.Parallel()
	want := DefaultConfig()
	want.Overrides = map[string]float64{"silu_mul": 1.7}
	want.Scheduler.KVCacheTokens = 100000
	b, err := yaml.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeConfig(strings.NewReader(string(b)), "roundtrip")
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if got.Model != want.Model || got.GPU != want.GPU || got.Scheduler != want.Scheduler || got.Overrides["silu_mul"] != 1.7 || got.TruthCapacity != want.TruthCapacity {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

// TestParseAndSetOverride: "OP=FACTOR" parses to its op and number, a
// missing "=" or a non-number is refused naming the spec, and SetOverride
// fills a nil map.
func TestParseAndSetOverride(t *testing.T) {
	t.Parallel()
	op, f, err := ParseOverride("rmsnorm=2.5")
	if err != nil || op != "rmsnorm" || f != 2.5 {
		t.Fatalf("ParseOverride = %q, %g, %v", op, f, err)
	}
	for _, bad := range []string{"rmsnorm", "rmsnorm=fast", "=x"} {
		if _, _, err := ParseOverride(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseOverride(%q): %v, want a refusal naming it", bad, err)
		}
	}
	var c Config
	c.SetOverride(op, f)
	if c.Overrides[op] != 2.5 {
		t.Errorf("Overrides = %v", c.Overrides)
	}
}

// TestLoadConfigWith: overrides land on the defaults (no file), a bad spec
// is refused naming it, and an override the config check refuses (an
// unknown op, a factor ≤ 0) is refused after applying.
func TestLoadConfigWith(t *testing.T) {
	t.Parallel()
	c, err := LoadConfigWith("", []string{"rmsnorm=2.5"})
	if err != nil || c.Overrides["rmsnorm"] != 2.5 || c.Model != DefaultConfig().Model {
		t.Fatalf("defaults with rmsnorm=2.5: %+v, %v", c.Overrides, err)
	}
	for _, bad := range []string{"rmsnorm", "nosuchop=2", "rmsnorm=0"} {
		if _, err := LoadConfigWith("", []string{bad}); err == nil {
			t.Errorf("override %q accepted", bad)
		}
	}
	if _, err := LoadConfigWith(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v, want an error naming it", err)
	}
}
