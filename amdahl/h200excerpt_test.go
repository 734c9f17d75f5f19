package amdahl

import (
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// rmsnormEagerSequence is eager LlamaRMSNorm.forward as kernels: to(fp32),
// pow, mean, +eps, rsqrt, mul, to(bf16), weight × x.
func rmsnormEagerSequence() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, s := range []string{`direct_copy_kernel`, `pow_tensor_scalar`, `MeanOps`, `CUDAFunctorOnSelf_add<float>`, `rsqrt_kernel`,
		`BinaryFunctor<float, float, float, .*MulFunctor`, `bfloat16_copy_kernel`,
		`BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, .*MulFunctor`} {
		out = append(out, regexp.MustCompile(s))
	}
	return out
}

// TestH200Excerpt checks a real H200 profile excerpt (CUDA graphs on: the
// prefill replay of 16 × 512 tokens and the first decode replay at batch 16)
// against the numbers an independent Python implementation computed in exact
// integer ns (testdata/h200_cg_excerpt.py, output in testdata/README.md).
func TestH200Excerpt(t *testing.T) {
	t.Parallel()
	p, err := ReadChrome(filepath.Join("testdata", "h200_cg_excerpt.json.gz"), KernelSequence(rmsnormEagerSequence()))
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
