package amdahl

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// rmsnormEagerSequence is the llama-rmsnorm preset: eager
// LlamaRMSNorm.forward as kernels (to(fp32), pow, mean, +eps, rsqrt, mul,
// to(bf16), weight × x).
func rmsnormEagerSequence() Option {
	p, ok := LookupTargetPreset("llama-rmsnorm")
	if !ok {
		panic("no llama-rmsnorm preset")
	}
	opts, err := p.Options()
	if err != nil || len(opts) != 1 {
		panic(fmt.Sprintf("llama-rmsnorm preset: %v", err))
	}
	return opts[0]
}

// TestH200Excerpt checks a real H200 profile excerpt (CUDA graphs on: the
// prefill replay of 16 × 512 tokens and the first decode replay at batch 16)
// against the numbers an independent Python implementation computed in exact
// integer ns (testdata/h200_cg_excerpt.py, output in testdata/README.md).
func TestH200Excerpt(t *testing.T) {
	t.Parallel()
	p, err := ReadChrome(filepath.Join("testdata", "h200_cg_excerpt.json.gz"), rmsnormEagerSequence())
	if err != nil {
		t.Fatal(err)
	}
	if a := p.Attribution; a.BySequence != 1040 || a.GraphKernels != 3313 || a.ByName+a.ByAnnotation+a.ByCorrelation != 0 {
		t.Fatalf("attribution %+v, want 1040 by sequence (130 RMSNorm calls × 8 kernels), 3313 graph kernels", a)
	}
	cases := []struct {
		name               string
		start, end         time.Duration
		busy, target, excl time.Duration
	}{
		{"whole excerpt", 5080672188047765, 5080672781384073, 587638364, 30176629, 30176629},
		{"prefill replay (16 x 512 tokens)", 5080672188047765, 5080672744431693, 554987106, 28752982, 28752982},
		{"decode replay (batch 16)", 5080672747911800, 5080672781384073, 32568314, 1423647, 1423647},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fr, err := p.Fractions(Window(Interval{c.start, c.end}))
			if err != nil {
				t.Fatal(err)
			}
			if fr.Busy != c.busy || fr.TargetGPU != c.target || fr.TargetExclusive != c.excl {
				t.Fatalf("busy %d target %d excl %d ns; want %d %d %d", fr.Busy, fr.TargetGPU, fr.TargetExclusive, c.busy, c.target, c.excl)
			}
			approx(t, "f_gpu", float64(fr.FGPU), float64(c.target)/float64(c.busy), exact)
			approx(t, "f_wall", float64(fr.FWall), float64(c.target)/float64(c.end-c.start), exact)
		})
	}
}

// TestH200Known checks the GPU helper's real excerpts under testdata/h200/
// (validation capture server, CUDA graphs on, hook in capture mode) with
// RMSNorm attributed by its eager kernel sequence — the traces carry no
// transferlab::target ranges — against testdata/h200_cg_excerpt.py (exact
// integer ns, independent implementation). Concurrency 1 is CPU-bound:
// f_gpu 0.142 but f_wall 0.0087, so the report must explain the gap.
func TestH200Known(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file                       string
		kernels, graph             int
		window, busy, target, excl time.Duration
		explain                    bool
	}{
		{"profile-c1-excerpt.json.gz", 832, 939, 288933488, 17740081, 2525383, 2525383, true},
		{"profile-c16-excerpt.json.gz", 800, 1692, 40961267, 28939531, 2161119, 2161119, false},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", "h200", c.file)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s not committed: %v", path, err)
			}
			p, err := ReadChrome(path, rmsnormEagerSequence())
			if err != nil {
				t.Fatal(err)
			}
			if a := p.Attribution; a.BySequence != c.kernels || a.GraphKernels != c.graph {
				t.Fatalf("attribution %+v, want %d by sequence, %d graph kernels", a, c.kernels, c.graph)
			}
			fr, err := p.Fractions()
			if err != nil {
				t.Fatal(err)
			}
			if p.Span.Len() != c.window || fr.Busy != c.busy || fr.TargetGPU != c.target || fr.TargetExclusive != c.excl {
				t.Fatalf("window %d busy %d target %d excl %d ns; want %d %d %d %d",
					p.Span.Len(), fr.Busy, fr.TargetGPU, fr.TargetExclusive, c.window, c.busy, c.target, c.excl)
			}
			if got := Explain(fr) != ""; got != c.explain {
				t.Errorf("explanation present = %v, want %v (f_gpu %v, f_wall %v)", got, c.explain, fr.FGPU, fr.FWall)
			}
		})
	}
}
