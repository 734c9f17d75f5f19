package shard

import (
	"context"
	"fmt"
	"time"
)

// Timetable starts every shard's cells at the same absolute times: cell k
// (in run order) starts at StartAt + Σ_{j<k} (span_j + Gap), where span_j is
// the arrivals' span of cell j's unsplit schedule and Gap covers the last
// requests' completion (default: the request timeout, the longest a request
// can take) plus any server start or warm-up replay before the next cell. A
// shard that reaches a cell after its time starts it at once and the delay is
// recorded (CellStart.LateMs).
type Timetable struct {
	StartAt time.Time
	Gap     time.Duration
	// next is the planned start of the next cell; cells counts those planned.
	next  time.Time
	cells int
}

// plan returns the start of the next cell in run order, whose unsplit
// schedule spans span (its last request's offset), and moves past it.
func (t *Timetable) plan(span time.Duration) time.Time {
	if t.cells == 0 {
		t.next = t.StartAt
	}
	at := t.next
	t.next = at.Add(span + t.Gap)
	t.cells++
	return at
}

// CellStart is when one cell began on a shard against its planned time.
type CellStart struct {
	Order   int       `json:"order"`
	Planned time.Time `json:"planned"`
	// Began is when the shard released the cell (its own clock).
	Began time.Time `json:"began"`
	// LateMs is Began − Planned when the shard reached the cell after its
	// time (ms; 0 when it waited).
	LateMs float64 `json:"late_ms"`
}

// wait sleeps until the next cell's planned time (on this shard's clock
// corrected by offset, its clock minus the reference) and says when it
// began. Cells must be waited for in run order; span is as for plan.
func (t *Timetable) wait(ctx context.Context, order int, span, offset time.Duration) (CellStart, error) {
	if order != t.cells {
		return CellStart{}, fmt.Errorf("timetable: cell %d waited for after %d cells", order, t.cells)
	}
	planned := t.plan(span)
	// The reference clock reads planned when this clock reads planned + offset.
	local := planned.Add(offset)
	if d := time.Until(local); d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return CellStart{}, fmt.Errorf("waiting for cell %d's start at %s: %w", order+1, planned.Format(time.RFC3339Nano), context.Cause(ctx))
		}
	}
	now := time.Now()
	cs := CellStart{Order: order, Planned: planned.UTC(), Began: now.UTC()}
	if late := now.Sub(local); late > 0 {
		cs.LateMs = ms(late)
	}
	return cs, nil
}
