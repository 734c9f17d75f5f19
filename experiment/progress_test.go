package experiment

import (
	"strings"
	"testing"
	"time"

	"fmt"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/traces"
)

// fakeClock is the injected clock of the progress tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// TestRunProgressArithmetic: before anything is observed the remaining time
// is the schedules plus the start guess, labelled estimated; after one cell
// its tail is learned and applies to the cells left; the step under way
// counts only what is left of it.
func TestRunProgressArithmetic(t *testing.T) {
	t.Parallel()
	c := &fakeClock{t: time.Unix(1000, 0)}
	steps := []planStep{{kind: stepStart}, {stepCell, 10 * time.Second}, {stepCell, 10 * time.Second}, {stepCell, 20 * time.Second}}
	p := newRunProgress(steps, time.Minute, c.now)

	st := p.status()
	if st.Remaining != 100*time.Second || st.Cells != 3 || st.CellsDone != 0 {
		t.Fatalf("before the start: %+v, want 1m0s guess + 40s scheduled, 0/3 cells", st)
	}
	if s := st.String(); !strings.Contains(s, "1 server start ≈ 1m0s") || !strings.Contains(s, "3 cells: scheduled 40s, tail not yet observed") {
		t.Errorf("line %q does not label the estimates", s)
	}

	p.begin(stepStart)
	c.advance(30 * time.Second) // the start took 30 s
	p.begin(stepCell)
	if st := p.status(); st.Remaining != 40*time.Second || st.Elapsed != 30*time.Second {
		t.Errorf("after the start: %+v, want 40s left (the start observed, no cell yet)", st)
	}
	c.advance(12 * time.Second) // the cell: 10 s scheduled + 2 s tail
	p.begin(stepCell)
	st = p.status()
	if want := (10 + 2 + 20 + 2) * time.Second; st.Remaining != want || st.CellsDone != 1 {
		t.Errorf("after one cell: %+v, want %s left and 1/3 cells", st, want)
	}
	if len(st.Estimated) != 0 {
		t.Errorf("estimated %v after every kind was observed", st.Estimated)
	}
	c.advance(5 * time.Second)
	if st := p.status(); st.Remaining != 29*time.Second {
		t.Errorf("5 s into the second cell: %s left, want 29s", st.Remaining)
	}
	c.advance(20 * time.Second) // the cell overruns its estimate: nothing negative, nor nothing left of it
	if st := p.status(); st.Remaining != 24500*time.Millisecond || !strings.Contains(st.String(), "the cell under way past its estimate ≈ 2.5s") {
		t.Errorf("overrun: %s left (%q), want the last cell's 22s + a tenth of the 25 s the overrunning cell took", st.Remaining, st.String())
	}
	p.begin(stepCell)
	c.advance(21 * time.Second)
	p.finish()
	if st := p.status(); st.Remaining != 0 || st.CellsDone != 3 || st.Fraction() != 1 || st.Stopped {
		t.Errorf("finished: %+v", st)
	}

	// A run stopped in its first cell (SIGINT, an error) says so; it does
	// not read "100 %, remaining ≈ 0s".
	cut := newRunProgress(steps, time.Minute, c.now)
	cut.begin(stepStart)
	cut.begin(stepCell)
	c.advance(3 * time.Second)
	cut.finish()
	if st := cut.status(); !st.Stopped || st.String() != "run: stopped in cell 1 of 3, elapsed 3s" {
		t.Errorf("stopped in the first cell: %q (%+v)", st.String(), st)
	}
}

