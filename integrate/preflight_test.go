package integrate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeInterpreter writes a python wrapper that runs python3 with PYTHONPATH set
// to a folder holding the given modules (name → __init__.py source).
func fakeInterpreter(t *testing.T, mods map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range mods {
		if err := os.MkdirAll(filepath.Join(dir, "mods", name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "mods", name, "__init__.py"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	py := filepath.Join(dir, "python")
	script := "#!/bin/sh\nPYTHONPATH='" + filepath.Join(dir, "mods") + "' PYTHONDONTWRITEBYTECODE=1 exec python3 \"$@\"\n"
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return py
}

func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPreflight(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH: the preflight's fakes run python3")
	}
	const (
		gpuTorch    = "__version__ = '2.9'\nclass version:\n    cuda = '12.8'\nclass cuda:\n    is_available = staticmethod(lambda: True)\n    get_device_name = staticmethod(lambda i: 'NVIDIA H200')\n"
		noGPUTorch  = "__version__ = '2.9'\nclass version:\n    cuda = None\nclass cuda:\n    is_available = staticmethod(lambda: False)\n"
		missing     = "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n"
		versionOnly = "__version__ = '5.17'\n"
	)
	fake, err := filepath.Abs(filepath.Join("testdata", "fakepython"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		python  string
		timeout time.Duration
		want    string // "" : passes
		device  string
	}{
		{name: "GPU machine", python: fakeInterpreter(t, map[string]string{"torch": gpuTorch, "transformers": versionOnly, "aiohttp": versionOnly}), device: "NVIDIA H200"},
		{name: "the tests' fake server python", python: fake, device: "fake GPU 0"},
		{name: "no torch", python: fakeInterpreter(t, map[string]string{"torch": missing, "transformers": versionOnly, "aiohttp": versionOnly}),
			want: "-c 'import torch' failed: No module named 'torch'"},
		{name: "no transformers", python: fakeInterpreter(t, map[string]string{"torch": gpuTorch, "transformers": strings.ReplaceAll(missing, "torch", "transformers"), "aiohttp": versionOnly}),
			want: "-c 'import transformers' failed: No module named 'transformers'"},
		{name: "no GPU", python: fakeInterpreter(t, map[string]string{"torch": noGPUTorch, "transformers": versionOnly, "aiohttp": versionOnly}),
			want: "-c 'torch.cuda.is_available()' failed: returned False"},
		{name: "no interpreter", python: filepath.Join(t.TempDir(), "python-missing"), want: "cannot be run"},
		{name: "crashes", python: writeScript(t, "echo 'Segmentation fault' >&2; exit 139"), want: "Segmentation fault"},
		{name: "hangs", python: writeScript(t, "exec sleep 30"), timeout: 500 * time.Millisecond, want: "did not finish within 500ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var opts []PreflightOption
			if tc.timeout > 0 {
				opts = append(opts, WithPreflightTimeout(tc.timeout))
			}
			info, err := Preflight(context.Background(), ReferenceConfig{Python: tc.python}, opts...)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if info.Device != tc.device || info.Torch == "" || info.Transformers == "" {
					t.Errorf("info = %+v, want device %q and versions", info, tc.device)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.python) {
				t.Errorf("err = %v does not name the interpreter %s", err, tc.python)
			}
		})
	}
}
