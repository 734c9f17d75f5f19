package amdahl

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestHookSmallFixture(t *testing.T) {
	t.Parallel()
	h, err := ReadHookTimingsFor(filepath.Join("testdata", "hook_small.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	if !h.Complete() {
		t.Error("no capture calls: should be complete")
	}
	if len(h.Warnings) != 1 || !strings.Contains(h.Warnings[0], "writer_note") {
		t.Errorf("warnings = %q, want one naming writer_note", h.Warnings)
	}
	ws, err := h.WindowSamples(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 {
		t.Fatalf("%d samples, want 2 (empty w2 skipped)", len(ws))
	}
	approx(t, "w0 f", float64(ws[0].Target)/float64(ws[0].ActiveWall), 0.06, exact)
	approx(t, "w1 f", float64(ws[1].Target)/float64(ws[1].ActiveWall), 0.025, exact)
	fr, err := h.Fractions(nil)
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "f_wall", float64(fr.FWall), 400.0/9000, exact)
	approx(t, "f_gpu", float64(fr.FGPU), NaN64, 0)
	approx(t, "f_excl", float64(fr.FExcl), NaN64, 0)
	if fr.ActiveFrom != "server" || fr.Source != "hook" {
		t.Errorf("source %q active from %q", fr.Source, fr.ActiveFrom)
	}
	if fr.Phases[PhasePrefill].TargetGPU != 200*time.Millisecond || fr.Phases[PhaseDecode].TargetGPU != 200*time.Millisecond {
		t.Errorf("phases = %+v", fr.Phases)
	}
}

func TestHookGraphFixture(t *testing.T) {
	t.Parallel()
	h, err := ReadHookTimingsFor(filepath.Join("testdata", "hook_graph.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	if h.Complete() {
		t.Error("capture calls present: should be incomplete")
	}
	if len(h.Warnings) != 1 || !strings.Contains(h.Warnings[0], "CUDA-graph capture") {
		t.Errorf("warnings = %q", h.Warnings)
	}
	if _, err := h.Fractions(nil); err == nil || !strings.Contains(err.Error(), "windows[0].active_wall_ms") {
		t.Fatalf("no active time anywhere: err = %v", err)
	}
	base := time.Duration(1764400000000000000)
	active := []Interval{{base + time.Second, base + 3*time.Second}, {base + 2*time.Second, base + 6*time.Second}}
	fr, err := h.Fractions(active)
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "f_wall", float64(fr.FWall), 0.01, exact)
	approx(t, "f_gpu", float64(fr.FGPU), 0.025, exact)
	if fr.ActiveFrom != "requests" {
		t.Errorf("active from %q", fr.ActiveFrom)
	}
	if Explain(fr) == "" {
		t.Error("f_gpu = 2.5 × f_wall should be explained")
	}
}

const hookOK = `{"format":"transferlab.hook_timings/v1","target":"m:C.f","timing":"cuda_event",
"calls":3,"eager_calls":2,"capture_calls":1,"timed_calls":2,"gpu_time_ms":1.5,
"windows":[{"start_unix_ns":10,"end_unix_ns":20,"calls":3,"eager_calls":2,"capture_calls":1,"timed_calls":2,"gpu_time_ms":1.5,"active_wall_ms":null}]}`

func TestHookErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, from, to, want string }{
		{"valid baseline", "", "", ""},
		{"syntax error names the line", `"calls":3,`, "\"calls\":3,,", "line 2"},
		{"wrong format", "hook_timings/v1", "hook_timings/v9", "format"},
		{"empty target", `"m:C.f"`, `""`, "target"},
		{"other timing", `"cuda_event"`, `"wall"`, "timing"},
		{"missing required", `"timed_calls":2,"gpu_time_ms":1.5,
"windows"`, `"gpu_time_ms":1.5,
"windows"`, "timed_calls: required"},
		{"calls do not add up", `"calls":3,"eager`, `"calls":4,"eager`, "calls: 4 ≠"},
		{"timed > eager", `"timed_calls":2,"gpu_time_ms":1.5,
`, `"timed_calls":3,"gpu_time_ms":1.5,
`, "timed_calls: 3 > eager_calls"},
		{"negative time", `"gpu_time_ms":1.5,
`, `"gpu_time_ms":-1,
`, "gpu_time_ms: -1"},
		{"non-integer count", `"capture_calls":1,"timed_calls":2,"gpu_time_ms":1.5,
`, `"capture_calls":1.5,"timed_calls":2,"gpu_time_ms":1.5,
`, "line 2"},
		{"window inverted", `"end_unix_ns":20`, `"end_unix_ns":5`, "windows[0].end_unix_ns"},
		{"windows do not sum", `"timed_calls":2,"gpu_time_ms":1.5,"active`, `"timed_calls":2,"gpu_time_ms":1.0,"active`, "windows: window gpu_time_ms sum"},
		{"active longer than window", `"active_wall_ms":null`, `"active_wall_ms":1`, "windows[0].active_wall_ms"},
		{"unknown phase", `"gpu_time_ms":1.5,
`, `"gpu_time_ms":1.5,"by_phase":{"warmup":{"calls":1,"timed_calls":1,"gpu_time_ms":1}},
`, "by_phase.warmup"},
		{"phases exceed totals", `"gpu_time_ms":1.5,
`, `"gpu_time_ms":1.5,"by_phase":{"decode":{"calls":1,"timed_calls":1,"gpu_time_ms":2}},
`, "by_phase: phases sum to 2 ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := hookOK
			if c.from != "" {
				if !strings.Contains(in, c.from) {
					t.Fatalf("test bug: %q not in the base document", c.from)
				}
				in = strings.Replace(in, c.from, c.to, 1)
			}
			_, err := ParseHookTimings(strings.NewReader(in), "h.json")
			if c.want == "" {
				if err != nil {
					t.Fatalf("valid file rejected: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "h.json") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v should name h.json and %q", err, c.want)
			}
		})
	}
}