// TestRunProgressETAWithin20Percent plays a run whose cells take their
// schedule plus a tail that varies ±40 % around its mean, with warm-up
// replays and profiling passes, and checks the remaining time from the
// second cell on against what the rest of the run then took.
func TestRunProgressETAWithin20Percent(t *testing.T) {
	t.Parallel()
	var steps []planStep
	var took []time.Duration
	tails := []float64{1.0, 1.4, 0.6, 1.2, 0.8, 1.0, 1.3, 0.7}
	for i := range 8 {
		sched := time.Duration(10+5*(i%3)) * time.Second
		tail := time.Duration(tails[i] * float64(3*time.Second))
		if i%4 == 0 {
			steps = append(steps, planStep{kind: stepStart})
			took = append(took, 45*time.Second+time.Duration(i)*time.Second)
			steps = append(steps, planStep{stepWarmup, sched})
			took = append(took, sched+tail)
		}
		steps = append(steps, planStep{stepCell, sched})
		took = append(took, sched+tail)
		if i%2 == 0 {
			steps = append(steps, planStep{stepProfile, 4 * time.Second})
			took = append(took, 4*time.Second+8*time.Second)
		}
	}
	c := &fakeClock{t: time.Unix(0, 0)}
	p := newRunProgress(steps, DefaultServerStartGuess, c.now)
	cells := 0
	for i, s := range steps {
		p.begin(s.kind)
		if s.kind == stepCell {
			cells++
			var truth time.Duration
			for _, d := range took[i:] {
				truth += d
			}
			got := p.status().Remaining
			t.Logf("cell %d: remaining %s, truly %s", cells, got, truth)
			if err := float64(got-truth) / float64(truth); cells >= 2 && (err > 0.2 || err < -0.2) {
				t.Errorf("cell %d: remaining %s, truly %s (%+.0f %%)", cells, got, truth, 100*err)
			}
		}
		c.advance(took[i])
	}
	p.finish()
}

// TestRunProgressOffPlan: a step the plan does not hold is added to it
// instead of failing or ending the estimate: while it runs something is
// left and the share is below 100 %; a nil progress does nothing.
func TestRunProgressOffPlan(t *testing.T) {
	t.Parallel()
	c := &fakeClock{t: time.Unix(0, 0)}
	p := newRunProgress([]planStep{{stepCell, time.Second}}, 0, c.now)
	p.begin(stepCell)
	c.advance(time.Second)
	p.begin(stepProfile)
	c.advance(30 * time.Second)
	if st := p.status(); st.Remaining != 3*time.Second || st.CellsDone != 1 || !strings.HasPrefix(st.String(), "run: 1/1 cells, 91 %, elapsed 31s, remaining ≈ 3s") {
		t.Errorf("off plan: %q (%+v)", st.String(), st)
	}
	p.finish()
	if st := p.status(); st.Remaining != 0 || !strings.HasPrefix(st.String(), "run: 1/1 cells, 100 %") {
		t.Errorf("finished: %q", st.String())
	}
	var nilP *runProgress
	nilP.begin(stepCell)
	nilP.startCell(3)
	nilP.finish()
}

