package sim

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/transferlab/transferlab/internal/yamlcheck"
)

// Config is the simulated server's whole configuration. YAML keys are
// snake_case; unknown keys are rejected by DecodeConfig. Start from
// DefaultConfig and change what differs.
type Config struct {
	// Model is the shape of the simulated transformer.
	Model ModelConfig `yaml:"model" json:"model"`
	// GPU holds the achievable rates the roofline cost model divides by.
	GPU GPUConfig `yaml:"gpu" json:"gpu"`
	// Scheduler holds the continuous-batching limits and the per-step CPU overhead.
	Scheduler SchedulerConfig `yaml:"scheduler" json:"scheduler"`
	// Overrides maps an op name (OpNames) to a speedup factor > 0: that op's
	// time, launch overhead included, is divided by the factor. Empty: baseline.
	Overrides map[string]float64 `yaml:"overrides,omitempty" json:"overrides,omitempty"`
	// Ceilings lists ops (OpNames) that cost nothing: their time and launches
	// are zero, as if the op's work were removed. It models a ceiling arm (the
	// most any kernel for that op could give); an op is either overridden or a
	// ceiling, not both.
	Ceilings []string `yaml:"ceilings,omitempty" json:"ceilings,omitempty"`
	// Noise is the run-to-run noise model (off by default: the deterministic
	// stand-in). Replay, OpShares and Capacity ignore it: they are the
	// noiseless truth.
	Noise NoiseConfig `yaml:"noise" json:"noise"`
	// TruthCapacity bounds how many requests' ground truth is kept; the oldest
	// is dropped first. Each costs ≈ 16 B per token plus ≈ 300 B (16384
	// requests of 265 tokens ≈ 75 MB). Default 16384.
	TruthCapacity int `yaml:"truth_capacity" json:"truth_capacity"`
}

// ModelConfig is the transformer's shape. Defaults are Llama-3-8B's
// (meta-llama/Meta-Llama-3-8B config.json).
type ModelConfig struct {
	// Name is the served model name reported by /v1/models and accepted in
	// requests ("" in a request also accepted).
	Name string `yaml:"name" json:"name"`
	// Layers is the number of decoder layers (32).
	Layers int `yaml:"layers" json:"layers"`
	// HiddenSize is the residual width (4096).
	HiddenSize int `yaml:"hidden_size" json:"hidden_size"`
	// Heads is the number of query heads (32).
	Heads int `yaml:"heads" json:"heads"`
	// KVHeads is the number of key/value heads, grouped-query attention (8).
	KVHeads int `yaml:"kv_heads" json:"kv_heads"`
	// HeadDim is the per-head width (128).
	HeadDim int `yaml:"head_dim" json:"head_dim"`
	// IntermediateSize is the MLP width (14336).
	IntermediateSize int `yaml:"intermediate_size" json:"intermediate_size"`
	// VocabSize is the vocabulary size (128256); token ids must be below it.
	VocabSize int `yaml:"vocab_size" json:"vocab_size"`
	// DTypeBytes is the bytes per weight/activation element (2: bf16).
	DTypeBytes int `yaml:"dtype_bytes" json:"dtype_bytes"`
	// MaxModelLen is the context length in tokens: prompt + max_tokens must fit (8192).
	MaxModelLen int `yaml:"max_model_len" json:"max_model_len"`
}

