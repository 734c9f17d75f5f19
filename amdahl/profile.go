package amdahl

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Kernel is one piece of GPU work from a profile: a kernel, a memcpy or a
// memset, on one device and stream, on the profile's clock.
type Kernel struct {
	Name   string        `json:"name"`
	Kind   string        `json:"kind"` // "kernel", "memcpy", "memset"
	Device int64         `json:"device"`
	Stream int64         `json:"stream"`
	Start  time.Duration `json:"start_ns"`
	End    time.Duration `json:"end_ns"`
	// Target is true when the work is attributed to the target op; By says how.
	Target bool   `json:"target"`
	By     string `json:"by,omitempty"` // "annotation", "correlation", "name"
	// Graph is true when the work was launched by a CUDA graph replay
	// (cudaGraphLaunch), which links to no op: only its name can attribute it.
	Graph bool `json:"graph,omitempty"`
	// Phase is the phase the work ran in ("" when the profile cannot tell).
	Phase string `json:"phase,omitempty"`
	// Call groups target work into calls of the op (1-based; 0 when not
	// target): the work of one annotated range, one matched kernel sequence,
	// or one kernel matched by name.
	Call int `json:"call,omitempty"`
	// Launch is when the runtime call that launched the work was made, on
	// the profile's clock (CPU side); Launched says the profile links the
	// work to one (by correlation id).
	Launch   time.Duration `json:"launch_ns,omitempty"`
	Launched bool          `json:"-"`
}

func (k Kernel) interval() Interval { return Interval{k.Start, k.End} }

// Attribution counts how kernels were attributed to the target.
type Attribution struct {
	ByAnnotation  int `json:"by_annotation"`  // inside a GPU-side target range
	ByCorrelation int `json:"by_correlation"` // launched inside a CPU-side target range
	ByName        int `json:"by_name"`        // kernel-name pattern
	BySequence    int `json:"by_sequence"`    // a run of consecutive kernels matching KernelSequence
	// GraphKernels is the number of kernels replayed from CUDA graphs;
	// GraphUnattributed those of them no pattern could attribute (their time
	// is in busy time but never in target time: f is then low, and Warnings
	// say so).
	GraphKernels      int `json:"graph_kernels"`
	GraphUnattributed int `json:"graph_unattributed"`
}

// Profile is a GPU timeline read from a profiler export, with each kernel
// attributed to the target op or not.
type Profile struct {
	Source string `json:"source"` // "chrome" or "nsys"
	Path   string `json:"path"`
	Target string `json:"target"` // target annotation name, or the preset's name when a preset attributed the kernels without target ranges
	// Pattern is the kernel-name pattern used, if any.
	Pattern string   `json:"kernel_pattern,omitempty"`
	Kernels []Kernel `json:"-"`
	// Span runs from the first GPU work's start to the last one's end.
	Span Interval `json:"span"`
	// Extent runs from the first to the last event of any kind the reader
	// used (GPU work, CPU ranges, launch calls): the best estimate of the
	// profiled window when requests may outlast the last kernel.
	Extent Interval `json:"extent"`
	// PhaseWall holds each phase's wall ranges (sorted, disjoint) from phase
	// annotations: GPU-side ranges when the profile has them, else CPU-side.
	PhaseWall   map[string][]Interval `json:"-"`
	Attribution Attribution           `json:"attribution"`
	// UnixBaseNs is the Unix time (ns) of the profile clock's zero, when the
	// export records it (UnixBaseKnown): add it to put request times on the
	// profile's clock.
	UnixBaseNs    int64    `json:"unix_base_ns,omitempty"`
	UnixBaseKnown bool     `json:"unix_base_known"`
	Warnings      []string `json:"warnings,omitempty"`
}

// ErrNoAttribution means the profile has no range named after the target and
// neither a kernel-name pattern nor a kernel sequence was given, so no kernel can be attributed.
var ErrNoAttribution = errors.New("no target annotation range in the profile and no kernel-name pattern or sequence")