// TestProgressProbesFollowBudgets: the quickstart's search (3 arms, probes
// of 1 s + 4 s, arm_budget 25s, budget 75s) admits 2 probes per arm, each
// ~10 s with its drain: the announced plan says 6 probes, not the 9 the
// precision alone would plan, and stays so once the cells' tails are seen.
func TestProgressProbesFollowBudgets(t *testing.T) {
	t.Parallel()
	cfg := Config{
		Load: LoadConfig{RatesRPS: []float64{10}, Duration: 4 * time.Second, Warmup: time.Second},
		Arms: []ArmConfig{{Name: "baseline"}, {Name: "a"}, {Name: "b"}},
		SLO:  SLOConfig{TTFTMs: 500, Percentile: 90},
	}
	cs := CapacitySearchConfig{RelativePrecision: 0.25, MaxRPS: 48, ProbeWarmup: time.Second, ProbeDuration: 4 * time.Second, ArmBudget: 25 * time.Second, Budget: 75 * time.Second}.effective(cfg.Load)
	cfg.Extra.CapacitySearch = &cs
	var order []report.CellKey
	for _, a := range cfg.Arms {
		order = append(order, report.CellKey{Arm: a.Name, OfferedLoadRPS: 10})
	}
	sched := traces.Schedule{Requests: []traces.Request{{ID: 0}, {ID: 1, Offset: 5 * time.Second}}}
	c := &fakeClock{t: time.Unix(1000, 0)}
	p := newRunProgress(runPlan(cfg, order, []traces.Schedule{sched}), 0, c.now)
	p.search = &searchBudget{arm: cs.ArmBudget, total: cs.Budget, growth: cs.Growth}
	if st := p.status().String(); !strings.Contains(st, "6 search probes (a planned count") {
		t.Errorf("before the run: %q, want 6 search probes (2 per arm within arm_budget 25s)", st)
	}
	for range cfg.Arms { // cells of 5 s scheduled, 3 s of drain
		p.begin(stepStart)
		p.begin(stepCell)
		c.advance(8 * time.Second)
	}
	p.begin(stepStart)
	p.begin(stepProbe)
	if st := p.status().String(); !strings.Contains(st, "6 search probes (a planned count") {
		t.Errorf("first probe: %q, want 6 search probes", st)
	}
	c.advance(9 * time.Second)
	p.begin(stepProbe)
	c.advance(13 * time.Second) // 22 s into the arm: a third probe does not fit
	p.begin(stepStart)
	p.begin(stepProbe)
	if st := p.status().String(); !strings.Contains(st, "4 search probes (a planned count") {
		t.Errorf("second arm's first probe: %q, want 4 search probes left", st)
	}
	// A whole-search budget that admits 3 probes of ~10 s.
	p = newRunProgress(runPlan(cfg, order, []traces.Schedule{sched}), 0, c.now)
	p.search = &searchBudget{arm: cs.ArmBudget, total: 30 * time.Second, growth: cs.Growth}
	if st := p.status().String(); !strings.Contains(st, "3 search probes (a planned count") {
		t.Errorf("budget 30s: %q, want 3 search probes", st)
	}
}

// TestRunProgressNeverGoesBack: when what is learned makes the rest of the
// run longer (a cell's long tail, applied to the cells left; the search's
// probes admitted once the budgets are seen to allow them), the remaining
// time says so at once, but the share done never reads lower than it was
// shown: it is held, labelled held, until the run's progress passes it.
func TestRunProgressNeverGoesBack(t *testing.T) {
	t.Parallel()
	c := &fakeClock{t: time.Unix(0, 0)}
	p := newRunProgress([]planStep{{stepCell, 10 * time.Second}, {stepCell, 10 * time.Second}}, 0, c.now)
	p.begin(stepCell)
	shown := 0.0
	check := func(at string) progressStatus {
		t.Helper()
		st := p.status()
		if st.Fraction() < shown {
			t.Errorf("%s: %.1f %% shown after %.1f %%: %q", at, 100*st.Fraction(), 100*shown, st.String())
		}
		shown = max(shown, st.Fraction())
		return st
	}
	c.advance(29 * time.Second) // the first cell overruns: 10 s scheduled, 19 s of tail so far
	// 19 s past its estimate: 2.9 s more of it is guessed (overrunLeft).
	if st := check("29 s into the first cell"); !strings.HasPrefix(st.String(), "run: 0/2 cells, 69 %, elapsed 29s, remaining ≈ 13s") {
		t.Errorf("29 s into the first cell: %q", st.String())
	}
	c.advance(time.Second)
	p.begin(stepCell) // the first cell took 30 s: the second is now expected to take 30 s too
	st := check("the second cell's start")
	if st.Remaining != 30*time.Second || !st.Held {
		t.Errorf("the second cell's start: %+v, want 30s left (its tail learned from the first) and the share held", st)
	}
	if s := st.String(); s != "run: 1/2 cells, 69 % (held: the rest of the run was found longer), elapsed 30s, remaining ≈ 30s" {
		t.Errorf("the second cell's start: %q", s)
	}
	c.advance(25 * time.Second) // 55 s of 60: past the held share
	if st := check("25 s into the second cell"); st.Held || st.String() != "run: 1/2 cells, 92 %, elapsed 55s, remaining ≈ 5s" {
		t.Errorf("25 s into the second cell: %q (%+v)", st.String(), st)
	}
	c.advance(5 * time.Second)
	p.finish()
	if st := check("the end"); st.Fraction() != 1 || st.Held {
		t.Errorf("the end: %+v", st)
	}
}

