package amdahl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"time"
)

// HookTimingsFormat is the format tag of the hook's timing file (HOOK_TIMINGS.md).
const HookTimingsFormat = "transferlab.hook_timings/v1"

// HookCounts are the hook's counts and CUDA-event GPU time of the target's
// calls, as totals, per window or per phase (HOOK_TIMINGS.md).
type HookCounts struct {
	Calls        int64   `json:"calls"`
	EagerCalls   int64   `json:"eager_calls"`
	CaptureCalls int64   `json:"capture_calls"`
	TimedCalls   int64   `json:"timed_calls"`
	GPUTimeMs    float64 `json:"gpu_time_ms"`
}

// GPUTime is GPUTimeMs as a duration.
func (c HookCounts) GPUTime() time.Duration { return msToDur(c.GPUTimeMs) }

// HookWindow is one window of wall time in the hook's file.
type HookWindow struct {
	Label       string `json:"label,omitempty"`
	StartUnixNs int64  `json:"start_unix_ns"`
	EndUnixNs   int64  `json:"end_unix_ns"`
	HookCounts
	ByPhase map[string]HookCounts `json:"by_phase,omitempty"`
	// ActiveWallMs and GPUBusyMs are nil when the writer did not know them.
	ActiveWallMs *float64 `json:"active_wall_ms"`
	GPUBusyMs    *float64 `json:"gpu_busy_ms"`
}

// Interval is the window on the Unix clock (ns since the epoch as a Duration).
func (w HookWindow) Interval() Interval {
	return Interval{time.Duration(w.StartUnixNs), time.Duration(w.EndUnixNs)}
}

// HookTimings is a parsed, checked hook timing file.
type HookTimings struct {
	Path         string `json:"-"`
	Format       string `json:"format"`
	Target       string `json:"target"`
	Mode         string `json:"mode,omitempty"`
	Candidate    string `json:"candidate,omitempty"`
	KernelPrefix string `json:"kernel_prefix,omitempty"`
	Pid          int64  `json:"pid,omitempty"`
	Device       string `json:"device,omitempty"`
	Timing       string `json:"timing"`
	PhaseRule    string `json:"phase_rule,omitempty"`
	HookCounts
	ByPhase map[string]HookCounts `json:"by_phase,omitempty"`
	Windows []HookWindow          `json:"windows"`
	// Warnings lists unknown fields and incompleteness, for the report.
	Warnings []string `json:"-"`
}

// Complete reports whether gpu_time_ms covers every call: no call was made
// during CUDA-graph capture (whose replays the hook cannot see) and every
// eager call was timed.
func (h *HookTimings) Complete() bool {
	return h.CaptureCalls == 0 && h.TimedCalls == h.EagerCalls
}

var hookKnownFields = []string{"format", "target", "mode", "candidate", "kernel_prefix", "pid", "device", "timing",
	"phase_rule", "calls", "eager_calls", "capture_calls", "timed_calls", "gpu_time_ms", "by_phase", "windows"}

// ParseHookTimings decodes a transferlab.hook_timings/v1 file and makes every
// check HOOK_TIMINGS.md lists; errors name the file, the JSON path and the
// field (a syntax error names the line). A file may also hold a JSON array
// of documents (one per override, as the server's hook endpoint returns
// them): ParseHookTimings then needs exactly one, ParseHookTimingsAll returns all.
func ParseHookTimings(r io.Reader, name string) (*HookTimings, error) {
	all, err := ParseHookTimingsAll(r, name)
	if err != nil {
		return nil, err
	}
	if len(all) != 1 {
		return nil, fmt.Errorf("amdahl: hook timings %s: %d documents (one per override); pick one by target (Summarize's Target)", name, len(all))
	}
	return all[0], nil
}

// ParseHookTimingsAll decodes a hook timing file holding one document or a
// JSON array of them; each is checked as ParseHookTimings says.
func ParseHookTimingsAll(r io.Reader, name string) ([]*HookTimings, error) {
	data, err := readMaybeGzip(r)
	if err != nil {
		return nil, fmt.Errorf("amdahl: hook timings %s: %w", name, err)
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		var docs []json.RawMessage
		if err := json.Unmarshal(data, &docs); err != nil {
			return nil, fmt.Errorf("amdahl: hook timings %s%s: %w", name, jsonErrLine(data, err), err)
		}
		if len(docs) == 0 {
			return nil, fmt.Errorf("amdahl: hook timings %s: empty array", name)
		}
		out := make([]*HookTimings, len(docs))
		for i, d := range docs {
			if out[i], err = parseHookDoc(d, fmt.Sprintf("%s[%d]", name, i)); err != nil {
				return nil, err
			}
			out[i].Path = name
		}
		return out, nil
	}
	h, err := parseHookDoc(data, name)
	if err != nil {
		return nil, err
	}
	return []*HookTimings{h}, nil
}

