package sim

import (
	"testing"
	"time"
)

// TestLostToStall checks the stall accounting on a fake clock: lateness up
// to the catch-up is made up (nothing lost), a longer stall loses all of
// it, and a step with no due start (an idle engine's first) loses nothing.
func TestLostToStall(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	for _, c := range []struct {
		due     time.Time
		planned time.Time
		want    time.Duration
	}{
		{time.Time{}, t0, 0},
		{t0, t0, 0},
		{t0, t0.Add(-3 * ms), 0}, // planned before due: it waits
		{t0, t0.Add(50 * ms), 0}, // within catchUp: made up
		{t0, t0.Add(51 * ms), 51 * ms},
		{t0, t0.Add(400 * ms), 400 * ms},
	} {
		if got := lostToStall(c.due, c.planned, 50*ms); got != c.want {
			t.Errorf("lostToStall(due %v, planned %v, 50ms) = %v, want %v", c.due.Sub(t0), c.planned.Sub(t0), got, c.want)
		}
	}
	// Summed over a busy run as the engine sums it: two stalls, one made up.
	var lost time.Duration
	next := t0
	for _, late := range []time.Duration{0, 20 * ms, 120 * ms, 0, 75 * ms} {
		lost += lostToStall(next, next.Add(late), 50*ms)
		next = next.Add(10 * ms)
	}
	if lost != 195*ms {
		t.Errorf("lost over the run = %v, want 195ms (the 120 ms and 75 ms stalls)", lost)
	}
}
