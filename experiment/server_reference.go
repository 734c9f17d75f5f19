package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/report"
)

// refArm is one arm on a launched reference server (integrate).
type refArm struct {
	*integrate.Process
	arm     ArmConfig
	device  int
	timings bool
	// cellStart bounds the hook windows that belong to the current cell.
	cellStart time.Time
	// prof (amdahl.profile, defaults filled) replaces the hook path: f of a
	// baseline cell comes from an unmeasured profiling replay (profile.go).
	prof *ProfileConfig
	// baseline is true for the first arm, the only one whose f is used.
	baseline bool
	// run is the runner (schedules, run order, output folder, manifest) and
	// runCtx the run's context, which the profiling pass honours (Profile's
	// own context is not cancellable).
	run    *runner
	runCtx context.Context
}

var _ armServer = (*refArm)(nil)

// startReference launches the reference server for one arm: the preset
// integrate.ReferenceSpec of server.kind command, through the same launch
// path (runner.launch). A candidate's override must carry a passing, current
// validation report (integrate.CheckValidation), else the run refuses it; a
// ceiling's is never validated. Between arms the GPU's memory must return to
// what it was before the first server started.
func (r *runner) startReference(ctx context.Context, arm ArmConfig) (armServer, error) {
	cfg := *r.cfg.Server.Reference
	var prof *ProfileConfig
	if p := r.cfg.Amdahl.Profile; p != nil {
		if err := p.Validate(); err != nil {
			return nil, err
		}
		e := p.effective()
		prof = &e
	}
	var ov *integrate.Override
	if arm.Override != nil {
		o := *arm.Override
		if !arm.IsCeiling() { // a ceiling is never validated (checkArmRoles checked its declaration)
			if _, err := integrate.CheckValidation(o); err != nil {
				return nil, err
			}
		}
		ov = &o
	}
	spec, err := integrate.ReferenceSpec(cfg, ov, filepath.Join(r.opt.OutDir, ServersDir, arm.Name))
	if err != nil {
		return nil, err
	}
	p, err := r.launch(ctx, arm, spec)
	if err != nil {
		return nil, err
	}
	r.model = r.cfg.Request.Model
	return &refArm{Process: p, arm: arm, device: r.cfg.Energy.Device, timings: cfg.HookTimings,
		prof: prof, baseline: arm.Name == r.cfg.Arms[0].Name, run: r, runCtx: ctx}, nil
}

// ResetProfile closes the hook's timing window so the next one covers the cell only.
func (a *refArm) ResetProfile(ctx context.Context) error {
	a.cellStart = time.Now()
	if !a.timings || a.prof != nil {
		return nil
	}
	_, err := a.HookWindow(ctx, "before-cell")
	return err
}

// Profile is the cell's addressable fraction. With amdahl.profile set it
// comes, for the baseline arm only (other arms return nil, nil), from an
// unmeasured profiling replay of the cell's schedule (profilePass: torch
// profiler Chrome trace, kernel time over the server's active wall time).
// Otherwise it is f_wall from the hook's CUDA-event timings of the target
// over the cell's windows and the cell's active time (from the requests),
// refusing timings that miss work: calls made during CUDA-graph capture run
// again on every replay, which the hook cannot see.
func (a *refArm) Profile(ctx context.Context, key cellKey, active []amdahl.Interval) (*amdahl.Fractions, error) {
	if a.prof != nil {
		if !a.baseline {
			return nil, nil
		}
		return a.profilePass(a.runCtx, key)
	}
	if !a.timings {
		return nil, errors.New("hook timings are off (server.reference.hook_timings: false); f needs them or a profile (transferlab profile)")
	}
	docs, err := a.HookWindow(ctx, "cell")
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, errors.New("the hook returned no timings")
	}
	h, err := amdahl.ParseHookTimings(bytes.NewReader(docs[0]), "hook/window")
	if err != nil {
		return nil, err
	}
	from := time.Duration(a.cellStart.UnixNano())
	var keep []amdahl.HookWindow
	for _, w := range h.Windows {
		if time.Duration(w.EndUnixNs) > from {
			keep = append(keep, w)
		}
	}
	h.Windows = keep
	var capture int64
	for _, w := range keep {
		capture += w.CaptureCalls
	}
	if capture > 0 {
		return nil, fmt.Errorf("hook timings incomplete: %d calls of %s were made during CUDA-graph capture, and their replays run kernels the hook cannot time; take f from a profile (transferlab profile) or run eager", capture, h.Target)
	}
	fr, err := h.Fractions(active)
	if err != nil {
		return nil, err
	}
	return &fr, nil
}

