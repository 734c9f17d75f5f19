package experiment

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/traces"
)

// stepKind is one kind of step of a run: what runAll does, in order.
type stepKind int

const (
	stepStart   stepKind = iota // a server start (duration unknown in advance)
	stepWarmup                  // an unmeasured warm-up replay of a schedule
	stepCell                    // a measured cell: its schedule's replay
	stepProfile                 // an unmeasured profiling pass (reference baseline cells)
	stepProbe                   // a capacity search probe (how many: estimated)
	nStepKinds
)

var stepNames = [nStepKinds][2]string{
	{"server start", "server starts"},
	{"warm-up replay", "warm-up replays"},
	{"cell", "cells"},
	{"profiling pass", "profiling passes"},
	{"search probe", "search probes"},
}

// planStep is one step of the plan. sched is the scheduled length of a
// replay (the schedule's span; a profiling pass's warm-up + window), 0 for
// a server start.
type planStep struct {
	kind  stepKind
	sched time.Duration
}

// DefaultServerStartGuess is the whole-run ETA's guess for a launched
// server's start (model load, CUDA graphs captured at start) until one start
// has been observed; the in-process simulator starts at once. Labelled
// "estimated" wherever it is used.
const DefaultServerStartGuess = 60 * time.Second

// runPlan lists a run's steps in runAll's order: a server start whenever the
// arm changes, a warm-up replay before the first cell of each load on a
// fresh server (load.warmup_replay), the cell, and after each baseline cell
// a profiling pass (amdahl.profile on the reference server); then, with a
// capacity_search block, per searched arm a server start and the search
// probes analysis.Search.PlannedProbes estimates (a count that is a guess:
// the search stops when its bracket is narrow enough). With
// capacity_search.concurrent_arms the arms' servers start one after the
// other and their probes run side by side: the plan then lists rounds, one
// step per round of the arms' probes at once, as many as the longest arm's
// probes (the budgets cap each arm; the whole-search budget is wall time,
// spent once by all of them).
func runPlan(cfg Config, order []report.CellKey, scheds []traces.Schedule) []planStep {
	var steps []planStep
	prev := ""
	var replayed map[int]bool
	for _, k := range order {
		li := loadIndex(cfg.Load.RatesRPS, k.OfferedLoadRPS)
		d := scheds[li].Duration()
		if k.Arm != prev {
			steps = append(steps, planStep{kind: stepStart})
			prev, replayed = k.Arm, map[int]bool{}
		}
		if cfg.Load.WarmupReplay && !replayed[li] {
			steps = append(steps, planStep{kind: stepWarmup, sched: d})
			replayed[li] = true
		}
		steps = append(steps, planStep{kind: stepCell, sched: d})
		if p := cfg.Amdahl.Profile; p != nil && cfg.Server.Kind == servers.Reference && k.Arm == cfg.Arms[0].Name {
			steps = append(steps, planStep{kind: stepProfile, sched: min(d, cfg.Load.Warmup+p.effective().Window)})
		}
	}
	if cs := cfg.Extra.CapacitySearch; cs != nil {
		n := cs.search(cfg.SLO).PlannedProbes()
		// The budgets cap the count: a probe costs at least its schedule
		// (its drain comes on top), so no more than budget / schedule run.
		per := cs.probeSpan()
		left := -1 // probes the whole search's budget admits; -1: no budget
		if cs.Budget > 0 && per > 0 {
			left = int(cs.Budget / per)
		}
		if cs.ArmBudget > 0 && per > 0 {
			n = min(n, int(cs.ArmBudget/per))
		}
		rounds := 0 // concurrent_arms: the longest arm's probes
		for _, a := range cfg.Arms {
			if a.IsCeiling() {
				continue
			}
			steps = append(steps, planStep{kind: stepStart})
			na := n
			if left >= 0 {
				na = min(na, left)
			}
			if cs.ConcurrentArms {
				// The arms' probes run side by side, so the budget's
				// wall time is spent once by all of them.
				rounds = max(rounds, na)
				continue
			}
			if left >= 0 {
				left -= na
			}
			for range na {
				steps = append(steps, planStep{kind: stepProbe, sched: per})
			}
		}
		for range rounds {
			steps = append(steps, planStep{kind: stepProbe, sched: per})
		}
	}
	return steps
}

