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
	tgtCPU, tgtGPU := map[string][]Interval{}, map[gpuKey][]Interval{}
	phCPU, phGPU := map[string]map[string][]Interval{}, map[string]map[gpuKey][]Interval{}
	for _, r := range tl.cpuRanges {
		if r.name == c.target {
			tgtCPU[r.thread] = append(tgtCPU[r.thread], r.iv)
		}
		if ph := c.phases[r.name]; ph != "" {
			if phCPU[ph] == nil {
				phCPU[ph] = map[string][]Interval{}
			}
			phCPU[ph][r.thread] = append(phCPU[ph][r.thread], r.iv)
		}
	}
	for _, r := range tl.gpuRanges {
		key := gpuKey{r.device, r.stream}
		if r.name == c.target {
			tgtGPU[key] = append(tgtGPU[key], r.iv)
		}
		if ph := c.phases[r.name]; ph != "" {
			if phGPU[ph] == nil {
				phGPU[ph] = map[gpuKey][]Interval{}
			}
			phGPU[ph][key] = append(phGPU[ph][key], r.iv)
		}
	}
	// onGPU reports whether a kernel's midpoint lies in a range of m on its
	// own stream, or in a range whose stream is unknown on its device.
	onGPU := func(m map[gpuKey][]Interval, k Kernel, mid time.Duration) bool {
		return covering(m[gpuKey{k.Device, k.Stream}], mid) || covering(m[gpuKey{k.Device, anyStream}], mid)
	}
	unionAll(tgtCPU)
	unionAll(tgtGPU)
	for _, m := range phCPU {
		unionAll(m)
	}
	for _, m := range phGPU {
		unionAll(m)
	}
	hasAnn := len(tgtCPU)+len(tgtGPU) > 0
	byNameRules := c.pattern != nil || len(c.sequence) > 0
	if !hasAnn && !byNameRules {
		return nil, fmt.Errorf("amdahl: %s %s: target %q: %w", source, path, c.target, ErrNoAttribution)
	}
	targetCorr := map[int64]bool{}
	for corr, l := range tl.launches {
		if covering(tgtCPU[l.thread], l.at) {
			targetCorr[corr] = true
		}
	}
	// Calls: each target range (per thread, or per GPU lane), matched kernel
	// sequence and kernel matched by name is one call of the op.
	callIDs := map[string]int{}
	callID := func(key string) int {
		if id, ok := callIDs[key]; ok {
			return id
		}
		id := len(callIDs) + 1
		callIDs[key] = id
		return id
	}
	targetExt := map[int64]string{} // External id → the call key of its range
	for _, op := range append(slices.Clip(tl.cpuOps), tl.cpuRanges...) {
		if !op.hasExt {
			continue
		}
		if i := coveringIndex(tgtCPU[op.thread], op.iv.Start); i >= 0 {
			targetExt[op.ext] = fmt.Sprintf("cpu/%s/%d", op.thread, i)
		}
	}
	phases := sortedKeys(phCPU, phGPU)
	phEnd := map[string]map[string]map[int]time.Duration{} // phase → thread → CPU range index → last launched GPU end

	p.Span = Interval{tl.kernels[0].k.Start, tl.kernels[0].k.End}
	p.Kernels = make([]Kernel, 0, len(tl.kernels))
	for ki, rk := range tl.kernels {
		k := rk.k
		l, hasLaunch := tl.launches[rk.corr]
		hasLaunch = hasLaunch && rk.hasCorr
		if hasLaunch {
			k.Launch, k.Launched = l.at, true
		}
		k.Graph = rk.graph || (hasLaunch && isGraphLaunch(l.name))
		mid := k.Start + (k.End-k.Start)/2
		match := c.pattern != nil && c.pattern.MatchString(k.Name)
		extKey, byExt := targetExt[rk.ext]
		byExt = byExt && rk.hasExt
		switch {
		case k.Graph:
			p.Attribution.GraphKernels++
			if match {
				k.Target, k.By, k.Call = true, "name", callID(fmt.Sprintf("kernel/%d", ki))
			}
		case hasAnn && onGPU(tgtGPU, k, mid):
			k.Target, k.By = true, "annotation"
			key := gpuKey{k.Device, k.Stream}
			i := coveringIndex(tgtGPU[key], mid)
			if i < 0 {
				key.stream = anyStream
				i = coveringIndex(tgtGPU[key], mid)
			}
			k.Call = callID(fmt.Sprintf("gpu/%d/%d/%d", key.device, key.stream, i))
		case hasAnn && hasLaunch && targetCorr[rk.corr]:
			k.Target, k.By = true, "correlation"
			k.Call = callID(fmt.Sprintf("cpu/%s/%d", l.thread, coveringIndex(tgtCPU[l.thread], l.at)))
		case hasAnn && byExt:
			k.Target, k.By, k.Call = true, "correlation", callID(extKey)
		case !hasAnn && match:
			k.Target, k.By, k.Call = true, "name", callID(fmt.Sprintf("kernel/%d", ki))
		}
		for _, ph := range phases {
			if onGPU(phGPU[ph], k, mid) {
				k.Phase = ph
				break
			}
			if !hasLaunch {
				continue
			}
			if i := coveringIndex(phCPU[ph][l.thread], l.at); i >= 0 {
				// A CPU-side step lasts until the last GPU work it launched ends.
				if phEnd[ph] == nil {
					phEnd[ph] = map[string]map[int]time.Duration{}
				}
				if phEnd[ph][l.thread] == nil {
					phEnd[ph][l.thread] = map[int]time.Duration{}
				}
				phEnd[ph][l.thread][i] = max(phEnd[ph][l.thread][i], k.End)
				k.Phase = ph
				break
			}
		}
		p.Span.Start, p.Span.End = min(p.Span.Start, k.Start), max(p.Span.End, k.End)
		p.Kernels = append(p.Kernels, k)
	}
	if len(c.sequence) > 0 {
		matchSequence(p.Kernels, c.sequence, func(k *Kernel) bool { return k.Graph || !hasAnn },
			func(first int) int { return callID(fmt.Sprintf("sequence/%d", first)) })
	}
	for _, k := range p.Kernels {
		switch k.By {
		case "annotation":
			p.Attribution.ByAnnotation++
		case "correlation":
			p.Attribution.ByCorrelation++
		case "name":
			p.Attribution.ByName++
		case "sequence":
			p.Attribution.BySequence++
		}
		if k.Graph && !k.Target && !byNameRules {
			p.Attribution.GraphUnattributed++
		}
	}
	for _, ph := range phases {
		if p.PhaseWall == nil {
			p.PhaseWall = map[string][]Interval{}
		}
		if len(phGPU[ph]) > 0 {
			p.PhaseWall[ph] = Union(flatten(phGPU[ph]))
		} else {
			var wall []Interval
			for thread, u := range phCPU[ph] {
				for i, iv := range u {
					wall = append(wall, Interval{iv.Start, max(iv.End, phEnd[ph][thread][i])})
				}
			}
			p.PhaseWall[ph] = Union(wall)
		}
	}
	p.Extent = p.Span
	grow := func(iv Interval) {
		p.Extent.Start, p.Extent.End = min(p.Extent.Start, iv.Start), max(p.Extent.End, iv.End)
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
