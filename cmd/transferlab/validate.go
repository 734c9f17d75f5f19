package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"go.yaml.in/yaml/v3"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/internal/yamlcheck"
	"github.com/transferlab/transferlab/traces"
)

type validateOpts struct {
	arm, out, captured, controlsFile string
	shadowFile, timing               string
	only                             []string
	requests, concurrency, maxShapes int
	controls, noShadow, profile      bool
	timeout                          time.Duration
}

// newValidateCmd builds `transferlab validate CONFIG --arm NAME`: the validation
// gate (DESIGN.md, "Validation gate") on the GPU machine.
func newValidateCmd() *cobra.Command {
	var o validateOpts
	cmd := &cobra.Command{
		Use:   "validate CONFIG.yaml --arm NAME",
		Short: "Validate a candidate kernel on the shapes the reference server really produces (GPU)",
		Long: `validate runs, on the GPU machine, for the override of one arm of an experiment
config whose server is the reference server:
  1. capture: the server with the hook in capture mode serves the first --requests
     requests of the config's trace (closed loop, --concurrency); every distinct
     (shape, dtype, strides, contiguity) the target saw is written with its count
     to OUT/captured-shapes.json (skipped with --captured FILE);
  2. shadow: the server with the hook in shadow mode serves the same requests; the
     candidate runs beside the original on the first shadow_calls eager calls and
     the worst difference per gate goes into the report (skipped with --no-shadow);
  3. the gate (integrate/python/validate_gate.py) checks output shape and dtype,
     all elements written, values within a dtype-aware tolerance, NaN/Inf
     propagation and determinism on the captured and on held-out stress shapes,
     and times candidate and original per captured shape (CUDA events, >= 30
     repeats, median) into s, their frequency-weighted geometric mean;
  4. with --controls, the shipped negative controls are validated on the same
     captured set and each verdict is checked against its expected reason.
Reports: OUT/validation-<name>.json (hashed by run), OUT/validation-summary.md.
Point the arm's override at the report (validation_report) and the captured set
(captured_shapes); run refuses it when missing, failing or stale.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.out == "" {
				o.out = defaultValidateOut(time.Now())
				fmt.Fprintf(cmd.OutOrStdout(), "validate: writing to %s (no --out given)\n", o.out)
			}
			return runValidate(cmd.Context(), cmd.OutOrStdout(), args[0], o, os.Args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.arm, "arm", "", "arm whose override is validated (required)")
	f.StringVar(&o.out, "out", "", "output folder (default: runs/validation-<UTC time>, relative to the working folder)")
	f.StringVar(&o.captured, "captured", "", "use this captured shape set instead of capturing one")
	f.IntVar(&o.requests, "requests", 48, "trace requests replayed for capture and for shadow")
	f.IntVar(&o.concurrency, "concurrency", 16, "closed-loop concurrency of the capture and shadow replays")
	f.IntVar(&o.maxShapes, "max-shapes", 64, "most frequent captured signatures validated (coverage is reported)")
	f.BoolVar(&o.controls, "controls", false, "also validate the shipped negative controls and check their verdicts")
	f.StringVar(&o.controlsFile, "controls-file", "configs/kernels/rmsnorm_negative_controls.py", "file holding the negative controls")
	f.BoolVar(&o.noShadow, "no-shadow", false, "skip the shadow-mode live check")
	f.StringVar(&o.shadowFile, "shadow", "", "reuse the hook stats of an earlier shadow run (implies --no-shadow)")
	f.StringVar(&o.timing, "timing", "graph", "isolated timing: graph (CUDA-graph replay, as the reference server runs) or eager")
	f.StringSliceVar(&o.only, "control", nil, "with --controls, validate only these controls (repeatable)")
	f.BoolVar(&o.profile, "profile", false, "during capture, also take torch-profiler windows at concurrency 1 and --concurrency")
	f.DurationVar(&o.timeout, "request-timeout", 5*time.Minute, "timeout of one request")
	_ = cmd.MarkFlagRequired("arm")
	return cmd
}

// defaultValidateOut is validate's output folder when --out is not given:
// runs/validation-<UTC time of now, YYYYMMDD-HHMMSS>, relative to the
// working folder (as run's runs/<config name>-<UTC time>).
func defaultValidateOut(now time.Time) string {
	return filepath.Join("runs", "validation-"+now.UTC().Format("20060102-150405"))
}

func runValidate(ctx context.Context, w io.Writer, cfgPath string, o validateOpts, argv []string) error {
	cfg, err := loadValidateConfig(cfgPath)
	if err != nil {
		return err
	}
	if cfg.Server.Kind != "reference" || cfg.Server.Reference == nil {
		return fmt.Errorf("validate: %s: server.kind must be reference (the gate runs in the server's Python)", cfgPath)
	}
	var ov *integrate.Override
	for _, a := range cfg.Arms {
		if a.Name == o.arm && a.Role == experiment.RoleCeiling {
			return fmt.Errorf("validate: %s: arm %q is a ceiling (a timing-only ablation: the op's work removed, outputs meaningless): it is never validated", cfgPath, o.arm)
		}
		if a.Name == o.arm {
			ov = a.Override
		}
	}
	if ov == nil {
		return fmt.Errorf("validate: %s: arm %q not found or has no override", cfgPath, o.arm)
	}
	if ov.BaseDir == "" {
		if abs, err := filepath.Abs(cfgPath); err == nil {
			ov.BaseDir = filepath.Dir(abs) // relative paths: from the working folder if they exist, else the config's folder
		}
	}
	for i, a := range cfg.Arms {
		if file, _, ok := strings.Cut(ov.Candidate, ":"); a.Name == o.arm && ok && file != "" {
			// As the hook resolves it (integrate.Override.Resolve): the working folder, then the config's.
			if _, err := experiment.FindFile(fmt.Sprintf("arms[%d].override.candidate", i), file, ".", ov.BaseDir); err != nil {
				return fmt.Errorf("validate: config %s: %w", cfgPath, cfg.located(err))
			}
		}
	}
	if err := ov.Validate(); err != nil {
		return fmt.Errorf("validate: %s: arm %s: %w", cfgPath, o.arm, err)
	}
	if o.captured != "" {
		if _, err := experiment.FindFile("--captured", o.captured, "."); err != nil {
			return fmt.Errorf("validate: %w", err)
		}
	}
	sched, err := captureSchedule(cfgPath, cfg, o.requests)
	if err != nil {
		return err
	}
	// The same check as run's (experiment.Preflight), before anything is written.
	if _, err := integrate.Preflight(ctx, *cfg.Server.Reference); err != nil {
		return fmt.Errorf("validate: config %s: server.kind reference needs a GPU machine with torch + transformers: %w", cfgPath, err)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	v := integrate.Validate{
		Reference: *cfg.Server.Reference, Override: *ov, Arm: o.arm,
		Schedule: sched, Requests: o.requests, Concurrency: o.concurrency, Timeout: o.timeout,
		Out: out, Captured: o.captured, ShadowFile: o.shadowFile, NoShadow: o.noShadow,
		MaxShapes: o.maxShapes, Seed: cfg.Seed, Timing: o.timing, Profile: o.profile,
		ControlsFile: o.controlsFile, Device: cfg.Energy.Device, Command: argv, Log: w,
	}
	if o.controls {
		v.Controls = integrate.SelectControls(o.only)
	}
	res, err := v.Run(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: stoppedStatus(ctx), err: err}
		}
		return err
	}
	if n := res.Unexpected(); n > 0 {
		return &exitError{code: exitFail, err: fmt.Errorf("validate: %d verdict(s) not as expected (see %s)", n, res.SummaryPath)}
	}
	return nil
}

// validateConfig is the part of an experiment config (experiment.Config) that
// validate reads; other keys are left to experiment.Load, which `run` uses.
type validateConfig struct {
	Seed  int64 `yaml:"seed"`
	Trace struct {
		Path         string `yaml:"path"`
		Format       string `yaml:"format"`
		Lenient      bool   `yaml:"lenient"`
		ClampContext int    `yaml:"clamp_context"`
	} `yaml:"trace"`
	Server struct {
		Kind      string                     `yaml:"kind"`
		Reference *integrate.ReferenceConfig `yaml:"reference"`
	} `yaml:"server"`
	Arms []struct {
		Name     string              `yaml:"name"`
		Role     string              `yaml:"role"`
		Override *integrate.Override `yaml:"override"`
	} `yaml:"arms"`
	Energy struct {
		Device int `yaml:"device"`
	} `yaml:"energy"`

	// lines finds a field's line in the file, for errors.
	lines *yamlcheck.Result
}

// located is err with each problem as `field (line N): message`, N the
// line of the field in the config file.
func (c *validateConfig) located(err error) error {
	if c.lines == nil {
		return err
	}
	return errors.Join(c.lines.Locate(err)...)
}

// loadValidateConfig reads the parts of the experiment config validate
// uses, after the config passed the checks run applies (experiment.Load:
// unknown keys, value types, ranges, each as `field (line N): message`), so
// validate never reads a value run would refuse (clamp_context: 1.5 is not
// truncated to 1). Files are checked later, as validate resolves them.
func loadValidateConfig(path string) (*validateConfig, error) {
	_, b, err := experiment.Load(path)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	var (
		c   validateConfig
		doc yaml.Node
	)
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("validate: %s: %w", path, err)
	}
	if err := doc.Decode(&c); err != nil {
		return nil, fmt.Errorf("validate: %s: %w", path, err)
	}
	c.lines = yamlcheck.Index(&doc)
	return &c, nil
}

// captureSchedule reads the config's trace (clamped as the config says) for the capture replay.
func captureSchedule(cfgPath string, cfg *validateConfig, n int) (traces.Schedule, error) {
	// The rule of run (experiment.Config): the config's folder, then the working folder.
	p, err := experiment.FindFile("trace.path", cfg.Trace.Path, filepath.Dir(cfgPath), ".")
	if err != nil {
		return traces.Schedule{}, fmt.Errorf("validate: config %s: %w", cfgPath, cfg.located(err))
	}
	s, err := traces.ReadFile(p, traces.ReadOptions{Format: cfg.Trace.Format, Lenient: cfg.Trace.Lenient})
	if err != nil {
		return traces.Schedule{}, err
	}
	if cfg.Trace.ClampContext > 0 {
		s = traces.ClampContext(s, cfg.Trace.ClampContext)
	}
	if len(s.Requests) < n {
		return traces.Schedule{}, fmt.Errorf("validate: trace %s has %d requests, --requests asks for %d", p, len(s.Requests), n)
	}
	return s, nil
}