// GPUConfig holds achievable (not peak) rates. Defaults are an H200-like GPU:
// see COSTMODEL.md for the measured and datasheet numbers they derive from.
type GPUConfig struct {
	// Name labels the simulated GPU.
	Name string `yaml:"name" json:"name"`
	// GEMMTFLOPS is the achievable dense bf16 matrix rate of the projection
	// GEMMs, in 10^12 FLOP/s (670: 85 % of the 788 measured here on 8192³).
	GEMMTFLOPS float64 `yaml:"gemm_tflops" json:"gemm_tflops"`
	// GEMMBandwidthTBps is the achievable weight-streaming bandwidth of the GEMMs,
	// in 10^12 B/s (3.9: 90 % of the 4.3 TB/s copy measured here).
	GEMMBandwidthTBps float64 `yaml:"gemm_bandwidth_tbps" json:"gemm_bandwidth_tbps"`
	// AttentionTFLOPS is the achievable flash-attention bf16 rate, 10^12 FLOP/s (400).
	AttentionTFLOPS float64 `yaml:"attention_tflops" json:"attention_tflops"`
	// AttentionBandwidthTBps is the achievable paged-KV read bandwidth, 10^12 B/s (3.4).
	AttentionBandwidthTBps float64 `yaml:"attention_bandwidth_tbps" json:"attention_bandwidth_tbps"`
	// ElementwiseBandwidthTBps is the achievable bandwidth of the small
	// memory-bound kernels (RMSNorm, SiLU·mul, rotary, embedding, sampling), 10^12 B/s (3.0).
	ElementwiseBandwidthTBps float64 `yaml:"elementwise_bandwidth_tbps" json:"elementwise_bandwidth_tbps"`
	// VectorTFLOPS is the achievable non-tensor-core FP32 rate used for the
	// elementwise ops' arithmetic, 10^12 FLOP/s (50: 75 % of the 67 datasheet).
	VectorTFLOPS float64 `yaml:"vector_tflops" json:"vector_tflops"`
	// LaunchOverheadUs is the fixed GPU time each kernel launch adds, in µs (3).
	LaunchOverheadUs float64 `yaml:"launch_overhead_us" json:"launch_overhead_us"`
}

// SchedulerConfig holds the continuous-batching limits (vLLM-like names).
type SchedulerConfig struct {
	// MaxBatchTokens is the per-step token budget (prefill chunk tokens plus one
	// per decoding sequence); prefills longer than what is left are chunked (2048).
	MaxBatchTokens int `yaml:"max_batch_tokens" json:"max_batch_tokens"`
	// MaxNumSeqs caps the sequences running at once (256).
	MaxNumSeqs int `yaml:"max_num_seqs" json:"max_num_seqs"`
	// KVCacheTokens is the KV-cache capacity in tokens; a request is admitted
	// only when prompt + max_tokens fits in what is free (reserved whole at
	// admission, so there is no preemption). 0: unlimited.
	KVCacheTokens int `yaml:"kv_cache_tokens" json:"kv_cache_tokens"`
	// CPUOverheadMs is the fixed host time each step adds (scheduling, Python,
	// input preparation), in ms (3). It is not GPU time and no override touches it.
	CPUOverheadMs float64 `yaml:"cpu_overhead_ms" json:"cpu_overhead_ms"`
	// MaxCatchUpMs is how late (ms) a busy step may be planned after its due
	// start (the previous step's deadline) and still keep that start, so the
	// lateness is made up by ending on the absolute deadline; a longer host
	// stall restarts the timeline at the planning time (50). It is about the
	// host running the simulator, not the simulated GPU: on a loaded 2-core
	// host, wake-ups 10–50 ms late are common, and with 10 ms the lost time
	// biased the quickstart's light-load E2E by ~3 %.
	MaxCatchUpMs float64 `yaml:"max_catch_up_ms" json:"max_catch_up_ms"`
}

