package integrate

import (
	"os/exec"
	"testing"
)

// TestPythonHook runs the hook's plain-Python tests (manifest parsing, lazy
// patching, counters, capture, start-up failure, timing windows) with python3.
// CI has python3 without torch; torch-only paths are exercised on the GPU.
func TestPythonHook(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH: the hook's Python tests are skipped")
	}
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", "python/tests", "-v")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python hook tests failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
