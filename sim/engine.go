package sim

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// errClosed is returned by submit once the engine has stopped.
var errClosed = errors.New("sim: server is closing")

// StepRecord describes one executed engine step; see WithStepHook.
type StepRecord struct {
	// Index is the step's number since the server started (0-based).
	Index int64
	// Shape is what the step computed (a copy).
	Shape StepShape
	// Cost is the cost model's price of Shape times NoiseFactor: the time the
	// step was given.
	Cost StepCost
	// NoiseFactor is the noise model's F_run · F_step of the step (1 when
	// Config.Noise is off).
	NoiseFactor float64
	// PlannedStart is the step's scheduled start: the later of the previous
	// step's deadline (while busy) and the arrival of the last request the
	// step admits, if the step was planned within scheduler.max_catch_up_ms
	// of that; else the time the step was planned (PlannedAt).
	PlannedStart time.Time
	// Deadline is PlannedStart + Cost.Duration(): when the step was due to end.
	Deadline time.Time
	// PlannedAt and EndedAt are the real times the step was planned and its
	// wait ended (EndedAt ≥ Deadline: timers never fire early).
	PlannedAt time.Time
	EndedAt   time.Time
	// Lost is the time the step's start lost to a host stall and did not
	// make up (lostToStall): PlannedAt − its due start when that exceeds
	// scheduler.max_catch_up_ms, else 0.
	Lost time.Duration
}

// tokenStream is the engine→handler channel of one request: the engine
// publishes the generated-token count and pokes notify; the handler writes
// events for every token it has not written yet. The engine never blocks.
type tokenStream struct {
	produced atomic.Int64
	aborted  atomic.Bool
	notify   chan struct{} // capacity 1
	truth    *truthRecord
}

func newTokenStream(tr *truthRecord) *tokenStream {
	return &tokenStream{notify: make(chan struct{}, 1), truth: tr}
}

func (t *tokenStream) poke() {
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// engine runs the scheduler in real time: each step sleeps until an absolute
// deadline (previous deadline + the step's modelled duration), so sleep
// overshoot does not accumulate. A busy step planned later than catchUp after
// its due start (a stall: GC, descheduling on a loaded host) starts when
// planned instead: lateness up to catchUp is made up by the next steps,
// longer stalls are not, as a GPU that stalled would not run faster after.
type engine struct {
	cfg     *Config
	cm      *CostModel
	noise   *noise
	hook    func(StepRecord)
	catchUp time.Duration
	// lost is the time busy steps lost to host stalls since the engine
	// started (lostToStall, summed; ns): read by Server.StallLost.
	lost atomic.Int64

	mu     sync.Mutex
	sched  *scheduler
	prof   profileAcc
	closed bool

	wake chan struct{} // capacity 1
	stop chan struct{}
	done chan struct{}
}

func newEngine(cfg *Config, cm *CostModel, hook func(StepRecord)) *engine {
	e := &engine{
		cfg:     cfg,
		cm:      cm,
		noise:   newNoise(cfg.Noise),
		hook:    hook,
		catchUp: msToDuration(cfg.Scheduler.MaxCatchUpMs),
		sched:   newScheduler(cfg.Scheduler),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	e.prof.reset(time.Now())
	go e.run()
	return e
}

// submit queues q, counting it in flight from arrived.
func (e *engine) submit(q *seq, arrived time.Time) error {
	q.arrived = arrived
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return errClosed
	}
	e.sched.enqueue(q)
	e.prof.begin(arrived)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return nil
}

// finish takes q out of the engine (if still there) and out of flight at at.
func (e *engine) finish(q *seq, at time.Time) {
	e.mu.Lock()
	e.sched.abort(q)
	e.prof.end(at)
	e.mu.Unlock()
}

// noiseRunFactor is the noise model's current F_run.
func (e *engine) noiseRunFactor() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.noise.run
}

func (e *engine) profile() Profile {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.prof.snapshot(time.Now(), e.cm, e.cfg)
}

// resetProfile starts a new window and returns the closed one; the noise
// model draws a new run factor for it.
func (e *engine) resetProfile() Profile {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	p := e.prof.snapshot(now, e.cm, e.cfg)
	e.prof.reset(now)
	e.noise.redraw()
	return p
}

