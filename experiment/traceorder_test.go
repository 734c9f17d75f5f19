package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWarnsBackwardsTrace: a trace whose timestamps go backwards is not
// replayed silently: the run warns with the file and line, and the report's
// warnings carry it.
func TestRunWarnsBackwardsTrace(t *testing.T) {
	t.Parallel()
	trace := filepath.Join(t.TempDir(), "unsorted.csv")
	rows := "arrived_at,num_prefill_tokens,num_decode_tokens\n"
	for i := range 12 {
		at := float64(i) * 0.25
		if i == 5 {
			at = 0.1 // line 7 goes back to before line 3
		}
		rows += fmt.Sprintf("%g,%d,%d\n", at, 20+i, 4)
	}
	if err := os.WriteFile(trace, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	_, res, _, log := runText(t, "order.yaml", fmt.Sprintf(`
name: order-test
seed: 1
trace: {path: %s}
load: {rates_rps: [4], warmup: 0s, duration: 2s, max_requests: 12}
server: {kind: sim}
arms:
  - name: baseline
energy: {disabled: true}
resolution: {aa_replicate: false}
`, trace))
	want := "unsorted.csv line 7: timestamps go backwards (900ms earlier than line 6)"
	if !strings.Contains(log.String(), "warning: trace "+trace+" line 7") || !strings.Contains(log.String(), want) {
		t.Errorf("log does not warn %q:\n%s", want, log.String())
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), want) {
		t.Errorf("results' warnings lack %q: %q", want, res.Warnings)
	}
}
