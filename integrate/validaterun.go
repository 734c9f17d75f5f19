package integrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/transferlab/transferlab/internal/outpath"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/traces"
)

// NegativeControl is a shipped control (configs/kernels/rmsnorm_negative_controls.py):
// a candidate wrong in one known way, with the verdict the gate must reach on
// it. WantGate "" means a correct candidate that must pass and be reported
// slower (s < 1).
type NegativeControl struct {
	Function, WantGate, WantSet string
}

// NegativeControls are the shipped controls and their expected verdicts.
func NegativeControls() []NegativeControl {
	return []NegativeControl{
		{"zeros_forward", "values", "captured"},
		{"partial_forward", "all_written", "captured"},
		{"nan_to_finite_forward", "nan_inf", "captured"},
		{"one_hidden_size_forward", "values", "stress"},
		{"slow_forward", "", ""}, // correct: must pass, and be reported slower (s < 1)
	}
}

// Judge says what c expects and whether rep is that verdict for that reason.
func (c NegativeControl) Judge(rep *ValidationReport) (want string, ok bool) {
	if c.WantGate == "" {
		return "pass, slower (s < 1)", rep.Verdict == "pass" && rep.Speedup.S != nil && *rep.Speedup.S < 1
	}
	return "fail: " + c.WantGate + " on " + c.WantSet,
		rep.Verdict == "fail" && rep.FailedGate == c.WantGate && rep.FailedSet == c.WantSet
}

// Validate is one run of the validation gate for one override, on the GPU
// machine: capture the shapes the reference server really produces, check
// the candidate live in shadow mode, run the gate (validate_gate.py) on the
// captured and stress sets, and optionally the negative controls.
type Validate struct {
	// Reference is the server; Override the arm's override (BaseDir set).
	Reference ReferenceConfig
	Override  Override
	// Arm names the override's arm in the summary.
	Arm string
	// Schedule holds the trace requests replayed for capture and shadow (the
	// first Requests of it, closed loop at Concurrency).
	Schedule              traces.Schedule
	Requests, Concurrency int
	// Timeout bounds one request.
	Timeout time.Duration
	// Out is the output folder (created by the caller).
	Out string
	// Captured reuses a captured shape set instead of capturing one.
	Captured string
	// ShadowFile reuses the hook stats of an earlier shadow run; NoShadow
	// skips the shadow run (implied by ShadowFile).
	ShadowFile string
	NoShadow   bool
	// MaxShapes, Seed, Timing: the gate's job (ValidationJob).
	MaxShapes int
	Seed      int64
	Timing    string
	// Profile also takes torch-profiler windows at concurrency 1 and
	// Concurrency during capture.
	Profile bool
	// Controls are validated after the candidate, from ControlsFile.
	Controls     []NegativeControl
	ControlsFile string
	// Device is the GPU whose memory must return to idle between servers.
	Device int
	// Command is printed in the summary.
	Command []string
	// Log receives progress and the summary.
	Log io.Writer
}

// ValidateRow is one validated candidate: the override's, or a control's.
type ValidateRow struct {
	Name, Want string
	Report     *ValidationReport
	// AsExpected: the verdict is the one wanted, for the reason wanted.
	AsExpected bool
}

// ValidateResult is what Run validated; SummaryPath is validation-summary.md.
type ValidateResult struct {
	Captured    string
	Rows        []ValidateRow
	SummaryPath string
}

// Unexpected counts rows whose verdict was not as expected.
func (r *ValidateResult) Unexpected() int {
	n := 0
	for _, row := range r.Rows {
		if !row.AsExpected {
			n++
		}
	}
	return n
}

