package integrate

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pyServer is a Python stand-in for a launched server: it answers 200 on
// /health (or /v1/models only, with models_only) at {host}:{port}, and
// imports the modules named in IMPORTS first, as a server imports its model
// code.
const pyServer = `
import http.server, importlib, os, sys
for m in filter(None, os.environ.get("IMPORTS", "").split(",")):
    importlib.import_module(m)
paths = ["/v1/models"] if "models_only" in sys.argv else ["/health", "/v1/models"]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path in paths else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
`

// TestCommandSpecInjectsHook launches a Python stand-in server through
// CommandSpec with an override: the real shim (embedded sitecustomize and
// tlhook) loads in it and the install receipt lets Launch through; a Python
// that ignores PYTHONPATH (-I), or one that never imports the target's
// module, is refused with ErrHookNotLoaded before anything is measured.
func TestCommandSpecInjectsHook(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	// capture mode: the hook wraps the target and records shapes; no candidate needed.
	ov := &Override{Name: "enc", Target: "json.encoder:JSONEncoder.encode", Mode: ModeCapture}
	launch := func(t *testing.T, pyFlags []string, env map[string]string, extra ...string) (*Process, Spec, error) {
		argv := append([]string{py}, pyFlags...)
		argv = append(argv, "-c", pyServer, "{host}", "{port}")
		spec, err := CommandSpec(CommandConfig{Argv: append(argv, extra...), Env: env, ReadyTimeout: 30 * time.Second,
			StopSignal: "SIGINT", StopGrace: 5 * time.Second}, HookSetup{Override: ov}, t.TempDir())
		must(t, err)
		p, err := Launch(context.Background(), spec)
		return p, spec, err
	}

	t.Run("loaded", func(t *testing.T) {
		p, spec, err := launch(t, nil, map[string]string{"IMPORTS": "json"}, "models_only")
		must(t, err) // ready through the /v1/models fallback
		defer p.Close(context.Background())
		if spec.StopSignal != "SIGINT" || spec.Port == 0 || strings.Contains(strings.Join(spec.Argv, " "), "{port}") {
			t.Errorf("spec = %+v", spec)
		}
		recs, err := ReadReceipts(spec.HookDir)
		must(t, err)
		if len(recs) != 1 || recs[0].PID != p.PID() || len(recs[0].Overrides) != 1 || !recs[0].Overrides[0].Installed {
			t.Errorf("receipts = %+v", recs)
		}
		must(t, p.Close(context.Background()))
	})
	t.Run("python ignores PYTHONPATH", func(t *testing.T) {
		_, _, err := launch(t, []string{"-I"}, map[string]string{"IMPORTS": "json"})
		if !errors.Is(err, ErrHookNotLoaded) || !strings.Contains(err.Error(), "no install receipt") {
			t.Errorf("err = %v, want ErrHookNotLoaded (no receipt)", err)
		}
	})
	t.Run("target never imported", func(t *testing.T) {
		ov := *ov
		ov.Target = "xml.dom.minidom:Node.toxml"
		spec, err := CommandSpec(CommandConfig{Argv: []string{py, "-c", pyServer, "{host}", "{port}"}, ReadyTimeout: 30 * time.Second},
			HookSetup{Override: &ov}, t.TempDir())
		must(t, err)
		_, err = Launch(context.Background(), spec)
		if !errors.Is(err, ErrHookNotLoaded) || !strings.Contains(err.Error(), "installed in none") {
			t.Errorf("err = %v, want ErrHookNotLoaded (not installed)", err)
		}
	})
}

func TestCommandConfigValidate(t *testing.T) {
	t.Parallel()
	err := CommandConfig{Env: map[string]string{"A=B": "x"}, ReadyPath: "health", StopSignal: "SIGSTOP", ReadyTimeout: -1}.Validate()
	for _, want := range []string{"command.argv: required", `command.env: "A=B"`, "command.ready_path", "command.stop_signal", "command.ready_timeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
	if err := (CommandConfig{Argv: []string{"vllm", "serve"}, StopSignal: "sigint"}).Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestRunManifestCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := RunManifestCommand(context.Background(), []string{"sh", "-c", "echo v1.2 $TLX; exit 3"}, []string{"TLX=ok"}, dir, 10*time.Second)
	if out.ExitCode != 3 || strings.TrimSpace(out.Output) != "v1.2 ok" || out.Error != "" {
		t.Errorf("out = %+v", out)
	}
	out = RunManifestCommand(context.Background(), []string{filepath.Join(dir, "missing")}, nil, dir, time.Second)
	if out.Error == "" || out.ExitCode != -1 {
		t.Errorf("missing program: %+v", out)
	}
}
