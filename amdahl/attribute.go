package amdahl

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// timeline is what a profile reader extracts before attribution; the
// attribution rules are shared by every reader.
type timeline struct {
	kernels   []rawKernel
	cpuRanges []cpuRange         // user annotations / NVTX ranges on CPU threads
	gpuRanges []gpuRange         // annotations projected on the GPU timeline
	launches  map[int64]launchEv // runtime launch calls by correlation id
	cpuOps    []cpuRange         // CPU ops carrying an External id (Chrome)
}

type rawKernel struct {
	k       Kernel
	corr    int64
	hasCorr bool
	ext     int64
	hasExt  bool
	graph   bool // known to be a graph replay from the export itself
}

type cpuRange struct {
	name   string
	thread string
	iv     Interval
	ext    int64
	hasExt bool
}

type gpuRange struct {
	name   string
	device int64
	stream int64 // anyStream when the range's stream is unknown
	iv     Interval
}

// anyStream marks a GPU-side range that applies to every stream of its device.
const anyStream = -1 << 62

// gpuKey places GPU-side ranges on a device and stream.
type gpuKey struct{ device, stream int64 }

type launchEv struct {
	thread string
	at     time.Duration
	name   string
}

// isGraphLaunch reports whether a runtime call replays a CUDA graph
// (cudaGraphLaunch, cudaGraphLaunch_v10000, cuGraphLaunch).
func isGraphLaunch(name string) bool {
	return strings.HasPrefix(name, "cudaGraphLaunch") || strings.HasPrefix(name, "cuGraphLaunch")
}

// attribute applies the attribution rules, in order, to every kernel:
//
//  1. launched by a CUDA graph replay (its correlation id leads to a
//     cudaGraphLaunch): target only if its name matches the kernel pattern;
//  2. its midpoint lies in a GPU-side target range on its device and stream
//     (any stream of the device when the range's stream is unknown): "annotation";
//  3. its launch call lies in a CPU-side target range on the launching thread,
//     or its External id is that of a CPU op starting inside one: "correlation";
//  4. only when the profile has no target range at all: the kernel pattern, "name";
//  5. for kernels eligible under 1 or 4 and not yet attributed: a run matching
//     the kernel sequence on its stream, "sequence".
//
// Phases come from phase ranges the same way (GPU-side by midpoint, else the
// launch call inside a CPU-side range).
func attribute(tl timeline, c attrConfig, source, path string) (*Profile, error) {
	p := &Profile{Source: source, Path: path, Target: c.target}
	if c.pattern != nil {
		p.Pattern = c.pattern.String()
	}
	if len(tl.kernels) == 0 {
		return nil, fmt.Errorf("amdahl: %s %s: no GPU work (kernel, memcpy, memset) in the profile", source, path)
	}
	r := collectRanges(tl, c)
	hasAnn := len(r.tgtCPU)+len(r.tgtGPU) > 0
	byNameRules := c.pattern != nil || len(c.sequence) > 0
	if !hasAnn && !byNameRules {
		return nil, fmt.Errorf("amdahl: %s %s: target %q: %w", source, path, c.target, ErrNoAttribution)
	}
	at := newAttributor(tl, c, r, hasAnn)
	p.Span = Interval{tl.kernels[0].k.Start, tl.kernels[0].k.End}
	p.Kernels = make([]Kernel, 0, len(tl.kernels))
	for ki, rk := range tl.kernels {
		k := at.kernel(ki, rk, &p.Attribution)
		p.Span.Start, p.Span.End = min(p.Span.Start, k.Start), max(p.Span.End, k.End)
		p.Kernels = append(p.Kernels, k)
	}
	if len(c.sequence) > 0 {
		matchSequence(p.Kernels, c.sequence, func(k *Kernel) bool { return k.Graph || !hasAnn },
			func(first int) int { return at.callID(fmt.Sprintf("sequence/%d", first)) })
	}
	p.Attribution.count(p.Kernels, byNameRules)
	p.PhaseWall = at.phaseWall()
	p.Extent = extent(p.Span, tl)
	a := p.Attribution
	switch {
	case !hasAnn && c.preset != "" && a.ByName+a.BySequence > 0:
		// The preset's selection is what the user asked for: no range is expected.
		p.Target = c.preset
	case !hasAnn:
		p.Warnings = append(p.Warnings, fmt.Sprintf("no range named %q: kernels attributed by name only (pattern %q, %d-step sequence)", c.target, p.Pattern, len(c.sequence)))
	}
	if a.GraphUnattributed > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%d kernels replayed from CUDA graphs link to no op and no kernel pattern or sequence was given: they count in busy time, never in target time, so f is an underestimate (learn names from an eager profile: NamePattern(TargetKernelNames()))", a.GraphUnattributed))
	}
	if a.ByAnnotation+a.ByCorrelation+a.ByName+a.BySequence == 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("no GPU work attributed to target %q", c.target))
	}
	return p, nil
}

