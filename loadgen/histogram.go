package loadgen

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// HDR histogram geometry: values in µs from 1 µs to 1 h at 3 significant
// digits (DESIGN.md "Percentiles"); larger values are recorded as the maximum.
const (
	histMinUs   = 1
	histMaxUs   = int64(time.Hour / time.Microsecond)
	histSigFigs = 3
)

// Histograms holds HDR histograms (µs, 3 significant digits) of the
// per-request metrics, a memory-bounded sink for merging runs and for
// export (shard's HDR logs) only: no figure is read from them; every
// percentile comes exactly from the raw samples through stats.NearestRank
// (DESIGN.md "Percentiles"). Latencies fold measured (non-warm-up)
// requests that ended ok; ScheduleLag folds every sent request.
// Histograms is a Sink; it is not safe for concurrent use.
type Histograms struct {
	TTFT         *hdrhistogram.Histogram
	TTFTIntended *hdrhistogram.Histogram
	TTFO         *hdrhistogram.Histogram
	ITL          *hdrhistogram.Histogram
	TPOT         *hdrhistogram.Histogram
	E2E          *hdrhistogram.Histogram
	ScheduleLag  *hdrhistogram.Histogram
}

var _ Sink = (*Histograms)(nil)

// NewHistograms returns empty histograms.
func NewHistograms() *Histograms {
	n := func() *hdrhistogram.Histogram { return hdrhistogram.New(histMinUs, histMaxUs, histSigFigs) }
	return &Histograms{TTFT: n(), TTFTIntended: n(), TTFO: n(), ITL: n(), TPOT: n(), E2E: n(), ScheduleLag: n()}
}

// recordUs records d in µs, clamped to the histogram's range.
func recordUs(h *hdrhistogram.Histogram, d time.Duration) {
	us := int64(d / time.Microsecond)
	if us < 0 {
		us = 0
	}
	if us > histMaxUs {
		us = histMaxUs
	}
	_ = h.RecordValue(us) // cannot fail inside [0, histMaxUs]
}

// Add implements Sink.
func (h *Histograms) Add(r *Record) error {
	if lag, ok := r.ScheduleLag(); ok {
		recordUs(h.ScheduleLag, lag)
	}
	if r.Warmup || r.State != StateOK {
		return nil
	}
	if d, ok := r.TTFT(); ok {
		recordUs(h.TTFT, d)
	}
	if d, ok := r.TTFTIntended(); ok {
		recordUs(h.TTFTIntended, d)
	}
	if d, ok := r.TTFO(); ok {
		recordUs(h.TTFO, d)
	}
	for i := 1; i < len(r.Events); i++ {
		recordUs(h.ITL, r.Events[i].At-r.Events[i-1].At)
	}
	if d, ok := r.TPOT(); ok {
		recordUs(h.TPOT, d)
	}
	if d, ok := r.E2E(); ok {
		recordUs(h.E2E, d)
	}
	return nil
}

// Close implements Sink; it does nothing.
func (h *Histograms) Close() error { return nil }

// Merge adds o's counts into h and returns how many values were dropped
// (only when geometries differ).
func (h *Histograms) Merge(o *Histograms) int64 {
	var dropped int64
	dropped += h.TTFT.Merge(o.TTFT)
	dropped += h.TTFTIntended.Merge(o.TTFTIntended)
	dropped += h.TTFO.Merge(o.TTFO)
	dropped += h.ITL.Merge(o.ITL)
	dropped += h.TPOT.Merge(o.TPOT)
	dropped += h.E2E.Merge(o.E2E)
	dropped += h.ScheduleLag.Merge(o.ScheduleLag)
	return dropped
}
