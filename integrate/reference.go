package integrate

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/transferlab/transferlab/internal/outpath"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// python holds the reference server, the hook shim and the validation gate.
//
//go:embed python/refserver.py python/validate_gate.py python/shim/sitecustomize.py python/shim/tlhook/__init__.py python/shim/tlhook-0.1.0.dist-info
var python embed.FS

// DefaultRMSNormTarget is the hook target timed on the baseline when hook
// timings are asked for and the arm has no override.
const DefaultRMSNormTarget = "transformers.models.llama.modeling_llama:LlamaRMSNorm.forward"

// ReferenceConfig configures the reference server (integrate/python/refserver.py).
// Zero fields take the defaults stated on each.
type ReferenceConfig struct {
	// Python is the interpreter that has torch, transformers, triton and aiohttp (default "python3").
	Python string `yaml:"python,omitempty" json:"python,omitempty"`
	// Model is the model shape: a preset (llama3-8b, the default; llama-tiny) plus LlamaConfig overrides.
	Model ReferenceModel `yaml:"model,omitempty" json:"model"`
	// DType is the weights' dtype (default bfloat16).
	DType string `yaml:"dtype,omitempty" json:"dtype"`
	// Seed seeds random initialisation (and warm-up prompts).
	Seed int64 `yaml:"seed,omitempty" json:"seed"`
	// Weights is "random" (default: random init straight on the GPU, seeded; the
	// compute is the same as trained weights) or a Hugging Face model folder.
	Weights string `yaml:"weights,omitempty" json:"weights"`
	// Engine configures transformers' continuous-batching engine.
	Engine ReferenceEngine `yaml:"engine,omitempty" json:"engine"`
	// ServedModelName is the OpenAI model id (default "transferlab-ref").
	ServedModelName string `yaml:"served_model_name,omitempty" json:"served_model_name,omitempty"`
	// ReadyTimeout bounds start-up (default DefaultReadyTimeout).
	ReadyTimeout time.Duration `yaml:"ready_timeout,omitempty" json:"-"`
	// Env adds KEY=VALUE pairs to the server's environment.
	Env []string `yaml:"env,omitempty" json:"-"`
	// HookTimings asks the hook to time every eager call of the target with CUDA
	// events (amdahl/HOOK_TIMINGS.md), written to <outDir>/hook-timings.json. On an
	// arm with no override, ProfileTarget is timed in mode off.
	HookTimings bool `yaml:"hook_timings,omitempty" json:"-"`
	// HookWindow is the timing window length (default 10 s).
	HookWindow time.Duration `yaml:"hook_window,omitempty" json:"-"`
	// ProfileTarget is the target timed on arms without an override (default DefaultRMSNormTarget).
	ProfileTarget string `yaml:"profile_target,omitempty" json:"-"`
}

// ReferenceModel picks the model shape.
type ReferenceModel struct {
	// Preset is llama3-8b (default) or llama-tiny.
	Preset string `yaml:"preset,omitempty" json:"preset"`
	// Params override LlamaConfig fields (e.g. num_hidden_layers).
	Params map[string]any `yaml:"params,omitempty" json:"params,omitempty"`
}

// ReferenceEngine configures the continuous-batching engine.
type ReferenceEngine struct {
	// AttnImplementation is transformers' attention implementation (default "paged|sdpa").
	AttnImplementation string `yaml:"attn_implementation,omitempty" json:"attn_implementation"`
	// CB holds ContinuousBatchingConfig fields (transformers 5.17). Default
	// DefaultCB: CUDA graphs on, KV padding 1024 tokens, half the card for the
	// model and KV cache (the rest stays free for candidates and measurement).
	CB map[string]any `yaml:"cb,omitempty" json:"cb"`
	// WarmupRequests, WarmupPromptTokens and WarmupOutputTokens shape the warm-up
	// run before the server reports ready (defaults 8, 512, 16).
	WarmupRequests     int `yaml:"warmup_requests,omitempty" json:"warmup_requests"`
	WarmupPromptTokens int `yaml:"warmup_prompt_tokens,omitempty" json:"warmup_prompt_tokens"`
	WarmupOutputTokens int `yaml:"warmup_output_tokens,omitempty" json:"warmup_output_tokens"`
}