// ranges are a profile's target ranges and phase ranges (phase → ...),
// each merged (Union) per thread on the CPU side and per device and stream
// on the GPU side.
type ranges struct {
	tgtCPU map[string][]Interval
	tgtGPU map[gpuKey][]Interval
	phCPU  map[string]map[string][]Interval
	phGPU  map[string]map[gpuKey][]Interval
}

// collectRanges sorts tl's ranges into c's target and phases.
func collectRanges(tl timeline, c attrConfig) ranges {
	r := ranges{tgtCPU: map[string][]Interval{}, tgtGPU: map[gpuKey][]Interval{},
		phCPU: map[string]map[string][]Interval{}, phGPU: map[string]map[gpuKey][]Interval{}}
	for _, cr := range tl.cpuRanges {
		if cr.name == c.target {
			r.tgtCPU[cr.thread] = append(r.tgtCPU[cr.thread], cr.iv)
		}
		if ph := c.phases[cr.name]; ph != "" {
			if r.phCPU[ph] == nil {
				r.phCPU[ph] = map[string][]Interval{}
			}
			r.phCPU[ph][cr.thread] = append(r.phCPU[ph][cr.thread], cr.iv)
		}
	}
	for _, gr := range tl.gpuRanges {
		key := gpuKey{gr.device, gr.stream}
		if gr.name == c.target {
			r.tgtGPU[key] = append(r.tgtGPU[key], gr.iv)
		}
		if ph := c.phases[gr.name]; ph != "" {
			if r.phGPU[ph] == nil {
				r.phGPU[ph] = map[gpuKey][]Interval{}
			}
			r.phGPU[ph][key] = append(r.phGPU[ph][key], gr.iv)
		}
	}
	unionAll(r.tgtCPU)
	unionAll(r.tgtGPU)
	for _, m := range r.phCPU {
		unionAll(m)
	}
	for _, m := range r.phGPU {
		unionAll(m)
	}
	return r
}

// onGPU reports whether a kernel's midpoint lies in a range of m on its
// own stream, or in a range whose stream is unknown on its device.
func onGPU(m map[gpuKey][]Interval, k Kernel, mid time.Duration) bool {
	return covering(m[gpuKey{k.Device, k.Stream}], mid) || covering(m[gpuKey{k.Device, anyStream}], mid)
}

// attributor applies attribute's rules to one timeline's kernels in turn.
type attributor struct {
	c        attrConfig
	r        ranges
	hasAnn   bool
	launches map[int64]launchEv
	phases   []string
	// targetCorr holds the correlation ids of launch calls inside a CPU-side
	// target range; targetExt maps the External id of a CPU op inside one to
	// the call key of its range.
	targetCorr map[int64]bool
	targetExt  map[int64]string
	// callIDs numbers the calls of the op: each target range (per thread, or
	// per GPU lane), matched kernel sequence and kernel matched by name is one.
	callIDs map[string]int
	// phEnd: phase → thread → CPU range index → end of the last GPU work it launched.
	phEnd map[string]map[string]map[int]time.Duration
}