// runProgress is the whole run's progress and remaining time. Cells and
// replays are scheduled, so their length is known in advance; what follows
// the schedule (the last requests' tail, a profile's processing) and server
// starts are learned from the steps already done, per kind, and until then
// estimated (a replay: no tail; a start: startGuess). Safe for concurrent
// use; now is the clock (injected in tests).
type runProgress struct {
	mu         sync.Mutex
	now        func() time.Time
	steps      []planStep
	startGuess time.Duration
	began      time.Time
	cur        int // index of the step under way, -1 before the first
	curBegan   time.Time
	ended      bool
	// obs sums what finished steps of each kind took, and their schedules.
	obs [nStepKinds]struct {
		n             int
		actual, sched time.Duration
		maxTail       time.Duration // the longest actual − sched
	}
	// requests ended in the current cell, and its scheduled count.
	reqs, reqTotal atomic.Int64
	// took is what each finished step took.
	took []time.Duration
	// shown is the highest share done status has reported (Fraction): the
	// share shown never goes back when the rest of the run is found longer.
	shown float64
	// search holds capacity_search's budgets, nil without a search: the
	// planned probes its budgets will not admit are left out of the
	// remaining time (unadmitted).
	search *searchBudget
}

// searchBudget is what the progress needs of capacity_search to forecast
// how many planned probes its budgets admit.
type searchBudget struct {
	// arm and total are capacity_search.arm_budget and budget (0: none).
	arm, total time.Duration
	// growth is capacity_search.growth (the factor past the highest passing
	// load; default 2).
	growth float64
	// concurrent is capacity_search.concurrent_arms: a planned probe step
	// is a round of the arms' probes at once (runPlan).
	concurrent bool
}

func newRunProgress(steps []planStep, startGuess time.Duration, now func() time.Time) *runProgress {
	return &runProgress{now: now, steps: steps, startGuess: startGuess, began: now(), cur: -1, took: make([]time.Duration, len(steps))}
}

// begin ends the step under way and starts the next planned step of kind
// (steps of other kinds before it, not taken, are skipped). A step the plan
// does not hold there is added to it (re-planned) right after the one under
// way: a probe, or a round of probes, the search admitted beyond its planned
// count (a probe following a probe does not skip to the next arm's planned
// probes past its server start), or any step beyond the plan's end. It is
// as long as the last planned step of its kind, so the remaining time
// counts it and the steps still planned keep their place. A nil
// runProgress does nothing (as do finish and startCell).
func (p *runProgress) begin(kind stepKind) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.closeCurrent(now)
	inProbes := kind == stepProbe && p.cur >= 0 && p.cur < len(p.steps) && p.steps[p.cur].kind == stepProbe
	for i := p.cur + 1; i < len(p.steps); i++ {
		if inProbes && p.steps[i].kind == stepStart {
			break // this arm's (or round's) planned probes are spent
		}
		if p.steps[i].kind == kind {
			p.cur, p.curBegan = i, now
			return
		}
	}
	var sched time.Duration
	for _, s := range p.steps {
		if s.kind == kind {
			sched = s.sched
		}
	}
	at := min(p.cur+1, len(p.steps))
	p.steps = slices.Insert(p.steps, at, planStep{kind: kind, sched: sched})
	p.took = slices.Insert(p.took, at, 0)
	p.cur, p.curBegan = at, now
}

// maxTail is the longest time a finished step of kind took beyond its
// schedule (its drain), 0 before one finished or for a nil runProgress.
func (p *runProgress) maxTail(kind stepKind) time.Duration {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.obs[kind].maxTail
}

// finish ends the step under way: the run is over.
func (p *runProgress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeCurrent(p.now())
	p.ended = true
}

