package experiment

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/integrate"
)

// TestEndpointChecksConnectionFirst: a run against a dead URL fails on the
// connection check before it prints any analysis line (the Amdahl bounds
// "before the run"): nothing is said about a run that cannot start.
func TestEndpointChecksConnectionFirst(t *testing.T) {
	t.Parallel()
	closed, err := integrate.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(`
name: dead
trace: {path: ../configs/traces/prefill-heavy-4000in-8out.csv}
load: {rates_rps: [1], duration: 1s}
server: {kind: endpoint, endpoint: {url: "http://127.0.0.1:%d"}}
arms: [{name: baseline}]
`, closed)
	cfg, err := Parse(strings.NewReader(text), "dead.yaml", ".")
	if err != nil {
		t.Fatal(err)
	}
	var log, warn strings.Builder
	res, err := Run(context.Background(), cfg, Options{OutDir: filepath.Join(t.TempDir(), "out"), Log: &log, Warn: &warn})
	if err == nil || res != nil || !strings.Contains(err.Error(), "unreachable") || !strings.Contains(err.Error(), strconv.Itoa(closed)) {
		t.Fatalf("Run = %v, %v; want the unreachable server named", res, err)
	}
	for _, out := range []string{log.String(), warn.String()} {
		if strings.Contains(out, "before the run") || strings.Contains(out, "Amdahl") {
			t.Errorf("analysis printed before the connection check failed:\n%s", out)
		}
	}
}