func parseHookDoc(data []byte, name string) (*HookTimings, error) {
	fail := func(path, format string, args ...any) error {
		return fmt.Errorf("amdahl: hook timings %s: %s: %s", name, path, fmt.Sprintf(format, args...))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("amdahl: hook timings %s%s: %w", name, jsonErrLine(data, err), err)
	}
	h := &HookTimings{Path: name}
	if err := json.Unmarshal(data, h); err != nil {
		return nil, fmt.Errorf("amdahl: hook timings %s%s: %w", name, jsonErrLine(data, err), err)
	}
	for _, k := range []string{"format", "target", "timing", "calls", "eager_calls", "capture_calls", "timed_calls", "gpu_time_ms", "windows"} {
		if _, ok := top[k]; !ok {
			return nil, fail(k, "required field missing")
		}
	}
	for k := range top {
		if !slices.Contains(hookKnownFields, k) {
			h.Warnings = append(h.Warnings, fmt.Sprintf("unknown field %q (written by a newer hook?)", k))
		}
	}
	slices.Sort(h.Warnings)
	switch {
	case h.Format != HookTimingsFormat:
		return nil, fail("format", "%q, want %q", h.Format, HookTimingsFormat)
	case h.Target == "":
		return nil, fail("target", "empty")
	case h.Timing != "cuda_event":
		return nil, fail("timing", "%q, want \"cuda_event\"", h.Timing)
	}
	if err := checkCounts(h.HookCounts, "", fail); err != nil {
		return nil, err
	}
	if err := checkPhases(h.ByPhase, h.HookCounts, "by_phase", fail); err != nil {
		return nil, err
	}
	if len(h.Windows) > 0 {
		if err := checkWindowsSum(h, fail); err != nil {
			return nil, err
		}
	}
	if h.CaptureCalls > 0 {
		h.Warnings = append(h.Warnings, fmt.Sprintf("%d of %d calls were made during CUDA-graph capture: their replays are invisible to the hook, so gpu_time_ms misses them and f from these timings is an underestimate (use a profile)", h.CaptureCalls, h.Calls))
	}
	if h.TimedCalls < h.EagerCalls {
		h.Warnings = append(h.Warnings, fmt.Sprintf("only %d of %d eager calls were timed", h.TimedCalls, h.EagerCalls))
	}
	return h, nil
}

type failFunc func(path, format string, args ...any) error

func checkCounts(c HookCounts, prefix string, fail failFunc) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"calls", c.Calls}, {"eager_calls", c.EagerCalls}, {"capture_calls", c.CaptureCalls}, {"timed_calls", c.TimedCalls}} {
		if f.v < 0 {
			return fail(prefix+f.name, "%d is negative", f.v)
		}
	}
	if math.IsNaN(c.GPUTimeMs) || math.IsInf(c.GPUTimeMs, 0) || c.GPUTimeMs < 0 {
		return fail(prefix+"gpu_time_ms", "%v is not a finite time ≥ 0", c.GPUTimeMs)
	}
	if c.Calls != c.EagerCalls+c.CaptureCalls {
		return fail(prefix+"calls", "%d ≠ eager_calls %d + capture_calls %d", c.Calls, c.EagerCalls, c.CaptureCalls)
	}
	if c.TimedCalls > c.EagerCalls {
		return fail(prefix+"timed_calls", "%d > eager_calls %d (capture calls cannot be timed)", c.TimedCalls, c.EagerCalls)
	}
	return nil
}

func checkPhases(ph map[string]HookCounts, total HookCounts, prefix string, fail failFunc) error {
	var sum HookCounts
	for _, k := range slices.Sorted(maps.Keys(ph)) {
		c := ph[k]
		path := prefix + "." + k + "."
		switch k {
		case PhasePrefill, PhaseDecode, PhaseMixed, "unknown":
		default:
			return fail(prefix+"."+k, "unknown phase (want prefill, decode, mixed or unknown)")
		}
		for _, f := range []struct {
			name string
			v    int64
		}{{"calls", c.Calls}, {"timed_calls", c.TimedCalls}, {"capture_calls", c.CaptureCalls}} {
			if f.v < 0 {
				return fail(path+f.name, "%d is negative", f.v)
			}
		}
		if math.IsNaN(c.GPUTimeMs) || math.IsInf(c.GPUTimeMs, 0) || c.GPUTimeMs < 0 {
			return fail(path+"gpu_time_ms", "%v is not a finite time ≥ 0", c.GPUTimeMs)
		}
		sum.Calls += c.Calls
		sum.TimedCalls += c.TimedCalls
		sum.GPUTimeMs += c.GPUTimeMs
	}
	switch {
	case sum.Calls > total.Calls:
		return fail(prefix, "phases sum to %d calls > total %d", sum.Calls, total.Calls)
	case sum.TimedCalls > total.TimedCalls:
		return fail(prefix, "phases sum to %d timed calls > total %d", sum.TimedCalls, total.TimedCalls)
	case !approxLE(sum.GPUTimeMs, total.GPUTimeMs):
		return fail(prefix, "phases sum to %v ms > total gpu_time_ms %v", sum.GPUTimeMs, total.GPUTimeMs)
	}
	return nil
}

