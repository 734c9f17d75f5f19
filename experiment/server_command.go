package experiment

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/report"
)

// manifestTimeout bounds server.command.manifest_argv.
const manifestTimeout = 2 * time.Minute

// cmdArm is one arm on a server launched by argv (server.kind command).
type cmdArm struct {
	*integrate.Process
	arm      ArmConfig
	device   int
	model    string
	desc     serverDescription
	manifest *integrate.ManifestOutput
}

var _ armServer = (*cmdArm)(nil)

// startCommand launches server.command for one arm, as the reference server
// is launched (launch: GPU memory back to idle first, process group, log,
// readiness, the hook's install receipt when the arm has an override), then
// asks it about itself (/v1/models, /version), picks the model and runs
// manifest_argv.
func (r *runner) startCommand(ctx context.Context, arm ArmConfig) (armServer, error) {
	cmd := *r.live.command
	if cmd.Cwd != "" {
		cmd.Cwd = r.cfg.path(cmd.Cwd)
	}
	var hook integrate.HookSetup
	if arm.Override != nil {
		o := *arm.Override
		hook.Override = &o
	}
	spec, err := integrate.CommandSpec(cmd, hook, filepath.Join(r.opt.OutDir, ServersDir, arm.Name))
	if err != nil {
		return nil, err
	}
	p, err := r.launch(ctx, arm, spec)
	if err != nil {
		return nil, err
	}
	a := &cmdArm{Process: p, arm: arm, device: r.cfg.Energy.Device}
	pr := newProber(r.live)
	defer pr.client.CloseIdleConnections()
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	a.desc, err = pr.describe(pctx, p.BaseURL())
	cancel()
	if err == nil {
		a.model, err = pickModel(r.cfg.Request.Model, a.desc, p.BaseURL())
	}
	if err != nil {
		_ = p.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if m := cmd.ManifestArgv; len(m) > 0 {
		out := integrate.RunManifestCommand(ctx, m, spec.Env, spec.Dir, manifestTimeout)
		a.manifest = &out
	}
	r.model = a.model
	return a, nil
}

// launch starts spec for arm (with the run's request headers on its
// readiness probes) once the GPU's memory is back to what it was
// before the first launched server (between arms), and logs where the
// server's log goes. It is the one launch path of server.kind reference
// and command.
func (r *runner) launch(ctx context.Context, arm ArmConfig, spec integrate.Spec) (*integrate.Process, error) {
	used := integrate.UsedMemoryFunc(energy.UsedMemory(r.cfg.Energy.Device))
	switch {
	case r.gpuIdle == nil && !r.gpuUnknown:
		if b, err := used(ctx); err == nil {
			r.gpuIdle = &b
		} else {
			r.gpuUnknown = true
			fmt.Fprintf(r.warn, "warning: GPU memory before the run unknown (%v): the between-arms idle check is off\n", err)
		}
	case r.gpuIdle != nil:
		got, err := integrate.WaitGPUIdle(ctx, used, *r.gpuIdle)
		if err != nil {
			return nil, fmt.Errorf("GPU memory did not return to idle (%d bytes before the run) after the previous arm: %w", *r.gpuIdle, err)
		}
		fmt.Fprintf(r.log, "GPU memory back to idle before arm %s: %d bytes in use (%d before the run)\n", arm.Name, got, *r.gpuIdle)
	}
	if r.live != nil {
		spec.Headers = r.live.headers
		spec.LogScrub = r.live.scrubber()
	}
	fmt.Fprintf(r.log, "launching the %s server for arm %s (log: %s)\n", r.cfg.Server.Kind, arm.Name, spec.LogPath)
	return integrate.Launch(ctx, spec)
}

func (a *cmdArm) ResetProfile(context.Context) error { return nil }

// Profile is nil: f of an arbitrary server comes from a profile taken
// outside the run (`transferlab profile`), not from the run itself.
func (a *cmdArm) Profile(context.Context, cellKey, []amdahl.Interval) (*amdahl.Fractions, error) {
	return nil, nil
}

// Sampler reads the GPU's energy counter, power and memory through NVML,
// attributing the server's process memory to it.
func (a *cmdArm) Sampler() energy.Sampler {
	return energy.NewNVML(a.device, energy.WithPIDs(a.PID()))
}

func (a *cmdArm) Died() <-chan struct{} { return a.Done() }

// Info is what the run knows of the launched server: argv as launched, its
// log, what it says about itself, manifest_argv's output and the hook's
// install receipts.
func (a *cmdArm) Info(context.Context) map[string]any {
	spec := a.Spec()
	info := map[string]any{"kind": ServerCommand, "launched_by_transferlab": true, "argv": spec.Argv,
		"base_url": a.BaseURL(), "log": a.LogPath(), "model": a.model, "description": a.desc}
	if a.manifest != nil {
		info["manifest_argv"] = a.manifest
	}
	if spec.HookDir != "" {
		if recs, err := integrate.ReadReceipts(spec.HookDir); err == nil {
			info["hook_receipts"] = recs
		} else {
			info["hook_receipts_error"] = err.Error()
		}
	}
	return info
}

// Hook is the hook's install receipts (proof that the override was
// installed in the server's processes); nil for an arm without override.
// Call counters are written by the hook when the server exits
// (servers/<arm>/hook/stats-<pid>.json).
func (a *cmdArm) Hook(context.Context) *report.HookArm {
	spec := a.Spec()
	if spec.HookDir == "" || a.arm.Override == nil {
		return nil
	}
	o := a.arm.Override
	h := &report.HookArm{Arm: a.arm.Name, Target: o.Target}
	if m := o.EffectiveMode(); m == integrate.ModeOn || m == integrate.ModeShadow {
		h.Candidate = o.Candidate
	}
	recs, err := integrate.ReadReceipts(spec.HookDir)
	if err != nil {
		h.Receipts = []string{"hook receipts unreadable: " + err.Error()}
		return h
	}
	for _, rc := range recs {
		for _, ov := range rc.Overrides {
			h.Receipts = append(h.Receipts, fmt.Sprintf("hook loaded in pid %d (%s): override %s, target %s, mode %s, installed %v",
				rc.PID, rc.Python, ov.Name, ov.Target, ov.Mode, ov.Installed))
		}
	}
	h.Receipts = append(h.Receipts, fmt.Sprintf("call counters: written by the hook at the server's exit to %s/stats-<pid>.json", spec.HookDir))
	return h
}
