package experiment

import (
	"fmt"
	"math"
	"time"

	"github.com/transferlab/transferlab/traces"
)

// cellSchedule turns the base trace into the schedule of one offered load:
// arrivals at rateRPS (time-scaled trace, or synthetic arrivals with lengths
// drawn from the trace), cut to warm-up + duration, capped at MaxRequests.
// Synthetic arrivals are seeded from the config seed and the load's index, so
// every arm replays the identical schedule for a given load.
func cellSchedule(base traces.Schedule, l LoadConfig, rateRPS float64, seed int64, loadIndex int) (traces.Schedule, error) {
	var s traces.Schedule
	var err error
	span := l.Warmup + l.Duration
	switch l.Mode {
	case LoadTrace:
		// Take as many consecutive trace requests as the cell needs at this
		// rate, then time-scale exactly those to the target mean rate: the
		// cell's offered load is the configured one and the trace's burst
		// shape inside the cell is kept. (Scaling the whole trace and cutting
		// a time window would give the local rate of the trace's first
		// seconds instead.)
		n := int(math.Ceil(rateRPS*span.Seconds())) + 1
		if n < 2 {
			n = 2
		}
		if n > len(base.Requests) {
			return traces.Schedule{}, fmt.Errorf("offered load %g req/s for %s needs %d requests but trace %s has %d: use a longer trace, a shorter load.duration, or a synthetic load.mode",
				rateRPS, span, n, base.Source, len(base.Requests))
		}
		if base.Requests[n-1].Offset == base.Requests[0].Offset {
			return traces.Schedule{}, oneInstantError(base, n, rateRPS, span)
		}
		s, err = traces.ScaleToRate(traces.First(base, n), rateRPS)
		if err != nil {
			return traces.Schedule{}, fmt.Errorf("scaling trace %s to %g req/s: %w", base.Source, rateRPS, err)
		}
	default:
		s, err = traces.Synthetic(traces.SyntheticSpec{
			Process:  l.Mode,
			RateRPS:  rateRPS,
			CV:       l.CV,
			Duration: span,
			Lengths:  &base,
			Seed:     uint64(seed) + uint64(loadIndex)*0x9E3779B97F4A7C15,
		})
		if err != nil {
			return traces.Schedule{}, fmt.Errorf("synthetic %s arrivals at %g req/s: %w", l.Mode, rateRPS, err)
		}
	}
	if l.MaxRequests > 0 && len(s.Requests) > l.MaxRequests {
		s = traces.First(s, l.MaxRequests)
	}
	if len(s.Requests) == 0 {
		return traces.Schedule{}, fmt.Errorf("offered load %g req/s: the schedule is empty", rateRPS)
	}
	return s, nil
}

// oneInstantError says that the first n requests of base, what a cell of
// span at rateRPS takes, share one timestamp: they have no arrival rate to
// scale to the offered load.
func oneInstantError(base traces.Schedule, n int, rateRPS float64, span time.Duration) error {
	same := 0
	for _, q := range base.Requests {
		if q.Offset != base.Requests[0].Offset {
			break
		}
		same++
	}
	all := fmt.Sprintf("all %d have one timestamp", same)
	if same < len(base.Requests) {
		all = fmt.Sprintf("the first %d have one timestamp", same)
	}
	kept := fmt.Sprintf("%d requests", len(base.Requests))
	if base.RowsRead > len(base.Requests) {
		kept += fmt.Sprintf(" (of %d rows read; the rest skipped, clamped out or cut by trace.first)", base.RowsRead)
	}
	return fmt.Errorf("trace %s: the first %d of its %s (what a cell takes at %g req/s: rate × (load.warmup + load.duration = %s) + 1) have no arrival rate to scale to the offered load: %s; "+
		"give the trace's rows their real arrival times, or set load.mode to poisson, gamma or constant (arrivals drawn, the trace's lengths kept)",
		base.Source, n, kept, rateRPS, span, all)
}
