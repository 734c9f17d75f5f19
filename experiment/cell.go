package experiment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/transferlab/transferlab/amdahl"
	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/energy"
	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
)

// runCell replays one cell's schedule against srv and keeps what it measured.
// Records go to records.jsonl as each request ends, whatever happens after.
func (r *runner) runCell(ctx context.Context, srv servers.Server, key cellKey) error {
	sched := r.scheds[key.load]
	rate := r.cfg.Load.RatesRPS[key.load]
	if err := srv.ResetProfile(ctx); err != nil {
		return fmt.Errorf("arm %s at %g req/s: resetting the profile: %w", key.arm, rate, err)
	}
	var sampler energy.Sampler
	if !r.cfg.Energy.Disabled {
		sampler = srv.Sampler()
		if err := sampler.Start(ctx, r.cfg.Energy.Period); err != nil && !errors.Is(err, energy.ErrUnavailable) {
			return fmt.Errorf("arm %s at %g req/s: energy sampler: %w", key.arm, rate, err)
		}
	}
	keep := &loadgen.SliceSink{}
	sinks := []loadgen.Sink{r.jsonl, keep}
	if r.progress != nil {
		r.progress.startCell(len(sched.Requests))
		sinks = append(sinks, cellRequests{r.progress})
	}
	opts := r.replayOptions(key.arm, rate, key.rep)
	cctx, stop := servers.UntilDied(ctx, srv.Died())
	defer stop()
	sum, rerr := loadgen.Replay(cctx, srv, sched, loadgen.NewTracePacer(sched), noClose{loadgen.MultiSink(sinks...)}, opts...)

	m := measured{key: key, records: keep.Records, summary: sum}
	r.exportCell(ctx, key, rate, sum.Start, keep.Records)
	if sampler != nil {
		w, err := sampler.Stop()
		m.energy, m.eerr = &w, err
	}
	if prof, err := srv.Profile(context.WithoutCancel(ctx), report.CellKey{Arm: key.arm, OfferedLoadRPS: rate, Repetition: key.rep}, activeIntervals(sum.Start, keep.Records)); err == nil {
		m.profile = prof
	} else {
		fmt.Fprintf(r.warn, "warning: arm %s at %g req/s: no profile: %v\n", key.arm, rate, err)
	}
	r.cells = append(r.cells, m)
	if r.opt.AfterCell != nil {
		r.opt.AfterCell(m.export())
	}
	r.addCell(m)
	r.saveCell(m)
	if c := r.res.Cells[len(r.res.Cells)-1]; c.ClientBound {
		fmt.Fprintf(r.warn, "warning: arm %s at %g req/s: the client was the bottleneck (%s: %s); figures of this cell are suspect\n",
			key.arm, rate, analysis.DispatchLagFlagText(c), analysis.ClientBoundRule())
	}
	if err := r.writeResults(); err != nil {
		return err
	}
	select {
	case <-srv.Died():
		return fmt.Errorf("arm %s at %g req/s: the server died during the run: %w", key.arm, rate, srv.Err())
	default:
	}
	if rerr != nil {
		return fmt.Errorf("arm %s at %g req/s: %w", key.arm, rate, rerr)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("arm %s at %g req/s: run stopped: %w", key.arm, rate, context.Cause(ctx))
	}
	return nil
}

// noClose keeps Replay from closing the run-wide sinks at the end of a cell.
type noClose struct{ loadgen.Sink }

func (noClose) Close() error { return nil }

// activeIntervals are the requests' [sent, end] intervals on the Unix clock
// (ns since the epoch): start is the replay's time zero (with a wall reading).
func activeIntervals(start time.Time, recs []loadgen.Record) []amdahl.Interval {
	base := time.Duration(start.UnixNano())
	out := make([]amdahl.Interval, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		if r.State == loadgen.StateNotSent || r.EndAt <= r.SentAt {
			continue
		}
		out = append(out, amdahl.Interval{Start: base + r.SentAt, End: base + r.EndAt})
	}
	return out
}

// replayOptions are loadgen's options for one replay of a cell's schedule
// as the config asks (request shape, timeout, warm-up, in-flight cap),
// labelled with arm, offered load (req/s) and repetition.
func (r *runner) replayOptions(arm string, rateRPS float64, rep int) []loadgen.Option {
	opts := []loadgen.Option{
		loadgen.WithArm(arm),
		loadgen.WithOfferedLoad(rateRPS),
		loadgen.WithRepetition(rep),
		loadgen.WithModel(r.model),
		loadgen.WithTimeout(r.cfg.Request.Timeout),
		loadgen.WithWarmup(r.cfg.Load.Warmup),
		loadgen.WithEndpoint(loadgen.Endpoint(r.cfg.Request.Endpoint)),
	}
	opts = append(opts, r.live.options()...)
	if r.cfg.Load.MaxInFlight > 0 {
		opts = append(opts, loadgen.WithMaxInFlight(r.cfg.Load.MaxInFlight))
	}
	return opts
}

// clientActive is |∪ requests' [sent, end] ∩ [from, to]| from the replay's
// records (offsets from start on the client's monotonic clock).
func clientActive(start time.Time, recs []loadgen.Record, from, to time.Time) time.Duration {
	ivs := activeIntervals(start, recs)
	w := []amdahl.Interval{{Start: time.Duration(from.UnixNano()), End: time.Duration(to.UnixNano())}}
	return amdahl.UnionLength(amdahl.Intersect(amdahl.Union(ivs), w))
}
