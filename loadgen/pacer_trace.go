package loadgen

import (
	"math"
	"sort"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/transferlab/transferlab/traces"
)

// Pacer decides when each request is sent: Pace(elapsed, hits) returns how
// long to wait from elapsed before hit number hits (0-based), or stop; Rate
// is the instantaneous rate in req/s. It is vegeta's interface, so vegeta's
// Constant, Linear and Sine pacers work unchanged.
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

// arrivals is the shared core of the seeded renewal pacers: hit i is due at
// the sum of the first i+1 gaps drawn from gap. Gaps are drawn lazily and
// forward only; asking for an earlier hit redraws from the seed, so a hit's
// time never depends on when it was asked for.
type arrivals struct {
	seed uint64
	gap  func(*rngState) float64 // seconds
	rng  rngState
	n    uint64        // gaps drawn
	at   time.Duration // due time of hit n−1
}

func (a *arrivals) dueAt(hits uint64) time.Duration {
	if hits+1 < a.n {
		a.rng = newRNG(a.seed)
		a.n, a.at = 0, 0
	}
	for a.n < hits+1 {
		g := a.gap(&a.rng)
		a.at += time.Duration(math.Round(g * 1e9))
		a.n++
	}
	return a.at
}

// renewal is a seeded renewal-process pacer of mean rate RateRPS (req/s):
// Pace waits until the due time of the hit; Rate is the mean rate.
type renewal struct {
	RateRPS float64
	mu      sync.Mutex
	a       arrivals
}

func newRenewal(rps float64, seed uint64, gap func(*rngState) float64) renewal {
	return renewal{RateRPS: rps, a: arrivals{seed: seed, rng: newRNG(seed), gap: gap}}
}

// Pace implements Pacer: the wait from elapsed until hit number hits is due.
func (p *renewal) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	p.mu.Lock()
	at := p.a.dueAt(hits)
	p.mu.Unlock()
	return at - elapsed, false
}

// Rate implements Pacer: the mean rate in req/s.
func (p *renewal) Rate(time.Duration) float64 { return p.RateRPS }
