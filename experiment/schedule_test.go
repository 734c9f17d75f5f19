package experiment

import (
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/traces"
)

// TestCellScheduleOneInstant: a trace whose rows share one timestamp has no
// arrival rate to scale; the error counts the rows the cell takes (rate ×
// (warm-up + duration) + 1) against the trace's rows, and says what to do.
func TestCellScheduleOneInstant(t *testing.T) {
	t.Parallel()
	base := traces.Schedule{Source: "same.csv", RowsRead: 50}
	for i := range 50 {
		base.Requests = append(base.Requests, traces.Request{ID: i, InputTokens: 10, OutputTokens: 10})
	}
	l := LoadConfig{Mode: LoadTrace, Warmup: time.Second, Duration: 2 * time.Second}
	_, err := cellSchedule(base, l, 5, 1, 0)
	if err == nil {
		t.Fatal("no error for a trace at one instant")
	}
	for _, w := range []string{"same.csv", "16 of its 50 requests", "all 50 have one timestamp", "load.mode"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain %q: %v", w, err)
		}
	}
	if strings.Contains(err.Error(), "no mean rate (16 requests over 0s)") {
		t.Errorf("error gives the bare mean-rate failure: %v", err)
	}
}
