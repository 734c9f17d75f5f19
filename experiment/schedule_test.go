package experiment

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/stats"
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

// TestScheduleTraceErrorNamesField: a trace file that cannot be read (binary,
// empty) is reported against the config's trace.path and its line, as
// every other config error is, with the trace reader's own message.
func TestScheduleTraceErrorNamesField(t *testing.T) {
	t.Parallel()
	for name, body := range map[string][]byte{"binary": {0x7f, 'E', 'L', 'F', 0, 1, 2, '\n'}, "empty": nil} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "t.csv"), body, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := Parse(strings.NewReader(validBase), "bad.yaml", dir)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = cfg.Effective().schedules()
			if err == nil {
				t.Fatalf("no error for a %s trace", name)
			}
			for _, w := range []string{"config bad.yaml: trace.path (line 2): ", "t.csv"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q: %v", w, err)
				}
			}
		})
	}
}

// TestCanaryConfigCanClaimSLO: configs/canary.yaml sizes its cells so that
// its highest offered load's expected requests in the measured window
// (rate × load.duration) reach what its SLO percentile needs at the default
// confidence (stats.MinSamples: p99 459, p90 44); otherwise capacity at the
// SLO is always unknown.
func TestCanaryConfigCanClaimSLO(t *testing.T) {
	t.Parallel()
	cfg, _, err := Load(filepath.Join("..", "configs", "canary.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	eff := cfg.Effective()
	need, err := stats.MinSamples(eff.SLO.Percentile/100, stats.DefaultConfidence)
	if err != nil {
		t.Fatal(err)
	}
	most := slices.Max(eff.Load.RatesRPS)
	if got := most * eff.Load.Duration.Seconds(); got < float64(need) {
		t.Errorf("its highest load gives ≈ %.0f requests a cell (%g req/s × %s), slo.percentile %g needs ≥ %d: capacity would always be unknown",
			got, most, eff.Load.Duration, eff.SLO.Percentile, need)
	}
}