// close stops the loop, waits for it and aborts every request left.
func (e *engine) close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		<-e.done
		return
	}
	e.closed = true
	e.mu.Unlock()
	close(e.stop)
	<-e.done
	e.mu.Lock()
	left := e.sched.drain()
	e.mu.Unlock()
	for _, q := range left {
		q.stream.aborted.Store(true)
		q.stream.poke()
	}
}

func (e *engine) run() {
	defer close(e.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var next time.Time      // deadline of the previous step while busy
	var prevEnded time.Time // when the previous step's wait ended, while busy
	for {
		e.mu.Lock()
		p := e.sched.next()
		if p.empty() {
			e.mu.Unlock()
			next, prevEnded = time.Time{}, time.Time{}
			select {
			case <-e.wake:
				continue
			case <-e.stop:
				return
			}
		}
		planned := time.Now()
		var lastArrival time.Time // of the requests admitted in this step
		for _, q := range p.prefill {
			if q.prefilled == 0 {
				q.stream.truth.admitted(planned, p.index)
				if q.arrived.After(lastArrival) {
					lastArrival = q.arrived
				}
			}
		}
		cost, nf := e.noise.apply(e.cm.Step(p.shape))
		var rec StepRecord
		if e.hook != nil {
			rec = StepRecord{Index: p.index, Cost: cost, NoiseFactor: nf, PlannedAt: planned, Shape: StepShape{
				Prefill:        append([]PrefillChunk(nil), p.shape.Prefill...),
				DecodeContexts: append([]int(nil), p.shape.DecodeContexts...),
			}}
		}
		e.mu.Unlock()

		// A step starts at the previous deadline (while busy), or when the last
		// request it admits arrived if later (no step starts before its work
		// exists); a host stall longer than catchUp is not made up.
		start := next
		if lastArrival.After(start) {
			start = lastArrival
		}
		lost := lostToStall(start, planned, e.catchUp)
		e.lost.Add(int64(lost))
		if start.IsZero() || planned.Sub(start) > e.catchUp {
			start = planned
		}
		deadline := start.Add(cost.Duration())
		timer.Reset(time.Until(deadline))
		select {
		case <-timer.C:
		case <-e.stop:
			timer.Stop()
			return
		}
		ended := time.Now()
		if e.hook != nil { // before commit, so the hook has run before any token of the step is visible
			rec.PlannedStart, rec.Deadline, rec.EndedAt, rec.Lost = start, deadline, ended, lost
			e.hook(rec)
		}

		e.mu.Lock()
		e.sched.commit(p, func(q *seq, generated int) {
			q.stream.truth.generated(ended, generated, p.index)
			q.stream.produced.Store(int64(generated))
			q.stream.poke()
		})
		// The step's real duration: from the previous step's end while busy
		// (back to back), else from its start; host lateness and stalls
		// included.
		from := start
		if !next.IsZero() {
			from = prevEnded
		}
		e.prof.addStep(&p.shape, &cost, ended.Sub(from))
		e.mu.Unlock()
		next, prevEnded = deadline, ended
	}
}

// lostToStall is the time a step due to start at due (the previous step's
// deadline while busy, or the arrival of the last request it admits; zero
// when it has none) and planned at planned lost to a host stall: the whole
// lateness planned − due when it exceeds catchUp (the step then starts when
// planned, and the time is not made up), else 0 (later steps make it up).
func lostToStall(due, planned time.Time, catchUp time.Duration) time.Duration {
	if due.IsZero() || planned.Sub(due) <= catchUp {
		return 0
	}
	return planned.Sub(due)
}

func (r *truthRecord) admitted(at time.Time, step int64) {
	r.mu.Lock()
	r.t.AdmittedAt = at
	r.t.PrefillStartStep = step
	r.mu.Unlock()
}

func (r *truthRecord) generated(at time.Time, n int, step int64) {
	r.mu.Lock()
	if n == 1 {
		r.t.PrefillEndStep = step
	}
	r.genNs = append(r.genNs, int64(at.Sub(r.base)))
	r.mu.Unlock()
}

func (r *truthRecord) flushed(at time.Time) {
	r.mu.Lock()
	r.flushNs = append(r.flushNs, int64(at.Sub(r.base)))
	r.mu.Unlock()
}

func (r *truthRecord) done(at time.Time, aborted bool) {
	r.mu.Lock()
	r.t.DoneAt = at
	r.t.Aborted = aborted
	r.mu.Unlock()
}