// Option configures how a profile reader attributes kernels.
type Option func(*attrConfig)

type attrConfig struct {
	target string
	// preset names the TargetPreset whose kernel selection was given; a
	// profile it attributes without target ranges is labelled with it.
	preset   string
	pattern  *regexp.Regexp
	sequence []*regexp.Regexp
	phases   map[string]string
}

// DefaultTargetAnnotation is the record_function / NVTX range name the hook
// opens around each call of the target (see PROFILES.md).
const DefaultTargetAnnotation = "transferlab::target"

func newAttrConfig(opts []Option) attrConfig {
	c := attrConfig{target: DefaultTargetAnnotation, phases: map[string]string{
		"transferlab::prefill": PhasePrefill,
		"transferlab::decode":  PhaseDecode,
		"transferlab::mixed":   PhaseMixed,
	}}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// TargetAnnotation sets the range name that marks the target's calls.
// Default DefaultTargetAnnotation ("transferlab::target").
func TargetAnnotation(name string) Option { return func(c *attrConfig) { c.target = name } }

// KernelPattern sets the kernel-name pattern: it attributes CUDA-graph replay
// kernels, and every kernel when the profile has no target range. Default:
// none (graph kernels stay unattributed; a profile without ranges is an error).
func KernelPattern(re *regexp.Regexp) Option { return func(c *attrConfig) { c.pattern = re } }

// KernelSequence attributes every run of consecutive kernels on one stream
// (memcpys and memsets skipped) whose names match steps[0], steps[1], … in
// order: the signature of an op made of generic kernels, such as eager
// RMSNorm's copy, pow, mean, add, rsqrt, mul, copy, mul. Like KernelPattern
// it applies to CUDA-graph replays, and to every kernel when the profile has
// no target range. Default: none.
func KernelSequence(steps []*regexp.Regexp) Option {
	return func(c *attrConfig) { c.sequence = steps }
}

// KernelNames are the options that attribute a target by its kernels' names,
// as a preset, a config or the profile command spells them: pattern, one
// regexp (KernelPattern), and sequence, one regexp per step in order
// (KernelSequence); either may be empty, and then adds no option. An error
// names what did not compile: "kernel pattern: …" or "kernel sequence step i
// (expr): …", i counted from 1.
func KernelNames(pattern string, sequence []string) ([]Option, error) {
	var opts []Option
	if pattern != "" {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("kernel pattern: %w", err)
		}
		opts = append(opts, KernelPattern(re))
	}
	if len(sequence) > 0 {
		steps := make([]*regexp.Regexp, len(sequence))
		for i, expr := range sequence {
			re, err := regexp.Compile(expr)
			if err != nil {
				return nil, fmt.Errorf("kernel sequence step %d (%q): %w", i+1, expr, err)
			}
			steps[i] = re
		}
		opts = append(opts, KernelSequence(steps))
	}
	return opts, nil
}

// PhaseAnnotations are the PhaseAnnotation options of specs, each
// "RANGE_NAME=PHASE" (the profile command's --phase); an error names the
// spec that is not.
func PhaseAnnotations(specs []string) ([]Option, error) {
	opts := make([]Option, 0, len(specs))
	for _, p := range specs {
		name, phase, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("phase %q: want RANGE_NAME=PHASE", p)
		}
		opts = append(opts, PhaseAnnotation(name, phase))
	}
	return opts, nil
}

// PhaseAnnotation maps a range name to a phase. Defaults: "transferlab::prefill"
// → prefill, "transferlab::decode" → decode, "transferlab::mixed" → mixed.
// An empty phase removes the mapping.
func PhaseAnnotation(name, phase string) Option {
	return func(c *attrConfig) {
		if phase == "" {
			delete(c.phases, name)
			return
		}
		c.phases[name] = phase
	}
}

