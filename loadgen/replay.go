package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transferlab/transferlab/traces"
)

// defaultSpin is how close to a send time the dispatcher stops waiting on
// Go's timer and sleeps precisely instead (fineSleep: nanosleep(2) on Linux,
// ~80 µs late; a yield loop elsewhere): Go's timers wake up to ~1 ms late on
// an idle Linux machine (the netpoller waits in whole milliseconds), which
// alone would break the 1 ms schedule-lag budget, and yielding in a loop
// would burn a core that a 2-core machine needs for the reads.
const defaultSpin = 2 * time.Millisecond

// Replay sends the requests of s to srv and delivers exactly one Record per
// scheduled request to out as each request ends, then closes out.
//
// Open loop (default): request i is sent when p says (p nil: NewTracePacer(s)),
// whatever the server does, on its own goroutine; with WithMaxInFlight a
// request due while the cap is full waits, in order, and is marked
// QueuedByCap. Closed loop (WithClosedLoop): n workers send back to back, p is
// ignored. When ctx ends, in-flight requests end cancelled and unsent ones
// not_sent, and Summary.Complete is false. Requests the pacer never releases
// (it said stop) end not_sent with ScheduledAt = their schedule offset.
//
// Replay returns an error only when the instrument fails: an invalid schedule
// or option (nothing is sent), a server that is not ready (all not_sent), or
// a sink that fails (the run is stopped; the Summary holds what was measured).
func Replay(ctx context.Context, srv Server, s traces.Schedule, p Pacer, out Sink, opts ...Option) (Summary, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return Summary{}, err
	}
	if err := validateSchedule(s); err != nil {
		return Summary{}, err
	}
	cfg.blockTokens = s.PrefixBlockTokens
	if p == nil && cfg.closedLoop == 0 {
		p = NewTracePacer(s)
	}
	r := &replay{cfg: &cfg, sched: s, out: out, sum: newSummarizer(cfg.lagBudget, cfg.warmup)}
	r.sum.s.Arm, r.sum.s.OfferedLoad, r.sum.s.Repetition = cfg.arm, cfg.offeredLoad, cfg.repetition
	r.sum.s.Scheduled = len(s.Requests)
	r.sum.s.Mode = "open-loop"
	switch {
	case cfg.closedLoop > 0:
		r.sum.s.Mode = fmt.Sprintf("closed-loop concurrency=%d", cfg.closedLoop)
	case cfg.maxInFlight > 0:
		r.sum.s.Mode = fmt.Sprintf("open-loop max_in_flight=%d", cfg.maxInFlight)
	}

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	r.stop = stop
	var readyErr error
	if err := srv.Ready(runCtx); err != nil && ctx.Err() == nil {
		readyErr = fmt.Errorf("loadgen: server %s not ready: %w", srv.BaseURL(), err)
		stop(readyErr)
	}
	// Every connection this run can hold (twice: an in-process server, such
	// as transferlab's simulator, accepts each into the same table) gets its
	// descriptor without growing the table mid-run (growFDTable says why).
	// Best effort: a table that cannot grow now grows as before.
	_ = growFDTable(2*maxConns(&cfg, len(s.Requests)) + fdSpare)
	r.start = time.Now()
	r.sum.s.Start = r.start
	cl, err := newClient(runCtx, &cfg, srv.BaseURL(), r.since)
	if err != nil {
		return Summary{}, err
	}
	r.cl = cl

	next := 0
	if runCtx.Err() == nil {
		if cfg.closedLoop > 0 {
			next = r.closedLoop(runCtx)
		} else {
			next = r.openLoop(runCtx, p)
		}
	}
	for i := next; i < len(s.Requests); i++ {
		rec := r.newRecord(&s.Requests[i], s.Requests[i].Offset)
		rec.State = StateNotSent
		r.finish(rec)
	}
	sum := r.sum.finish()
	sum.Complete = ctx.Err() == nil && readyErr == nil && r.sinkErr == nil
	switch {
	case r.sinkErr != nil:
		sum.IncompleteReason = "sink failed: " + r.sinkErr.Error()
	case readyErr != nil:
		sum.IncompleteReason = readyErr.Error()
	case ctx.Err() != nil:
		sum.IncompleteReason = context.Cause(ctx).Error()
	}
	r.cl.close()
	cerr := out.Close()
	if r.sinkErr != nil || readyErr != nil || cerr != nil {
		return sum, errors.Join(readyErr, r.sinkErr, cerr)
	}
	return sum, nil
}

