package integrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/transferlab/transferlab/internal/outpath"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CommandConfig launches any OpenAI-compatible server by argv (the config's
// `server.command` block): vLLM, SGLang, llama.cpp's server, or the
// reference server (ReferenceSpec builds its CommandConfig). A config that
// names a command is trusted input: it runs that program.
type CommandConfig struct {
	// Argv is the program and its arguments, run directly (never through a
	// shell). "{port}" and "{host}" in any element (and in Env values) are
	// replaced by the free port picked for the server and by Host. Required.
	Argv []string `yaml:"argv" json:"argv"`
	// Env adds variables to the server's environment (and overrides
	// inherited ones).
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Cwd is the server's working folder (default: the arm's folder under
	// the output folder, servers/<arm>).
	Cwd string `yaml:"cwd,omitempty" json:"cwd,omitempty"`
	// Host is the address the server is told to bind ({host}) and is probed
	// on (default DefaultHost, 127.0.0.1).
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
	// ReadyPath is probed with GET until it answers 200. Default: /health,
	// falling back to /v1/models (either answering 200 is ready).
	ReadyPath string `yaml:"ready_path,omitempty" json:"ready_path,omitempty"`
	// ReadyTimeout bounds start-up (default DefaultReadyTimeout, 15 min).
	ReadyTimeout time.Duration `yaml:"ready_timeout,omitempty" json:"ready_timeout_ns,omitempty"`
	// StopSignal is sent to the server's process group to stop it: SIGTERM
	// (default), SIGINT, SIGQUIT, SIGHUP or SIGUSR1.
	StopSignal string `yaml:"stop_signal,omitempty" json:"stop_signal,omitempty"`
	// StopGrace is the wait between StopSignal and SIGKILL (default DefaultGrace, 15 s).
	StopGrace time.Duration `yaml:"stop_grace,omitempty" json:"stop_grace_ns,omitempty"`
	// ManifestArgv is an optional command (argv, no shell) run once per
	// start with the server's environment; its exit status and output
	// (first 64 KiB) are recorded in the results manifest, e.g.
	// [python, -m, pip, freeze] or [vllm, --version].
	ManifestArgv []string `yaml:"manifest_argv,omitempty" json:"manifest_argv,omitempty"`
}

// StopSignals are the accepted CommandConfig.StopSignal names.
var StopSignals = []string{"SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGUSR1"}

// Fallback readiness paths tried in order when CommandConfig.ReadyPath is empty.
var defaultReadyPaths = []string{DefaultReadyPath, "/v1/models"}

// Validate reports every problem at once, each naming its field under command.
func (c CommandConfig) Validate() error {
	var errs []error
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		errs = append(errs, errors.New("command.argv: required: the server's program and arguments, e.g. [vllm, serve, MODEL, --port, \"{port}\"]"))
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			errs = append(errs, fmt.Errorf("command.env: %q is not a variable name", k))
		}
	}
	if c.ReadyPath != "" && !strings.HasPrefix(c.ReadyPath, "/") {
		errs = append(errs, fmt.Errorf("command.ready_path: %q must start with /", c.ReadyPath))
	}
	if c.ReadyTimeout < 0 {
		errs = append(errs, fmt.Errorf("command.ready_timeout: must be ≥ 0, got %s", c.ReadyTimeout))
	}
	if c.StopGrace < 0 {
		errs = append(errs, fmt.Errorf("command.stop_grace: must be ≥ 0, got %s", c.StopGrace))
	}
	if c.StopSignal != "" && !slices.Contains(StopSignals, strings.ToUpper(c.StopSignal)) {
		errs = append(errs, fmt.Errorf("command.stop_signal: %q is not one of %s", c.StopSignal, strings.Join(StopSignals, ", ")))
	}
	if len(c.ManifestArgv) > 0 && c.ManifestArgv[0] == "" {
		errs = append(errs, errors.New("command.manifest_argv: the first element (the program) is empty"))
	}
	return errors.Join(errs...)
}