// DefaultCB is the continuous-batching configuration used when none is given,
// chosen on the H200 (results/h200-*/ENGINE.md): CUDA graphs for the varlen path
// (transformers turns them off by default for paged|sdpa), the KV padding
// interval cut from 16384 to 1024 tokens (at 16384, every decode step's attention
// ran over 16384 padded keys: ~1 ms per layer), and max_memory_percent 0.5.
func DefaultCB() map[string]any {
	return map[string]any{"use_cuda_graph": true, "kv_padding_interval_size": 1024,
		"q_padding_interval_size": 64, "max_memory_percent": 0.5}
}

// Effective returns the config with defaults filled in.
func (c ReferenceConfig) Effective() ReferenceConfig {
	if c.Python == "" {
		c.Python = "python3"
	}
	if c.Model.Preset == "" {
		c.Model.Preset = "llama3-8b"
	}
	if c.DType == "" {
		c.DType = "bfloat16"
	}
	if c.Weights == "" {
		c.Weights = "random"
	}
	if c.Engine.AttnImplementation == "" {
		c.Engine.AttnImplementation = "paged|sdpa"
	}
	if c.Engine.CB == nil {
		c.Engine.CB = DefaultCB()
	}
	if c.Engine.WarmupRequests == 0 {
		c.Engine.WarmupRequests = 8
	}
	if c.Engine.WarmupPromptTokens == 0 {
		c.Engine.WarmupPromptTokens = 512
	}
	if c.Engine.WarmupOutputTokens == 0 {
		c.Engine.WarmupOutputTokens = 16
	}
	if c.ServedModelName == "" {
		c.ServedModelName = "transferlab-ref"
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	if c.HookWindow <= 0 {
		c.HookWindow = 10 * time.Second
	}
	if c.ProfileTarget == "" {
		c.ProfileTarget = DefaultRMSNormTarget
	}
	return c
}

// Validate reports every problem at once, each naming its field.
func (c ReferenceConfig) Validate() error {
	var errs []error
	switch c.Model.Preset {
	case "", "llama3-8b", "llama-tiny":
	default:
		errs = append(errs, fmt.Errorf("reference.model.preset: %q is not llama3-8b or llama-tiny", c.Model.Preset))
	}
	switch c.DType {
	case "", "bfloat16", "float16", "float32":
	default:
		errs = append(errs, fmt.Errorf("reference.dtype: %q is not bfloat16, float16 or float32", c.DType))
	}
	if c.Weights != "" && c.Weights != "random" {
		if st, err := os.Stat(c.Weights); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("reference.weights: %q is neither random nor a model folder", c.Weights))
		}
	}
	if c.Engine.WarmupRequests < 0 || c.Engine.WarmupPromptTokens < 0 || c.Engine.WarmupOutputTokens < 0 {
		errs = append(errs, errors.New("reference.engine.warmup_*: must be >= 0"))
	}
	return errors.Join(errs...)
}

// WriteEmbeddedPython writes the embedded Python (refserver.py, validate_gate.py,
// shim/) under dir/python and returns that folder.
func WriteEmbeddedPython(dir string) (string, error) {
	root := filepath.Join(dir, "python")
	err := fs.WalkDir(python, "python", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return outpath.MkdirAll("output folder", dst)
		}
		b, err := python.ReadFile(p)
		if err != nil {
			return err
		}
		return outpath.WriteFile(dst, b)
	})
	if err != nil {
		return "", fmt.Errorf("integrate: writing embedded python to %s: %w", root, err)
	}
	return root, nil
}

