package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/integrate"
	"github.com/transferlab/transferlab/report"
	"time"
)

// preflightConfig is a reference-server experiment whose interpreter is %s.
const preflightConfig = `
name: preflight
trace: {path: %s}
load: {rates_rps: [1], duration: 2s}
server:
  kind: reference
  reference: {python: %s}
arms: [{name: baseline}]
energy: {disabled: true}
`

// TestRunPreflight: `run` on a reference config fails with exit status 1 and
// a message naming the config, the interpreter and the missing module before
// anything is launched or written, and validate refuses it the same way.
// (integrate's TestPreflight covers the interpreters that pass.)
func TestRunPreflight(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH: the fake interpreters run python3")
	}
	trace, err := filepath.Abs(filepath.Join("..", "..", "configs", "traces", "AzureLLMInferenceTrace_conv-head2000.csv"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "mods", "torch"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mods", "torch", "__init__.py"),
		[]byte("raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	py := filepath.Join(dir, "python")
	script := fmt.Sprintf("#!/bin/sh\nPYTHONPATH='%s' PYTHONDONTWRITEBYTECODE=1 exec python3 \"$@\"\n", filepath.Join(dir, "mods"))
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "ref.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(preflightConfig, trace, py)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var stdout bytes.Buffer
	err = execute(&stdout, "run", cfgPath, "--out", out, "--quiet")
	want := fmt.Sprintf("config %s: server.kind reference needs a GPU machine with torch + transformers: %s -c 'import torch' failed: No module named 'torch'", cfgPath, py)
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		t.Errorf("exit status %d, want 1 (bad setup, nothing measured)", ee.code)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output folder %s exists (stat: %v): nothing may be written before the preflight", out, err)
	}

	// validate refuses the same machine the same way, before writing anything.
	vcfg := filepath.Join(dir, "val.yaml")
	body := strings.Replace(fmt.Sprintf(preflightConfig, trace, py), "arms: [{name: baseline}]",
		"arms: [{name: baseline}, {name: cand, override: {target: 'm:C.forward', candidate: 'k.py:f', mode: 'on', validation_report: v.json}}]", 1)
	if err := os.WriteFile(filepath.Join(dir, "k.py"), []byte("def f(x):\n    return x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(vcfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	vout := filepath.Join(dir, "vout")
	err = runValidate(t.Context(), vcfg, integrate.Validate{Arm: "cand", Out: vout, Log: &stdout})
	if err == nil || !strings.Contains(err.Error(), "-c 'import torch' failed: No module named 'torch'") {
		t.Fatalf("validate: err = %v, want the preflight's", err)
	}
	if _, err := os.Stat(vout); !os.IsNotExist(err) {
		t.Errorf("validate wrote %s before the preflight (stat: %v)", vout, err)
	}
}

// TestMissingTraceNamesFieldAndFolders: run and validate name the config, the
// field and every folder looked in for a trace that is not there, with exit
// status 1 and nothing written.
func TestMissingTraceNamesFieldAndFolders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.py"), []byte("def f(x):\n    return x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "relmiss.yaml")
	body := strings.Replace(fmt.Sprintf(preflightConfig, "traces/Azure_typo.csv", "python3"), "arms: [{name: baseline}]",
		"arms: [{name: baseline}, {name: cand, override: {target: 'm:C.forward', candidate: 'k.py:f', mode: 'on', validation_report: k.py}}]", 1)
	if err := os.WriteFile(cfgPath, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`trace.path (line 3): "traces/Azure_typo.csv": no such file (looked in %s and %s)`,
		filepath.Join(dir, "traces", "Azure_typo.csv"), filepath.Join(cwd, "traces", "Azure_typo.csv"))

	out := filepath.Join(dir, "out")
	var buf bytes.Buffer
	err = execute(&buf, "run", cfgPath, "--out", out, "--quiet")
	if err == nil || err.Error() != "config "+cfgPath+": "+want {
		t.Errorf("run: err = %v\nwant config %s: %s", err, cfgPath, want)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		t.Errorf("run: exit status %d, want 1", ee.code)
	}

	vout := filepath.Join(dir, "vout")
	err = runValidate(t.Context(), cfgPath, integrate.Validate{Arm: "cand", Out: vout, Requests: 1, Log: &buf})
	if err == nil || err.Error() != "validate: config "+cfgPath+": "+want {
		t.Errorf("validate: err = %v\nwant validate: config %s: %s", err, cfgPath, want)
	}
	for _, d := range []string{out, vout} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s exists (stat: %v): nothing may be written for a bad config", d, err)
		}
	}
}

// execute runs the CLI's command tree on args, its output into w.
func execute(w io.Writer, args ...string) error {
	root := newRootCmd()
	root.SetOut(w)
	root.SetErr(w)
	root.SetArgs(args)
	return root.Execute()
}