// HookSetup says what the kernel-override hook does inside a launched server.
type HookSetup struct {
	// Override is the override the hook installs (nil: no hook).
	Override *Override
	// TimingsFile and Window, when TimingsFile is set, turn on the hook's
	// CUDA-event timings (amdahl/HOOK_TIMINGS.md).
	TimingsFile string
	Window      time.Duration
}

// CommandSpec returns the Spec that launches cfg on a free port, with its
// log at <outDir>/server.log. With hook.Override set, the hook is injected
// whatever the program: the embedded shim (sitecustomize.py and the tlhook
// package, whose entry points vLLM's vllm.general_plugins and SGLang's
// sglang.srt.plugins groups load; first on PYTHONPATH on every arm) loads
// the override manifest named in $TRANSFERLAB_OVERRIDE_MANIFEST; Launch then refuses a
// server in which no install receipt appears (its Python did not load the
// hook). Relative Cwd is taken from the caller's working folder.
func CommandSpec(cfg CommandConfig, hook HookSetup, outDir string) (Spec, error) {
	if err := cfg.Validate(); err != nil {
		return Spec{}, fmt.Errorf("integrate: %w", err)
	}
	if err := outpath.MkdirAll("output folder", outDir); err != nil {
		return Spec{}, fmt.Errorf("integrate: %w", err)
	}
	abs, err := filepath.Abs(outDir)
	if err != nil {
		return Spec{}, fmt.Errorf("integrate: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return Spec{}, err
	}
	host := cfg.Host
	if host == "" {
		host = DefaultHost
	}
	fill := strings.NewReplacer("{port}", strconv.Itoa(port), "{host}", host)
	argv := make([]string, len(cfg.Argv))
	for i, a := range cfg.Argv {
		argv[i] = fill.Replace(a)
	}
	keys := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var env []string
	hookEnv, hookDir, err := hookEnvironment(hook, abs)
	if err != nil {
		return Spec{}, err
	}
	env = append(env, hookEnv...)
	for _, k := range keys {
		env = append(env, k+"="+fill.Replace(cfg.Env[k]))
	}
	dir := abs
	if cfg.Cwd != "" {
		if dir, err = filepath.Abs(cfg.Cwd); err != nil {
			return Spec{}, fmt.Errorf("integrate: command.cwd: %w", err)
		}
	}
	grace := cfg.StopGrace
	if grace <= 0 {
		grace = DefaultGrace
	}
	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	return Spec{
		Argv:         argv,
		Env:          env,
		Dir:          dir,
		LogPath:      filepath.Join(abs, "server.log"),
		Host:         host,
		Port:         port,
		ReadyPath:    cfg.ReadyPath,
		ReadyTimeout: timeout,
		Grace:        grace,
		StopSignal:   strings.ToUpper(cfg.StopSignal),
		HookDir:      hookDir,
		HookOverride: hook.Override,
	}, nil
}

// hookEnvironment writes the embedded shim under dir and returns the
// environment that puts it first on PYTHONPATH (on every arm, so baseline
// and candidate start the same way) and, with an override, names its
// manifest; and the folder the hook's receipts go to ("" without override).
func hookEnvironment(hook HookSetup, dir string) ([]string, string, error) {
	pyDir, err := WriteEmbeddedPython(dir)
	if err != nil {
		return nil, "", err
	}
	pp := filepath.Join(pyDir, "shim")
	if old := os.Getenv("PYTHONPATH"); old != "" {
		pp += string(os.PathListSeparator) + old
	}
	env := []string{"PYTHONPATH=" + pp, EnvOverrideManifest + "="}
	if hook.Override == nil {
		return env, "", nil
	}
	statsDir := filepath.Join(dir, "hook")
	man := filepath.Join(dir, "override-manifest.json")
	if err := WriteHookManifest(man, statsDir, *hook.Override); err != nil {
		return nil, "", err
	}
	env = append(env, EnvOverrideManifest+"="+man)
	if hook.TimingsFile != "" {
		env = append(env, EnvHookTimings+"="+hook.TimingsFile,
			EnvHookWindowS+"="+strconv.FormatFloat(hook.Window.Seconds(), 'f', -1, 64))
	}
	return env, statsDir, nil
}

// ErrHookNotLoaded reports that a server launched with an override showed no
// install receipt (its Python never loaded the hook) or that the override
// was never installed in it: measuring it would measure the baseline again.
var ErrHookNotLoaded = errors.New("kernel-override hook not loaded")

// ReadReceipts reads the hook's install receipts (receipt-<pid>.json, one
// per process that loaded it) from dir.
func ReadReceipts(dir string) ([]ReceiptFile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "receipt-*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var out []ReceiptFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var r ReceiptFile
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("hook receipt %s: %w", p, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ReceiptFile is one process's install receipt as the hook writes it.
type ReceiptFile struct {
	PID       int      `json:"pid"`
	Argv      []string `json:"argv"`
	Python    string   `json:"python"`
	Manifest  string   `json:"manifest"`
	Overrides []struct {
		Name      string  `json:"name"`
		Target    string  `json:"target"`
		Mode      string  `json:"mode"`
		Installed bool    `json:"installed"`
		Error     *string `json:"error"`
	} `json:"overrides"`
}

// checkReceipts returns nil when dir holds a receipt from at least one
// process and, unless ov's mode is off, one in which ov is installed;
// otherwise an error wrapping ErrHookNotLoaded that says which.
func checkReceipts(dir string, ov Override) error {
	recs, err := ReadReceipts(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHookNotLoaded, err)
	}
	if len(recs) == 0 {
		return fmt.Errorf("%w: no install receipt in %s: the server's Python never loaded the hook (a program that is not Python, "+
			"a Python started with -I or -S, or one that resets PYTHONPATH); measuring it would measure the baseline again", ErrHookNotLoaded, dir)
	}
	if ov.EffectiveMode() == ModeOff {
		return nil
	}
	name := ov.EffectiveName()
	var why []string
	for _, r := range recs {
		for _, o := range r.Overrides {
			if o.Name != name {
				continue
			}
			if o.Installed {
				return nil
			}
			w := fmt.Sprintf("pid %d: not installed", r.PID)
			if o.Error != nil && *o.Error != "" {
				w += " (" + *o.Error + ")"
			}
			why = append(why, w)
		}
	}
	return fmt.Errorf("%w: override %s (target %s) is installed in none of the %d processes that loaded the hook (%s): "+
		"the server never imported the target's module, so the candidate would not run", ErrHookNotLoaded, name, ov.Target, len(recs), strings.Join(why, "; "))
}

// maxManifestOutput bounds what RunManifestCommand keeps of the output (bytes).
const maxManifestOutput = 64 << 10

// ManifestOutput is what a manifest command (CommandConfig.ManifestArgv) left.
type ManifestOutput struct {
	Argv     []string `json:"argv"`
	ExitCode int      `json:"exit_code"`
	// Output is stdout and stderr together, cut to the first 64 KiB.
	Output    string `json:"output"`
	Truncated bool   `json:"truncated,omitempty"`
	// Error says why it could not run or was stopped ("" when it ran to its end).
	Error string `json:"error,omitempty"`
}

// RunManifestCommand runs argv (no shell) in dir with env added to this
// process's environment, for at most timeout, and returns its output.
func RunManifestCommand(ctx context.Context, argv, env []string, dir string, timeout time.Duration) ManifestOutput {
	out := ManifestOutput{Argv: argv, ExitCode: -1}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = mergeEnv(os.Environ(), env)
	b, err := cmd.CombinedOutput()
	if len(b) > maxManifestOutput {
		b, out.Truncated = b[:maxManifestOutput], true
	}
	out.Output = string(b)
	var ee *exec.ExitError
	switch {
	case err == nil:
		out.ExitCode = 0
	case errors.As(err, &ee):
		out.ExitCode = ee.ExitCode()
		if ctx.Err() != nil {
			out.Error = fmt.Sprintf("stopped after %s", timeout)
		}
	default:
		out.Error = err.Error()
	}
	return out
}