// ReferenceSpec is the reference server as a preset of CommandSpec: it
// writes the embedded server and hook into outDir and returns the Spec that
// launches, on a free port, argv = python refserver.py --config
// <outDir>/refserver-config.json --host {host} --port {port}, ready at
// /health, with PYTHONUNBUFFERED=1 and cfg.Env. With ov (mode other than off),
// or with hook timings on, the hook is injected as for any command server
// (CommandSpec): its receipts and stats go to <outDir>/hook/, and the server
// must show an install receipt before it counts as started. Log:
// <outDir>/server.log. It does not check the validation report: call
// CheckValidation first.
func ReferenceSpec(cfg ReferenceConfig, ov *Override, outDir string) (Spec, error) {
	cmd, hook, err := ReferenceCommand(cfg, ov, outDir)
	if err != nil {
		return Spec{}, err
	}
	spec, err := CommandSpec(cmd, hook, outDir)
	if err != nil {
		return Spec{}, err
	}
	// cfg.Env is KEY=VALUE pairs, added after the preset's, in order.
	spec.Env = append(spec.Env, cfg.Env...)
	return spec, nil
}

// ReferenceCommand is the CommandConfig and HookSetup of the reference
// server preset (ReferenceSpec): it writes the embedded server and its
// config (<outDir>/python, <outDir>/refserver-config.json) and returns the
// command that starts it. cfg.Env is not in it (ReferenceSpec appends it).
func ReferenceCommand(cfg ReferenceConfig, ov *Override, outDir string) (CommandConfig, HookSetup, error) {
	if err := cfg.Validate(); err != nil {
		return CommandConfig{}, HookSetup{}, fmt.Errorf("integrate: %w", err)
	}
	cfg = cfg.Effective()
	if strings.ContainsRune(cfg.Python, os.PathSeparator) && !filepath.IsAbs(cfg.Python) {
		// The server runs in outDir: a relative interpreter path means the caller's folder.
		abs, err := filepath.Abs(cfg.Python)
		if err != nil {
			return CommandConfig{}, HookSetup{}, fmt.Errorf("integrate: reference.python: %w", err)
		}
		cfg.Python = abs
	}
	if err := outpath.MkdirAll("output folder", outDir); err != nil {
		return CommandConfig{}, HookSetup{}, fmt.Errorf("integrate: %w", err)
	}
	abs, err := filepath.Abs(outDir)
	if err != nil {
		return CommandConfig{}, HookSetup{}, fmt.Errorf("integrate: %w", err)
	}
	pyDir, err := WriteEmbeddedPython(abs)
	if err != nil {
		return CommandConfig{}, HookSetup{}, err
	}
	cfgPath := filepath.Join(abs, "refserver-config.json")
	b, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		return CommandConfig{}, HookSetup{}, fmt.Errorf("integrate: reference config: %w", err)
	}
	if err := outpath.WriteFile(cfgPath, b); err != nil {
		return CommandConfig{}, HookSetup{}, fmt.Errorf("integrate: %w", err)
	}
	var hook HookSetup
	switch {
	case ov != nil && ov.EffectiveMode() != ModeOff:
		hook.Override = ov
	case cfg.HookTimings:
		base := Override{Name: "profile", Target: cfg.ProfileTarget, Mode: ModeOff}
		if ov != nil {
			base = *ov
		}
		hook.Override = &base
	}
	if hook.Override != nil && cfg.HookTimings {
		hook.TimingsFile, hook.Window = filepath.Join(abs, "hook-timings.json"), cfg.HookWindow
	}
	return CommandConfig{
		Argv: []string{cfg.Python, filepath.Join(pyDir, "refserver.py"), "--config", cfgPath,
			"--host", "{host}", "--port", "{port}"},
		Env:          map[string]string{"PYTHONUNBUFFERED": "1"},
		Cwd:          abs,
		ReadyPath:    DefaultReadyPath,
		ReadyTimeout: cfg.ReadyTimeout,
		StopGrace:    DefaultGrace,
	}, hook, nil
}