// fdSpare is the descriptors a run needs besides its connections' (the
// event loop's, a records file, logs, a server's listener, ...).
const fdSpare = 256

// maxConns is the most connections a replay of n requests can hold at once:
// one per request in flight, at most the in-flight cap or the closed loop's
// workers.
func maxConns(cfg *config, n int) int {
	switch {
	case cfg.closedLoop > 0:
		return min(n, cfg.closedLoop)
	case cfg.maxInFlight > 0:
		return min(n, cfg.maxInFlight)
	}
	return n
}

// validateSchedule checks what Replay relies on, naming the request and field.
func validateSchedule(s traces.Schedule) error {
	seen := newIDSet(len(s.Requests))
	var prev time.Duration
	for i := range s.Requests {
		q := &s.Requests[i]
		where := fmt.Sprintf("loadgen: schedule %s request %d (id %d, source line %d)", s.Source, i, q.ID, q.SourceLine)
		switch {
		case q.ID < 0:
			return fmt.Errorf("%s: field id: %d must be ≥ 0", where, q.ID)
		case q.InputTokens < 1:
			return fmt.Errorf("%s: field input_tokens: %d must be ≥ 1", where, q.InputTokens)
		case q.OutputTokens < 1:
			return fmt.Errorf("%s: field output_tokens: %d must be ≥ 1", where, q.OutputTokens)
		case q.Offset < 0:
			return fmt.Errorf("%s: field offset: %v must be ≥ 0", where, q.Offset)
		case i > 0 && q.Offset < prev:
			return fmt.Errorf("%s: field offset: %v is before the previous request's %v (schedules are sorted)", where, q.Offset, prev)
		case !seen.add(q.ID):
			return fmt.Errorf("%s: field id: %d appears twice", where, q.ID)
		case q.PrefixBlocks != "" && s.PrefixBlockTokens < 1:
			return fmt.Errorf("%s: field prefix_blocks: %q without a block size (schedule prefix_block_tokens %d)", where, q.PrefixBlocks, s.PrefixBlockTokens)
		}
		if _, err := q.PrefixBlockIDs(); err != nil {
			return fmt.Errorf("%s: field prefix_blocks: %w", where, err)
		}
		prev = q.Offset
	}
	return nil
}

// idSet is a set of non-negative ids: a bitset while ids stay near the
// schedule's length (they are its indices), a map beyond.
type idSet struct {
	bits  []uint64
	limit int
	big   map[int]struct{}
}

func newIDSet(n int) *idSet { return &idSet{limit: 16*n + 1024} }

// add inserts id and reports whether it was new.
func (s *idSet) add(id int) bool {
	if id >= s.limit {
		if s.big == nil {
			s.big = map[int]struct{}{}
		}
		if _, dup := s.big[id]; dup {
			return false
		}
		s.big[id] = struct{}{}
		return true
	}
	w := id / 64
	for len(s.bits) <= w {
		s.bits = append(s.bits, 0)
	}
	if s.bits[w]&(1<<(id%64)) != 0 {
		return false
	}
	s.bits[w] |= 1 << (id % 64)
	return true
}

// replay is one run's state.
type replay struct {
	cfg   *config
	sched traces.Schedule
	out   Sink
	cl    *client
	start time.Time
	stop  context.CancelCauseFunc

	mu      sync.Mutex // serialises finish: summarizer and out.Add
	sum     *summarizer
	sinkErr error
}