func newAttributor(tl timeline, c attrConfig, r ranges, hasAnn bool) *attributor {
	a := &attributor{c: c, r: r, hasAnn: hasAnn, launches: tl.launches, phases: sortedKeys(r.phCPU, r.phGPU),
		targetCorr: map[int64]bool{}, targetExt: map[int64]string{}, callIDs: map[string]int{},
		phEnd: map[string]map[string]map[int]time.Duration{}}
	for corr, l := range tl.launches {
		if covering(r.tgtCPU[l.thread], l.at) {
			a.targetCorr[corr] = true
		}
	}
	for _, op := range append(slices.Clip(tl.cpuOps), tl.cpuRanges...) {
		if !op.hasExt {
			continue
		}
		if i := coveringIndex(r.tgtCPU[op.thread], op.iv.Start); i >= 0 {
			a.targetExt[op.ext] = fmt.Sprintf("cpu/%s/%d", op.thread, i)
		}
	}
	return a
}

// callID numbers the call named key, in order of first appearance from 1.
func (a *attributor) callID(key string) int {
	if id, ok := a.callIDs[key]; ok {
		return id
	}
	id := len(a.callIDs) + 1
	a.callIDs[key] = id
	return id
}

// kernel is raw kernel ki with its launch, whether it is a graph replay
// (counted in att), its target attribution by rules 1 to 4, and its phase.
func (a *attributor) kernel(ki int, rk rawKernel, att *Attribution) Kernel {
	k := rk.k
	l, hasLaunch := a.launches[rk.corr]
	hasLaunch = hasLaunch && rk.hasCorr
	if hasLaunch {
		k.Launch, k.Launched = l.at, true
	}
	k.Graph = rk.graph || (hasLaunch && isGraphLaunch(l.name))
	mid := k.Start + (k.End-k.Start)/2
	match := a.c.pattern != nil && a.c.pattern.MatchString(k.Name)
	extKey, byExt := a.targetExt[rk.ext]
	byExt = byExt && rk.hasExt
	switch {
	case k.Graph:
		att.GraphKernels++
		if match {
			k.Target, k.By, k.Call = true, "name", a.callID(fmt.Sprintf("kernel/%d", ki))
		}
	case a.hasAnn && onGPU(a.r.tgtGPU, k, mid):
		k.Target, k.By = true, "annotation"
		key := gpuKey{k.Device, k.Stream}
		i := coveringIndex(a.r.tgtGPU[key], mid)
		if i < 0 {
			key.stream = anyStream
			i = coveringIndex(a.r.tgtGPU[key], mid)
		}
		k.Call = a.callID(fmt.Sprintf("gpu/%d/%d/%d", key.device, key.stream, i))
	case a.hasAnn && hasLaunch && a.targetCorr[rk.corr]:
		k.Target, k.By = true, "correlation"
		k.Call = a.callID(fmt.Sprintf("cpu/%s/%d", l.thread, coveringIndex(a.r.tgtCPU[l.thread], l.at)))
	case a.hasAnn && byExt:
		k.Target, k.By, k.Call = true, "correlation", a.callID(extKey)
	case !a.hasAnn && match:
		k.Target, k.By, k.Call = true, "name", a.callID(fmt.Sprintf("kernel/%d", ki))
	}
	if hasLaunch {
		a.setPhase(&k, mid, &l)
	} else {
		a.setPhase(&k, mid, nil)
	}
	return k
}

// setPhase gives k the first phase (in name order) whose GPU-side range
// holds its midpoint, or whose CPU-side range holds its launch call l (nil:
// no launch known); a CPU-side step lasts until the last GPU work it
// launched ends (phEnd).
func (a *attributor) setPhase(k *Kernel, mid time.Duration, l *launchEv) {
	for _, ph := range a.phases {
		if onGPU(a.r.phGPU[ph], *k, mid) {
			k.Phase = ph
			return
		}
		if l == nil {
			continue
		}
		if i := coveringIndex(a.r.phCPU[ph][l.thread], l.at); i >= 0 {
			if a.phEnd[ph] == nil {
				a.phEnd[ph] = map[string]map[int]time.Duration{}
			}
			if a.phEnd[ph][l.thread] == nil {
				a.phEnd[ph][l.thread] = map[int]time.Duration{}
			}
			a.phEnd[ph][l.thread][i] = max(a.phEnd[ph][l.thread][i], k.End)
			k.Phase = ph
			return
		}
	}
}