// Run captures, shadows and gates v.Override (and the controls), writes
// OUT/validation-<name>.json per candidate and OUT/validation-summary.md, and
// prints the summary on v.Log. An error means the gate could not decide; a
// verdict not as expected is in the result (Unexpected).
func (v Validate) Run(ctx context.Context) (*ValidateResult, error) {
	w := v.Log
	smi := NvidiaSMIUsed(v.Device)
	idle, idleErr := smi(ctx)
	if idleErr != nil {
		fmt.Fprintf(w, "note: GPU idle memory unreadable (%v): the between-runs idle check is skipped\n", idleErr)
	}
	serve := func(mode, dir string, body func(*Process) error) (*HookStats, error) {
		ov := v.Override
		ov.Mode = mode
		spec, err := ReferenceSpec(v.Reference, &ov, filepath.Join(v.Out, dir))
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "%s: starting the reference server (log %s)\n", dir, spec.LogPath)
		srv, err := Launch(ctx, spec)
		if err != nil {
			return nil, err
		}
		defer func() {
			_ = srv.Close(context.Background())
			if idleErr == nil {
				if _, err := WaitGPUIdle(context.Background(), smi, idle); err != nil {
					fmt.Fprintf(w, "warning: %v\n", err)
				}
			}
		}()
		if m, err := srv.Manifest(ctx); err == nil {
			_ = writeJSON(filepath.Join(v.Out, dir, "server-manifest.json"), m)
		}
		if err := body(srv); err != nil {
			return nil, err
		}
		st, err := srv.HookStats(ctx)
		if err != nil {
			return nil, err
		}
		_ = writeJSON(filepath.Join(v.Out, dir, "hook-stats.json"), st)
		return st, nil
	}

	res := &ValidateResult{Captured: v.Captured}
	if res.Captured == "" {
		res.Captured = filepath.Join(v.Out, "captured-shapes.json")
		st, err := serve(ModeCapture, "capture", func(srv *Process) error {
			if err := v.replay(ctx, srv, "capture", v.Concurrency, v.Requests, 0); err != nil {
				return err
			}
			if v.Profile {
				return v.profileRegimes(ctx, srv)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if err := WriteCapturedSet(res.Captured, st, ""); err != nil {
			return nil, err
		}
		s := st.Override("")
		fmt.Fprintf(w, "capture: %d signatures, calls %v\n", len(s.Shapes), s.Calls)
	}
	shadowFile, noShadow := v.ShadowFile, v.NoShadow || v.ShadowFile != ""
	if !noShadow {
		st, err := serve(ModeShadow, "shadow", func(srv *Process) error {
			return v.replay(ctx, srv, "shadow", v.Concurrency, v.Requests, 0)
		})
		if err != nil {
			return nil, err
		}
		shadowFile = filepath.Join(v.Out, "shadow", "hook-stats.json")
		s := st.Override("")
		fmt.Fprintf(w, "shadow: %d of %d calls compared, worst %v\n", s.Shadow.CallsDone, s.Shadow.CallsRequested, s.Shadow.Worst)
	}

	gate := func(name, candidate, shadow string) (*ValidationReport, error) {
		file, fn, err := (Override{Candidate: candidate, BaseDir: v.Override.BaseDir}).CandidateFile()
		if err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, err
		}
		return RunValidation(ctx, v.Reference.Effective().Python, filepath.Join(v.Out, "gate"), ValidationJob{
			Target: v.Override.Target, Candidate: abs + ":" + fn, CapturedFile: res.Captured, ShadowFile: shadow,
			Report: filepath.Join(v.Out, "validation-"+name+".json"), FailingDir: filepath.Join(v.Out, "failing", name),
			MaxShapes: v.MaxShapes, Seed: v.Seed, Timing: v.Timing,
		})
	}
	name := v.Override.EffectiveName()
	rep, err := gate(name, v.Override.Candidate, shadowFile)
	if err != nil {
		return nil, err
	}
	res.Rows = append(res.Rows, ValidateRow{Name: name, Want: "pass", Report: rep, AsExpected: rep.Verdict == "pass"})
	for _, c := range v.Controls {
		rep, err := gate(c.Function, v.ControlsFile+":"+c.Function, "")
		if err != nil {
			return nil, err
		}
		want, ok := c.Judge(rep)
		res.Rows = append(res.Rows, ValidateRow{Name: c.Function, Want: want, Report: rep, AsExpected: ok})
	}
	summary := v.summary(res)
	res.SummaryPath = filepath.Join(v.Out, "validation-summary.md")
	if err := outpath.WriteFile(res.SummaryPath, []byte(summary)); err != nil {
		return res, fmt.Errorf("validate: %w", err)
	}
	fmt.Fprint(w, summary)
	return res, nil
}

// summary is validation-summary.md: the command, target, captured set and
// one row per validated candidate.
func (v Validate) summary(res *ValidateResult) string {
	var b strings.Builder
	first := res.Rows[0].Report
	fmt.Fprintf(&b, "# Validation: %s\n\nCommand: `%s`\n\nTarget: `%s`  \nCaptured set: `%s` (%d signatures, %d calls)\n\n",
		v.Arm, strings.Join(v.Command, " "), v.Override.Target, res.Captured, first.CapturedSignatures, first.CapturedCalls)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "candidate\tverdict\treason\ts (isolated, freq-weighted geomean)\texpected\tas expected")
	for _, r := range res.Rows {
		s := "n/a"
		if r.Report.Speedup.S != nil && !math.IsNaN(*r.Report.Speedup.S) {
			s = fmt.Sprintf("%.3f", *r.Report.Speedup.S)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", r.Name, r.Report.Verdict, r.Report.Reason, s, r.Want, r.AsExpected)
	}
	_ = tw.Flush()
	fmt.Fprintf(&b, "\nPer-shape tables and every gate's detail: validation-<candidate>.json.\n")
	return b.String()
}

// replay sends the first n requests of the schedule to srv, closed loop at
// conc, outputs capped at maxOut tokens when maxOut > 0, and prints its summary.
func (v Validate) replay(ctx context.Context, srv *Process, label string, conc, n, maxOut int) error {
	s := traces.First(v.Schedule, n)
	if maxOut > 0 {
		reqs := make([]traces.Request, len(s.Requests))
		for i, q := range s.Requests {
			q.OutputTokens = min(q.OutputTokens, maxOut)
			reqs[i] = q
		}
		s.Requests = reqs
	}
	sum, err := loadgen.Replay(ctx, srv, s, nil, &loadgen.SliceSink{}, loadgen.WithClosedLoop(conc),
		loadgen.WithIgnoreEOS(true), loadgen.WithTimeout(v.Timeout), loadgen.WithArm(label))
	if err != nil {
		return fmt.Errorf("validate: %s replay: %w", label, err)
	}
	fmt.Fprintf(v.Log, "%s: %s\n", label, strings.TrimSpace(sum.String()))
	return srv.Err()
}

// profileRegimes takes one torch-profiler window (and one hook timing window)
// per batch regime: concurrency 1, then v.Concurrency, writing
// OUT/profile-c<N>.json.
func (v Validate) profileRegimes(ctx context.Context, srv *Process) error {
	// One wave per regime, outputs capped at profileMaxOut tokens, to keep each trace a few MB.
	const profileMaxOut = 32
	for _, c := range []int{1, v.Concurrency} {
		n := c
		if c == 1 {
			n = 2
		}
		trace := filepath.Join(v.Out, fmt.Sprintf("profile-c%d.json", c))
		if _, err := srv.HookWindow(ctx, fmt.Sprintf("before-c%d", c)); err != nil && !strings.Contains(err.Error(), "409") {
			fmt.Fprintf(v.Log, "note: hook window: %v\n", err)
		}
		if err := srv.ProfileStart(ctx, trace); err != nil {
			return err
		}
		rerr := v.replay(ctx, srv, fmt.Sprintf("profile-c%d", c), c, n, profileMaxOut)
		pw, err := srv.ProfileStop(ctx)
		if err := errors.Join(rerr, err); err != nil {
			return err
		}
		if docs, err := srv.HookWindow(ctx, fmt.Sprintf("c%d", c)); err == nil {
			_ = writeJSON(filepath.Join(v.Out, fmt.Sprintf("profile-c%d.hook.json", c)), docs)
		}
		fmt.Fprintf(v.Log, "profile c=%d: %s (%.1f MB), window %.2f s, active %.2f s, %d requests\n", c, pw.TracePath,
			float64(pw.TraceBytes)/1e6, pw.WindowS, pw.ActiveS, pw.RequestsDone)
	}
	return nil
}

// SelectControls returns the shipped controls named in only (all when only
// is empty).
func SelectControls(only []string) []NegativeControl {
	var out []NegativeControl
	for _, c := range NegativeControls() {
		if len(only) == 0 || slices.Contains(only, c.Function) {
			out = append(out, c)
		}
	}
	return out
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return outpath.WriteFile(path, append(b, '\n'))
}
