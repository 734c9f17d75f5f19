package amdahl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Format names a profile input.
type Format string

// The accepted profile formats.
const (
	FormatChrome Format = "chrome" // PyTorch profiler Chrome-trace JSON
	FormatNsys   Format = "nsys"   // Nsight Systems SQLite export
	FormatHook   Format = "hook"   // the hook's timings (HOOK_TIMINGS.md)
)

// ParseFormat checks a format name.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatChrome, FormatNsys, FormatHook:
		return f, nil
	}
	return "", fmt.Errorf("amdahl: unknown profile format %q (want chrome, nsys or hook)", s)
}

// Summary is everything one profile says about f: the pooled fractions, the
// per-window samples and f_wall's interval over them, how kernels were
// attributed, and warnings. It is what `transferlab profile` prints and what
// a run embeds for its baseline profile.
type Summary struct {
	File   string `json:"file"`
	Format Format `json:"format"`
	// Target is the annotation name (chrome, nsys) or the hook's target op.
	Target    string    `json:"target"`
	Fractions Fractions `json:"fractions"`
	// Windows are the per-window samples; FWall pools them with a bootstrap interval.
	Windows []WindowSample `json:"windows"`
	FWall   Estimate       `json:"f_wall_estimate"`
	// Attribution and TargetKernels are set for profiles (not hook files).
	Attribution   *Attribution `json:"attribution,omitempty"`
	TargetKernels []string     `json:"target_kernels,omitempty"`
	// Complete is false when the source misses target work it knows of
	// (hook: CUDA-graph capture calls; profile: unattributed graph kernels).
	Complete bool     `json:"complete"`
	Warnings []string `json:"warnings,omitempty"`
	// Profile is the attributed profile the summary was computed from (nil
	// for hook files), for callers that analyse it further without reading
	// the file again. Not serialised.
	Profile *Profile `json:"-"`
}

// SummaryConfig says how to summarise a profile.
type SummaryConfig struct {
	// Windows is how many equal windows a chrome/nsys profile's analysed span
	// is cut into for f's interval. Hook files carry their own windows. 0 means 4.
	Windows int
	// Active is the active wall time (requests in flight) on the profile's
	// clock (Unix ns for hook files); nil: the whole window is active (chrome,
	// nsys) or the hook's own active_wall_ms.
	Active []Interval
	// ActiveWall, when > 0 and Active is nil, is the profiled window's active
	// wall time as the server counted it (e.g. refserver's active_s): f_wall
	// and f_excl use it as denominator, and each window's share of it is
	// taken proportional to the window's length (an assumption stated in
	// ActiveFrom "server (apportioned)").
	ActiveWall time.Duration
	// HookWindows, for hook files, keeps only the windows with these labels
	// (e.g. the one closed around a cell); empty keeps all.
	HookWindows []string
	// Target, for hook files, must equal the file's target when non-empty.
	Target string
	// Options set attribution for chrome/nsys (TargetAnnotation, KernelPattern, PhaseAnnotation).
	Options []Option
	// Boot sets the bootstrap of f's interval (defaults: 2000 resamples, 0.95, seed 1).
	Boot []BootOption
}

// Summarize reads one profile file and computes its Summary.
func Summarize(ctx context.Context, path string, format Format, c SummaryConfig) (Summary, error) {
	s := Summary{File: path, Format: format}
	if format == FormatHook {
		return summarizeHook(path, c, s)
	}
	p, err := ReadProfile(ctx, path, format, c.Options...)
	if err != nil {
		return Summary{}, err
	}
	var wo []WindowOption
	window := p.Span
	if c.Active != nil {
		wo = append(wo, Active(c.Active))
		// Analyse where requests were in flight inside the profiled extent:
		// kernels before the first or after the last request (warm-up,
		// teardown) are outside, and so is request time the profiler did not see.
		if u := Intersect(c.Active, []Interval{p.Extent}); len(u) > 0 {
			window = Interval{u[0].Start, u[len(u)-1].End}
		}
	}
	s.Profile = p
	s.Fractions, err = p.Fractions(append(wo, Window(window))...)
	if err != nil {
		return Summary{}, err
	}
	scale := 1.0 // server active wall / window length, applied to each window's active wall
	if c.Active == nil && c.ActiveWall > 0 {
		fr := &s.Fractions
		scale = float64(c.ActiveWall) / float64(fr.ActiveWall)
		fr.ActiveWall, fr.ActiveFrom = c.ActiveWall, "server"
		fr.FWall = ratio(float64(fr.TargetActive), float64(fr.ActiveWall))
		fr.FExcl = ratio(float64(fr.TargetExclusive), float64(fr.ActiveWall))
		if fr.FSpan.Defined() {
			fr.FSpan = ratio(float64(fr.TargetSpan), float64(fr.ActiveWall))
		}
	}
	n := c.Windows
	if n <= 0 {
		n = 4
	}
	// Windows without active time (all idle) carry no information about f.
	for _, w := range SplitEven(window, n) {
		if c.Active != nil && len(Intersect(c.Active, []Interval{w})) == 0 {
			continue
		}
		ws, err := p.WindowSamples([]Interval{w}, c.Active)
		if err != nil {
			return Summary{}, err
		}
		ws[0].ActiveWall = time.Duration(float64(ws[0].ActiveWall) * scale)
		s.Windows = append(s.Windows, ws[0])
	}
	for i := range s.Windows {
		s.Windows[i].Label = fmt.Sprintf("w%d", i)
	}
	if s.FWall, err = FWallEstimate(s.Windows, c.Boot...); err != nil {
		return Summary{}, err
	}
	a := p.Attribution
	s.Target, s.Attribution, s.TargetKernels = p.Target, &a, p.TargetKernelNames()
	s.Complete = a.GraphUnattributed == 0
	s.Warnings = p.Warnings
	return s, nil
}

