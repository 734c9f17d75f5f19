package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/integrate"
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
				o.out = experiment.DefaultOutDir("validation", time.Now())
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

func runValidate(ctx context.Context, w io.Writer, cfgPath string, o validateOpts, argv []string) error {
	setup, err := experiment.LoadValidation(cfgPath, o.arm, o.requests)
	if err != nil {
		return err
	}
	if o.captured != "" {
		if _, err := experiment.FindFile("--captured", o.captured, "."); err != nil {
			return fmt.Errorf("validate: %w", err)
		}
	}
	// The same check as run's (experiment.Preflight), before anything is written.
	if _, err := integrate.Preflight(ctx, setup.Reference); err != nil {
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
		Reference: setup.Reference, Override: setup.Override, Arm: o.arm,
		Schedule: setup.Schedule, Requests: o.requests, Concurrency: o.concurrency, Timeout: o.timeout,
		Out: out, Captured: o.captured, ShadowFile: o.shadowFile, NoShadow: o.noShadow,
		MaxShapes: o.maxShapes, Seed: setup.Seed, Timing: o.timing, Profile: o.profile,
		ControlsFile: o.controlsFile, Device: setup.Device, Command: argv, Log: w,
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