// Sampler reads the GPU's energy counter, power and memory through NVML,
// attributing process memory to the server.
func (a *refArm) Sampler() energy.Sampler {
	return energy.NewNVML(a.device, energy.WithPIDs(a.PID()), energy.WithIdlePower(a.run.cfg.Energy.Idle))
}

func (a *refArm) Died() <-chan struct{} { return a.Done() }

// Info is the server's pinning manifest and the hook's counters (proof that
// the candidate ran, or that the baseline ran nothing).
func (a *refArm) Info(ctx context.Context) map[string]any {
	info := map[string]any{"kind": ServerReference, "log": a.LogPath()}
	if m, err := a.Manifest(ctx); err == nil {
		info["manifest"] = m
	} else {
		info["manifest_error"] = err.Error()
	}
	return info
}

// Close stops the server and keeps the hook's final counters.
func (a *refArm) Close(ctx context.Context) error {
	return a.Process.Close(ctx)
}

// validatedSpeedup is s from the candidate's validation report: the
// frequency-weighted geometric mean over the captured shapes, with a
// bootstrap interval over shapes. Without amdahl.profile it uses the
// per-shape times the report's own timing produced (orig_us/cand_us: the
// same figures as its speedup.s). With amdahl.profile, s_timing picks them:
// graph needs a graph-timed report and reproduces speedup.s; eager uses the
// eager per-shape times (orig_eager_us/cand_eager_us) and reproduces
// speedup.s_eager (a report without speedup.timing predates graph timing and
// was timed eagerly: its orig_us/cand_us and speedup.s are used). Either way the point value must agree with the report's
// own aggregate (relative 1e-6), or the report's table and its s disagree.
func (r *runner) validatedSpeedup(arm ArmConfig) (amdahl.Estimate, error) {
	if arm.Override == nil {
		return amdahl.Estimate{}, errors.New("no override and no sim_overrides: nothing to bound")
	}
	o := *arm.Override
	rep, err := integrate.CheckValidation(o)
	if err != nil {
		return amdahl.Estimate{}, err
	}
	if rep == nil {
		return amdahl.Estimate{}, fmt.Errorf("override mode %s swaps nothing", o.EffectiveMode())
	}
	timing := ""
	if p := r.cfg.Amdahl.Profile; p != nil {
		timing = p.effective().STiming
	}
	rows, want, field, err := speedupRows(rep, timing)
	if err != nil {
		return amdahl.Estimate{}, err
	}
	if len(rows) == 0 {
		return amdahl.Estimate{}, fmt.Errorf("validation report %s has no timed captured shape", rep.Path)
	}
	est, err := amdahl.IsolatedSpeedupEstimate(rows, amdahl.Seed(uint64(r.cfg.Seed)))
	if err != nil {
		return amdahl.Estimate{}, err
	}
	if want != nil && math.Abs(float64(est.Value)-*want) > 1e-6**want {
		return amdahl.Estimate{}, fmt.Errorf("validation report %s: field %s is %g but its captured shapes' count-weighted geometric mean is %g: the report is inconsistent; re-run `transferlab validate`",
			rep.Path, field, *want, float64(est.Value))
	}
	if timing == "" {
		timing = rep.Speedup.Timing
	}
	est.Method += fmt.Sprintf("; s timing %s (%s of %s)", timing, field, rep.Path)
	return est, nil
}