// TestRunQuietKeepsWarnings: `run --quiet` on a run whose requests mostly time
// out (5 ms timeout; one simulated decode step alone takes ~7.6 ms, so every
// request with two or more output tokens times out whatever the machine's
// load) prints no progress and no summary, but names each flagged cell on
// stderr, and exits 0 (the run completed).
func TestRunQuietKeepsWarnings(t *testing.T) {
	t.Parallel()
	trace, err := filepath.Abs(filepath.Join("..", "..", "configs", "traces", "AzureLLMInferenceTrace_conv-head2000.csv"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "fail.yaml")
	cfg := fmt.Sprintf(`
name: quiet-fail
seed: 3
trace: {path: %s, clamp_context: 2048}
load: {rates_rps: [6], warmup: 500ms, duration: 2s, max_requests: 20}
server: {kind: sim}
request: {timeout: 5ms}
arms: [{name: baseline}, {name: cand, sim_overrides: {rmsnorm: 2.5}}]
amdahl: {target_op: rmsnorm}
energy: {disabled: true}
`, trace)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--quiet", "--json"} {
		t.Run(flag, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			root := newRootCmd()
			root.SetOut(&stdout)
			root.SetErr(&stderr)
			root.SetArgs([]string{"run", cfgPath, "--out", filepath.Join(dir, "out"+flag), flag})
			if err := root.Execute(); err != nil {
				t.Fatalf("run %s: %v (a run whose requests fail completes: exit status 0)", flag, err)
			}
			if flag == "--quiet" && stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing under --quiet", stdout.String())
			}
			errText := stderr.String()
			for _, arm := range []string{"baseline", "cand"} {
				want := "warning: arm " + arm + " at 6.00 req/s rep 0: "
				if !strings.Contains(errText, want) || !strings.Contains(errText, "above the 5 % limit") {
					t.Errorf("stderr lacks the failure warning %q…above the 5 %% limit:\n%s", want, errText)
				}
			}
			if strings.Contains(errText, "[1/2]") || strings.Contains(errText, "offered load") {
				t.Errorf("stderr holds progress lines under %s:\n%s", flag, errText)
			}
			for _, line := range strings.Split(strings.TrimSpace(errText), "\n") {
				if !strings.HasPrefix(line, "warning: ") {
					t.Errorf("stderr line %q is not a warning", line)
				}
			}
		})
	}
}

// TestRunRefusesForeignFiles: an --out holding files that are not a run's is
// refused (exit status 1, nothing written); experiment.CheckOutDir's test
// has the folders that pass.
func TestRunRefusesForeignFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, code, err := runCLI(t, "run", filepath.Join("..", "..", "configs", "quickstart.yaml"), "--out", dir, "--quiet")
	if err == nil || code != 1 || !strings.Contains(err.Error(), "notes.txt") || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("exit %d: %v, want a refusal naming notes.txt and --overwrite", code, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the refused folder now holds %d entries, want only notes.txt", len(entries))
	}
}

// TestRunRefusesSymlinkOut: an --out that is a symbolic link to a folder
// (with or without a trailing slash) is refused naming the link, before
// anything is written into its target.
func TestRunRefusesSymlinkOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target, link := filepath.Join(dir, "real"), filepath.Join(dir, "link-out")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{link, link + string(filepath.Separator)} {
		_, _, code, err := runCLI(t, "run", filepath.Join("..", "..", "configs", "quickstart.yaml"), "--out", out, "--quiet")
		if err == nil || code != 1 || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), link) {
			t.Errorf("--out %s: exit %d: %v, want a refusal naming the link", out, code, err)
		}
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("the link's target now holds %d entries, want none", len(entries))
	}
}

// linkAbove makes dir/a/link, a symbolic link to the folder dir/real, and
// returns the link and its target: an output path below the link would be
// written into the target.
func linkAbove(t *testing.T) (link, target string) {
	t.Helper()
	dir := t.TempDir()
	target, link = filepath.Join(dir, "real"), filepath.Join(dir, "a", "link")
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link, target
}

// TestOutRefusesLinkAbove: an output folder below a symbolic link (--out
// a/link/sub) is refused by run, compare --out and merge, naming the path
// and the component that is the link, before anything is written into the
// link's target.
func TestOutRefusesLinkAbove(t *testing.T) {
	t.Parallel()
	link, target := linkAbove(t)
	out := filepath.Join(link, "sub")
	dir := t.TempDir()
	base := writeResults(t, dir, "a.json", "trace-1", 100*time.Millisecond)
	other := writeResults(t, dir, "b.json", "trace-1", 50*time.Millisecond)
	for _, args := range [][]string{
		{"run", filepath.Join("..", "..", "configs", "quickstart.yaml"), "--out", out, "--quiet"},
		{"run", filepath.Join("..", "..", "configs", "quickstart.yaml"), "--out", out, "--quiet", "--overwrite"},
		{"compare", base, other, "--metric", "e2e", "--mean", "--resamples", "200", "--out", out},
		{"compare", base, other, "--metric", "e2e", "--mean", "--resamples", "200", "--out", out, "--overwrite"},
		{"merge", out, dir, "--quiet"},
	} {
		_, _, code, err := runCLI(t, args...)
		if err == nil || code != 1 || !strings.Contains(err.Error(), out) || !strings.Contains(err.Error(), link+" is a symbolic link") {
			t.Errorf("%s: exit %d: %v, want a refusal naming %s and its link %s", args[0], code, err, out, link)
		}
	}
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("the link's target now holds %d entries, want none", len(entries))
	}
}

