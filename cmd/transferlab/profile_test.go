package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/transferlab/transferlab/amdahl"
)

// h200EagerTrace is the shipped H200 profile: an eager server without
// target ranges (the profiler ran on another thread), so the target's
// kernels must be named.
const h200EagerTrace = "../../amdahl/testdata/h200/eager-prefill-3rps.trace.json.gz"

func runProfile(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"profile"}, args...))
	err := root.Execute()
	return out.String(), err
}

// TestProfileTargetPresetOnH200Trace: without a hint the shipped profile is
// refused with the presets named; with one preset flag it is read, and the
// result is the one the preset's regexps give spelled out as --kernel-seq.
func TestProfileTargetPresetOnH200Trace(t *testing.T) {
	_, err := runProfile(t, h200EagerTrace)
	if err == nil {
		t.Fatal("profile without target ranges or kernel names succeeded")
	}
	for _, p := range amdahl.TargetPresets() {
		if !strings.Contains(err.Error(), p.Name) {
			t.Errorf("error %q does not name preset %s", err, p.Name)
		}
	}

	out, err := runProfile(t, h200EagerTrace, "--target", "llama-rmsnorm", "--json")
	if err != nil {
		t.Fatalf("--target llama-rmsnorm: %v", err)
	}
	var got amdahl.Summary
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json: %v", err)
	}
	p, _ := amdahl.LookupTargetPreset("llama-rmsnorm")
	args := []string{h200EagerTrace, "--json"}
	for _, s := range p.Sequence {
		args = append(args, "--kernel-seq", s)
	}
	out, err = runProfile(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	var want amdahl.Summary
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatal(err)
	}
	a := got.Attribution
	if a == nil || a.BySequence == 0 || a.BySequence%len(p.Sequence) != 0 || len(got.TargetKernels) != len(p.Sequence) {
		t.Fatalf("attribution %+v, %d kernel names: want whole %d-kernel calls", a, len(got.TargetKernels), len(p.Sequence))
	}
	if got.Fractions.TargetGPU != want.Fractions.TargetGPU || *a != *want.Attribution {
		t.Errorf("preset: target %v, %+v; spelled out: %v, %+v", got.Fractions.TargetGPU, *a, want.Fractions.TargetGPU, *want.Attribution)
	}

	text, err := runProfile(t, h200EagerTrace, "--target", "llama-rmsnorm")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(text, "target kernels")
	if !ok {
		t.Fatalf("no target kernels in %q", text)
	}
	lines := strings.Split(list, "\n")[1 : 1+len(p.Sequence)]
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 110 || !strings.HasPrefix(l, "  ") {
			t.Errorf("kernel line of %d runes, want one short indented line: %q", n, l)
		}
	}
	// The preset is what the user named: the summary says so, and does not
	// warn that kernels were attributed by name (the preset is that choice).
	// Spelled out as --kernel-seq, the warning stays.
	if first, _, _ := strings.Cut(text, "\n"); !strings.HasSuffix(first, `target "llama-rmsnorm"`) || strings.Contains(text, "attributed by name only") {
		t.Errorf("preset: first line %q (want target \"llama-rmsnorm\"), by-name warning %v", first, strings.Contains(text, "attributed by name only"))
	}
	spelled := []string{h200EagerTrace}
	for _, s := range p.Sequence {
		spelled = append(spelled, "--kernel-seq", s)
	}
	if text, err = runProfile(t, spelled...); err != nil || !strings.Contains(text, "attributed by name only") {
		t.Errorf("--kernel-seq without target ranges: %v; want the by-name warning in %q", err, text)
	}
}

// TestProfilePresetAgainstHook: a preset names the compared trace's kernels
// when FILE is the hook's timing file.
func TestProfilePresetAgainstHook(t *testing.T) {
	out, err := runProfile(t, "../../amdahl/testdata/h200/eager-prefill-3rps.hook.json", "--against", h200EagerTrace, "--target", "llama-rmsnorm")
	if err != nil {
		t.Fatalf("--against with a preset: %v", err)
	}
	if !strings.Contains(out, "matched by") || !strings.Contains(out, "GPU span") {
		t.Errorf("output %q: want the hook/profile comparison", out)
	}
}

// TestProfileMissingFile: a profile path that is not there is said so,
// without the advice to pass --format that a file of unknown format gets.
func TestProfileMissingFile(t *testing.T) {
	t.Parallel()
	_, err := runProfile(t, "no-such-profile.json")
	if err == nil || !strings.Contains(err.Error(), "no-such-profile.json: no such file or directory") || strings.Contains(err.Error(), "--format") {
		t.Errorf("missing file: %v, want it named as missing, with no --format advice", err)
	}
}
