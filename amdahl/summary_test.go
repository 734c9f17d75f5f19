package amdahl

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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
		absent     []string // text that must not appear (another source's definitions)
	}{
		{
			name: "chrome, 2 windows", file: "chrome_overlap.json", format: FormatChrome,
			cfg:   SummaryConfig{Windows: 2, Options: []Option{KernelPattern(rms)}},
			fwall: 45.0 / 150, windows: []float64{30.0 / 75, 15.0 / 75}, complete: true,
			text:   []string{"f_gpu", "0.375", "0.120 ms", "prefill", "1 by name", "|∪ target work| in the window"},
			absent: []string{"CUDA-event"},
		},
		{
			name: "nsys, no pattern: incomplete", file: "nsys_small.sqlite", format: FormatNsys,
			cfg:   SummaryConfig{Windows: 1},
			fwall: 40.0 / 150, windows: []float64{40.0 / 150}, complete: false,
			text: []string{"INCOMPLETE", "2 unattributed"},
		},
		{
			// Requests [0,60) and [100,150) µs; the trace's events start at 0
			// (CPU range), so the analysed window is [0,150), split into
			// [0,75) (active [0,60): target k1 20 of 60; k4 ran after the
			// request ended) and [75,150) (active [100,150): target 15 of 50).
			name: "chrome with request intervals", file: "chrome_overlap.json", format: FormatChrome,
			cfg: SummaryConfig{Windows: 2, Active: []Interval{{us(0), us(60)}, {us(100), us(150)}},
				Options: []Option{KernelPattern(rms)}},
			fwall: 35.0 / 110, windows: []float64{20.0 / 60, 15.0 / 50}, complete: true,
			text: []string{"from requests"},
		},
		{
			name: "hook", file: "hook_small.json", format: FormatHook,
			cfg:   SummaryConfig{Target: "transformers.models.llama.modeling_llama:LlamaRMSNorm.forward"},
			fwall: 400.0 / 9000, windows: []float64{0.06, 0.025}, complete: true,
			// Hook timings are Σ CUDA-event time of the target's calls, not
			// the union of its kernels (the profile definition).
			text:   []string{"not in this source", "writer_note", "Σ CUDA-event time of the target's calls"},
			absent: []string{"|∪ target work|"},
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
			checkInvariants(t, s)
			if got, err := DetectFormat(filepath.Join("testdata", c.file)); err != nil || got != c.format {
				t.Errorf("DetectFormat = %q, %v; want %q", got, err, c.format)
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
			for _, bad := range c.absent {
				if strings.Contains(buf.String(), bad) {
					t.Errorf("text has %q, another source's definition:\n%s", bad, buf.String())
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
	if _, err := DetectFormat("trace.pftrace"); err == nil {
		t.Error("DetectFormat of .pftrace should fail")
	}
	if _, err := ParseFormat("perfetto"); err == nil {
		t.Error("unknown format accepted")
	}
}

// TestSummarizeServerActive: the server's active time (100 µs of the 150 µs
// span) is the f_wall denominator, apportioned to the two 75 µs windows as
// 50 µs each: f = 30/50 and 15/50, pooled 45/100; f_excl = 30/100.
func TestSummarizeServerActive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wpath := filepath.Join(dir, "trace.json.window.json")
	if err := os.WriteFile(wpath, []byte(`{"trace_path": "x", "window_s": 0.0002, "active_s": 0.0001, "requests_done": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sw, err := ReadServerWindow(wpath)
	if err != nil {
		t.Fatal(err)
	}
	if sw.ActiveWall() != us(100) || sw.RequestsDone != 3 {
		t.Fatalf("server window %+v", sw)
	}
	s, err := Summarize(context.Background(), filepath.Join("testdata", "chrome_overlap.json"), FormatChrome,
		SummaryConfig{Windows: 2, ActiveWall: sw.ActiveWall(), Options: []Option{KernelPattern(regexp.MustCompile(`^triton_rmsnorm`))}})
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "f_wall", float64(s.Fractions.FWall), 0.45, exact)
	approx(t, "pooled f_wall", float64(s.FWall.Value), 0.45, exact)
	approx(t, "f_excl", float64(s.Fractions.FExcl), 0.3, exact)
	approx(t, "f_gpu", float64(s.Fractions.FGPU), 0.375, exact)
	approx(t, "w0", float64(s.Windows[0].Target)/float64(s.Windows[0].ActiveWall), 0.6, exact)
	approx(t, "w1", float64(s.Windows[1].Target)/float64(s.Windows[1].ActiveWall), 0.3, exact)
	if s.Fractions.ActiveFrom != "server" {
		t.Errorf("active from %q", s.Fractions.ActiveFrom)
	}
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	if _, err := zw.Write([]byte(`{"window_s": 1.5, "active_s": 1.25}`)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	zpath := filepath.Join(dir, "trace.json.window.json.gz")
	if err := os.WriteFile(zpath, zbuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if zw, err := ReadServerWindow(zpath); err != nil || zw.ActiveWall() != 1250*time.Millisecond {
		t.Fatalf("gzipped window: %+v, %v", zw, err)
	}
	for _, bad := range []string{`{"window_s": 0, "active_s": 0}`, `{"window_s": 1, "active_s": 2}`, `{"window_s": 1,}`} {
		if err := os.WriteFile(wpath, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadServerWindow(wpath); err == nil || !strings.Contains(err.Error(), wpath) {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

func TestChromeGzip(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "chrome_overlap.json"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := ParseChrome(&buf, "trace.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	fr, err := p.Fractions()
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "f_gpu from gzip", float64(fr.FGPU), 40.0/120, exact)
}