func (p *runProgress) closeCurrent(now time.Time) {
	if p.cur < 0 || p.cur >= len(p.steps) || p.ended {
		return
	}
	s := p.steps[p.cur]
	o := &p.obs[s.kind]
	o.n++
	o.actual += now.Sub(p.curBegan)
	o.sched += s.sched
	o.maxTail = max(o.maxTail, now.Sub(p.curBegan)-s.sched)
	p.took[p.cur] = now.Sub(p.curBegan)
	p.curBegan = now
}

// estimate is step s's expected length, and whether any part of it is a
// guess (nothing of its kind observed yet, and for a replay not even a cell).
// A search probe not yet observed is guessed to drain for (growth − 1) ×
// its schedule, or the cells' mean tail when longer: the search grows past
// the highest passing load, so the probes that decide run above capacity,
// up to growth times it, and a queue built there over the probe's span
// drains for about (growth − 1) × the span after it (arrivals at g·C for T
// against service at C).
func (p *runProgress) estimate(s planStep) (time.Duration, bool) {
	if o := p.obs[s.kind]; o.n > 0 {
		if s.kind == stepStart {
			return o.actual / time.Duration(o.n), false
		}
		return s.sched + (o.actual-o.sched)/time.Duration(o.n), false
	}
	switch s.kind {
	case stepStart:
		return p.startGuess, true
	case stepCell:
		return s.sched, true
	}
	// A replay of another kind behaves like a cell until one is observed.
	var tail time.Duration
	if o := p.obs[stepCell]; o.n > 0 {
		tail = (o.actual - o.sched) / time.Duration(o.n)
	}
	if s.kind == stepProbe {
		growth := 2.0
		if p.search != nil && p.search.growth > 0 {
			growth = p.search.growth
		}
		tail = max(tail, time.Duration((growth-1)*float64(s.sched)))
	}
	return s.sched + tail, true
}

// unadmitted marks the planned probes after the step under way that
// capacity_search's budgets will not let start. It replays the search's own
// rule (runner.searchCapacity): a probe starts only when the time its arm
// (and the whole search) has taken, plus the probe's schedule and the
// longest drain seen, fits the budget; before a probe is seen its drain is
// estimate's guess. Probes done count what they took, those to come their
// estimate. Called with p.mu held; len(p.steps) entries, all false without
// budgets.
func (p *runProgress) unadmitted(now time.Time) []bool {
	skip := make([]bool, len(p.steps))
	b := p.search
	if b == nil || (b.arm <= 0 && b.total <= 0) {
		return skip
	}
	// The search's steps follow the sweep's last one: per arm a server
	// start, then its probes.
	from := len(p.steps)
	for from > 0 && (p.steps[from-1].kind == stepProbe || p.steps[from-1].kind == stepStart) {
		from--
	}
	drain := max(p.obs[stepProbe].maxTail, p.obs[stepCell].maxTail)
	var armT, allT time.Duration
	armOut := false
	for i := from; i < len(p.steps); i++ {
		s := p.steps[i]
		if s.kind == stepStart {
			armT, armOut = 0, false
			if i < p.cur {
				allT += p.took[i]
			}
			continue
		}
		est, _ := p.estimate(s)
		took := est
		switch {
		case i < p.cur || (i == p.cur && p.ended):
			took = p.took[i]
		case i == p.cur:
			took = max(now.Sub(p.curBegan), est)
		default:
			need := max(est, s.sched+drain)
			if armOut || (b.arm > 0 && armT+need > b.arm) || (b.total > 0 && allT+need > b.total) {
				skip[i], armOut = true, true
				continue
			}
		}
		armT += took
		allT += took
	}
	return skip
}

// overrunLeft is what a step that has run for in, past its estimate, is
// still expected to take: a tenth of in, at least 1 s. A step under way is
// never said to have nothing left (the progress would read 100 %,
// remaining 0 s while it runs).
func overrunLeft(in time.Duration) time.Duration {
	return max(in/10, time.Second)
}

