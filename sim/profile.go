package sim

import (
	"slices"
	"time"
)

// Profile is the engine's accounting over the window since the last reset
// (or start). GPU times are the cost model's (simulated) op times; wall times
// are real. Durations marshal as integer nanoseconds (keys end in _ns).
type Profile struct {
	// Simulated is always true: these are cost-model figures, not measurements of a GPU.
	Simulated bool `json:"simulated"`
	// Model and GPU name the simulated model and GPU.
	Model string `json:"model"`
	GPU   string `json:"gpu"`
	// WindowStart is when the window began (start or last reset).
	WindowStart time.Time `json:"window_start"`
	// Wall is the window's real length (now − WindowStart).
	Wall time.Duration `json:"wall_ns"`
	// ActiveWall is the real time within the window during which at least one
	// request was in flight (from handler entry until its last byte was flushed
	// or it was aborted): idle gaps are left out (DESIGN.md, f_wall).
	ActiveWall time.Duration `json:"active_wall_ns"`
	// GPUBusy is the sum of every op's time over the window's steps.
	GPUBusy time.Duration `json:"gpu_busy_ns"`
	// GPUBusyPrefill and GPUBusyDecode split GPUBusy by phase (OpCost's rule).
	GPUBusyPrefill time.Duration `json:"gpu_busy_prefill_ns"`
	GPUBusyDecode  time.Duration `json:"gpu_busy_decode_ns"`
	// CPUOverhead is steps × the configured per-step CPU overhead.
	CPUOverhead time.Duration `json:"cpu_overhead_ns"`
	// Steps is the number of engine steps completed in the window.
	Steps int64 `json:"steps"`
	// PrefillTokens and DecodeTokens count the tokens the steps processed.
	PrefillTokens int64 `json:"prefill_tokens"`
	DecodeTokens  int64 `json:"decode_tokens"`
	// InFlight is the number of requests in flight when the profile was taken.
	InFlight int `json:"in_flight"`
	// Ops holds one entry per op, in execution order (OpNames).
	Ops []OpProfile `json:"ops"`
	// Overrides echoes the configured speedup factors, Ceilings the ops that
	// cost nothing (Config.Ceilings).
	Overrides map[string]float64 `json:"overrides,omitempty"`
	Ceilings  []string           `json:"ceilings,omitempty"`
	// DecodeSteps counts the steps with no prompt token (pure decode steps,
	// the steps behind ITL and TPOT); DecodeStepTime is their modelled
	// duration, GPU and CPU overhead (Σ StepCost.Duration).
	DecodeSteps    int64         `json:"decode_steps"`
	DecodeStepTime time.Duration `json:"decode_step_time_ns"`
	// DecodeStepWall is the same steps' real duration (each from the previous
	// step's end while busy, else from when it was planned): what the engine
	// really took, host lateness and stalls included, the time ITL and TPOT
	// measure.
	DecodeStepWall time.Duration `json:"decode_step_wall_ns"`
	// StepWall is every step's real duration (as DecodeStepWall), the
	// counterpart of GPUBusy + CPUOverhead, the steps' modelled time.
	StepWall time.Duration `json:"step_wall_ns"`
}

// TrueFraction is the cost model's own addressable fraction of op over the
// window: the share of the engine's modelled step time the op took, which is
// exactly the time a ceiling (the op at zero cost) removes from each step.
// whole is op time / Σ step durations (GPU + CPU overhead) over every step;
// decode is the same over the pure decode steps only (the steps whose
// durations ITL and TPOT are made of). ok is false for an unknown op or a
// window with no step (decode: no pure decode step).
func (p Profile) TrueFraction(op string) (whole, decode float64, ok bool) {
	o, found := p.Op(op)
	steps := p.GPUBusy + p.CPUOverhead
	if !found || steps <= 0 || p.DecodeStepTime <= 0 {
		return 0, 0, false
	}
	return float64(o.Total) / float64(steps), float64(o.DecodeSteps) / float64(p.DecodeStepTime), true
}