// NamePattern builds a pattern matching exactly the given kernel names, e.g.
// the target's kernels learned from an eager profile (TargetKernelNames), to
// attribute the same kernels when they are replayed from a CUDA graph.
func NamePattern(names []string) (*regexp.Regexp, error) {
	if len(names) == 0 {
		return nil, errors.New("amdahl: name pattern: no kernel names")
	}
	expr := "^(?:"
	for i, n := range names {
		if i > 0 {
			expr += "|"
		}
		expr += regexp.QuoteMeta(n)
	}
	return regexp.Compile(expr + ")$")
}

// TargetKernelNames lists the distinct names of kernels attributed to the
// target, in first-seen order.
func (p *Profile) TargetKernelNames() []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range p.Kernels {
		if k.Target && !seen[k.Name] {
			seen[k.Name] = true
			out = append(out, k.Name)
		}
	}
	return out
}

// TargetCall is one call of the target op as the profile sees it (Kernel.Call).
type TargetCall struct {
	// Launch is the earliest launch call of the call's work (profile clock,
	// CPU side); Launched is true when every kernel of the call has one.
	Launch   time.Duration `json:"launch_ns"`
	Launched bool          `json:"launched"`
	// Span runs from the call's first kernel start to its last kernel end on
	// the GPU: what CUDA events around the call measure when the GPU is
	// already busy as the call is issued (gaps between its kernels included).
	Span Interval `json:"span"`
	// KernelTime is |∪ of the call's kernels| (gaps excluded), ns.
	KernelTime time.Duration `json:"kernel_time_ns"`
	Kernels    int           `json:"kernels"`
}

// TargetCalls groups the target's work by call, ordered by span start.
func (p *Profile) TargetCalls() []TargetCall {
	idx := map[int]int{}
	var calls []TargetCall
	var ivs [][]Interval
	for _, k := range p.Kernels {
		if !k.Target || k.Call == 0 {
			continue
		}
		i, ok := idx[k.Call]
		if !ok {
			i = len(calls)
			idx[k.Call] = i
			calls = append(calls, TargetCall{Launch: k.Launch, Launched: true, Span: k.interval()})
			ivs = append(ivs, nil)
		}
		c := &calls[i]
		c.Launched = c.Launched && k.Launched
		if k.Launched {
			c.Launch = min(c.Launch, k.Launch)
		}
		c.Span.Start, c.Span.End = min(c.Span.Start, k.Start), max(c.Span.End, k.End)
		c.Kernels++
		ivs[i] = append(ivs[i], k.interval())
	}
	for i := range calls {
		calls[i].KernelTime = totalLength(Union(ivs[i]))
	}
	slices.SortStableFunc(calls, func(a, b TargetCall) int { return cmpDur(a.Span.Start, b.Span.Start) })
	return calls
}

// WindowOption sets the window and active time Fractions measures over.
type WindowOption func(*windowConfig)

type windowConfig struct {
	window    *Interval
	active    []Interval
	hasActive bool
}

// Window restricts the analysis to w on the profile's clock. Default: the
// profile's Span.
func Window(w Interval) WindowOption { return func(c *windowConfig) { c.window = &w } }

// Active gives the time with ≥ 1 request in flight on the profile's clock
// (typically the [sent, end] intervals of the requests, shifted onto it; they
// are unioned and clipped to the window). Default: the whole window is
// active, and ActiveFrom says "window".
func Active(ivs []Interval) WindowOption {
	return func(c *windowConfig) { c.active, c.hasActive = ivs, true }
}