// phaseWall is each phase's wall ranges: its GPU-side ranges where it has
// any, else its CPU-side ranges each stretched to the end of the GPU work
// launched in it; nil without phases.
func (a *attributor) phaseWall() map[string][]Interval {
	var out map[string][]Interval
	for _, ph := range a.phases {
		if out == nil {
			out = map[string][]Interval{}
		}
		if len(a.r.phGPU[ph]) > 0 {
			out[ph] = Union(flatten(a.r.phGPU[ph]))
			continue
		}
		var wall []Interval
		for thread, u := range a.r.phCPU[ph] {
			for i, iv := range u {
				wall = append(wall, Interval{iv.Start, max(iv.End, a.phEnd[ph][thread][i])})
			}
		}
		out[ph] = Union(wall)
	}
	return out
}

// count tallies kernels by the rule that attributed them, and the graph
// replays left unattributed when no name rule was given.
func (a *Attribution) count(kernels []Kernel, byNameRules bool) {
	for _, k := range kernels {
		switch k.By {
		case "annotation":
			a.ByAnnotation++
		case "correlation":
			a.ByCorrelation++
		case "name":
			a.ByName++
		case "sequence":
			a.BySequence++
		}
		if k.Graph && !k.Target && !byNameRules {
			a.GraphUnattributed++
		}
	}
}

// extent is span grown to hold every range, CPU op and launch call of tl.
func extent(span Interval, tl timeline) Interval {
	e := span
	grow := func(iv Interval) {
		e.Start, e.End = min(e.Start, iv.Start), max(e.End, iv.End)
	}
	for _, r := range tl.cpuRanges {
		grow(r.iv)
	}
	for _, r := range tl.cpuOps {
		grow(r.iv)
	}
	for _, r := range tl.gpuRanges {
		grow(r.iv)
	}
	for _, l := range tl.launches {
		grow(Interval{l.at, l.at})
	}
	return e
}

func unionAll[K comparable](m map[K][]Interval) {
	for k, v := range m {
		m[k] = Union(v)
	}
}

func flatten[K comparable](m map[K][]Interval) []Interval {
	var out []Interval
	for _, v := range m {
		out = append(out, v...)
	}
	return out
}

func sortedKeys[A, B any](a map[string]A, b map[string]B) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// matchSequence marks as target ("sequence") every eligible kernel in a run
// of consecutive kernels on one device and stream (ordered by start; memcpy
// and memset skipped) whose names match steps in order. Runs do not overlap:
// after a match the scan resumes after its last kernel.
//
// Each run is one call: call(index of its first kernel) gives its Call id.
func matchSequence(ks []Kernel, steps []*regexp.Regexp, eligible func(*Kernel) bool, call func(first int) int) {
	lanes := map[gpuKey][]int{}
	for i := range ks {
		if ks[i].Kind == "kernel" {
			key := gpuKey{ks[i].Device, ks[i].Stream}
			lanes[key] = append(lanes[key], i)
		}
	}
	for _, lane := range lanes {
		slices.SortStableFunc(lane, func(a, b int) int { return cmpDur(ks[a].Start, ks[b].Start) })
		for i := 0; i+len(steps) <= len(lane); {
			ok := true
			for j, re := range steps {
				if !re.MatchString(ks[lane[i+j]].Name) {
					ok = false
					break
				}
			}
			if !ok {
				i++
				continue
			}
			id := 0
			for j := range steps {
				if k := &ks[lane[i+j]]; !k.Target && eligible(k) {
					if id == 0 {
						id = call(lane[i])
					}
					k.Target, k.By, k.Call = true, "sequence", id
				}
			}
			i += len(steps)
		}
	}
}
