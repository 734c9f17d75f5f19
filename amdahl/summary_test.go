package amdahl

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rms := regexp.MustCompile(`^triton_rmsnorm`)
	cases := []struct {
		name, file string
		format     Format
		cfg        SummaryConfig
		fwall      float64
		windows    []float64 // per-window target/active
		complete   bool
		text       []string
	}{
		{
			name: "chrome, 2 windows", file: "chrome_overlap.json", format: FormatChrome,
			cfg:   SummaryConfig{Windows: 2, Options: []Option{KernelPattern(rms)}},
			fwall: 45.0 / 150, windows: []float64{30.0 / 75, 15.0 / 75}, complete: true,
			text: []string{"f_gpu", "0.375", "0.120 ms", "prefill", "1 by name"},
		},
		{
			name: "nsys, no pattern: incomplete", file: "nsys_small.sqlite", format: FormatNsys,
			cfg:   SummaryConfig{Windows: 1},
			fwall: 40.0 / 150, windows: []float64{40.0 / 150}, complete: false,
			text: []string{"INCOMPLETE", "2 unattributed"},
		},
		{
			// Requests [0,60) and [100,150) µs: the analysed window is [10,150),
			// split into [10,80) (active [10,60): target 20 of 50) and
			// [80,150) (active [100,150): target 15 of 50).
			name: "chrome with request intervals", file: "chrome_overlap.json", format: FormatChrome,
			cfg: SummaryConfig{Windows: 2, Active: []Interval{{us(0), us(60)}, {us(100), us(150)}},
				Options: []Option{KernelPattern(rms)}},
			fwall: 35.0 / 100, windows: []float64{20.0 / 50, 15.0 / 50}, complete: true,
			text: []string{"from requests"},
		},
		{
			name: "hook", file: "hook_small.json", format: FormatHook,
			cfg:   SummaryConfig{Target: "transformers.models.llama.modeling_llama:LlamaRMSNorm.forward"},
			fwall: 400.0 / 9000, windows: []float64{0.06, 0.025}, complete: true,
			text: []string{"not in this source", "writer_note"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Summarize(ctx, filepath.Join("testdata", c.file), c.format, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			approx(t, "pooled f_wall", float64(s.FWall.Value), c.fwall, exact)
			if len(s.Windows) != len(c.windows) {
				t.Fatalf("%d windows, want %d", len(s.Windows), len(c.windows))
			}
			for i, w := range s.Windows {
				approx(t, w.Label, float64(w.Target)/float64(w.ActiveWall), c.windows[i], exact)
			}
			if s.Complete != c.complete {
				t.Errorf("complete = %v", s.Complete)
			}
			var buf bytes.Buffer
			if err := s.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			for _, want := range c.text {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("text lacks %q:\n%s", want, buf.String())
				}
			}
			if _, err := json.Marshal(s); err != nil {
				t.Fatalf("summary must encode as JSON: %v", err)
			}
		})
	}
	if _, err := Summarize(ctx, filepath.Join("testdata", "hook_small.json"), FormatHook, SummaryConfig{Target: "other:Op.f"}); err == nil ||
		!strings.Contains(err.Error(), "field target") {
		t.Errorf("target mismatch: err = %v", err)
	}
	if _, err := ParseFormat("perfetto"); err == nil {
		t.Error("unknown format accepted")
	}
}
