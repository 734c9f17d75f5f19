package experiment

import (
	"context"
	"fmt"
	"time"

	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/sim"
)

// simArm runs one arm on a fresh embedded simulator on a loopback port.
type simArm struct {
	*sim.Server
	target string
	died   chan struct{}
}

var _ armServer = (*simArm)(nil)

func (r *runner) startSim(ctx context.Context, arm ArmConfig) (armServer, error) {
	cfg := sim.DefaultConfig()
	if r.cfg.Server.Sim != nil {
		cfg = r.cfg.Server.Sim.Config
	}
	cfg.Overrides = map[string]float64{}
	for op, f := range arm.SimOverrides {
		cfg.Overrides[op] = f
	}
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
	return &simArm{Server: s, target: r.cfg.Amdahl.TargetOp, died: make(chan struct{})}, nil
}

func (a *simArm) ResetProfile(context.Context) error {
	a.Server.ResetProfile()
	a.Server.ClearTruth()
	return nil
}

func (a *simArm) Profile(context.Context) (*opProfile, error) {
	p := a.Server.Profile()
	op, ok := p.Op(a.target)
	if !ok {
		return nil, fmt.Errorf("the simulator has no op %q (ops: %v)", a.target, sim.OpNames())
	}
	return &opProfile{
		Source:        "sim cost model (exact op times)",
		Target:        op.Total,
		TargetPrefill: op.Prefill,
		TargetDecode:  op.Decode,
		Busy:          p.GPUBusy,
		ActiveWall:    p.ActiveWall,
	}, nil
}

func (a *simArm) Sampler() energy.Sampler {
	return energy.NewSimulated(energy.DefaultPowerModel(), func() time.Duration { return a.Server.Profile().GPUBusy })
}

func (a *simArm) Died() <-chan struct{} { return a.died }
func (a *simArm) Err() error            { return nil }

func (a *simArm) Info(context.Context) map[string]any {
	return map[string]any{"kind": "sim", "config": a.Server.Config()}
}
