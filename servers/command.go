package servers

import (
	"context"
	"fmt"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/report"
)

// manifestTimeout bounds server.command.manifest_argv.
const manifestTimeout = 2 * time.Minute

// CommandServer is one arm on a server launched by argv (server.kind command).
type CommandServer struct {
	*integrate.Process
	arm      string
	override *integrate.Override
	device   int
	model    string
	desc     Description
	manifest *integrate.ManifestOutput
}

var _ Server = (*CommandServer)(nil)

// CommandArm is what a command server needs to know of its arm.
type CommandArm struct {
	// Name labels the arm; Dir is its server folder (log, hook files).
	Name, Dir string
	// Override, when set, is injected through the kernel-override hook.
	Override *integrate.Override
}

// StartCommand launches cmd (secrets expanded, cwd resolved) for one arm,
// as the reference server is launched (Launcher: GPU memory back to idle
// first, process group, log, readiness, the hook's install receipt when the
// arm has an override), then probes it with p (Prober.Probe: /v1/models,
// /version, the model — model when set, else the one it lists — and one
// minimal completion; refused credentials stop it here) and runs
// manifest_argv.
func (l *Launcher) StartCommand(ctx context.Context, cmd integrate.CommandConfig, arm CommandArm, p *Prober, model string) (*CommandServer, error) {
	var hook integrate.HookSetup
	if arm.Override != nil {
		o := *arm.Override
		hook.Override = &o
	}
	spec, err := integrate.CommandSpec(cmd, hook, arm.Dir)
	if err != nil {
		return nil, err
	}
	proc, err := l.launch(ctx, Command, arm.Name, spec)
	if err != nil {
		return nil, err
	}
	t, err := p.Probe(ctx, proc.BaseURL(), model)
	if err != nil {
		_ = proc.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	a := &CommandServer{Process: proc, arm: arm.Name, override: arm.Override, device: l.Device, model: t.Model, desc: t.Desc}
	if w := t.Desc.CompletionCheck.Problem(); w != "" {
		fmt.Fprintf(l.Warn, "warning: arm %s: server %s: %s\n", arm.Name, proc.BaseURL(), w)
	}
	if m := cmd.ManifestArgv; len(m) > 0 {
		out := integrate.RunManifestCommand(ctx, m, spec.Env, spec.Dir, manifestTimeout)
		a.manifest = &out
	}
	return a, nil
}

// Model is the model id requests name on this server.
func (a *CommandServer) Model() string { return a.model }

// ResetProfile does nothing: Profile gives no fraction.
func (a *CommandServer) ResetProfile(context.Context) error { return nil }

// Profile is nil: f of an arbitrary server comes from a profile taken
// outside the run (`transferlab profile`), not from the run itself.
func (a *CommandServer) Profile(context.Context, report.CellKey, []amdahl.Interval) (*amdahl.Fractions, error) {
	return nil, nil
}

// Sampler reads the GPU's energy counter, power and memory through NVML,
// attributing the server's process memory to it.
func (a *CommandServer) Sampler() energy.Sampler {
	return energy.NewNVML(a.device, energy.WithPIDs(a.PID()))
}

// Died is closed when the launched process exits.
func (a *CommandServer) Died() <-chan struct{} { return a.Done() }

// Info is what the run knows of the launched server: argv as launched, its
// log, what it says about itself, manifest_argv's output and the hook's
// install receipts.
func (a *CommandServer) Info(context.Context) map[string]any {
	spec := a.Spec()
	info := map[string]any{"kind": Command, "launched_by_transferlab": true, "argv": spec.Argv,
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
func (a *CommandServer) Hook(context.Context) *report.HookArm {
	spec := a.Spec()
	if spec.HookDir == "" || a.override == nil {
		return nil
	}
	o := a.override
	h := &report.HookArm{Arm: a.arm, Target: o.Target}
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
