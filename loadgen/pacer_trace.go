package loadgen

import (
	"sort"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/transferlab/transferlab/traces"
)

// Pacer decides when each request is sent: Pace(elapsed, hits) returns how
// long to wait from elapsed before hit number hits (0-based), or stop; Rate
// is the instantaneous rate in req/s. It is vegeta's interface, borrowed so
// that vegeta's Constant, Linear and Sine pacers drive Replay unchanged for
// synthetic loads (TestReplayVegetaPacer). A trace is replayed with
// TracePacer, because its requests carry their own offsets, which none of
// vegeta's pacers can express; Poisson and Gamma arrivals are drawn by
// traces (gonum distuv) into such offsets.
type Pacer = vegeta.Pacer

// TracePacer releases request i at Offsets[i] (from run start) and stops after the last.
type TracePacer struct {
	offsets []time.Duration
}

var _ Pacer = (*TracePacer)(nil)

// NewTracePacer returns a pacer that releases request i at s.Requests[i].Offset.
func NewTracePacer(s traces.Schedule) *TracePacer {
	off := make([]time.Duration, len(s.Requests))
	for i := range s.Requests {
		off[i] = s.Requests[i].Offset
	}
	return &TracePacer{offsets: off}
}

// Pace implements Pacer: the wait until Offsets[hits], negative when late.
func (p *TracePacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= uint64(len(p.offsets)) {
		return 0, true
	}
	return p.offsets[hits] - elapsed, false
}

// Rate implements Pacer: requests due in the 1 s window centred on elapsed, in req/s.
func (p *TracePacer) Rate(elapsed time.Duration) float64 {
	lo := sort.Search(len(p.offsets), func(i int) bool { return p.offsets[i] >= elapsed-time.Second/2 })
	hi := sort.Search(len(p.offsets), func(i int) bool { return p.offsets[i] >= elapsed+time.Second/2 })
	return float64(hi - lo)
}
