package amdahl

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// ReadProfile reads a chrome or nsys profile file with opts (a hook timing
// file is no profile: an error says so).
func ReadProfile(ctx context.Context, path string, format Format, opts ...Option) (*Profile, error) {
	switch format {
	case FormatChrome:
		return ReadChrome(path, opts...)
	case FormatNsys:
		return ReadNsys(ctx, path, opts...)
	case FormatHook:
		return nil, fmt.Errorf("amdahl: %s is a hook timing file, want a chrome or nsys profile", path)
	}
	_, err := ParseFormat(string(format))
	return nil, err
}

// CompareHookFile is CompareHookProfile of the hook timing file hookPath
// (the document about target; ReadHookTimingsFor) and the chrome or nsys
// profile at tracePath read with opts, matching calls within a 50 ms slack.
func CompareHookFile(ctx context.Context, hookPath, target, tracePath string, opts ...Option) (Agreement, error) {
	h, err := ReadHookTimingsFor(hookPath, target)
	if err != nil {
		return Agreement{}, err
	}
	f, err := DetectFormat(tracePath)
	if err != nil {
		return Agreement{}, err
	}
	p, err := ReadProfile(ctx, tracePath, f, opts...)
	if err != nil {
		return Agreement{}, err
	}
	return CompareHookProfile(h, p, 50*time.Millisecond)
}

// WriteText prints the agreement as profile --against does: the hook's
// target time (ms), the profile's GPU span and kernel time (ms) with the
// hook's relative difference to each (%), and a note when the hook missed
// CUDA-graph replays.
func (a Agreement) WriteText(w io.Writer, hookPath, tracePath string) error {
	note := ""
	if !a.Complete {
		note = "\n(hook incomplete: CUDA-graph capture calls, replays unseen)"
	}
	_, err := fmt.Fprintf(w, "hook %s (CUDA events, %d windows, %d calls): %.3f ms\nprofile %s (%d calls matched by %s): GPU span %.3f ms (hook %+.2f %%), kernel time %.3f ms (hook %+.2f %%)%s\n",
		hookPath, a.HookWindows, a.HookCalls, float64(a.HookTarget)/1e6, tracePath, a.ProfileCalls, a.Selection,
		float64(a.ProfileSpan)/1e6, 100*a.RelDiffSpan, float64(a.ProfileTarget)/1e6, 100*a.RelDiff, note)
	return err
}

// ServerWindowBeside returns the reference server's TRACE.window.json
// beside the profile at path (also for a trace gzipped after the fact:
// TRACE.window.json or TRACE.window.json.gz), or "" when there is none.
func ServerWindowBeside(path string) string {
	base := strings.TrimSuffix(path, ".gz")
	for _, c := range []string{path + ".window.json", base + ".window.json", base + ".window.json.gz"} {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return ""
}

// TargetPresetHelp lists the target presets, one per line ("  NAME: DOC
// (pattern P)" or "(N-kernel sequence)"), for help texts.
func TargetPresetHelp() string {
	var b strings.Builder
	for _, p := range TargetPresets() {
		sel := "pattern " + p.Pattern
		if len(p.Sequence) > 0 {
			sel = fmt.Sprintf("%d-kernel sequence", len(p.Sequence))
		}
		fmt.Fprintf(&b, "  %s: %s (%s)\n", p.Name, p.Doc, sel)
	}
	return b.String()
}

// SetServerWindow takes c's active wall time (ActiveWall) from the server's
// count of the profiled window: the file given, else the one beside the
// profile at path (ServerWindowBeside). It returns the file read, "" when
// there is none (the whole profiled span then counts as active).
func (c *SummaryConfig) SetServerWindow(path, given string) (string, error) {
	if given == "" {
		given = ServerWindowBeside(path)
	}
	if given == "" {
		return "", nil
	}
	w, err := ReadServerWindow(given)
	if err != nil {
		return "", err
	}
	c.ActiveWall = w.ActiveWall()
	return given, nil
}

// SetTarget sets c's attribution for the target named target in a profile
// of format f: a preset name (TargetPresets) selects the target's kernels by
// name (for a hook file, in the profile it is compared with), keeping only
// the hook windows labelled hookWindows; otherwise a hook file must be about
// op target, and a chrome/nsys profile's target calls are the ranges named
// target (TargetAnnotation; "" keeps DefaultTargetAnnotation).
func (c *SummaryConfig) SetTarget(target string, f Format, hookWindows []string) error {
	if preset, ok := LookupTargetPreset(target); ok {
		opts, err := preset.Options()
		if err != nil {
			return err
		}
		c.Options = append(c.Options, opts...)
		if f == FormatHook {
			c.HookWindows = hookWindows
		}
		return nil
	}
	switch {
	case f == FormatHook:
		c.Target, c.HookWindows = target, hookWindows
	case target != "":
		c.Options = append(c.Options, TargetAnnotation(target))
	}
	return nil
}