// DefaultConfig is Llama-3-8B (bf16) on an H200-like GPU with vLLM-like
// scheduler limits; COSTMODEL.md gives the source of every number.
func DefaultConfig() Config {
	return Config{
		Model: ModelConfig{
			Name:             "sim-llama-3-8b",
			Layers:           32,
			HiddenSize:       4096,
			Heads:            32,
			KVHeads:          8,
			HeadDim:          128,
			IntermediateSize: 14336,
			VocabSize:        128256,
			DTypeBytes:       2,
			MaxModelLen:      8192,
		},
		GPU: GPUConfig{
			Name:                     "H200-like (simulated)",
			GEMMTFLOPS:               670,
			GEMMBandwidthTBps:        3.9,
			AttentionTFLOPS:          400,
			AttentionBandwidthTBps:   3.4,
			ElementwiseBandwidthTBps: 3.0,
			VectorTFLOPS:             50,
			LaunchOverheadUs:         3,
		},
		Scheduler: SchedulerConfig{
			MaxBatchTokens: 2048,
			MaxNumSeqs:     256,
			KVCacheTokens:  0,
			CPUOverheadMs:  3,
			MaxCatchUpMs:   50,
		},
		TruthCapacity: 16384,
	}
}

// DecodeConfig reads a YAML sim config on top of DefaultConfig (keys left
// out, or set to null, keep their defaults) and validates it, reporting
// every problem at once as `field (line N): message` with the checks a run
// config's `server.sim` block gets (internal/yamlcheck): unknown keys, values
// of the wrong type (2.9 in a whole-number field is refused, never
// truncated), then Validate's range checks. name labels errors (a file path).
func DecodeConfig(r io.Reader, name string) (Config, error) {
	cfg := DefaultConfig()
	root, err := yamlcheck.Parse(r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, nil // an empty file: the defaults
		}
		return Config{}, fmt.Errorf("sim config %s: %w", name, err)
	}
	chk := yamlcheck.Check(root, reflect.TypeOf(Config{}))
	problems := chk.Problems()
	if err := root.Decode(&cfg); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return Config{}, fmt.Errorf("sim config %s: %w", name, errors.Join(append(problems, chk.Locate(err)...)...))
		}
		for _, e := range te.Errors {
			problems = append(problems, chk.Locate(errors.New(e))...)
		}
	}
	problems = append(problems, chk.Locate(cfg.Validate())...)
	if len(problems) > 0 {
		return Config{}, fmt.Errorf("sim config %s: %w", name, errors.Join(problems...))
	}
	return cfg, nil
}

// SetOverride divides op's time by factor (Config.Overrides[op]; serve-sim
// --override OP=FACTOR, bench-client --sim-speedup); Validate checks both.
func (c *Config) SetOverride(op string, factor float64) {
	if c.Overrides == nil {
		c.Overrides = map[string]float64{}
	}
	c.Overrides[op] = factor
}

// ParseOverride reads "OP=FACTOR" (serve-sim --override) as SetOverride's
// arguments; FACTOR must be a number.
func ParseOverride(spec string) (op string, factor float64, err error) {
	op, val, ok := strings.Cut(spec, "=")
	factor, err = strconv.ParseFloat(val, 64)
	if !ok || err != nil {
		return "", 0, fmt.Errorf("override %q: want OP=FACTOR with a number FACTOR", spec)
	}
	return op, factor, nil
}