// since is the monotonic offset from the run start.
func (r *replay) since() time.Duration { return time.Since(r.start) }

func (r *replay) newRecord(q *traces.Request, scheduledAt time.Duration) *Record {
	return &Record{
		RequestID:             q.ID,
		Arm:                   r.cfg.arm,
		OfferedLoad:           r.cfg.offeredLoad,
		Repetition:            r.cfg.repetition,
		SourceLine:            q.SourceLine,
		Warmup:                scheduledAt < r.cfg.warmup,
		InputTokens:           q.InputTokens,
		PromptText:            r.cfg.promptText || r.cfg.endpoint == EndpointChat,
		RequestedOutputTokens: q.OutputTokens,
		ScheduledAt:           scheduledAt,
	}
}

// finish folds rec into the summary and hands it to the sink; a sink error
// stops the run.
func (r *replay) finish(rec *Record) {
	if rec.FinalAt == 0 {
		rec.FinalAt = rec.EndAt
		if rec.FinalAt == 0 {
			rec.FinalAt = r.since()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sum.add(rec)
	if r.sinkErr != nil {
		return
	}
	if err := r.out.Add(rec); err != nil {
		r.sinkErr = err
		r.stop(err)
	}
}

// openLoop dispatches requests as p releases them and returns the index of
// the first request it did not send.
func (r *replay) openLoop(ctx context.Context, p Pacer) int {
	var wg sync.WaitGroup
	defer wg.Wait()
	var sem chan struct{}
	if r.cfg.maxInFlight > 0 {
		sem = make(chan struct{}, r.cfg.maxInFlight)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// behindCap is true from a wait on the full cap until the dispatcher is
	// early for a request again: requests sent late meanwhile were held back
	// by the cap (directly or behind an earlier held request).
	behindCap := false
	for i := range r.sched.Requests {
		el := r.since()
		wait, stop := p.Pace(el, uint64(i))
		if stop {
			return i
		}
		due := el + wait
		if wait > 0 {
			behindCap = false
		}
		if !r.sleepUntil(ctx, timer, due) {
			return i
		}
		queued := behindCap
		if sem != nil {
			select {
			case sem <- struct{}{}:
			default:
				queued, behindCap = true, true
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return i
				}
			}
		}
		q := &r.sched.Requests[i]
		rec := r.newRecord(q, due)
		rec.QueuedByCap = queued
		wg.Add(1)
		r.cl.start(ctx, q, rec, func() {
			if sem != nil {
				<-sem
			}
			r.finish(rec)
			wg.Done()
		})
	}
	return len(r.sched.Requests)
}

// sleepUntil waits until the run offset due: on the timer while more than
// cfg.spin remains, then with fineSleep. False when ctx ended first.
func (r *replay) sleepUntil(ctx context.Context, timer *time.Timer, due time.Duration) bool {
	done := ctx.Done()
	for {
		left := due - r.since()
		if left <= 0 {
			return ctx.Err() == nil
		}
		if left > r.cfg.spin {
			timer.Reset(left - r.cfg.spin)
			select {
			case <-timer.C:
			case <-done:
				return false
			}
			continue
		}
		select {
		case <-done:
			return false
		default:
			fineSleep(left)
		}
	}
}

// closedLoop runs cfg.closedLoop workers over the schedule in order and
// returns the index of the first request no worker took.
func (r *replay) closedLoop(ctx context.Context) int {
	var next atomic.Int64
	n := int64(len(r.sched.Requests))
	var wg sync.WaitGroup
	for w := 0; w < r.cfg.closedLoop; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				j := next.Add(1) - 1
				if j >= n {
					return
				}
				q := &r.sched.Requests[j]
				rec := r.newRecord(q, r.since())
				r.cl.do(ctx, q, rec)
				r.finish(rec)
			}
		}()
	}
	wg.Wait()
	// Workers that saw ctx end took no index; indices ≥ next are unsent.
	return int(min(next.Load(), n))
}
