package experiment

import (
	"context"
	"fmt"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/sim"
)

// simArm runs one arm on a fresh embedded simulator on a loopback port.
type simArm struct {
	*sim.Server
	target string
	died   chan struct{}
	// truth keeps the simulator's true fraction of each profiled window;
	// rates are the offered loads (req/s) by load index.
	truth func(SimTrueFraction)
	rates []float64
}

var _ armServer = (*simArm)(nil)

func (r *runner) startSim(ctx context.Context, arm ArmConfig) (armServer, error) {
	s, err := sim.New(r.simConfig(arm))
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
	return &simArm{Server: s, target: r.cfg.Amdahl.TargetOp, died: make(chan struct{}), rates: r.cfg.Load.RatesRPS, truth: func(t SimTrueFraction) {
		appendServerRecord(r, arm.Name, trueFractionsKey, t)
	}}, nil
}

// trueFractionsKey names the simulator's true fractions in a sim arm's
// manifest (manifest.server.<arm>.true_fractions).
const trueFractionsKey = "true_fractions"

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
}

// simConfig is the simulator's configuration for arm: the config's
// server.sim (or the default) with the arm's op overrides.
func (r *runner) simConfig(arm ArmConfig) sim.Config {
	cfg := sim.DefaultConfig()
	if r.cfg.Server.Sim != nil {
		cfg = r.cfg.Server.Sim.Config
	}
	cfg.Overrides = map[string]float64{}
	cfg.Ceilings = nil
	for op, f := range arm.SimOverrides {
		if f.IsCeiling() {
			cfg.Ceilings = append(cfg.Ceilings, op)
			continue
		}
		cfg.Overrides[op] = f.Factor
	}
	return cfg
}

func (a *simArm) ResetProfile(context.Context) error {
	a.Server.ResetProfile()
	a.Server.ClearTruth()
	return nil
}

// Profile is exact: the simulator knows every op's modelled GPU time and its
// own active wall time (time with ≥ 1 request in flight).
func (a *simArm) Profile(_ context.Context, key cellKey, _ []amdahl.Interval) (*amdahl.Fractions, error) {
	p := a.Server.Profile()
	op, ok := p.Op(a.target)
	if !ok {
		return nil, fmt.Errorf("the simulator has no op %q (ops: %v)", a.target, sim.OpNames())
	}
	if whole, decode, ok := p.TrueFraction(a.target); ok && a.truth != nil {
		a.truth(SimTrueFraction{OfferedLoadRPS: a.rates[key.load], Repetition: key.rep, Whole: whole, Decode: decode,
			DecodeSteps: p.DecodeSteps, DecodeStepModel: p.DecodeStepTime, DecodeStepWall: p.DecodeStepWall,
			StepModel: p.GPUBusy + p.CPUOverhead, StepWall: p.StepWall})
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

func (a *simArm) Sampler() energy.Sampler {
	return energy.NewSimulated(energy.DefaultPowerModel(), func() time.Duration { return a.Server.Profile().GPUBusy })
}

func (a *simArm) Died() <-chan struct{} { return a.died }
func (a *simArm) Err() error            { return nil }

func (a *simArm) Info(context.Context) map[string]any {
	return map[string]any{"kind": "sim", "config": a.Server.Config()}
}

// Hook is nil: the simulator's override is a cost-model factor, not a hook.
func (a *simArm) Hook(context.Context) *report.HookArm { return nil }
