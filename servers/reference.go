package servers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/report"
)

// ReferenceServer is one arm on a launched reference server (integrate).
type ReferenceServer struct {
	*integrate.Process
	arm     string
	device  int
	idle    time.Duration
	timings bool
	// cellStart bounds the hook windows that belong to the current cell.
	cellStart time.Time
	// pass, when set, replaces the hook path as f's source.
	pass ProfilePass
}

var _ Server = (*ReferenceServer)(nil)

// ProfilePass measures f of one cell on a reference server from an
// unmeasured profiling replay (the experiment's, which owns schedules); it
// returns nil, nil where it measures nothing (an arm other than the
// baseline). Its context is the run's.
type ProfilePass func(srv *ReferenceServer, cell report.CellKey) (*amdahl.Fractions, error)

// ReferenceArm is what a reference server needs to know of its arm.
type ReferenceArm struct {
	// Name labels the arm; Dir is its server folder (log, hook files).
	Name, Dir string
	// Override, when set, is injected through the hook; a candidate's must
	// carry a passing, current validation report, a ceiling's (Ceiling) is
	// never validated.
	Override *integrate.Override
	Ceiling  bool
	// Pass, when set, gives f instead of the hook's timings.
	Pass ProfilePass
	// Idle is energy.idle: how long each cell's energy window first waits
	// at idle power.
	Idle time.Duration
}

// StartReference launches the reference server for one arm: the preset
// integrate.ReferenceSpec of server.kind command, through the same launch
// path (Launcher). A candidate's override must carry a passing, current
// validation report (integrate.CheckValidation), else the server is
// refused; a ceiling's is never validated. Between arms the GPU's memory
// must return to what it was before the first server started.
func (l *Launcher) StartReference(ctx context.Context, cfg integrate.ReferenceConfig, arm ReferenceArm) (*ReferenceServer, error) {
	var ov *integrate.Override
	if arm.Override != nil {
		o := *arm.Override
		if !arm.Ceiling {
			if _, err := integrate.CheckValidation(o); err != nil {
				return nil, err
			}
		}
		ov = &o
	}
	spec, err := integrate.ReferenceSpec(cfg, ov, arm.Dir)
	if err != nil {
		return nil, err
	}
	p, err := l.launch(ctx, Reference, arm.Name, spec)
	if err != nil {
		return nil, err
	}
	return &ReferenceServer{Process: p, arm: arm.Name, device: l.Device, idle: arm.Idle, timings: cfg.HookTimings, pass: arm.Pass}, nil
}

// ResetProfile closes the hook's timing window so the next one covers the cell only.
func (a *ReferenceServer) ResetProfile(ctx context.Context) error {
	a.cellStart = time.Now()
	if !a.timings || a.pass != nil {
		return nil
	}
	_, err := a.HookWindow(ctx, "before-cell")
	return err
}

// Profile is the cell's addressable fraction. With a ProfilePass it comes
// from that pass (the experiment's unmeasured profiling replay of the
// cell's schedule: torch profiler Chrome trace, kernel time over the
// server's active wall time).
// Otherwise it is f_wall from the hook's CUDA-event timings of the target
// over the cell's windows and the cell's active time (from the requests),
// refusing timings that miss work: calls made during CUDA-graph capture run
// again on every replay, which the hook cannot see.
func (a *ReferenceServer) Profile(ctx context.Context, cell report.CellKey, active []amdahl.Interval) (*amdahl.Fractions, error) {
	if a.pass != nil {
		return a.pass(a, cell)
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
func (a *ReferenceServer) Sampler() energy.Sampler {
	return energy.NewNVML(a.device, energy.WithPIDs(a.PID()), energy.WithIdlePower(a.idle))
}

func (a *ReferenceServer) Died() <-chan struct{} { return a.Done() }

// Info is the server's pinning manifest and the hook's counters (proof that
// the candidate ran, or that the baseline ran nothing).
func (a *ReferenceServer) Info(ctx context.Context) map[string]any {
	info := map[string]any{"kind": Reference, "log": a.LogPath()}
	if m, err := a.Manifest(ctx); err == nil {
		info["manifest"] = m
	} else {
		info["manifest_error"] = err.Error()
	}
	return info
}

// Close stops the server and keeps the hook's final counters.
func (a *ReferenceServer) Close(ctx context.Context) error {
	return a.Process.Close(ctx)
}

// Hook reads the hook's counters: install receipt and, per override, eager
// and capture-time calls (a replayed CUDA graph calls nothing yet runs the
// captured kernels).
func (a *ReferenceServer) Hook(ctx context.Context) *report.HookArm {
	h := &report.HookArm{Arm: a.arm}
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
// machine can run a server of kind (ref: its server.reference block):
// for Reference, that the reference interpreter imports torch, transformers
// and aiohttp and that torch sees a GPU (integrate.Preflight: one
// subprocess, at most integrate.DefaultPreflightTimeout). Other kinds need
// nothing checked here: nil.
func Preflight(ctx context.Context, kind string, ref *integrate.ReferenceConfig) error {
	if kind != Reference || ref == nil {
		return nil
	}
	if _, err := integrate.Preflight(ctx, *ref); err != nil {
		return fmt.Errorf("server.kind reference needs a GPU machine with torch + transformers: %w", err)
	}
	return nil
}
