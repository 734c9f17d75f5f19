package experiment

import (
	"strconv"
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