// TestRunResumeFlags: --resume writes into the folder it resumes, so it is
// refused beside --out, --overwrite or --shard (exit 1), and a folder with
// no run to resume is refused before anything is written.
func TestRunResumeFlags(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join("..", "..", "configs", "quickstart.yaml")
	dir := t.TempDir()
	for _, extra := range [][]string{{"--out", dir}, {"--overwrite"}, {"--shard", "0/2"}} {
		_, _, code, err := runCLI(t, append([]string{"run", cfg, "--resume", dir, "--quiet"}, extra...)...)
		if err == nil || code != 1 || !strings.Contains(err.Error(), "--resume") {
			t.Errorf("%v: exit %d: %v, want a refusal naming --resume", extra, code, err)
		}
	}
	_, _, code, err := runCLI(t, "run", cfg, "--resume", dir, "--quiet")
	if err == nil || code != 1 || !strings.Contains(err.Error(), "no run to resume") {
		t.Fatalf("empty folder: exit %d: %v, want 'no run to resume'", code, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the refused resume left %d entries in the folder", len(entries))
	}
	_, _, code, err = runCLI(t, "run", "--resume", dir, "--quiet")
	if err == nil || code != 1 || !strings.Contains(err.Error(), "no run to resume") {
		t.Fatalf("empty folder, no config: exit %d: %v, want 'no run to resume'", code, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"manifest":{"config_path":"gone.yaml"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, code, err = runCLI(t, "run", "--resume", dir, "--quiet")
	if err == nil || code != 1 || !strings.Contains(err.Error(), "gone.yaml") || !strings.Contains(err.Error(), "transferlab run CONFIG --resume") {
		t.Fatalf("recorded config missing: exit %d: %v, want its path and how to give the config", code, err)
	}
	if _, _, code, err = runCLI(t, "run", "--quiet"); err == nil || code != 1 || !strings.Contains(err.Error(), "run: CONFIG.yaml missing: usage: transferlab run") {
		t.Fatalf("no config, no --resume: exit %d: %v, want the config asked for", code, err)
	}
}

// resumeConfig is a three-cell run on the simulator: 2 s of arrivals per
// cell, 4,000-token prompts with 8-token answers (each ends within ~0.2 s).
const resumeConfig = `
name: resume-cli
seed: 3
trace: {path: %s}
load: {mode: poisson, rates_rps: [4, 6, 8], duration: 2s}
server: {kind: sim}
request: {timeout: 20s}
arms: [{name: baseline}]
resolution: {aa_replicate: false}
energy: {disabled: true}
`

// TestRunResumeWithoutConfig: `run --resume DIR` alone resumes with the config
// the interrupted run recorded. A run stopped by its deadline after its first
// cell is resumed without naming the config: the complete cells are kept,
// the others measured, and results.json says resumed.
func TestRunResumeWithoutConfig(t *testing.T) {
	t.Parallel()
	trace, err := filepath.Abs(filepath.Join("..", "..", "configs", "traces", "prefill-heavy-4000in-8out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "resume.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(resumeConfig, trace)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	// The first cell ends ~2.3 s in, the last ~7 s in: a deadline at 4 s
	// leaves a complete first cell and an incomplete run.
	if _, _, code, err := runCLI(t, "run", cfg, "--out", out, "--deadline", "4s", "--quiet"); code != 2 {
		t.Fatalf("first run: exit %d: %v, want 2 (stopped by its deadline)", code, err)
	}
	first, err := report.ReadResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Complete || len(first.Cells) == 0 {
		t.Fatalf("first run: complete %v with %d cells; want it cut short after a kept cell", first.Complete, len(first.Cells))
	}
	_, stderr, code, err := runCLI(t, "run", "--resume", out, "--quiet")
	if code != 0 {
		t.Fatalf("run --resume %s: exit %d: %v\n%s", out, code, err, stderr)
	}
	if !strings.Contains(stderr, "resuming "+out+" with the config it was started with: "+cfg) {
		t.Errorf("stderr %q does not say which config was taken", stderr)
	}
	res, err := report.ReadResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || !res.Complete || len(res.Cells) != 3 {
		t.Fatalf("resumed %v, complete %v, %d cells; want a resumed complete run of 3 cells", res.Resumed, res.Complete, len(res.Cells))
	}
	kept := 0
	for _, c := range res.Cells {
		if c.Kept {
			kept++
		}
	}
	if kept == 0 || kept == len(res.Cells) {
		t.Errorf("%d of %d cells kept; want the interrupted run's complete ones kept and the rest measured", kept, len(res.Cells))
	}
}