// speedupRows are the captured shapes' timed rows for s with the given
// timing ("": the report's own), the report's aggregate they must reproduce
// (nil when the report has none) and that aggregate's field name.
func speedupRows(rep *integrate.ValidationReport, timing string) ([]amdahl.ShapeSpeedup, *float64, string, error) {
	var rows []amdahl.ShapeSpeedup
	switch timing {
	case "", STimingGraph:
		if timing == STimingGraph && rep.Speedup.Timing != STimingGraph {
			return nil, nil, "", fmt.Errorf("validation report %s: field speedup.timing is %q, but amdahl.profile.s_timing is graph: validate with graph timing, or set s_timing: eager",
				rep.Path, rep.Speedup.Timing)
		}
		for _, s := range rep.Shapes {
			if s.Set == "captured" && s.OrigUs > 0 && s.CandUs > 0 {
				rows = append(rows, amdahl.ShapeSpeedup{Shape: string(s.Signature), Count: s.Count, OriginalMedianUs: s.OrigUs, CandidateMedianUs: s.CandUs})
			}
		}
		return rows, rep.Speedup.S, "speedup.s", nil
	case STimingEager:
		if rep.Speedup.Timing == "" && rep.Speedup.SEager == nil {
			// Reports from before graph timing existed timed eagerly: their
			// orig_us/cand_us and speedup.s are eager times.
			return speedupRows(rep, "")
		}
		if rep.Speedup.SEager == nil {
			return nil, nil, "", fmt.Errorf("validation report %s: field speedup.s_eager is missing, but amdahl.profile.s_timing is eager: re-run `transferlab validate` (reports since the graph-timing rerun carry it)", rep.Path)
		}
		b, err := os.ReadFile(rep.Path)
		if err != nil {
			return nil, nil, "", fmt.Errorf("validation report: %w", err)
		}
		var doc struct {
			Shapes []struct {
				Set         string          `json:"set"`
				Signature   json.RawMessage `json:"signature"`
				Count       int             `json:"count"`
				OrigEagerUs float64         `json:"orig_eager_us"`
				CandEagerUs float64         `json:"cand_eager_us"`
			} `json:"shapes"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, nil, "", fmt.Errorf("validation report %s: field shapes: %w", rep.Path, err)
		}
		for _, s := range doc.Shapes {
			if s.Set == "captured" && s.OrigEagerUs > 0 && s.CandEagerUs > 0 {
				rows = append(rows, amdahl.ShapeSpeedup{Shape: string(s.Signature), Count: s.Count, OriginalMedianUs: s.OrigEagerUs, CandidateMedianUs: s.CandEagerUs})
			}
		}
		return rows, rep.Speedup.SEager, "speedup.s_eager", nil
	}
	return nil, nil, "", fmt.Errorf("amdahl.profile.s_timing: %q, want graph or eager", timing)
}

// Hook reads the hook's counters: install receipt and, per override, eager
// and capture-time calls (a replayed CUDA graph calls nothing yet runs the
// captured kernels).
func (a *refArm) Hook(ctx context.Context) *report.HookArm {
	h := &report.HookArm{Arm: a.arm.Name}
	st, err := a.HookStats(ctx)
	if err != nil {
		h.Receipts = []string{"hook stats unavailable: " + err.Error()}
		return h
	}
	if st.Receipt != nil {
		h.Receipts = append(h.Receipts, fmt.Sprintf("hook installed in pid %d (%s), manifest %s", st.Receipt.PID, st.Receipt.Python, st.Receipt.Manifest))
	}
	h.Receipts = append(h.Receipts, st.Notes...)
	for _, o := range st.Overrides {
		h.Target = o.Target
		if o.Mode == integrate.ModeOn || o.Mode == integrate.ModeShadow {
			h.Candidate = o.Candidate
		}
		h.CallsEager += int64(o.Calls["eager"])
		h.CallsCapture += int64(o.Calls["capture"])
		ran, why := o.CandidateRan()
		h.Receipts = append(h.Receipts, fmt.Sprintf("override %s: target %s, mode %s, installed %v%s, served by %v; candidate ran: %v (%s)",
			o.Name, o.Target, o.Mode, o.Installed, errSuffix(o.InstallError), o.ServedBy, ran, why))
	}
	return h
}

func errSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// Preflight checks, before anything is measured or written, that the
// machine can run the configured server: for server.kind reference, that the
// reference interpreter imports torch, transformers and aiohttp and that torch
// sees a GPU (integrate.Preflight: one subprocess, at most
// integrate.DefaultPreflightTimeout). The simulator needs nothing: nil.
func Preflight(ctx context.Context, cfg *Config) error {
	if cfg.Server.Kind != ServerReference || cfg.Server.Reference == nil {
		return nil
	}
	if _, err := integrate.Preflight(ctx, *cfg.Server.Reference); err != nil {
		return fmt.Errorf("server.kind reference needs a GPU machine with torch + transformers: %w", err)
	}
	return nil
}
