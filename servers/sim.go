package servers

import (
	"context"
	"fmt"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/sim"
)

// SimServer runs one arm on a fresh embedded simulator on a loopback port.
type SimServer struct {
	*sim.Server
	target string
	died   chan struct{}
	// truth receives the simulator's true fraction of each profiled window.
	truth func(SimTrueFraction)
}

var _ Server = (*SimServer)(nil)

// StartSim starts a simulator with cfg on 127.0.0.1 (a free port) and waits
// up to 10 s for it to be ready. target is the op whose fraction Profile
// returns; truth, when set, receives the simulator's own fraction of every
// profiled window (its ground truth).
func StartSim(ctx context.Context, cfg sim.Config, target string, truth func(SimTrueFraction)) (*SimServer, error) {
	s, err := sim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("simulated server: %w", err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("simulated server: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Ready(rctx); err != nil {
		_ = s.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("simulated server not ready: %w", err)
	}
	return &SimServer{Server: s, target: target, died: make(chan struct{}), truth: truth}, nil
}

// SimTrueFraction is the simulator's own addressable fraction of the target
// op over one cell's window (sim.Profile.TrueFraction): the ground truth f
// by ablation and the profile's f are checked against.
type SimTrueFraction struct {
	OfferedLoadRPS float64 `json:"offered_load_rps"`
	Repetition     int     `json:"repetition"`
	// Whole is the op's share of every step's modelled duration (E2E-like
	// metrics); Decode its share of the pure decode steps' (ITL, TPOT).
	Whole  float64 `json:"whole"`
	Decode float64 `json:"decode"`
	// DecodeSteps counts the pure decode steps; DecodeStepModel is their
	// modelled time, DecodeStepWall their real time (host lateness and
	// stalls included): what the engine did, the ground truth a measured
	// ITL or TPOT is compared with.
	DecodeSteps     int64         `json:"decode_steps"`
	DecodeStepModel time.Duration `json:"decode_step_model_ns"`
	DecodeStepWall  time.Duration `json:"decode_step_wall_ns"`
	// StepModel and StepWall are the same over every step of the window.
	StepModel time.Duration `json:"step_model_ns"`
	StepWall  time.Duration `json:"step_wall_ns"`
	// NoiseRunFactor is the noise model's run factor over the window
	// (sim.Server.NoiseRunFactor; 1 when server.sim.noise is off): the
	// modelled step times above already include it and each step's jitter.
	NoiseRunFactor float64 `json:"noise_run_factor"`
}

// ResetProfile starts a new window of the simulator's profile and truth.
func (a *SimServer) ResetProfile(context.Context) error {
	a.Server.ResetProfile()
	a.Server.ClearTruth()
	return nil
}

// Profile is exact: the simulator knows every op's modelled GPU time and its
// own active wall time (time with ≥ 1 request in flight). Nil, nil without
// a target op (no amdahl.target_op: nothing to profile).
func (a *SimServer) Profile(_ context.Context, cell report.CellKey, _ []amdahl.Interval) (*amdahl.Fractions, error) {
	if a.target == "" {
		return nil, nil
	}
	p := a.Server.Profile()
	op, ok := p.Op(a.target)
	if !ok {
		return nil, fmt.Errorf("the simulator has no op %q (ops: %v)", a.target, sim.OpNames())
	}
	if whole, decode, ok := p.TrueFraction(a.target); ok && a.truth != nil {
		a.truth(SimTrueFraction{OfferedLoadRPS: cell.OfferedLoadRPS, Repetition: cell.Repetition, Whole: whole, Decode: decode,
			DecodeSteps: p.DecodeSteps, DecodeStepModel: p.DecodeStepTime, DecodeStepWall: p.DecodeStepWall,
			StepModel: p.GPUBusy + p.CPUOverhead, StepWall: p.StepWall, NoiseRunFactor: a.Server.NoiseRunFactor()})
	}
	fr, err := amdahl.FromTotals(op.Total, p.GPUBusy, p.ActiveWall,
		amdahl.PhaseTotals(amdahl.PhasePrefill, op.Prefill, p.GPUBusyPrefill, 0),
		amdahl.PhaseTotals(amdahl.PhaseDecode, op.Decode, p.GPUBusyDecode, 0))
	if err != nil {
		return nil, err
	}
	fr.Target = a.target
	return &fr, nil
}

// Sampler is the simulated power model driven by the simulator's GPU-busy time.
func (a *SimServer) Sampler() energy.Sampler {
	return energy.NewSimulated(energy.DefaultPowerModel(), func() time.Duration { return a.Server.Profile().GPUBusy })
}

// Died never closes: the simulator runs in this process.
func (a *SimServer) Died() <-chan struct{} { return a.died }

// Err is nil: the simulator does not die on its own.
func (a *SimServer) Err() error { return nil }

// Info is the kind and the simulator's configuration.
func (a *SimServer) Info(context.Context) map[string]any {
	return map[string]any{"kind": Sim, "config": a.Server.Config()}
}

// Hook is nil: the simulator's override is a cost-model factor, not a hook.
func (a *SimServer) Hook(context.Context) *report.HookArm { return nil }