func summarizeHook(path string, c SummaryConfig, s Summary) (Summary, error) {
	h, err := ReadHookTimingsFor(path, c.Target)
	if err != nil {
		return Summary{}, err
	}
	if len(c.HookWindows) > 0 {
		var keep []HookWindow
		for _, w := range h.Windows {
			if slices.Contains(c.HookWindows, w.Label) {
				keep = append(keep, w)
			}
		}
		if len(keep) == 0 {
			return Summary{}, fmt.Errorf("amdahl: hook timings %s: no window labelled %q", path, c.HookWindows)
		}
		h.Windows = keep
	}
	if s.Fractions, err = h.Fractions(c.Active); err != nil {
		return Summary{}, err
	}
	if s.Windows, err = h.WindowSamples(c.Active); err != nil {
		return Summary{}, err
	}
	if s.FWall, err = FWallEstimate(s.Windows, c.Boot...); err != nil {
		return Summary{}, err
	}
	s.Target, s.Complete, s.Warnings = h.Target, h.Complete(), h.Warnings
	return s, nil
}

// WriteText prints the summary as a small table, every figure with its unit
// and source.
func (s Summary) WriteText(w io.Writer) error {
	fr := s.Fractions
	var b strings.Builder
	fmt.Fprintf(&b, "profile %s (%s), target %q\n", s.File, s.Format, s.Target)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "quantity\tvalue\tdefinition\n")
	fmt.Fprintf(tw, "target GPU time\t%s\t%s\n", ms(fr.TargetGPU), targetTimeDefinition(s.Format))
	if fr.Busy > 0 {
		fmt.Fprintf(tw, "GPU busy time\t%s\t|∪ all GPU work| across streams\n", ms(fr.Busy))
	} else {
		fmt.Fprintf(tw, "GPU busy time\tn/a\tnot in this source\n")
	}
	fmt.Fprintf(tw, "active wall time\t%s\tfrom %s\n", ms(fr.ActiveWall), fr.ActiveFrom)
	fmt.Fprintf(tw, "f_gpu\t%s\ttarget / busy\n", fr.FGPU)
	fmt.Fprintf(tw, "f_wall\t%s [%s, %s]\ttarget / active wall; %d windows, %s (used by the bound)\n",
		s.FWall.Value, s.FWall.Lo, s.FWall.Hi, s.FWall.N, pct(s.FWall.Level))
	fmt.Fprintf(tw, "f_excl\t%s\ttarget not overlapped by other work / active wall (lower bound)\n", fr.FExcl)
	if fr.FSpan.Defined() {
		fmt.Fprintf(tw, "f_span\t%s\tΣ calls' GPU span (%s: kernels + the gaps between them) / active wall (not used by the bound)\n", fr.FSpan, ms(fr.TargetSpan))
	}
	for _, ph := range slices.Sorted(maps.Keys(fr.Phases)) {
		pf := fr.Phases[ph]
		fmt.Fprintf(tw, "%s: target / busy / wall\t%s / %s / %s\tf_gpu %s, f_wall %s\n", ph, ms(pf.TargetGPU), msOrNA(pf.Busy), msOrNA(pf.Wall), pf.FGPU, pf.FWall)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if a := s.Attribution; a != nil {
		fmt.Fprintf(&b, "attribution: %d by annotation, %d by correlation, %d by name, %d by sequence; %d graph-replayed kernels, %d unattributed\n",
			a.ByAnnotation, a.ByCorrelation, a.ByName, a.BySequence, a.GraphKernels, a.GraphUnattributed)
		if len(s.TargetKernels) > 0 {
			fmt.Fprintf(&b, "target kernels (%d; full names: the JSON summary's target_kernels):\n", len(s.TargetKernels))
			for i, k := range s.TargetKernels {
				fmt.Fprintf(&b, "  %d. %s\n", i+1, compactKernelName(k))
			}
		}
	}
	if e := Explain(fr); e != "" {
		fmt.Fprintf(&b, "note: %s\n", e)
	}
	if !s.Complete {
		fmt.Fprintln(&b, "INCOMPLETE: this source misses some target work; f is an underestimate")
	}
	for _, wmsg := range s.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wmsg)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// targetTimeDefinition says what "target GPU time" counts in each source: a