func checkWindowsSum(h *HookTimings, fail failFunc) error {
	var sum HookCounts
	for i, w := range h.Windows {
		p := fmt.Sprintf("windows[%d].", i)
		if w.EndUnixNs <= w.StartUnixNs {
			return fail(p+"end_unix_ns", "%d ≤ start_unix_ns %d", w.EndUnixNs, w.StartUnixNs)
		}
		if i > 0 && w.StartUnixNs < h.Windows[i-1].EndUnixNs {
			return fail(p+"start_unix_ns", "%d overlaps or precedes the previous window (ends %d)", w.StartUnixNs, h.Windows[i-1].EndUnixNs)
		}
		if err := checkCounts(w.HookCounts, p, fail); err != nil {
			return err
		}
		if err := checkPhases(w.ByPhase, w.HookCounts, p+"by_phase", fail); err != nil {
			return err
		}
		lenMs := float64(w.EndUnixNs-w.StartUnixNs) / 1e6
		if a := w.ActiveWallMs; a != nil && (math.IsNaN(*a) || *a < 0 || !approxLE(*a, lenMs)) {
			return fail(p+"active_wall_ms", "%v not in [0, window length %v ms]", *a, lenMs)
		}
		if b := w.GPUBusyMs; b != nil && (math.IsNaN(*b) || *b < 0 || !approxLE(*b, lenMs)) {
			return fail(p+"gpu_busy_ms", "%v not in [0, window length %v ms]", *b, lenMs)
		}
		if b := w.GPUBusyMs; b != nil && !approxLE(w.GPUTimeMs, *b) {
			return fail(p+"gpu_time_ms", "%v ms exceeds gpu_busy_ms %v", w.GPUTimeMs, *b)
		}
		sum.Calls += w.Calls
		sum.EagerCalls += w.EagerCalls
		sum.CaptureCalls += w.CaptureCalls
		sum.TimedCalls += w.TimedCalls
		sum.GPUTimeMs += w.GPUTimeMs
	}
	t := h.HookCounts
	if sum.Calls != t.Calls || sum.EagerCalls != t.EagerCalls || sum.CaptureCalls != t.CaptureCalls || sum.TimedCalls != t.TimedCalls {
		return fail("windows", "window counts sum to calls %d / eager %d / capture %d / timed %d, totals say %d / %d / %d / %d",
			sum.Calls, sum.EagerCalls, sum.CaptureCalls, sum.TimedCalls, t.Calls, t.EagerCalls, t.CaptureCalls, t.TimedCalls)
	}
	if !approxEq(sum.GPUTimeMs, t.GPUTimeMs) {
		return fail("windows", "window gpu_time_ms sum to %v, total gpu_time_ms is %v", sum.GPUTimeMs, t.GPUTimeMs)
	}
	return nil
}

// approxLE is a ≤ b with 1e-6 relative slack for float rounding in the writer.
func approxLE(a, b float64) bool { return a <= b+1e-6*math.Max(math.Abs(b), 1e-3) }

func approxEq(a, b float64) bool { return approxLE(a, b) && approxLE(b, a) }

func msToDur(ms float64) time.Duration { return time.Duration(math.Round(ms * 1e6)) }

