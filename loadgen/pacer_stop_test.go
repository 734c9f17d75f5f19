package loadgen

import (
	"testing"
	"time"
)

// TestStopPacer: the inner pacer's waits until Stop, then stop at once,
// whatever the inner pacer would say; Rate is the inner pacer's.
func TestStopPacer(t *testing.T) {
	t.Parallel()
	p := NewStopPacer(NewTracePacer(schedule(4, 10*time.Millisecond, 1, 1)))
	if w, st := p.Pace(5*time.Millisecond, 1); w != 5*time.Millisecond || st {
		t.Errorf("before Stop: Pace = %v, %t; want the trace pacer's 5ms, false", w, st)
	}
	p.Stop()
	if w, st := p.Pace(5*time.Millisecond, 1); w != 0 || !st {
		t.Errorf("after Stop: Pace = %v, %t; want 0, true", w, st)
	}
	if r := p.Rate(15 * time.Millisecond); r != 4 {
		t.Errorf("Rate = %g, want the inner pacer's 4 req/s", r)
	}
}
