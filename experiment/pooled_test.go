package experiment

import (
	"math"
	"testing"
	"time"

	"github.com/transferlab/transferlab/amdahl"
)

// TestPooledOf: two windows, target 1 ms of 10 ms active and 30 ms of
// 100 ms: pooled 31/110 (not the mean of ratios, 0.2); any undefined window
// makes the pooled fraction undefined.
func TestPooledOf(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	frs := []amdahl.Fractions{
		{TargetExclusive: 1 * ms, ActiveWall: 10 * ms, FExcl: 0.1, FGPU: amdahl.NaN()},
		{TargetExclusive: 30 * ms, ActiveWall: 100 * ms, FExcl: 0.3, FGPU: 0.5},
	}
	excl := func(f amdahl.Fractions) (amdahl.Num, time.Duration, time.Duration) {
		return f.FExcl, f.TargetExclusive, f.ActiveWall
	}
	got := pooledOf(frs, excl)
	if got == nil || math.Abs(*got-31.0/110) > 1e-12 {
		t.Errorf("pooled f_excl = %v, want %v", got, 31.0/110)
	}
	gpu := func(f amdahl.Fractions) (amdahl.Num, time.Duration, time.Duration) {
		return f.FGPU, f.TargetGPU, f.Busy
	}
	if got := pooledOf(frs, gpu); got != nil {
		t.Errorf("pooled f_gpu = %v, want nil (one window has none)", *got)
	}
}
