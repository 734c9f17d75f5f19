package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	if cfg.observer != nil {
		cfg.observer.Began(r.start)
	}
	cl, err := newClient(runCtx, &cfg, srv.BaseURL(), r.start)
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
// the first request it did not send. This goroutine (the dispatcher) sleeps
// until each request is due and sends it; a transport with an event loop
// (the reactor, loopHelper) also sends, between the events it handles, any
// request that fell due meanwhile, so a send due while the loop is busy
// reading goes out from the loop's thread, already running, instead of
// waiting for the dispatcher's thread to be woken and given a CPU and a P:
// against serve-sim on 2 cores that wake-up came 1.5–3 ms late for 11 % of
// the sends at 1,000 req/s, 92 % of them due while the loop was reading a
// burst (results/dispatch-2026-12-02). Whichever comes first claims the
// request (under the lock: the pacer's calls and every record field are as
// before) and sends it after letting the lock go, so neither holds the
// other up while in a system call; two requests due within microseconds of
// each other may reach the wire in either order.
func (r *replay) openLoop(ctx context.Context, p Pacer) int {
	var wg sync.WaitGroup
	defer wg.Wait()
	d := &dispatcher{r: r, ctx: ctx, p: p, wg: &wg}
	if r.cfg.maxInFlight > 0 {
		d.sem = make(chan struct{}, r.cfg.maxInFlight)
	}
	d.next.Store(math.MaxInt64)
	if h, ok := r.cl.tr.(loopHelper); ok {
		h.setHelper(d.help)
		defer h.setHelper(nil)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	sleep := func(due time.Duration) bool { return r.sleepUntil(ctx, timer, due) }
	if r.cfg.sleep != nil {
		sleep = func(due time.Duration) bool { return r.cfg.sleep(ctx, due) }
	}
	for {
		d.mu.Lock()
		q, rec, more := d.claim(true)
		due := d.due
		d.mu.Unlock()
		if q != nil {
			d.send(q, rec)
			continue
		}
		if !more {
			break
		}
		if !sleep(due) {
			d.mu.Lock()
			d.stop()
			d.mu.Unlock()
			break
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.i
}

// dispatcher is the open loop's sending state, shared by the dispatching
// goroutine and, through help, a transport's event loop; mu guards all but
// next.
type dispatcher struct {
	r   *replay
	ctx context.Context
	p   Pacer
	wg  *sync.WaitGroup
	sem chan struct{} // the in-flight cap's tokens; nil: no cap

	mu      sync.Mutex
	i       int           // the next request to send
	due     time.Duration // request i's send time, once ready
	ready   bool          // the pacer gave request i's time
	stopped bool          // nothing more is sent: the pacer said stop, the schedule ended or ctx did
	// behindCap is true from a wait on the full cap until the pacer is
	// early for a request again: requests sent late meanwhile were held back
	// by the cap (directly or behind an earlier held request).
	behindCap bool
	// next is request i's due time (ns), math.MaxInt64 while none is
	// pending: help's check without the lock.
	next atomic.Int64
}

// claim takes request i when it is due by now, with its record, moves on
// to the next and asks the pacer for that one's time (d.mu held); q is nil
// when none is due, and more is false when nothing more will be sent. Only
// the dispatcher waits (block), on a full in-flight cap; the loop leaves
// the request to it. The caller sends q (send) after letting d.mu go.
func (d *dispatcher) claim(block bool) (q *traces.Request, rec *Record, more bool) {
	r := d.r
	if d.stopped {
		return nil, nil, false
	}
	if !d.ready && !d.pace() {
		return nil, nil, false
	}
	if r.since() < d.due {
		return nil, nil, true
	}
	if d.ctx.Err() != nil {
		d.stop()
		return nil, nil, false
	}
	queued := d.behindCap
	if d.sem != nil {
		select {
		case d.sem <- struct{}{}:
		default:
			if !block {
				return nil, nil, true
			}
			queued, d.behindCap = true, true
			select {
			case d.sem <- struct{}{}:
			case <-d.ctx.Done():
				d.stop()
				return nil, nil, false
			}
		}
	}
	q = &r.sched.Requests[d.i]
	rec = r.newRecord(q, d.due)
	rec.QueuedByCap = queued
	d.wg.Add(1)
	d.i++
	d.ready = false
	d.pace()
	return q, rec, true
}

// pace asks the pacer for request i's time (d.mu held); false, and
// dispatching stopped, when the schedule ended or the pacer said stop.
func (d *dispatcher) pace() bool {
	if d.i >= len(d.r.sched.Requests) {
		d.stop()
		return false
	}
	el := d.r.since()
	wait, stop := d.p.Pace(el, uint64(d.i))
	if stop {
		d.stop()
		return false
	}
	d.due, d.ready = el+wait, true
	if wait > 0 {
		d.behindCap = false
	}
	d.next.Store(int64(d.due))
	return true
}

// send starts a claimed request (d.mu not held).
func (d *dispatcher) send(q *traces.Request, rec *Record) {
	r, sem := d.r, d.sem
	r.cl.start(d.ctx, q, rec, func() {
		if sem != nil {
			<-sem
		}
		r.finish(rec)
		d.wg.Done()
	})
}

// stop ends dispatching (d.mu held).
func (d *dispatcher) stop() {
	d.stopped = true
	d.next.Store(math.MaxInt64)
}

// help sends, for a transport's event loop between its events, the
// requests due by now: a clock read and an atomic load when none is; it
// never waits (the lock is tried, the cap not waited for).
func (d *dispatcher) help() {
	for int64(d.r.since()) >= d.next.Load() && d.mu.TryLock() {
		q, rec, _ := d.claim(false)
		d.mu.Unlock()
		if q == nil {
			return
		}
		d.send(q, rec)
	}
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
