package loadgen

import (
	"sync/atomic"
	"time"
)

// StopPacer releases requests as its inner Pacer says until Stop is
// called, then releases no more: the requests it never released end
// not_sent (Replay), and those in flight finish normally (nothing is
// cancelled inside the server). It is safe for concurrent use.
type StopPacer struct {
	Pacer
	stopped atomic.Bool
}

var _ Pacer = (*StopPacer)(nil)

// NewStopPacer wraps p.
func NewStopPacer(p Pacer) *StopPacer { return &StopPacer{Pacer: p} }

// Pace implements Pacer: the inner pacer's answer until Stop, then stop.
func (p *StopPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if p.stopped.Load() {
		return 0, true
	}
	return p.Pacer.Pace(elapsed, hits)
}

// Stop releases no more requests from now on.
func (p *StopPacer) Stop() { p.stopped.Store(true) }