// profile's union of the target's kernel intervals, or the hook's sum of the
// CUDA-event times of the target's calls (HOOK_TIMINGS.md).
func targetTimeDefinition(f Format) string {
	if f == FormatHook {
		return "Σ CUDA-event time of the target's calls in the window (hook timings)"
	}
	return "|∪ target work| in the window"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }

func msOrNA(d time.Duration) string {
	if d == 0 {
		return "n/a"
	}
	return ms(d)
}

func pct(level float64) string {
	if level == 0 {
		return "no interval"
	}
	return fmt.Sprintf("%g%% bootstrap interval", level*100)
}

// ServerWindow is what a server reports about one profiled window
// (integrate's reference server writes it beside the trace as
// TRACE.window.json): its length and the time with ≥ 1 request in flight, s.
type ServerWindow struct {
	WindowS      float64 `json:"window_s"`
	ActiveS      float64 `json:"active_s"`
	RequestsDone int     `json:"requests_done"`
}

// ReadServerWindow reads a TRACE.window.json file (gzip-compressed or not);
// errors name the file and field.
func ReadServerWindow(path string) (ServerWindow, error) {
	f, err := os.Open(path)
	if err != nil {
		return ServerWindow{}, fmt.Errorf("amdahl: server window: %w", err)
	}
	data, err := readMaybeGzip(f)
	f.Close()
	if err != nil {
		return ServerWindow{}, fmt.Errorf("amdahl: server window %s: %w", path, err)
	}
	var w ServerWindow
	if err := json.Unmarshal(data, &w); err != nil {
		return ServerWindow{}, fmt.Errorf("amdahl: server window %s%s: %w", path, jsonErrLine(data, err), err)
	}
	switch {
	case !(w.WindowS > 0):
		return ServerWindow{}, fmt.Errorf("amdahl: server window %s: field window_s: %v, want > 0", path, w.WindowS)
	case !(w.ActiveS >= 0) || w.ActiveS > w.WindowS*(1+1e-6):
		return ServerWindow{}, fmt.Errorf("amdahl: server window %s: field active_s: %v, want in [0, window_s %v]", path, w.ActiveS, w.WindowS)
	}
	return w, nil
}

// ActiveWall is ActiveS as a duration.
func (w ServerWindow) ActiveWall() time.Duration { return time.Duration(math.Round(w.ActiveS * 1e9)) }

// ResolveFormat is the format given (ParseFormat), else the one the file at
// path tells (DetectFormat).
func ResolveFormat(given, path string) (Format, error) {
	if given != "" {
		return ParseFormat(given)
	}
	return DetectFormat(path)
}

// DetectFormat tells a profile's format from its name and first bytes:
// .sqlite/.db → nsys; JSON (or gzip-compressed JSON) naming
// HookTimingsFormat in its first 4 KiB → hook; other JSON → chrome.
func DetectFormat(path string) (Format, error) {
	name := strings.ToLower(strings.TrimSuffix(path, ".gz"))
	switch {
	case strings.HasSuffix(name, ".sqlite"), strings.HasSuffix(name, ".db"):
		return FormatNsys, nil
	case strings.HasSuffix(name, ".json"):
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("amdahl: %w", err)
		}
		defer f.Close()
		head, err := readHead(f, 4096)
		if err != nil {
			return "", fmt.Errorf("amdahl: %s: %w", path, err)
		}
		if strings.Contains(string(head), HookTimingsFormat) {
			return FormatHook, nil
		}
		return FormatChrome, nil
	}
	return "", fmt.Errorf("amdahl: %s: cannot tell the profile format from the name (want .json, .json.gz, .sqlite)", path)
}

