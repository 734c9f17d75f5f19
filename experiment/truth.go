package experiment

import (
	"fmt"
	"time"

	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/servers"
	"github.com/transferlab/transferlab/sim"
	"github.com/transferlab/transferlab/traces"
)

// simTruth is, for a run on the simulator, each candidate's true
// candidate/baseline ratio of mean TTFT, TPOT and E2E at each load: the
// load's schedule replayed through each arm's scheduler and cost model in
// virtual time (sim.Config.Replay: no host noise), over the requests that
// both arms' first repetition measured ok, so it is the ratio a perfect
// measurement of those requests would find. Nil for another server kind.
func (r *runner) simTruth() ([]report.TruthRatio, error) {
	if r.cfg.Server.Kind != servers.Sim || len(r.cfg.Arms) < 2 {
		return nil, nil
	}
	base := r.cfg.Arms[0]
	var out []report.TruthRatio
	for li, rate := range r.cfg.Load.RatesRPS {
		sched := r.scheds[li]
		baseT, err := replayTruth(r.simConfig(base), sched)
		if err != nil {
			return nil, fmt.Errorf("arm %s at %g req/s: %w", base.Name, rate, err)
		}
		baseOK := r.measuredOK(base.Name, rate)
		for _, arm := range r.cfg.Arms[1:] {
			candT, err := replayTruth(r.simConfig(arm), sched)
			if err != nil {
				return nil, fmt.Errorf("arm %s at %g req/s: %w", arm.Name, rate, err)
			}
			var ids []int
			for _, id := range r.measuredOK(arm.Name, rate) {
				if contains(baseOK, id) {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				continue
			}
			for _, m := range []string{"ttft", "tpot", "e2e"} {
				var num, den float64
				n := 0
				for _, id := range ids {
					c, okC := candT[id].metric(m)
					b, okB := baseT[id].metric(m)
					if okC && okB {
						num, den, n = num+c, den+b, n+1
					}
				}
				if n > 0 && den > 0 {
					out = append(out, report.TruthRatio{Candidate: arm.Name, OfferedLoadRPS: rate, Metric: m, Stat: "mean", Value: num / den, Requests: n})
				}
			}
		}
	}
	return out, nil
}

// requestTruth is one request's true TTFT, TPOT and E2E (ms).
type requestTruth struct {
	ttft, e2e float64
	output    int
}

func (t requestTruth) metric(m string) (float64, bool) {
	switch m {
	case "ttft":
		return t.ttft, true
	case "e2e":
		return t.e2e, true
	case "tpot":
		if t.output < 2 {
			return 0, false
		}
		return (t.e2e - t.ttft) / float64(t.output-1), true
	}
	return 0, false
}

// replayTruth replays sched on cfg in virtual time; the result is by request ID.
func replayTruth(cfg sim.Config, sched traces.Schedule) (map[int]requestTruth, error) {
	return replayWith(cfg.Replay, sched)
}

// replayWith is replayTruth through replay (sim.Config.Replay, or
// NoisyReplay for one noisy measurement of the schedule).
func replayWith(replay func([]sim.Arrival) ([]sim.Timing, error), sched traces.Schedule) (map[int]requestTruth, error) {
	arr := make([]sim.Arrival, len(sched.Requests))
	for i, q := range sched.Requests {
		arr[i] = sim.Arrival{At: q.Offset, Lengths: sim.Lengths{InputTokens: q.InputTokens, OutputTokens: q.OutputTokens}}
	}
	ts, err := replay(arr)
	if err != nil {
		return nil, err
	}
	out := make(map[int]requestTruth, len(ts))
	for i, q := range sched.Requests {
		out[q.ID] = requestTruth{ttft: msOf(ts[i].TTFT(arr[i])), e2e: msOf(ts[i].E2E(arr[i])), output: q.OutputTokens}
	}
	return out, nil
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// measuredOK lists the request IDs arm's first repetition at rate measured ok.
func (r *runner) measuredOK(arm string, rate float64) []int {
	var ids []int
	for _, c := range r.res.Cells {
		if c.Arm == arm && c.OfferedLoadRPS == rate && c.Repetition == 0 && c.Incomplete == "" {
			for _, f := range c.Requests {
				ids = append(ids, f.ID)
			}
		}
	}
	return ids
}

func contains(ids []int, id int) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