// OpProfile is one op's totals over the window.
type OpProfile struct {
	// Op is the op's name (OpNames).
	Op string `json:"op"`
	// Prefill and Decode split Total by phase (OpCost's rule); Total is the
	// op's simulated GPU time over the window.
	Prefill time.Duration `json:"prefill_ns"`
	Decode  time.Duration `json:"decode_ns"`
	Total   time.Duration `json:"total_ns"`
	// Launches counts the op's kernel launches over the window.
	Launches int64 `json:"launches"`
	// DecodeSteps is the op's time in pure decode steps (Profile.DecodeSteps).
	DecodeSteps time.Duration `json:"decode_steps_ns"`
	// SpeedupFactor is the override applied (1: baseline). Ceiling is true
	// when the op costs nothing (Config.Ceilings); SpeedupFactor is then 1
	// and every time above 0.
	SpeedupFactor float64 `json:"speedup_factor"`
	Ceiling       bool    `json:"ceiling,omitempty"`
}

// Op returns the named op's totals.
func (p Profile) Op(name string) (OpProfile, bool) {
	for _, o := range p.Ops {
		if o.Op == name {
			return o, true
		}
	}
	return OpProfile{}, false
}

// profileAcc accumulates a Profile; guarded by the engine's lock.
type profileAcc struct {
	windowStart   time.Time
	ops           [numOps]OpProfile
	gpu, cpu      time.Duration
	steps         int64
	prefillTokens int64
	decodeTokens  int64
	inFlight      int
	activeSince   time.Time // valid while inFlight > 0
	active        time.Duration
	decodeSteps   int64
	decodeTime    time.Duration
	decodeWall    time.Duration
	wall          time.Duration
}

func (a *profileAcc) reset(now time.Time) {
	inFlight := a.inFlight
	*a = profileAcc{windowStart: now, inFlight: inFlight}
	if inFlight > 0 {
		a.activeSince = now
	}
}

func (a *profileAcc) addStep(s *StepShape, c *StepCost, wall time.Duration) {
	for o := range c.Ops {
		oc := c.Ops[o]
		a.ops[o].Prefill += oc.Prefill
		a.ops[o].Decode += oc.Decode
		a.ops[o].Launches += int64(oc.Launches)
	}
	a.gpu += c.GPU
	a.cpu += c.CPUOverhead
	a.steps++
	a.wall += wall
	tp, td := s.Tokens()
	if tp == 0 && td > 0 {
		a.decodeSteps++
		a.decodeTime += c.Duration()
		a.decodeWall += wall
		for o := range c.Ops {
			a.ops[o].DecodeSteps += c.Ops[o].Total()
		}
	}
	a.prefillTokens += int64(tp)
	a.decodeTokens += int64(td)
}

// begin counts a request in flight from at.
func (a *profileAcc) begin(at time.Time) {
	if a.inFlight == 0 {
		a.activeSince = at
		if at.Before(a.windowStart) {
			a.activeSince = a.windowStart
		}
	}
	a.inFlight++
}

// end counts a request out of flight at at.
func (a *profileAcc) end(at time.Time) {
	a.inFlight--
	if a.inFlight == 0 {
		a.active += at.Sub(a.activeSince)
	}
}

func (a *profileAcc) snapshot(now time.Time, cm *CostModel, cfg *Config) Profile {
	p := Profile{
		Simulated:      true,
		Model:          cfg.Model.Name,
		GPU:            cfg.GPU.Name,
		WindowStart:    a.windowStart,
		Wall:           now.Sub(a.windowStart),
		ActiveWall:     a.active,
		GPUBusy:        a.gpu,
		CPUOverhead:    a.cpu,
		Steps:          a.steps,
		PrefillTokens:  a.prefillTokens,
		DecodeTokens:   a.decodeTokens,
		InFlight:       a.inFlight,
		Ops:            make([]OpProfile, numOps),
		DecodeSteps:    a.decodeSteps,
		DecodeStepTime: a.decodeTime,
		DecodeStepWall: a.decodeWall,
		StepWall:       a.wall,
		Ceilings:       slices.Clone(cfg.Ceilings),
	}
	if a.inFlight > 0 {
		p.ActiveWall += now.Sub(a.activeSince)
	}
	for o := Op(0); o < numOps; o++ {
		op := a.ops[o]
		op.Op = o.String()
		op.Total = op.Prefill + op.Decode
		op.SpeedupFactor = cm.factor[o]
		op.Ceiling = cm.ceiling[o]
		p.Ops[o] = op
		p.GPUBusyPrefill += op.Prefill
		p.GPUBusyDecode += op.Decode
	}
	if len(cfg.Overrides) > 0 {
		p.Overrides = make(map[string]float64, len(cfg.Overrides))
		for k, v := range cfg.Overrides {
			p.Overrides[k] = v
		}
	}
	return p
}