// TestProgressProbesBeyondThePlan: the search may run more probes than the
// plan counted (PlannedProbes is an estimate). With the arms searched at
// once, a round admitted after the planned ones is added to the plan: the
// line never reads 100 % nor a remaining time of 0 s before the run ends
// (it read "100 %, remaining ≈ 0s" for the whole extra round). With the
// arms one at a time, an arm's extra probe does not take the next arm's
// planned probes, so their time still counts.
func TestProgressProbesBeyondThePlan(t *testing.T) {
	t.Parallel()
	cfg := Config{
		Load: LoadConfig{RatesRPS: []float64{10}, Duration: 4 * time.Second, Warmup: time.Second},
		Arms: []ArmConfig{{Name: "baseline"}, {Name: "a"}, {Name: "b"}},
		SLO:  SLOConfig{TTFTMs: 500, Percentile: 90},
	}
	var order []report.CellKey
	for _, a := range cfg.Arms {
		order = append(order, report.CellKey{Arm: a.Name, OfferedLoadRPS: 10})
	}
	sched := traces.Schedule{Requests: []traces.Request{{ID: 0}, {ID: 1, Offset: 5 * time.Second}}}
	sweep := func(p *runProgress, c *fakeClock) {
		for range cfg.Arms { // cells of 5 s scheduled, 3 s of drain
			p.begin(stepStart)
			p.begin(stepCell)
			c.advance(8 * time.Second)
		}
	}
	planned := func(steps []planStep) (n int) {
		for _, s := range steps {
			if s.kind == stepProbe {
				n++
			}
		}
		return n
	}
	for _, concurrent := range []bool{true, false} {
		cs := CapacitySearchConfig{RelativePrecision: 0.25, MaxRPS: 48, ProbeWarmup: time.Second, ProbeDuration: 4 * time.Second, ConcurrentArms: concurrent}.effective(cfg.Load)
		cfg.Extra.CapacitySearch = &cs
		steps := runPlan(cfg, order, []traces.Schedule{sched})
		c := &fakeClock{t: time.Unix(1000, 0)}
		p := newRunProgress(steps, 0, c.now)
		p.search = &searchBudget{growth: cs.Growth, concurrent: concurrent}
		sweep(p, c)
		check := func(at string) {
			t.Helper()
			st := p.status()
			if s := st.String(); st.Remaining <= 0 || strings.Contains(s, "100 %") || strings.Contains(s, "remaining ≈ 0s") {
				t.Errorf("concurrent %v, %s: %q while the run goes on", concurrent, at, s)
			}
		}
		if concurrent {
			rounds := planned(steps)
			for range cfg.Arms {
				p.begin(stepStart)
			}
			for k := 1; k <= rounds+1; k++ { // one round more than planned
				p.begin(stepProbe)
				for range 6 { // a 30 s round, probes of 5 s: far past any estimate
					c.advance(5 * time.Second)
					check(fmt.Sprintf("round %d of %d planned", k, rounds))
				}
			}
		} else {
			per := planned(steps) / len(cfg.Arms)
			p.begin(stepStart)
			for k := 1; k <= per+1; k++ { // the baseline: one probe more than planned
				p.begin(stepProbe)
				c.advance(10 * time.Second)
				check(fmt.Sprintf("baseline probe %d of %d planned", k, per))
			}
			p.begin(stepStart) // arm a: its planned probes and b's are still ahead
			if s := p.status().String(); !strings.Contains(s, fmt.Sprintf("%d search probes (a planned count", 2*per)) {
				t.Errorf("arm a's start after the baseline's extra probe: %q, want %d search probes left", s, 2*per)
			}
		}
		p.finish()
		if s := p.status().String(); !strings.Contains(s, "100 %") || !strings.Contains(s, "remaining ≈ 0s") {
			t.Errorf("concurrent %v, the end: %q", concurrent, s)
		}
	}
}
