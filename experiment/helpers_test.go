package experiment

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/traces"
)

func fmtF(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func cellOf(t *testing.T, res *report.Results, arm string, rate float64) report.Cell {
	t.Helper()
	for _, c := range res.Cells {
		if c.Arm == arm && c.OfferedLoadRPS == rate {
			return c
		}
	}
	t.Fatalf("no cell %s at %g req/s", arm, rate)
	return report.Cell{}
}

// loadSchedules loads the config at path (Load; one that does not load
// fails the test) and builds, from its effective config, the trace as read
// and each offered load's schedule as a run does (schedules), returning
// schedules' error for the test to judge.
func loadSchedules(t testing.TB, path string) (eff Config, base traces.Schedule, scheds []traces.Schedule, err error) {
	t.Helper()
	cfg, _, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	eff = cfg.Effective()
	base, scheds, err = eff.schedules()
	return eff, base, scheds, err
}

func mustBase(t *testing.T, cfg *Config) traces.Schedule {
	t.Helper()
	s, err := traces.ReadFile(cfg.path(cfg.Trace.Path), traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err = traces.Trim(s, cfg.Trace.First, cfg.Trace.ClampContext)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeAzureTrace writes an Azure-format trace of n requests one second
// apart (from 2023-11-16 18:15:10) into dir/trace.csv and returns its path;
// lengths(i) is request i's prompt and output tokens.
func writeAzureTrace(t *testing.T, dir string, n int, lengths func(i int) (in, out int)) string {
	t.Helper()
	var csv strings.Builder
	csv.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	start := time.Date(2023, 11, 16, 18, 15, 10, 0, time.UTC)
	for i := range n {
		in, out := lengths(i)
		fmt.Fprintf(&csv, "%s.0000000,%d,%d\n", start.Add(time.Duration(i)*time.Second).Format(time.DateTime), in, out)
	}
	trace := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(trace, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return trace
}

// runText parses a config text (paths relative to this folder) and runs it
// into a temporary folder, failing the test when the run returns an error.
// It returns the config, the results, the output folder and the run's log.
func runText(t *testing.T, name, cfgText string) (*Config, *report.Results, string, *bytes.Buffer) {
	t.Helper()
	cfg, err := Parse(strings.NewReader(cfgText), name, ".")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	log := &bytes.Buffer{}
	res, err := Run(context.Background(), cfg, Options{OutDir: out, Log: log})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	return cfg, res, out, log
}

// mixedLengths are short requests of 24-39 prompt and 6-10 output tokens,
// varying with i (the reference-server tests' trace).
func mixedLengths(i int) (in, out int) { return 24 + i%16, 6 + i%5 }