// progressStatus is a snapshot of the whole run's progress.
type progressStatus struct {
	CellsDone, Cells int
	Elapsed          time.Duration
	Remaining        time.Duration
	// Estimated names the kinds of step whose remaining time is a guess, with
	// their count and time ("1 server start ≈ 1m0s").
	Estimated []string
	// Requests and RequestsTotal: requests ended in the cell under way.
	Requests, RequestsTotal int64
	// Stopped is true when the run ended before its last cell (interrupted,
	// or an error): CellsDone counts the cell it stopped in.
	Stopped bool
	// Done is the share of the run shown as done (Fraction); Held is true
	// when it is a share shown before, higher than elapsed / (elapsed +
	// remaining) now, because the rest of the run was found longer since.
	Done float64
	Held bool
	// Finished: the run's last step ended (finish); only then is the share
	// shown 100 %.
	Finished bool
}

// Fraction is the share of the run shown as done: elapsed / (elapsed +
// remaining), or, when that is lower than a share already shown (what was
// learned since made the rest of the run longer), that share, held
// (progressStatus.Held) until the run passes it: a progress never goes
// back, while Remaining always says the time now expected.
func (s progressStatus) Fraction() float64 { return s.Done }

// timeShare is elapsed / (elapsed + remaining), 1 when both are 0.
func timeShare(elapsed, remaining time.Duration) float64 {
	if t := elapsed + remaining; t > 0 {
		return float64(elapsed) / float64(t)
	}
	return 1
}

func (p *runProgress) status() progressStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	st := progressStatus{Elapsed: now.Sub(p.began), Requests: p.reqs.Load(), RequestsTotal: p.reqTotal.Load()}
	var guessN [nStepKinds]int
	var guessD [nStepKinds]time.Duration
	overrun := ""
	skip := p.unadmitted(now)
	for i, s := range p.steps {
		if s.kind == stepCell {
			st.Cells++
			if i < p.cur || (i == p.cur && p.ended) {
				st.CellsDone++
			}
		}
		if p.ended && s.kind == stepCell && i > p.cur {
			st.Stopped = true
		}
		if p.ended || i < p.cur || skip[i] {
			continue
		}
		d, guess := p.estimate(s)
		if i == p.cur {
			in := now.Sub(p.curBegan)
			if in >= d {
				// Past its estimate and not ended: more of it remains,
				// how much is a guess.
				d = overrunLeft(in)
				overrun = fmt.Sprintf("the %s under way past its estimate ≈ %s", stepNames[s.kind][0], roundDur(d))
				st.Remaining += d
				continue
			}
			d = max(d-in, min(overrunLeft(in), d)) // near its end: not below 1 s (nor above the estimate)
		}
		st.Remaining += d
		if guess || s.kind == stepProbe { // how many probes run is itself a guess
			guessN[s.kind]++
			guessD[s.kind] += d
		}
	}
	for k := range nStepKinds {
		if guessN[k] == 0 {
			continue
		}
		name := stepNames[k][1]
		if guessN[k] == 1 {
			name = stepNames[k][0]
		}
		what := fmt.Sprintf("%d %s ≈ %s", guessN[k], name, roundDur(guessD[k]))
		switch k {
		case stepCell:
			what = fmt.Sprintf("%d %s: scheduled %s, tail not yet observed", guessN[k], name, roundDur(guessD[k]))
		case stepProbe:
			if p.search != nil && p.search.concurrent {
				name = "rounds of search probes (the arms probed at once)"
				if guessN[k] == 1 {
					name = "round of search probes (the arms probed at once)"
				}
			}
			what = fmt.Sprintf("%d %s (a planned count: the search stops once bracketed or out of budget) ≈ %s", guessN[k], name, roundDur(guessD[k]))
		}
		st.Estimated = append(st.Estimated, what)
	}
	if overrun != "" {
		st.Estimated = append(st.Estimated, overrun)
	}
	st.Finished = p.ended
	st.Done = timeShare(st.Elapsed, st.Remaining)
	if st.Done < p.shown {
		st.Done, st.Held = p.shown, true
	}
	p.shown = st.Done
	return st
}