// LoadConfig is DecodeConfig of the YAML file at path, or DefaultConfig
// when path is "".
func LoadConfig(path string) (Config, error) {
	if path == "" {
		return DefaultConfig(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("sim config: %w", err)
	}
	defer f.Close()
	return DecodeConfig(f, path)
}

// LoadConfigWith is LoadConfig of path (the defaults when "") with each
// "OP=FACTOR" of overrides applied (ParseOverride, SetOverride: serve-sim
// --override), then validated.
func LoadConfigWith(path string, overrides []string) (Config, error) {
	cfg, err := LoadConfig(path)
	if err != nil {
		return cfg, err
	}
	for _, o := range overrides {
		op, factor, err := ParseOverride(o)
		if err != nil {
			return cfg, err
		}
		cfg.SetOverride(op, factor)
	}
	return cfg, cfg.Validate()
}

// Validate reports every problem at once (errors.Join), each naming its YAML field.
func (c Config) Validate() error {
	var errs []error
	positive := func(field string, v int) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s: must be ≥ 1, got %d", field, v))
		}
	}
	positiveF := func(field string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("%s: must be a finite number > 0, got %v", field, v))
		}
	}
	m := c.Model
	if m.Name == "" {
		errs = append(errs, errors.New("model.name: must not be empty"))
	}
	positive("model.layers", m.Layers)
	positive("model.hidden_size", m.HiddenSize)
	positive("model.heads", m.Heads)
	positive("model.kv_heads", m.KVHeads)
	positive("model.head_dim", m.HeadDim)
	positive("model.intermediate_size", m.IntermediateSize)
	positive("model.vocab_size", m.VocabSize)
	positive("model.dtype_bytes", m.DTypeBytes)
	positive("model.max_model_len", m.MaxModelLen)
	if m.KVHeads >= 1 && m.Heads >= 1 && m.Heads%m.KVHeads != 0 {
		errs = append(errs, fmt.Errorf("model.kv_heads: %d does not divide model.heads %d", m.KVHeads, m.Heads))
	}
	g := c.GPU
	positiveF("gpu.gemm_tflops", g.GEMMTFLOPS)
	positiveF("gpu.gemm_bandwidth_tbps", g.GEMMBandwidthTBps)
	positiveF("gpu.attention_tflops", g.AttentionTFLOPS)
	positiveF("gpu.attention_bandwidth_tbps", g.AttentionBandwidthTBps)
	positiveF("gpu.elementwise_bandwidth_tbps", g.ElementwiseBandwidthTBps)
	positiveF("gpu.vector_tflops", g.VectorTFLOPS)
	if !(g.LaunchOverheadUs >= 0) || math.IsInf(g.LaunchOverheadUs, 0) {
		errs = append(errs, fmt.Errorf("gpu.launch_overhead_us: must be a finite number ≥ 0, got %v", g.LaunchOverheadUs))
	}
	s := c.Scheduler
	positive("scheduler.max_batch_tokens", s.MaxBatchTokens)
	positive("scheduler.max_num_seqs", s.MaxNumSeqs)
	if s.KVCacheTokens < 0 {
		errs = append(errs, fmt.Errorf("scheduler.kv_cache_tokens: must be ≥ 0 (0: unlimited), got %d", s.KVCacheTokens))
	}
	if !(s.CPUOverheadMs >= 0) || math.IsInf(s.CPUOverheadMs, 0) {
		errs = append(errs, fmt.Errorf("scheduler.cpu_overhead_ms: must be a finite number ≥ 0, got %v", s.CPUOverheadMs))
	}
	if !(s.MaxCatchUpMs >= 0) || math.IsInf(s.MaxCatchUpMs, 0) {
		errs = append(errs, fmt.Errorf("scheduler.max_catch_up_ms: must be a finite number ≥ 0, got %v", s.MaxCatchUpMs))
	}
	positive("truth_capacity", c.TruthCapacity)
	errs = append(errs, c.Noise.validate()...)
	keys := make([]string, 0, len(c.Overrides))
	for k := range c.Overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := c.Overrides[k]
		if _, ok := OpByName(k); !ok {
			errs = append(errs, fmt.Errorf("overrides.%s: unknown op (known: %v)", k, OpNames()))
			continue
		}
		positiveF("overrides."+k, v)
	}
	seen := map[string]bool{}
	for i, k := range c.Ceilings {
		switch _, ok := OpByName(k); {
		case !ok:
			errs = append(errs, fmt.Errorf("ceilings[%d]: unknown op %q (known: %v)", i, k, OpNames()))
		case seen[k]:
			errs = append(errs, fmt.Errorf("ceilings[%d]: op %q listed twice", i, k))
		default:
			if _, both := c.Overrides[k]; both {
				errs = append(errs, fmt.Errorf("ceilings[%d]: op %q is also in overrides (an op is sped up or removed, not both)", i, k))
			}
		}
		seen[k] = true
	}
	return errors.Join(errs...)
}