// Agreement compares the hook's CUDA-event target time with a profile's
// target time over the same calls (the two should give the same f within
// 2 % where the GPU is the bottleneck).
//
// CUDA events around a call measure from the start event to the end event
// on the GPU: the call's kernels and the gaps between them. The profile
// gives both the kernel time (what f counts) and each call's GPU span (first
// kernel start to last kernel end): the span is the like-for-like figure.
// The spans and the events still differ where the GPU waits for the CPU to
// launch the call's next kernel (a launch-bound server): then the event time
// includes CPU launch time that neither profile figure has.
type Agreement struct {
	// HookTarget is the hook's summed CUDA-event time over HookWindows
	// windows holding HookCalls calls.
	HookTarget  time.Duration `json:"hook_target_ns"`
	HookWindows int           `json:"hook_windows"`
	HookCalls   int64         `json:"hook_calls"`
	// ProfileTarget is Σ over the profile's calls of their kernel time;
	// ProfileSpan Σ of their GPU spans; ProfileCalls how many calls.
	ProfileTarget time.Duration `json:"profile_target_ns"`
	ProfileSpan   time.Duration `json:"profile_span_ns"`
	ProfileCalls  int           `json:"profile_calls"`
	// Selection says how the profile's calls were matched to the hook's
	// windows: "launch" (the call's launch, on the CPU clock, inside the
	// windows' span: the hook counts calls by when they are made) or
	// "gpu_start" (its first kernel's start; when the profile does not link
	// every call to a launch, e.g. CUDA-graph replays).
	Selection string `json:"selection"`
	// Window is the span of the hook windows compared, on the profile's
	// clock (ns from its zero).
	Window Interval `json:"window"`
	// RelDiff = (hook − ProfileTarget) / ProfileTarget; RelDiffSpan the same
	// against ProfileSpan.
	RelDiff     float64 `json:"rel_diff"`
	RelDiffSpan float64 `json:"rel_diff_span"`
	// Complete is false when the hook saw CUDA-graph capture calls: then the
	// hook misses replayed work and the comparison says nothing.
	Complete bool `json:"complete"`
}

// CompareHookProfile sums the hook's target time over its windows inside the
// profile's wall window (Profile.Extent on the Unix clock, widened by slack;
// HookTimings.TargetWithin) and compares it with the profile's calls of the
// target made in the span of those same windows (Agreement.Selection), so
// both count the same calls. The profile must know its Unix base (Chrome
// baseTimeNanoseconds, Nsight session start).
func CompareHookProfile(h *HookTimings, p *Profile, slack time.Duration) (Agreement, error) {
	if !p.UnixBaseKnown {
		return Agreement{}, fmt.Errorf("amdahl: %s %s: no Unix base time (baseTimeNanoseconds / session start): cannot align with the hook's windows", p.Source, p.Path)
	}
	base := time.Duration(p.UnixBaseNs)
	ht, n, span, err := h.TargetWithin(Shift([]Interval{p.Extent}, base)[0], slack)
	if err != nil {
		return Agreement{}, err
	}
	a := Agreement{HookTarget: ht, HookWindows: n, Complete: h.Complete(), Selection: "launch",
		Window: Shift([]Interval{span}, -base)[0]}
	for _, w := range h.Windows {
		if iv := w.Interval(); iv.Start >= span.Start && iv.End <= span.End {
			a.HookCalls += w.Calls
		}
	}
	calls := p.TargetCalls()
	for _, c := range calls {
		if !c.Launched {
			a.Selection = "gpu_start"
		}
	}
	for _, c := range calls {
		at := c.Launch
		if a.Selection == "gpu_start" {
			at = c.Span.Start
		}
		if a.Window.Contains(at) {
			a.ProfileTarget += c.KernelTime
			a.ProfileSpan += c.Span.Len()
			a.ProfileCalls++
		}
	}
	if a.ProfileTarget == 0 {
		return Agreement{}, fmt.Errorf("amdahl: %s %s: no target call in the hook windows' span %v (profile clock): nothing to compare with", p.Source, p.Path, a.Window)
	}
	a.RelDiff = float64(ht-a.ProfileTarget) / float64(a.ProfileTarget)
	a.RelDiffSpan = float64(ht-a.ProfileSpan) / float64(a.ProfileSpan)
	return a, nil
}

// ReadHookTimingsFor reads a hook timing file (one document or an array of
// them) and returns the document whose target is target; an empty target
// needs a file with exactly one document.
func ReadHookTimingsFor(path, target string) (*HookTimings, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("amdahl: hook timings: %w", err)
	}
	defer f.Close()
	all, err := ParseHookTimingsAll(f, path)
	if err != nil {
		return nil, err
	}
	return HookTimingsFor(all, target, path)
}

// HookTimingsFor picks the document whose target is target from docs (one
// file's or one answer's documents, named name in errors); an empty target
// needs exactly one document.
func HookTimingsFor(docs []*HookTimings, target, name string) (*HookTimings, error) {
	var targets []string
	for _, d := range docs {
		if target == "" && len(docs) == 1 || d.Target == target {
			return d, nil
		}
		targets = append(targets, d.Target)
	}
	return nil, fmt.Errorf("amdahl: hook timings %s: field target: %q was asked for, the file has %q", name, target, targets)
}
