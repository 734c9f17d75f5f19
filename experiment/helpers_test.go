package experiment

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

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

func mustBase(t *testing.T, cfg *Config) traces.Schedule {
	t.Helper()
	s, err := traces.ReadFile(cfg.path(cfg.Trace.Path), traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Trace.ClampContext > 0 {
		s = traces.ClampContext(s, cfg.Trace.ClampContext)
	}
	return s
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
