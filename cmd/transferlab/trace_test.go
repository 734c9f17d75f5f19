package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/transferlab/transferlab/traces"
)

// TestTraceStatsFirstBeyondRows: `trace stats --first N` with N above the
// trace's rows is refused as a config's trace.first is (traces.Trim),
// naming the flag, the rows asked and the rows there; N equal to the rows
// keeps them all.
func TestTraceStatsFirstBeyondRows(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "traces", "testdata", "azure_conv_50.csv")
	s, err := traces.ReadFile(file, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(s.Requests)
	if _, _, code, err := runCLI(t, "trace", "stats", file, "--first", fmt.Sprint(n)); code != 0 || err != nil {
		t.Errorf("--first %d (every row): exit %d: %v", n, code, err)
	}
	_, _, code, err := runCLI(t, "trace", "stats", file, "--first", fmt.Sprint(n+1))
	if want := fmt.Sprintf("--first: %d rows asked, but the trace has %d", n+1, n); code != 1 || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("--first %d: exit %d: %v, want a refusal containing %q", n+1, code, err, want)
	}
}
