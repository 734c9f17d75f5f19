package amdahl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadProfileRefusesHook: a hook timing file is no profile, and an
// unknown format is refused by ParseFormat's rule.
func TestReadProfileRefusesHook(t *testing.T) {
	t.Parallel()
	if _, err := ReadProfile(context.Background(), "x.hook.json", FormatHook); err == nil || !strings.Contains(err.Error(), "hook timing file") {
		t.Errorf("hook: %v", err)
	}
	if _, err := ReadProfile(context.Background(), "x", Format("pprof")); err == nil {
		t.Error("unknown format accepted")
	}
}

// TestServerWindowBeside: TRACE.window.json beside a trace, also for a
// trace gzipped after the fact; "" when there is none.
func TestServerWindowBeside(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.trace.json")
	if got := ServerWindowBeside(trace); got != "" {
		t.Errorf("no window file: %q", got)
	}
	w := trace + ".window.json"
	if err := os.WriteFile(w, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{trace, trace + ".gz"} {
		if got := ServerWindowBeside(p); got != w {
			t.Errorf("ServerWindowBeside(%s) = %q, want %q", p, got, w)
		}
	}
}

// TestSetServerWindow: the file given, else the one beside the profile,
// sets ActiveWall; with neither nothing is set.
func TestSetServerWindow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.trace.json")
	var c SummaryConfig
	if got, err := c.SetServerWindow(trace, ""); got != "" || err != nil || c.ActiveWall != 0 {
		t.Errorf("no window file: %q, %v, ActiveWall %v", got, err, c.ActiveWall)
	}
	beside, given := trace+".window.json", filepath.Join(dir, "other.json")
	for p, active := range map[string]string{beside: "1.5", given: "2.25"} {
		if err := os.WriteFile(p, []byte(`{"window_s": 3, "active_s": `+active+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		given, want string
		active      time.Duration
	}{{"", beside, 1500 * time.Millisecond}, {given, given, 2250 * time.Millisecond}} {
		var c SummaryConfig
		if got, err := c.SetServerWindow(trace, tc.given); got != tc.want || err != nil || c.ActiveWall != tc.active {
			t.Errorf("SetServerWindow(%q) = %q, %v, ActiveWall %v; want %q, %v", tc.given, got, err, c.ActiveWall, tc.want, tc.active)
		}
	}
}

// TestSetTarget: a preset selects kernels (and keeps the hook windows for a
// hook file); otherwise a hook file's target is the op, a profile's the
// range name, and "" leaves the default.
func TestSetTarget(t *testing.T) {
	t.Parallel()
	for _, p := range TargetPresets() {
		var c SummaryConfig
		if err := c.SetTarget(p.Name, FormatHook, []string{"w"}); err != nil || len(c.Options) != 1 || c.Target != "" || len(c.HookWindows) != 1 {
			t.Errorf("preset %s on a hook file: %+v, %v", p.Name, c, err)
		}
		if !strings.Contains(TargetPresetHelp(), "  "+p.Name+": ") {
			t.Errorf("help lacks preset %s:\n%s", p.Name, TargetPresetHelp())
		}
	}
	var c SummaryConfig
	if err := c.SetTarget("rmsnorm", FormatHook, []string{"w"}); err != nil || c.Target != "rmsnorm" || len(c.Options) != 0 || len(c.HookWindows) != 1 {
		t.Errorf("op on a hook file: %+v, %v", c, err)
	}
	c = SummaryConfig{}
	if err := c.SetTarget("my::range", FormatChrome, []string{"w"}); err != nil || c.Target != "" || len(c.Options) != 1 || c.HookWindows != nil {
		t.Errorf("range on a chrome profile: %+v, %v", c, err)
	}
	c = SummaryConfig{}
	if err := c.SetTarget("", FormatNsys, nil); err != nil || len(c.Options) != 0 {
		t.Errorf("no target: %+v, %v", c, err)
	}
}

// TestResolveFormat: a format given is checked, not guessed; none given is
// told from the file.
func TestResolveFormat(t *testing.T) {
	t.Parallel()
	if f, err := ResolveFormat("nsys", "x.json"); err != nil || f != FormatNsys {
		t.Errorf("given nsys: %v, %v", f, err)
	}
	if _, err := ResolveFormat("pprof", "x.json"); err == nil {
		t.Error("unknown format accepted")
	}
	if f, err := ResolveFormat("", "x.sqlite"); err != nil || f != FormatNsys {
		t.Errorf("x.sqlite: %v, %v", f, err)
	}
}

// TestPhaseAnnotations: RANGE_NAME=PHASE specs map ranges to phases (an
// empty phase removes a default); a spec without "=" or a name is refused
// naming it.
func TestPhaseAnnotations(t *testing.T) {
	t.Parallel()
	opts, err := PhaseAnnotations([]string{"my::prefill=prefill", "transferlab::decode="})
	if err != nil {
		t.Fatal(err)
	}
	c := newAttrConfig(opts)
	if c.phases["my::prefill"] != "prefill" {
		t.Errorf("my::prefill → %q, want prefill", c.phases["my::prefill"])
	}
	if _, ok := c.phases["transferlab::decode"]; ok {
		t.Error("an empty phase left the default mapping")
	}
	for _, bad := range []string{"prefill", "=decode"} {
		if _, err := PhaseAnnotations([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v, want refused naming it", bad, err)
		}
	}
}
