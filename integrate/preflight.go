package integrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DefaultPreflightTimeout bounds Preflight's one subprocess: importing torch
// and transformers and initialising CUDA takes a few seconds on a GPU machine
// (up to ~20 s on a cold disk); a minute means the interpreter is stuck.
const DefaultPreflightTimeout = 60 * time.Second

// preflightScript imports what refserver.py needs and asks torch whether it
// sees a GPU, printing one JSON object on stdout: {"ok": false, "step",
// "error"} at the first failure, else the versions and the device name.
const preflightScript = `import json, sys
def out(d):
    print(json.dumps(d))
    sys.exit(0)
info = {"ok": True, "python": sys.version.split()[0]}
for m in ("torch", "transformers", "aiohttp"):
    try:
        mod = __import__(m)
    except BaseException as e:
        out({"ok": False, "step": "import " + m, "error": str(e) or type(e).__name__})
    info[m] = str(getattr(mod, "__version__", "?"))
import torch
try:
    cuda = torch.cuda.is_available()
except BaseException as e:
    out({"ok": False, "step": "torch.cuda.is_available()", "error": str(e) or type(e).__name__})
if not cuda:
    out({"ok": False, "step": "torch.cuda.is_available()", "error": "returned False: torch %s (CUDA build %s) sees no GPU or driver" % (torch.__version__, torch.version.cuda)})
info["cuda"] = str(torch.version.cuda)
info["device"] = torch.cuda.get_device_name(0)
out(info)
`

// PreflightInfo is what Preflight found in the server's interpreter.
type PreflightInfo struct {
	Python       string `json:"python"`
	Torch        string `json:"torch"`
	Transformers string `json:"transformers"`
	Aiohttp      string `json:"aiohttp"`
	// CUDA is torch's CUDA build version; Device is GPU 0's name as torch sees it.
	CUDA   string `json:"cuda"`
	Device string `json:"device"`
}

// PreflightOption changes one Preflight setting.
type PreflightOption func(*preflightSettings)

type preflightSettings struct{ timeout time.Duration }

// WithPreflightTimeout bounds the subprocess (default DefaultPreflightTimeout).
func WithPreflightTimeout(d time.Duration) PreflightOption {
	return func(s *preflightSettings) { s.timeout = d }
}

// Preflight checks, with one short subprocess and before anything is
// launched, that the reference server's interpreter (cfg.Python, default
// python3, in the server's environment: this process's plus cfg.Env) can
// import torch, transformers and aiohttp and that torch sees a GPU
// (torch.cuda.is_available()). The error names the interpreter and the step
// that failed, e.g. "python3 -c 'import torch' failed: No module named
// 'torch'".
func Preflight(ctx context.Context, cfg ReferenceConfig, opts ...PreflightOption) (PreflightInfo, error) {
	s := preflightSettings{timeout: DefaultPreflightTimeout}
	for _, o := range opts {
		o(&s)
	}
	py := cfg.Effective().Python
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, py, "-c", preflightScript)
	cmd.Env = mergeEnv(os.Environ(), cfg.Env)
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var execErr *exec.Error
	switch {
	case errors.As(runErr, &execErr):
		return PreflightInfo{}, fmt.Errorf("reference.python %q cannot be run: %w", py, execErr.Err)
	case runErr != nil && cmd.ProcessState == nil: // never started
		return PreflightInfo{}, fmt.Errorf("reference.python %q cannot be run: %w", py, runErr)
	case cctx.Err() != nil && ctx.Err() == nil:
		return PreflightInfo{}, fmt.Errorf("%s -c 'import torch, transformers; torch.cuda.is_available()' did not finish within %s%s", py, s.timeout, stderrTail(stderr.Bytes()))
	case ctx.Err() != nil:
		return PreflightInfo{}, fmt.Errorf("%s preflight: %w", py, context.Cause(ctx))
	}
	var got struct {
		OK    bool   `json:"ok"`
		Step  string `json:"step"`
		Error string `json:"error"`
		PreflightInfo
	}
	line := strings.TrimSpace(stdout.String())
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:] // a sitecustomize may print before the script
	}
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		why := "printed no result"
		if runErr != nil {
			why = runErr.Error()
		}
		return PreflightInfo{}, fmt.Errorf("%s -c 'import torch, transformers; torch.cuda.is_available()' failed (%s)%s", py, why, stderrTail(stderr.Bytes()))
	}
	if !got.OK {
		return PreflightInfo{}, fmt.Errorf("%s -c '%s' failed: %s", py, got.Step, got.Error)
	}
	return got.PreflightInfo, nil
}

// stderrTail is ": " and the last lines of a subprocess's stderr, or "".
func stderrTail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return ": " + strings.Join(lines, "\n")
}
