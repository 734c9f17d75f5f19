package integrate

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pythonFor returns the first python3 that imports every module in mods:
// python3 on PATH, then Debian's /usr/bin/python3 (a pyenv python3 may come
// first on PATH without Debian's python3-aiohttp). "" when none does.
func pythonFor(mods ...string) string {
	var cands []string
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/bin/python3")
	for _, py := range cands {
		args := []string{"-c", "import " + strings.Join(append([]string{"sys"}, mods...), ", ")}
		if exec.Command(py, args...).Run() == nil {
			return py
		}
	}
	return ""
}

// TestPythonTests runs the plain-Python tests under python/tests: the hook
// (manifest parsing, lazy patching, counters, capture, start-up failure,
// timing windows), the validation gate's decision logic, and the reference
// server's request handling (refserver.make_app around a fake engine: the
// HTTP contract the Go client reads). CI has python3 without torch;
// torch-only paths are exercised on the GPU. The server's tests need aiohttp
// (Debian's python3-aiohttp, which .ci/run installs and then sets
// TRANSFERLAB_PYTHON_AIOHTTP=1 to make them required).
func TestPythonTests(t *testing.T) {
	t.Parallel()
	py := pythonFor("aiohttp")
	if py == "" {
		if os.Getenv("TRANSFERLAB_PYTHON_AIOHTTP") == "1" {
			t.Fatal("TRANSFERLAB_PYTHON_AIOHTTP=1 but no python3 imports aiohttp: the reference server's tests cannot run")
		}
		if py = pythonFor(); py == "" {
			t.Skip("python3 not on PATH: the Python tests are skipped")
		}
		t.Logf("%s has no aiohttp (Debian: apt-get install python3-aiohttp): the reference server's request handling is skipped", py)
	}
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", "python/tests", "-v")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: Python tests failed: %v\n%s", py, err, out)
	}
	t.Logf("%s\n%s", py, out)
}

// TestPythonCompiles compiles every Python file of the repository (the
// embedded server, gate and hook, the kernels, the test helpers) without
// writing bytecode: a syntax error in a file embedded in the binary would
// otherwise surface only on the GPU machine.
func TestPythonCompiles(t *testing.T) {
	t.Parallel()
	py := pythonFor()
	if py == "" {
		t.Skip("python3 not on PATH: the Python files are not compiled")
	}
	var files []string
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != ".." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".py") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found %d Python files: %v", len(files), files)
	}
	const compileAll = "import sys\nfor f in sys.argv[1:]:\n    compile(open(f, encoding='utf-8').read(), f, 'exec')\n"
	out, err := exec.Command(py, append([]string{"-c", compileAll}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("a Python file does not compile: %v\n%s", err, out)
	}
}