// Fractions computes f_gpu, f_wall and f_excl over one window (DESIGN.md,
// "Addressable fraction"):
//
//	busy       = |∪ all GPU work ∩ W|           (overlap across streams counted once)
//	target     = |∪ target work ∩ W|
//	f_gpu      = target / busy
//	f_wall     = |∪ target ∩ A| / |A|           (A = active wall ∩ W)
//	f_excl     = |(∪ target − ∪ other work) ∩ A| / |A|
//
// and the same per phase where kernels carry one. It returns an error when
// the window or the active time is empty.
func (p *Profile) Fractions(opts ...WindowOption) (Fractions, error) {
	var c windowConfig
	for _, o := range opts {
		o(&c)
	}
	w := p.Span
	if c.window != nil {
		w = *c.window
	}
	if w.Len() == 0 {
		return Fractions{}, fmt.Errorf("amdahl: %s %s: empty window %v", p.Source, p.Path, w)
	}
	win := []Interval{w}
	active, from := win, "window"
	if c.hasActive {
		active, from = Intersect(c.active, win), "requests"
	}
	activeLen := totalLength(active)
	if activeLen == 0 {
		return Fractions{}, fmt.Errorf("amdahl: %s %s: no active wall time inside window %v", p.Source, p.Path, w)
	}
	var all, tgt, other []Interval
	phaseAll, phaseTgt := map[string][]Interval{}, map[string][]Interval{}
	for _, k := range p.Kernels {
		iv := k.interval()
		all = append(all, iv)
		if k.Target {
			tgt = append(tgt, iv)
		} else {
			other = append(other, iv)
		}
		if k.Phase != "" {
			phaseAll[k.Phase] = append(phaseAll[k.Phase], iv)
			if k.Target {
				phaseTgt[k.Phase] = append(phaseTgt[k.Phase], iv)
			}
		}
	}
	busy := totalLength(Intersect(all, win))
	target := totalLength(Intersect(tgt, win))
	targetActive := totalLength(Intersect(tgt, active))
	excl := totalLength(Intersect(Subtract(tgt, other), active))
	fr := Fractions{
		Source: p.Source, Target: p.Target,
		TargetGPU: target, TargetActive: targetActive, TargetExclusive: excl,
		Busy: busy, ActiveWall: activeLen, ActiveFrom: from,
		FGPU:  ratio(float64(target), float64(busy)),
		FWall: ratio(float64(targetActive), float64(activeLen)),
		FExcl: ratio(float64(excl), float64(activeLen)),
		FSpan: NaN(),
	}
	if calls := p.TargetCalls(); len(calls) > 0 {
		for _, c := range calls {
			if w.Contains(c.Span.Start) {
				fr.TargetSpan += c.Span.Len()
			}
		}
		fr.FSpan = ratio(float64(fr.TargetSpan), float64(activeLen))
	}
	for ph, ivs := range phaseAll {
		if fr.Phases == nil {
			fr.Phases = map[string]PhaseFractions{}
		}
		pt := totalLength(Intersect(phaseTgt[ph], win))
		pb := totalLength(Intersect(ivs, win))
		pf := PhaseFractions{TargetGPU: pt, Busy: pb, FGPU: ratio(float64(pt), float64(pb)), FWall: NaN()}
		if wall := Intersect(p.PhaseWall[ph], active); len(wall) > 0 {
			pf.Wall = totalLength(wall)
			pf.FWall = ratio(float64(totalLength(Intersect(phaseTgt[ph], wall))), float64(pf.Wall))
		}
		fr.Phases[ph] = pf
	}
	return fr, nil
}

// WindowSamples computes Fractions over each window and returns their samples
// for the bootstrap of f (FWallEstimate). active as for Active; nil means each
// whole window is active.
func (p *Profile) WindowSamples(windows []Interval, active []Interval) ([]WindowSample, error) {
	out := make([]WindowSample, 0, len(windows))
	for i, w := range windows {
		opts := []WindowOption{Window(w)}
		if active != nil {
			opts = append(opts, Active(active))
		}
		fr, err := p.Fractions(opts...)
		if err != nil {
			return nil, fmt.Errorf("window %d: %w", i, err)
		}
		out = append(out, fr.Sample(fmt.Sprintf("w%d", i)))
	}
	return out, nil
}
