package experiment

import (
	"fmt"
	"math"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/sim"
	"github.com/transferlab/transferlab/traces"
)

// Truth window of the sustained capacity (DESIGN.md "Capacity at SLO,
// searched"): a synthetic load replays truthSpan of arrivals; the first
// truthWarmupShare of any window's span is sent but not measured (the
// engine starts idle); the bisection stops once missed/met − 1 ≤
// truthPrecision.
const (
	truthSpan        = 5 * time.Minute
	truthWarmupShare = 0.1
	truthPrecision   = 0.005
)

// longSchedule is the load block's arrivals at rate over a long window: in
// trace mode every row of the trace (trace.first and clamp_context applied)
// time-scaled to rate, burst shape kept; in a synthetic mode truthSpan of
// arrivals seeded by the rate as a probe's are.
func (r *runner) longSchedule(rate float64) (traces.Schedule, error) {
	l := r.cfg.Load
	if l.Mode == "" || l.Mode == LoadTrace {
		return traces.ScaleToRate(r.base, rate)
	}
	l.Warmup, l.Duration, l.MaxRequests = 0, truthSpan, 0
	return cellSchedule(r.base, l, rate, r.cfg.Seed, int(math.Float64bits(rate)%(1<<31)))
}

// truthWindow describes longSchedule's window for results.json.
func (r *runner) truthWindow() string {
	what := fmt.Sprintf("%s of %s arrivals", truthSpan, r.cfg.Load.Mode)
	if r.cfg.Load.Mode == "" || r.cfg.Load.Mode == LoadTrace {
		what = fmt.Sprintf("the whole trace (%d requests) time-scaled to each rate", len(r.base.Requests))
	}
	return fmt.Sprintf("%s, replayed in virtual time (sim.Config.Replay) from an idle engine; the requests of the first %g %% of the span unmeasured; bisected to %g %%",
		what, 100*truthWarmupShare, 100*truthPrecision)
}

// simCapacityTruth is arm's sustained capacity at the SLO on the
// simulator, searched between c's MinRPS and MaxRPS (nil, nil for another
// server kind): each rate's longSchedule replayed in virtual time, judged
// as a probe is (analysis.Met of the measured requests' counts per target),
// bisected in log rate. It finds a crossing: the share within target need
// not fall monotonically with the rate, though it does on the simulator's
// engine for the quickstart's trace.
func (r *runner) simCapacityTruth(arm ArmConfig, c CapacitySearchConfig) (*report.CapacityTruth, error) {
	if r.cfg.Server.Kind != servers.Sim {
		return nil, nil
	}
	cfg, slo := r.simConfig(arm), r.res.SLO
	met := func(rate float64) (bool, error) {
		s, err := r.longSchedule(rate)
		if err != nil {
			return false, err
		}
		att, err := simAttainment(cfg, s, truthWarmup(s), slo)
		if err != nil {
			return false, fmt.Errorf("arm %s at %g req/s: %w", arm.Name, rate, err)
		}
		return analysis.Met(att, slo.Percentile/100), nil
	}
	t := &report.CapacityTruth{Window: r.truthWindow()}
	var err error
	t.MetRPS, t.MissedRPS, err = bisectRate(met, c.MinRPS, c.MaxRPS, truthPrecision)
	return t, err
}

// truthWarmup is where the measured requests of a long schedule s begin
// (from its start): the first truthWarmupShare of its span is unmeasured.
func truthWarmup(s traces.Schedule) time.Duration {
	return s.Requests[0].Offset + time.Duration(truthWarmupShare*float64(s.Duration()))
}

// bisectRate finds a crossing of met in [lo, hi], bisecting in log rate
// until missed/met − 1 ≤ precision: the highest rate found to meet and the
// lowest found to miss. met(lo) false gives (0, lo); met(hi) true (hi, 0).
func bisectRate(met func(float64) (bool, error), lo, hi, precision float64) (float64, float64, error) {
	ok, err := met(lo)
	if err != nil || !ok {
		return 0, lo, err
	}
	if ok, err = met(hi); err != nil || ok {
		return hi, 0, err
	}
	for hi/lo-1 > precision {
		mid := math.Sqrt(lo * hi)
		ok, err := met(mid)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, hi, nil
}

// simAttainment is what a perfect client would count for sched on the
// simulator cfg (virtual time, replayTruth): per declared SLO target, the
// requests scheduled at or after from, and those over the target. A
// request whose metric is undefined (TPOT of a one-token output) is not
// counted for that target, as analysis.BuildCell does.
func simAttainment(cfg sim.Config, sched traces.Schedule, from time.Duration, slo report.SLO) ([]report.SLOAttainment, error) {
	truth, err := replayTruth(cfg, sched)
	if err != nil {
		return nil, err
	}
	return attainment(truth, sched, from, slo), nil
}

// attainment counts, per declared SLO target, sched's requests scheduled at
// or after from whose metric truth holds (by request ID), and those over
// the target; a request whose metric is undefined is not counted.
func attainment(truth map[int]requestTruth, sched traces.Schedule, from time.Duration, slo report.SLO) []report.SLOAttainment {
	var att []report.SLOAttainment
	for _, tg := range []struct {
		metric string
		ms     float64
	}{{"ttft", slo.TTFTMs}, {"tpot", slo.TPOTMs}, {"e2e", slo.E2EMs}} {
		if tg.ms <= 0 {
			continue
		}
		a := report.SLOAttainment{Metric: tg.metric, TargetMs: tg.ms}
		for _, q := range sched.Requests {
			if q.Offset < from {
				continue
			}
			if v, ok := truth[q.ID].metric(tg.metric); ok {
				a.N++
				if v > tg.ms {
					a.Over++
				}
			}
		}
		att = append(att, a)
	}
	return att
}

// truthNote places the simulator's sustained capacity t against arm a's
// search: its interval, and the highest load its probes met (PassRPS, the
// lower bound when no load missed): "" inside, else which side and why.
// span is a probe's scheduled span (warm-up + duration).
func truthNote(t report.CapacityTruth, a report.CapacityArm, c CapacitySearchConfig) string {
	v, e := t.RPS(), a.CapacityRPS
	why := fmt.Sprintf("probes of %s from an idle server met loads it does not sustain (its batch fills and its queue grows slower than a probe lasts, and in trace mode a probe replays only the trace's first rows: DESIGN.md \"Sustained\"); longer probes (capacity_search.probe_warmup, probe_duration) come closer", c.ProbeWarmup+c.ProbeDuration)
	if c.WholeTrace {
		why = "the probes replay the truth's own schedule, so what differs is the run: the server's run-to-run noise (server.sim.noise), a late client, or a load at the truth's edge"
	}
	switch {
	case v == 0:
		return ""
	case e.Low > 0 && v < e.Low:
		return fmt.Sprintf("below the searched interval's low end (%s req/s): %s", report.Num(e.Low), why)
	case a.PassRPS > 0 && v < a.PassRPS:
		return fmt.Sprintf("below the highest load the probes met (%s req/s): %s", report.Num(a.PassRPS), why)
	case e.High > 0 && v > e.High:
		return fmt.Sprintf("above the searched interval's high end (%s req/s)", report.Num(e.High))
	case a.FailRPS > 0 && v > a.FailRPS:
		return fmt.Sprintf("above the lowest load the probes missed (%s req/s): %s", report.Num(a.FailRPS), why)
	}
	return ""
}
