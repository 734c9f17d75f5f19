package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/internal/interrupt"
)

// newValidateCmd builds `transferlab validate CONFIG --arm NAME`: the validation
// gate (DESIGN.md, "Validation gate") on the GPU machine.
func newValidateCmd() *cobra.Command {
	var (
		v        integrate.Validate
		controls bool
		only     []string
	)
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
(captured_shapes); run refuses it when missing, failing or stale.
The config and the candidate's kernel file are trusted input: validate runs the
reference server's Python and imports the kernel into it, on this machine; run
only configs and kernels you would run yourself.`,
		Args: namedArgs("CONFIG.yaml"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if v.Out == "" {
				v.Out = experiment.DefaultOutDir("validation", time.Now())
				fmt.Fprintf(cmd.OutOrStdout(), "validate: writing to %s (no --out given)\n", v.Out)
			}
			v.Command, v.Log = os.Args, cmd.OutOrStdout()
			if controls {
				v.Controls = integrate.SelectControls(only)
			}
			return runValidate(cmd.Context(), args[0], v)
		},
	}
	f := cmd.Flags()
	f.StringVar(&v.Arm, "arm", "", "arm whose override is validated (required)")
	f.StringVar(&v.Out, "out", "", "output folder (default: runs/validation-<UTC time>, relative to the working folder)")
	f.StringVar(&v.Captured, "captured", "", "use this captured shape set instead of capturing one")
	f.IntVar(&v.Requests, "requests", 48, "trace requests replayed for capture and for shadow")
	f.IntVar(&v.Concurrency, "concurrency", 16, "closed-loop concurrency of the capture and shadow replays")
	f.IntVar(&v.MaxShapes, "max-shapes", 64, "most frequent captured signatures validated (coverage is reported)")
	f.BoolVar(&controls, "controls", false, "also validate the shipped negative controls and check their verdicts")
	f.StringVar(&v.ControlsFile, "controls-file", "configs/kernels/rmsnorm_negative_controls.py", "file holding the negative controls")
	f.BoolVar(&v.NoShadow, "no-shadow", false, "skip the shadow-mode live check")
	f.StringVar(&v.ShadowFile, "shadow", "", "reuse the hook stats of an earlier shadow run (implies --no-shadow)")
	f.StringVar(&v.Timing, "timing", "graph", "isolated timing: graph (CUDA-graph replay, as the reference server runs) or eager")
	f.StringSliceVar(&only, "control", nil, "with --controls, validate only these controls (repeatable)")
	f.BoolVar(&v.Profile, "profile", false, "during capture, also take torch-profiler windows at concurrency 1 and --concurrency")
	f.DurationVar(&v.Timeout, "request-timeout", 5*time.Minute, "timeout of one request")
	_ = cmd.MarkFlagRequired("arm")
	return cmd
}

// runValidate runs the validation v of config cfgPath's arm v.Arm
// (experiment.PrepareValidation, then integrate.Validate.Run) and maps its
// outcome to exit statuses: 130/143 when interrupted, exitFail when a
// verdict is not as expected.
func runValidate(ctx context.Context, cfgPath string, v integrate.Validate) error {
	if err := experiment.PrepareValidation(ctx, cfgPath, &v); err != nil {
		return err
	}
	res, err := v.Run(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: interrupt.Status(ctx, exitIncomplete), err: err}
		}
		return err
	}
	if n := res.Unexpected(); n > 0 {
		return &exitError{code: exitFail, err: fmt.Errorf("validate: %d verdict(s) not as expected (see %s)", n, res.SummaryPath)}
	}
	return nil
}