// WindowSamples returns each window's target time and active wall time for
// FWallEstimate. A window's active wall is its active_wall_ms when the writer
// knew it, else |active ∩ window| where active holds the [sent, end]
// intervals of requests on the Unix clock (ns since the epoch); busy time is
// gpu_busy_ms or 0 (unknown). A window without active time is skipped only
// when it saw no call; otherwise it is an error.
func (h *HookTimings) WindowSamples(active []Interval) ([]WindowSample, error) {
	if len(h.Windows) == 0 {
		return nil, fmt.Errorf("amdahl: hook timings %s: no windows", h.Path)
	}
	var out []WindowSample
	var unknown []int
	for i, w := range h.Windows {
		s := WindowSample{Label: w.Label, Target: w.GPUTime()}
		if s.Label == "" {
			s.Label = fmt.Sprintf("w%d", i)
		}
		switch {
		case w.ActiveWallMs != nil:
			s.ActiveWall = msToDur(*w.ActiveWallMs)
		case active != nil:
			s.ActiveWall = totalLength(Intersect(active, []Interval{w.Interval()}))
		default:
			unknown = append(unknown, i)
			continue
		}
		if w.GPUBusyMs != nil {
			s.Busy = msToDur(*w.GPUBusyMs)
		}
		if s.ActiveWall == 0 {
			if w.Calls == 0 {
				continue
			}
			return nil, fmt.Errorf("amdahl: hook timings %s: windows[%d]: %d calls but no active wall time (request intervals on another clock?)", h.Path, i, w.Calls)
		}
		if s.Target > s.ActiveWall {
			return nil, fmt.Errorf("amdahl: hook timings %s: windows[%d]: target %v exceeds active wall %v", h.Path, i, s.Target, s.ActiveWall)
		}
		out = append(out, s)
	}
	if len(out) == 0 && len(unknown) > 0 {
		return nil, fmt.Errorf("amdahl: hook timings %s: windows[%d].active_wall_ms: null and no request intervals given", h.Path, unknown[0])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("amdahl: hook timings %s: no window has active wall time", h.Path)
	}
	if len(unknown) > 0 {
		msg := fmt.Sprintf("windows %v have no active_wall_ms and no request intervals were given: left out of f", unknown)
		if !slices.Contains(h.Warnings, msg) {
			h.Warnings = append(h.Warnings, msg)
		}
	}
	return out, nil
}

// Fractions pools the windows (WindowSamples) into one Fractions: target =
// Σ gpu_time_ms, active wall = Σ active wall, busy = Σ gpu_busy_ms when every
// window has it. The hook sees no other kernels, so f_excl is undefined, and
// per phase only the target time is known. Source is "hook".
func (h *HookTimings) Fractions(active []Interval) (Fractions, error) {
	ws, err := h.WindowSamples(active)
	if err != nil {
		return Fractions{}, err
	}
	fr := Fractions{Source: "hook", Target: h.Target, ActiveFrom: "requests", FExcl: NaN(), FSpan: NaN()}
	busyKnown := true
	for _, w := range h.Windows {
		busyKnown = busyKnown && w.GPUBusyMs != nil
	}
	for _, w := range ws {
		fr.TargetGPU += w.Target
		fr.ActiveWall += w.ActiveWall
		fr.Busy += w.Busy
	}
	if active == nil {
		fr.ActiveFrom = "server" // only windows with active_wall_ms are in ws
	}
	fr.TargetActive = fr.TargetGPU
	fr.FWall = ratio(float64(fr.TargetGPU), float64(fr.ActiveWall))
	fr.FGPU = NaN()
	if busyKnown {
		fr.FGPU = ratio(float64(fr.TargetGPU), float64(fr.Busy))
	} else {
		fr.Busy = 0
	}
	for ph, c := range h.ByPhase {
		if fr.Phases == nil {
			fr.Phases = map[string]PhaseFractions{}
		}
		fr.Phases[ph] = PhaseFractions{TargetGPU: c.GPUTime(), FGPU: NaN(), FWall: NaN()}
	}
	return fr, nil
}

// TargetWithin sums the target GPU time of the windows that lie inside w
// (Unix ns, widened by slack at both ends), to compare the hook with a
// profile of the same wall window (Profile.Extent shifted by UnixBaseNs). It
// returns the time, the number of windows summed and their span (first
// start to last end, Unix ns). A window with calls that is not inside but
// overlaps w's interior (w narrowed by slack at both ends) is an error: the
// comparison would be unfair. A window that overlaps only the slack bands
// at w's edges (a window closed a step after the profiler started) is left
// out. No window inside is an error too.
func (h *HookTimings) TargetWithin(w Interval, slack time.Duration) (time.Duration, int, Interval, error) {
	lo, hi := w.Start-slack, w.End+slack
	in := Interval{w.Start + slack, w.End - slack}
	var sum time.Duration
	var span Interval
	n := 0
	for i, win := range h.Windows {
		iv := win.Interval()
		switch {
		case iv.Start >= lo && iv.End <= hi:
			sum += win.GPUTime()
			if n == 0 {
				span = iv
			}
			span.Start, span.End = min(span.Start, iv.Start), max(span.End, iv.End)
			n++
		case iv.End <= in.Start || iv.Start >= in.End || win.Calls == 0:
		default:
			return 0, 0, Interval{}, fmt.Errorf("amdahl: hook timings %s: windows[%d] [%d, %d) with %d calls straddles the profiled window [%d, %d): close a hook window when the profiler starts and stops",
				h.Path, i, iv.Start, iv.End, win.Calls, w.Start, w.End)
		}
	}
	if n == 0 {
		return 0, 0, Interval{}, fmt.Errorf("amdahl: hook timings %s: no window inside [%d, %d)", h.Path, w.Start, w.End)
	}
	return sum, n, span, nil
}