func TestHookTargetWithin(t *testing.T) {
	t.Parallel()
	h, err := ReadHookTimingsFor(filepath.Join("testdata", "hook_small.json"), "")
	if err != nil {
		t.Fatal(err)
	}
	base := time.Duration(1764400000000000000)
	cases := []struct {
		name    string
		w       Interval
		slack   time.Duration
		want    time.Duration
		n       int
		wantErr string
	}{
		{"w0 and w1 inside", Interval{base, base + 20*time.Second}, 0, 400 * time.Millisecond, 2, ""},
		{"w1 only, slack absorbs clock skew", Interval{base + 10*time.Second + time.Millisecond, base + 20*time.Second}, 5 * time.Millisecond, 100 * time.Millisecond, 1, ""},
		{"straddles w0", Interval{base + 5*time.Second, base + 20*time.Second}, 0, 0, 0, "windows[0]"},
		{"empty w2 may straddle", Interval{base + 10*time.Second, base + 25*time.Second}, 0, 100 * time.Millisecond, 1, ""},
		{"nothing inside", Interval{base - 5*time.Second, base - time.Second}, 0, 0, 0, "no window"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, n, _, err := h.TargetWithin(c.w, c.slack)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want || n != c.n {
				t.Fatalf("= %v, %d, %v; want %v, %d", got, n, err, c.want, c.n)
			}
		})
	}
}

// TestH200HookFiles reads the hook timing files the GPU helper's validation
// run wrote on the H200 (results/validation-2026-11-29/profiles, copied):
// an array of one document per override, CUDA graphs on, so half the calls
// were made during capture and the timings are incomplete. The f_wall of the
// window labelled after the cell is gpu_time_ms / active_wall_ms as written.
func TestH200HookFiles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file, label     string
		gpuMs, activeMs float64
		calls, capture  int64
	}{
		{"h200_hook_c1.json.gz", "c1", 48.27504006028175, 1429.832217000012, 2080, 1040},
		{"h200_hook_c16.json.gz", "c16", 18.992959965020418, 1229.6817320000173, 2340, 1170},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", c.file)
			h, err := ReadHookTimingsFor(path, "")
			if err != nil {
				t.Fatal(err)
			}
			if h.Complete() || h.Calls != c.calls || h.CaptureCalls != c.capture {
				t.Fatalf("complete %v calls %d capture %d", h.Complete(), h.Calls, h.CaptureCalls)
			}
			s, err := Summarize(context.Background(), path, FormatHook, SummaryConfig{HookWindows: []string{c.label}})
			if err != nil {
				t.Fatal(err)
			}
			approx(t, "f_wall", float64(s.Fractions.FWall), c.gpuMs/c.activeMs, 1e-6)
			if s.Complete || s.Fractions.ActiveFrom != "server" {
				t.Errorf("complete %v, active from %q", s.Complete, s.Fractions.ActiveFrom)
			}
		})
	}
	if _, err := Summarize(context.Background(), filepath.Join("testdata", "h200_hook_c1.json.gz"), FormatHook,
		SummaryConfig{HookWindows: []string{"nope"}}); err == nil {
		t.Error("unknown window label accepted")
	}
}

