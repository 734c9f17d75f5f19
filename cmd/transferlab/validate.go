package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"go.yaml.in/yaml/v3"

	"github.com/transferlab/transferlab/experiment"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/internal/yamlcheck"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/traces"
)

// negativeControls are the shipped controls (configs/kernels/rmsnorm_negative_controls.py)
// with the verdict the gate must reach on each, for the right reason.
var negativeControls = []struct {
	Function, WantGate, WantSet string
}{
	{"zeros_forward", "values", "captured"},
	{"partial_forward", "all_written", "captured"},
	{"nan_to_finite_forward", "nan_inf", "captured"},
	{"one_hidden_size_forward", "values", "stress"},
	{"slow_forward", "", ""}, // correct: must pass, and be reported slower (s < 1)
}

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
	ref := *cfg.Server.Reference
	smi := integrate.NvidiaSMIUsed(cfg.Energy.Device)
	idle, idleErr := smi(ctx)
	if idleErr != nil {
		fmt.Fprintf(w, "note: GPU idle memory unreadable (%v): the between-runs idle check is skipped\n", idleErr)
	}
	replay := func(ctx context.Context, srv *integrate.Process, label string, conc, n, maxOut int) error {
		s := traces.First(sched, n)
		if maxOut > 0 {
			reqs := make([]traces.Request, len(s.Requests))
			for i, q := range s.Requests {
				q.OutputTokens = min(q.OutputTokens, maxOut)
				reqs[i] = q
			}
			s.Requests = reqs
		}
		sum, err := loadgen.Replay(ctx, srv, s, nil, &loadgen.SliceSink{}, loadgen.WithClosedLoop(conc),
			loadgen.WithIgnoreEOS(true), loadgen.WithTimeout(o.timeout), loadgen.WithArm(label))
		if err != nil {
			return fmt.Errorf("validate: %s replay: %w", label, err)
		}
		fmt.Fprintf(w, "%s: %s\n", label, strings.TrimSpace(sum.String()))
		if srvErr := srv.Err(); srvErr != nil {
			return srvErr
		}
		return nil
	}
	serve := func(mode, dir string, body func(*integrate.Process) error) (*integrate.HookStats, error) {
		v := *ov
		v.Mode = mode
		spec, err := integrate.ReferenceSpec(ref, &v, filepath.Join(out, dir))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "%s: starting the reference server (log %s)\n", dir, spec.LogPath)
		srv, err := integrate.Launch(ctx, spec)
		if err != nil {
			return nil, err
		}
		defer func() {
			_ = srv.Close(context.Background())
			if idleErr == nil {
				if _, err := integrate.WaitGPUIdle(context.Background(), smi, idle); err != nil {
					fmt.Fprintf(w, "warning: %v\n", err)
				}
			}
		}()
		if m, err := srv.Manifest(ctx); err == nil {
			_ = writeJSON(filepath.Join(out, dir, "server-manifest.json"), m)
		}
		if err := body(srv); err != nil {
			return nil, err
		}
		st, err := srv.HookStats(ctx)
		if err != nil {
			return nil, err
		}
		_ = writeJSON(filepath.Join(out, dir, "hook-stats.json"), st)
		return st, nil
	}

	captured := o.captured
	if captured == "" {
		captured = filepath.Join(out, "captured-shapes.json")
		st, err := serve(integrate.ModeCapture, "capture", func(srv *integrate.Process) error {
			if err := replay(ctx, srv, "capture", o.concurrency, o.requests, 0); err != nil {
				return err
			}
			if o.profile {
				return profileRegimes(ctx, w, srv, out, replay, o.concurrency)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := integrate.WriteCapturedSet(captured, st, ""); err != nil {
			return err
		}
		s := st.Override("")
		fmt.Fprintf(w, "capture: %d signatures, calls %v\n", len(s.Shapes), s.Calls)
	}
	shadowFile := ""
	if o.shadowFile != "" {
		shadowFile, o.noShadow = o.shadowFile, true
	}
	if !o.noShadow {
		st, err := serve(integrate.ModeShadow, "shadow", func(srv *integrate.Process) error {
			return replay(ctx, srv, "shadow", o.concurrency, o.requests, 0)
		})
		if err != nil {
			return err
		}
		shadowFile = filepath.Join(out, "shadow", "hook-stats.json")
		s := st.Override("")
		fmt.Fprintf(w, "shadow: %d of %d calls compared, worst %v\n", s.Shadow.CallsDone, s.Shadow.CallsRequested, s.Shadow.Worst)
	}

	type row struct {
		name, want string
		rep        *integrate.ValidationReport
		ok         bool
	}
	var rows []row
	gate := func(name, candidate, shadow, want string) (*integrate.ValidationReport, error) {
		file, fn, err := (integrate.Override{Candidate: candidate, BaseDir: ov.BaseDir}).CandidateFile()
		if err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, err
		}
		return integrate.RunValidation(ctx, ref.Effective().Python, filepath.Join(out, "gate"), integrate.ValidationJob{
			Target: ov.Target, Candidate: abs + ":" + fn, CapturedFile: captured, ShadowFile: shadow,
			Report: filepath.Join(out, "validation-"+name+".json"), FailingDir: filepath.Join(out, "failing", name),
			MaxShapes: o.maxShapes, Seed: cfg.Seed, Timing: o.timing,
		})
	}
	rep, err := gate(ov.EffectiveName(), ov.Candidate, shadowFile, "")
	if err != nil {
		return err
	}
	rows = append(rows, row{name: ov.EffectiveName(), want: "pass", rep: rep, ok: rep.Verdict == "pass"})
	if o.controls {
		for _, c := range negativeControls {
			if len(o.only) > 0 && !slices.Contains(o.only, c.Function) {
				continue
			}
			rep, err := gate(c.Function, o.controlsFile+":"+c.Function, "", c.WantGate)
			if err != nil {
				return err
			}
			r := row{name: c.Function, rep: rep}
			if c.WantGate == "" {
				r.want = "pass, slower (s < 1)"
				r.ok = rep.Verdict == "pass" && rep.Speedup.S != nil && *rep.Speedup.S < 1
			} else {
				r.want = "fail: " + c.WantGate + " on " + c.WantSet
				r.ok = rep.Verdict == "fail" && rep.FailedGate == c.WantGate && rep.FailedSet == c.WantSet
			}
			rows = append(rows, r)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Validation: %s\n\nCommand: `%s`\n\nTarget: `%s`  \nCaptured set: `%s` (%d signatures, %d calls)\n\n",
		o.arm, strings.Join(argv, " "), ov.Target, captured, rows[0].rep.CapturedSignatures, rows[0].rep.CapturedCalls)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "candidate\tverdict\treason\ts (isolated, freq-weighted geomean)\texpected\tas expected")
	wrong := 0
	for _, r := range rows {
		s := "n/a"
		if r.rep.Speedup.S != nil && !math.IsNaN(*r.rep.Speedup.S) {
			s = fmt.Sprintf("%.3f", *r.rep.Speedup.S)
		}
		if !r.ok {
			wrong++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", r.name, r.rep.Verdict, r.rep.Reason, s, r.want, r.ok)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nPer-shape tables and every gate's detail: validation-<candidate>.json.\n")
	_ = os.WriteFile(filepath.Join(out, "validation-summary.md"), []byte(b.String()), 0o644)
	fmt.Fprint(w, b.String())
	if wrong > 0 {
		return &exitError{code: exitFail, err: fmt.Errorf("validate: %d verdict(s) not as expected (see %s)", wrong,
			filepath.Join(out, "validation-summary.md"))}
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

// profileRegimes takes one torch-profiler window (and one hook timing window) per
// batch regime: concurrency 1, then conc, writing OUT/profile-c<N>.json.
func profileRegimes(ctx context.Context, w io.Writer, srv *integrate.Process, out string,
	replay func(context.Context, *integrate.Process, string, int, int, int) error, conc int) error {
	// One wave per regime, outputs capped at profileMaxOut tokens, to keep each trace a few MB.
	const profileMaxOut = 32
	for _, c := range []int{1, conc} {
		n := c
		if c == 1 {
			n = 2
		}
		trace := filepath.Join(out, fmt.Sprintf("profile-c%d.json", c))
		if _, err := srv.HookWindow(ctx, fmt.Sprintf("before-c%d", c)); err != nil && !strings.Contains(err.Error(), "409") {
			fmt.Fprintf(w, "note: hook window: %v\n", err)
		}
		if err := srv.ProfileStart(ctx, trace); err != nil {
			return err
		}
		rerr := replay(ctx, srv, fmt.Sprintf("profile-c%d", c), c, n, profileMaxOut)
		pw, err := srv.ProfileStop(ctx)
		if err := errors.Join(rerr, err); err != nil {
			return err
		}
		if docs, err := srv.HookWindow(ctx, fmt.Sprintf("c%d", c)); err == nil {
			_ = writeJSON(filepath.Join(out, fmt.Sprintf("profile-c%d.hook.json", c)), docs)
		}
		fmt.Fprintf(w, "profile c=%d: %s (%.1f MB), window %.2f s, active %.2f s, %d requests\n", c, pw.TracePath,
			float64(pw.TraceBytes)/1e6, pw.WindowS, pw.ActiveS, pw.RequestsDone)
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
