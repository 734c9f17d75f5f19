package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// NoiseConfig is the simulator's run-to-run noise model (COSTMODEL.md,
// "Run-to-run noise"): every step's modelled time is multiplied by
// F_run · F_step, where F_run = exp(RunSigma · Z) is drawn once per Server
// (one server start: what differs between two launches of the same
// configuration on a real GPU) and F_step = exp(StepSigma · Z') is drawn
// per step (Z, Z' standard normal; log-normal factors with median 1). Both
// come from Seed: the same seed gives the same factors, step by step, and
// the same F_run per window whatever the steps before it. F_run
// is drawn again at every profile reset (Server.ResetProfile, which a run
// calls at each cell's start), so two cells on one server differ as two
// server starts do. The
// zero value is off (every factor 1), the deterministic stand-in.
type NoiseConfig struct {
	// RunSigma is the standard deviation of ln F_run, the per-server-start
	// factor (0.03: the H200 study's cell-to-cell spread; 0: off).
	RunSigma float64 `yaml:"run_sigma" json:"run_sigma"`
	// StepSigma is the standard deviation of ln F_step, the per-step factor
	// (0.015: the H200 study's step-to-step ITL spread; 0: off).
	StepSigma float64 `yaml:"step_sigma" json:"step_sigma"`
	// Seed seeds F_run and the sequence of F_step.
	Seed uint64 `yaml:"seed" json:"seed"`
	// SkipRunDraws passes over that many F_run draws at the start: a server
	// started to continue an interrupted stretch of cells (a resumed run)
	// draws, from its first profile reset on, the F_run the original
	// server drew for the cells after the kept ones. Set by the run, never
	// by a config.
	SkipRunDraws int `yaml:"-" json:"-"`
}

// On reports whether the model changes any step.
func (n NoiseConfig) On() bool { return n.RunSigma > 0 || n.StepSigma > 0 }

func (n NoiseConfig) validate() []error {
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
	}{{"noise.run_sigma", n.RunSigma}, {"noise.step_sigma", n.StepSigma}} {
		// Above 1 (a factor spread of e) the model stands for no server measured here.
		if !(f.v >= 0 && f.v <= 1) {
			errs = append(errs, fmt.Errorf("%s: must be a number in [0, 1] (a log-normal standard deviation; 0: off), got %v", f.name, f.v))
		}
	}
	return errs
}

// noise draws the factors of one server's run. Not safe for concurrent use:
// the engine's loop is its only caller.
type noise struct {
	cfg NoiseConfig
	run float64
	// runRNG draws the F_run of each window, rng each step's F_step: two
	// streams, so the k-th window's F_run follows from the seed alone,
	// whatever number of steps the windows before it took (that number
	// depends on the host's timing).
	runRNG, rng *rand.Rand
}

// newNoise draws F_run from cfg.Seed; later F_run draws and the step
// factors follow from it, on streams of their own.
func newNoise(cfg NoiseConfig) *noise {
	n := &noise{cfg: cfg, run: 1,
		runRNG: rand.New(rand.NewPCG(cfg.Seed, 0x72756e)),     // "run"
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x6e6f697365))} // "noise"
	for range cfg.SkipRunDraws {
		n.redraw()
	}
	n.redraw()
	return n
}

// redraw draws a new F_run (a no-op with run_sigma 0).
func (n *noise) redraw() {
	if n.cfg.RunSigma > 0 {
		n.run = math.Exp(n.cfg.RunSigma * n.runRNG.NormFloat64())
	}
}

// factor is the next step's F_run · F_step.
func (n *noise) factor() float64 {
	if n.cfg.StepSigma <= 0 {
		return n.run
	}
	return n.run * math.Exp(n.cfg.StepSigma*n.rng.NormFloat64())
}

// apply scales every time of c (each op's prefill and decode share, the GPU
// total and the CPU overhead) by the next step's factor f, which it returns;
// launches are counts and stay. With the model off, c is unchanged and f 1.
func (n *noise) apply(c StepCost) (StepCost, float64) {
	if !n.cfg.On() {
		return c, 1
	}
	f := n.factor()
	scale := func(d time.Duration) time.Duration { return time.Duration(math.Round(float64(d) * f)) }
	var gpu time.Duration
	for o := range c.Ops {
		c.Ops[o].Prefill = scale(c.Ops[o].Prefill)
		c.Ops[o].Decode = scale(c.Ops[o].Decode)
		gpu += c.Ops[o].Total()
	}
	c.GPU = gpu
	c.CPUOverhead = scale(c.CPUOverhead)
	return c, f
}