func TestHookArrayOfDocuments(t *testing.T) {
	t.Parallel()
	two := "[" + hookOK + "," + strings.Replace(hookOK, `"m:C.f"`, `"m:D.g"`, 1) + "]"
	if _, err := ParseHookTimings(strings.NewReader(two), "two.json"); err == nil || !strings.Contains(err.Error(), "2 documents") {
		t.Fatalf("two documents: err = %v", err)
	}
	all, err := ParseHookTimingsAll(strings.NewReader(two), "two.json")
	if err != nil || len(all) != 2 || all[1].Target != "m:D.g" {
		t.Fatalf("ParseHookTimingsAll = %v, %v", all, err)
	}
	bad := "[" + hookOK + "," + strings.Replace(hookOK, `"calls":3,`, `"calls":4,`, 1) + "]"
	if _, err := ParseHookTimingsAll(strings.NewReader(bad), "bad.json"); err == nil || !strings.Contains(err.Error(), "bad.json[1]") {
		t.Fatalf("bad second document: err = %v", err)
	}
	if _, err := ParseHookTimingsAll(strings.NewReader("[]"), "empty.json"); err == nil {
		t.Fatal("empty array accepted")
	}
}

// TestCompareHookProfile builds a hook file whose one window covers the
// chrome_overlap trace's wall window (Unix base 1764400000000000000 ns +
// extent [0, 160) µs) and says 44.1 µs of target time; the trace's target
// time over its extent with the rmsnorm pattern is 45 µs → −2 %.
func TestCompareHookProfile(t *testing.T) {
	t.Parallel()
	p, err := ReadChrome(filepath.Join("testdata", "chrome_overlap.json"), KernelPattern(regexp.MustCompile(`^triton_rmsnorm`)))
	if err != nil {
		t.Fatal(err)
	}
	doc := `{"format":"transferlab.hook_timings/v1","target":"m:C.f","timing":"cuda_event",
"calls":4,"eager_calls":4,"capture_calls":0,"timed_calls":4,"gpu_time_ms":0.0441,
"windows":[{"label":"profile","start_unix_ns":1764400000000000000,"end_unix_ns":1764400000000160000,
"calls":4,"eager_calls":4,"capture_calls":0,"timed_calls":4,"gpu_time_ms":0.0441,"active_wall_ms":null}]}`
	h, err := ParseHookTimings(strings.NewReader(doc), "h.json")
	if err != nil {
		t.Fatal(err)
	}
	a, err := CompareHookProfile(h, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.HookTarget != 44100*time.Nanosecond || a.ProfileTarget != 45*time.Microsecond || a.HookWindows != 1 || !a.Complete {
		t.Fatalf("agreement %+v", a)
	}
	approx(t, "rel diff", a.RelDiff, -0.02, 1e-12)
	p.UnixBaseKnown = false
	if _, err := CompareHookProfile(h, p, 0); err == nil {
		t.Fatal("profile without a Unix base accepted")
	}
}

// TestCompareHookProfileSameWindow: the hook's windows as the reference
// server writes them around a profiler window: "before-profile" closes 2 µs
// after the profiler started (it overlaps only the 5 µs slack band and is
// left out) and "profile" covers [2, 75) µs of the trace. The profile's calls
// made in that span (launch on the CPU clock) are the ranges at 5 and 30 µs,
// launched at 6 and 31 µs: kernels [10, 30) and [70, 80), 20 + 10 = 30 µs
// by hand (the second runs past the window's end and counts whole, as its
// CUDA events would), not the 45 µs of the whole extent.
func TestCompareHookProfileSameWindow(t *testing.T) {
	t.Parallel()
	p, err := ReadChrome(filepath.Join("testdata", "chrome_overlap.json"), KernelPattern(regexp.MustCompile(`^triton_rmsnorm`)))
	if err != nil {
		t.Fatal(err)
	}
	doc := `{"format":"transferlab.hook_timings/v1","target":"m:C.f","timing":"cuda_event",
"calls":9,"eager_calls":9,"capture_calls":0,"timed_calls":9,"gpu_time_ms":1.0303,
"windows":[
{"label":"before-profile","start_unix_ns":1764399999000000000,"end_unix_ns":1764400000000002000,
"calls":7,"eager_calls":7,"capture_calls":0,"timed_calls":7,"gpu_time_ms":1.0,"active_wall_ms":null},
{"label":"profile","start_unix_ns":1764400000000002000,"end_unix_ns":1764400000000075000,
"calls":2,"eager_calls":2,"capture_calls":0,"timed_calls":2,"gpu_time_ms":0.0303,"active_wall_ms":null}]}`
	h, err := ParseHookTimings(strings.NewReader(doc), "h.json")
	if err != nil {
		t.Fatal(err)
	}
	a, err := CompareHookProfile(h, p, 5*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if a.HookTarget != 30300*time.Nanosecond || a.ProfileTarget != 30*time.Microsecond || a.ProfileSpan != 30*time.Microsecond ||
		a.HookWindows != 1 || a.HookCalls != 2 || a.ProfileCalls != 2 || a.Selection != "launch" ||
		a.Window != (Interval{2 * time.Microsecond, 75 * time.Microsecond}) {
		t.Fatalf("agreement %+v", a)
	}
	approx(t, "rel diff", a.RelDiff, 0.01, 1e-12)
	if _, err := CompareHookProfile(h, p, 0); err == nil || !strings.Contains(err.Error(), "windows[0]") {
		t.Fatalf("without slack the before-profile window straddles the extent; err = %v", err)
	}
}

// TestCompareHookProfileSpan: one call whose two kernels [10, 20) and
// [25, 35) µs leave a 5 µs gap. Kernel time 20 µs, GPU span 25 µs; the
// hook's CUDA events (25.5 µs) span the gap too: +27.5 % against kernel
// time, +2 % against the span (by hand).
func TestCompareHookProfileSpan(t *testing.T) {
	t.Parallel()
	trace := `{"baseTimeNanoseconds": 1764400000000000000, "traceEvents": [
{"ph":"X","cat":"user_annotation","name":"transferlab::target","pid":1,"tid":1,"ts":1,"dur":8},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":2,"dur":1,"args":{"correlation":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":5,"dur":1,"args":{"correlation":2}},
{"ph":"X","cat":"kernel","name":"k_pow","pid":0,"tid":7,"ts":10,"dur":10,"args":{"device":0,"stream":7,"correlation":1}},
{"ph":"X","cat":"kernel","name":"k_mul","pid":0,"tid":7,"ts":25,"dur":10,"args":{"device":0,"stream":7,"correlation":2}},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":40,"dur":20,"args":{"device":0,"stream":7,"correlation":3}}]}`
	p, err := ParseChrome(strings.NewReader(trace), "span.json")
	if err != nil {
		t.Fatal(err)
	}
	calls := p.TargetCalls()
	if len(calls) != 1 || calls[0].Kernels != 2 || calls[0].KernelTime != 20*time.Microsecond ||
		calls[0].Span != (Interval{10 * time.Microsecond, 35 * time.Microsecond}) || calls[0].Launch != 2*time.Microsecond || !calls[0].Launched {
		t.Fatalf("calls = %+v", calls)
	}
	doc := `{"format":"transferlab.hook_timings/v1","target":"m:C.f","timing":"cuda_event",
"calls":1,"eager_calls":1,"capture_calls":0,"timed_calls":1,"gpu_time_ms":0.0255,
"windows":[{"label":"profile","start_unix_ns":1764400000000001000,"end_unix_ns":1764400000000060000,
"calls":1,"eager_calls":1,"capture_calls":0,"timed_calls":1,"gpu_time_ms":0.0255,"active_wall_ms":null}]}`
	h, err := ParseHookTimings(strings.NewReader(doc), "h.json")
	if err != nil {
		t.Fatal(err)
	}
	a, err := CompareHookProfile(h, p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.ProfileTarget != 20*time.Microsecond || a.ProfileSpan != 25*time.Microsecond || a.ProfileCalls != 1 {
		t.Fatalf("agreement %+v", a)
	}
	approx(t, "rel diff (kernel time)", a.RelDiff, 0.275, 1e-12)
	approx(t, "rel diff (span)", a.RelDiffSpan, 0.02, 1e-12)
	// Over the profile's span [10, 60) µs: f_wall = 20/50, f_span = 25/50.
	fr, err := p.Fractions()
	if err != nil {
		t.Fatal(err)
	}
	if fr.TargetSpan != 25*time.Microsecond {
		t.Errorf("target span %v, want 25µs", fr.TargetSpan)
	}
	approx(t, "f_wall", float64(fr.FWall), 0.4, 1e-12)
	approx(t, "f_span", float64(fr.FSpan), 0.5, 1e-12)
}