// String is the periodic log line: "run: 2/6 cells, 41 %, elapsed 38s,
// remaining ≈ 54s (estimated: 1 server start ≈ 1m0s)".
func (s progressStatus) String() string {
	if s.Stopped {
		return fmt.Sprintf("run: stopped in cell %d of %d, elapsed %s", s.CellsDone, s.Cells, roundDur(s.Elapsed))
	}
	held := ""
	if s.Held {
		held = " (held: the rest of the run was found longer)"
	}
	line := fmt.Sprintf("run: %d/%d cells, %.0f %%%s, elapsed %s, remaining ≈ %s",
		s.CellsDone, s.Cells, s.percent(), held, roundDur(s.Elapsed), roundDur(s.Remaining))
	if len(s.Estimated) > 0 {
		line += " (estimated: " + strings.Join(s.Estimated, "; ") + ")"
	}
	return line
}

// percent is the share done in whole percent as shown: rounded, but at most
// 99 until the run has finished.
func (s progressStatus) percent() float64 {
	v := math.Round(100 * s.Fraction())
	if !s.Finished {
		v = min(v, 99)
	}
	return v
}

// short is the terminal bar's description.
func (s progressStatus) short() string {
	line := fmt.Sprintf("cell %d/%d", min(s.CellsDone+1, s.Cells), s.Cells)
	if s.RequestsTotal > 0 {
		line += fmt.Sprintf(" (%d/%d req)", s.Requests, s.RequestsTotal)
	}
	line += fmt.Sprintf(", %s left", roundDur(s.Remaining))
	if len(s.Estimated) > 0 {
		line += " (part estimated)"
	}
	return line
}

// roundDur rounds d for display: whole seconds, tenths below 10 s.
func roundDur(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// cellRequests counts the current cell's ended requests for the bar.
type cellRequests struct{ p *runProgress }

var _ loadgen.Sink = cellRequests{}

func (c cellRequests) Add(*loadgen.Record) error { c.p.reqs.Add(1); return nil }
func (c cellRequests) Close() error              { return nil }

// startCell resets the request counter for a cell of n requests.
func (p *runProgress) startCell(n int) {
	if p == nil {
		return
	}
	p.reqs.Store(0)
	p.reqTotal.Store(int64(n))
}

// progressEvery is how often the whole run's line is logged when no
// terminal shows the bar.
const progressEvery = 30 * time.Second

// report draws p until stop is closed: a bar on a terminal (term non-nil),
// else a line on log every progressEvery. It returns when stop is closed,
// after a last draw.
func (p *runProgress) report(term, log io.Writer, stop <-chan struct{}) {
	if term == nil {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fmt.Fprintln(log, p.status())
			}
		}
	}
	const steps = 1000
	bar := progressbar.NewOptions64(steps,
		progressbar.OptionSetWriter(term),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetPredictTime(false), // its rate-based ETA is wrong early; ours is scheduled
		progressbar.OptionSetElapsedTime(false),
		progressbar.OptionClearOnFinish(),
	)
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			_ = bar.Finish()
			return
		case <-t.C:
		}
		st := p.status()
		bar.Describe(st.short())
		_ = bar.Set64(int64(st.Fraction() * steps))
	}
}

// startProgress plans the run of order and starts drawing its progress: the
// bar on Options.Progress (a terminal), else periodic lines on the log. The
// returned func ends the last step and stops the drawing.
func (r *runner) startProgress(order []report.CellKey) (stop func()) {
	guess := DefaultServerStartGuess
	if r.cfg.Server.Kind == servers.Sim {
		guess = 0
	}
	cfg := r.cfg
	if r.opt.Slice != nil {
		cfg.Extra.CapacitySearch = nil // a shard does not search (searchCapacity)
	}
	r.progress = newRunProgress(runPlan(cfg, order, r.scheds), guess, time.Now)
	if cs := cfg.Extra.CapacitySearch; cs != nil {
		r.progress.search = &searchBudget{arm: cs.ArmBudget, total: cs.Budget, growth: cs.Growth, concurrent: cs.ConcurrentArms}
	}
	if r.opt.Progress == nil && r.log == io.Discard {
		return r.progress.finish
	}
	done, drawn := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(drawn)
		r.progress.report(r.opt.Progress, r.log, done)
	}()
	return func() {
		r.progress.finish()
		close(done)
		<-drawn
		if r.opt.Progress == nil {
			fmt.Fprintln(r.log, r.progress.status())
		}
	}
}
