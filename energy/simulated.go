package energy

import (
	"fmt"
	"time"
)

// PowerModel is the stated power model of the simulated server:
//
//	P(interval) = IdleW + (PeakW − IdleW) × busy fraction of the interval
//
// where the busy fraction is the GPU-busy time the simulated server reports
// for the interval divided by the interval's length, clamped to [0, 1]. Energy
// is the sum of P × interval length over the window (exact for the model, so
// the simulated counter has no quantisation).
type PowerModel struct {
	// IdleW is the power of an idle GPU, W (≈77 W on the H200, NOTES-gpu.md).
	IdleW float64 `json:"idle_w" yaml:"idle_w"`
	// PeakW is the power of a fully busy GPU, W (≈690 W for a bf16 GEMM load on the H200).
	PeakW float64 `json:"peak_w" yaml:"peak_w"`
	// LimitW is the power limit reported as the enforced limit, W (700 W on the H200).
	LimitW float64 `json:"limit_w" yaml:"limit_w"`
}

// DefaultPowerModel is the model with the H200 figures seen in
// /work/shared/NOTES-gpu.md: idle 77 W, 690 W under a bf16 matrix-product
// load, 700 W limit. They are observations from one card, not a specification.
func DefaultPowerModel() PowerModel { return PowerModel{IdleW: 77, PeakW: 690, LimitW: 700} }

// Validate checks 0 ≤ IdleW ≤ PeakW ≤ LimitW (LimitW 0: no limit).
func (m PowerModel) Validate() error {
	switch {
	case m.IdleW < 0:
		return fmt.Errorf("energy: power model: idle_w %.3f is negative", m.IdleW)
	case m.PeakW < m.IdleW:
		return fmt.Errorf("energy: power model: peak_w %.3f is below idle_w %.3f", m.PeakW, m.IdleW)
	case m.LimitW < 0:
		return fmt.Errorf("energy: power model: limit_w %.3f is negative", m.LimitW)
	case m.LimitW > 0 && m.LimitW < m.PeakW:
		return fmt.Errorf("energy: power model: limit_w %.3f is below peak_w %.3f", m.LimitW, m.PeakW)
	}
	return nil
}

// PowerW is the model's power at a busy fraction (clamped to [0, 1]), W.
func (m PowerModel) PowerW(busyFraction float64) float64 {
	return m.IdleW + (m.PeakW-m.IdleW)*min(max(busyFraction, 0), 1)
}

// NewSimulated returns a Sampler that applies model to busy, the simulated
// server's cumulative GPU-busy time (monotonic, any origin). Every figure is
// labelled "simulated". VRAM is unavailable unless WithSimulatedVRAM is given.
// An invalid model makes Start fail.
func NewSimulated(model PowerModel, busy func() time.Duration, opts ...Option) Sampler {
	return newSimulated(model, busy, opts...)
}

func newSimulated(model PowerModel, busy func() time.Duration, opts ...Option) *runner {
	cfg := newConfig(opts)
	return &runner{cfg: cfg, probe: &simProbe{model: model, busy: busy, vram: cfg.simVRAM}}
}

// simProbe implements probe with the power model.
type simProbe struct {
	model    PowerModel
	busy     func() time.Duration
	vram     func() uint64
	lastAt   time.Duration
	lastBusy time.Duration
	energyJ  float64
	clamped  int
}

var _ probe = (*simProbe)(nil)

func (p *simProbe) open() (sourceInfo, error) {
	info := sourceInfo{
		source: SourceSimulated,
		label: fmt.Sprintf("simulated (power model: %.0f W idle + (%.0f W − %.0f W) × GPU-busy fraction)",
			p.model.IdleW, p.model.PeakW, p.model.IdleW),
		device:              DeviceInfo{Name: "simulated"},
		powerSource:         PowerSimulated,
		powerIsIntervalMean: true,
		counterUpdatePeriod: -1,
	}
	if p.busy == nil {
		return info, fmt.Errorf("energy: simulated sampler: busy function is nil")
	}
	if err := p.model.Validate(); err != nil {
		return info, err
	}
	if p.model.LimitW > 0 {
		info.powerLimitW = ptr(p.model.LimitW)
	}
	p.lastAt, p.energyJ, p.clamped = 0, 0, 0
	p.lastBusy = p.busy()
	return info, nil
}

// take reports the model's power over the interval since the previous
// sample and the model energy accumulated since open. The first sample of a
// window (at = 0) reports idle power and zero energy.
func (p *simProbe) take(at time.Duration) Sample {
	s := Sample{At: at}
	b := p.busy()
	dt := at - p.lastAt
	pw := p.model.IdleW
	if dt > 0 {
		frac := float64(b-p.lastBusy) / float64(dt)
		if frac > 1 || frac < 0 {
			p.clamped++
		}
		pw = p.model.PowerW(frac)
		p.energyJ += pw * dt.Seconds()
	}
	p.lastAt, p.lastBusy = at, b
	s.PowerW = pw
	s.EnergyMJ = p.energyJ * 1000
	s.set(fieldPower | fieldEnergy)
	if p.vram != nil {
		s.DeviceUsedBytes = p.vram()
		s.set(fieldMemory)
	}
	return s
}

func (p *simProbe) close() error {
	if p.clamped > 0 {
		return fmt.Errorf("busy fraction outside [0, 1] in %d interval(s), clamped: the busy function is not a per-GPU busy time", p.clamped)
	}
	return nil
}
