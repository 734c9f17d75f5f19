package sim

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Arrival is one request of an open-loop schedule: when it arrives (offset
// from the schedule's start) and its lengths in tokens.
type Arrival struct {
	At time.Duration
	Lengths
}

// Timing is what the engine would do to one Arrival with no clock error:
// its first token and its last token, both as offsets from the schedule's
// start (the engine streams each token at the end of the step that made it).
type Timing struct {
	FirstToken time.Duration
	LastToken  time.Duration
}

// TTFT is FirstToken − At of the arrival the timing belongs to.
func (t Timing) TTFT(a Arrival) time.Duration { return t.FirstToken - a.At }

// E2E is LastToken − At of the arrival the timing belongs to.
func (t Timing) E2E(a Arrival) time.Duration { return t.LastToken - a.At }

// Replay runs an open-loop schedule through the scheduler and cost model in
// virtual time: each request joins the queue at its arrival, a step starts
// when the previous one ends (or, idle, at the next arrival) and admits what
// has arrived by then, as the real-time engine does with a perfect clock.
// The result, one Timing per arrival in the order given, is the simulator's
// ground truth for the schedule: what a measurement of it should find,
// without the host's timer and scheduling noise. Lengths must fit the model
// and KV cache as in Capacity.
func (c Config) Replay(arrivals []Arrival) ([]Timing, error) {
	return c.replay(arrivals, nil, nil)
}

// NoisyReplay is Replay with c.Noise applied to one window drawn afresh
// from c.Noise.Seed (COSTMODEL.md, "Run-to-run noise"): every step's
// modelled time is multiplied by F_run · F_step, F_run the seed's first draw
// (a server's at its start) and F_step per step. One noisy measurement of
// the schedule without the host's timer noise, each seed its own draw; to
// replay a run's cells with the draws its servers make, use NoisyServer.
// With the model off it is Replay.
func (c Config) NoisyReplay(arrivals []Arrival) ([]Timing, error) {
	return c.replay(arrivals, newNoise(c.Noise), nil)
}

// NoisyServer replays schedules one window after another in virtual time,
// with the noise model applied exactly as a real-time Server started with
// the same Config applies it: F_run drawn at the start and again at each
// window (Window, as Server.ResetProfile draws it at each cell's start), both
// from the run factors' stream, and F_step per step from the step stream,
// which runs on across the windows. So the k-th cell a run measures on one
// server replays here with the F_run the real cell drew, and with its step
// factors too when the steps before it were the same (the host's timing can
// change how many steps a real cell takes, so a later window's step factors
// may be shifted; its F_run is not). One window is one noisy measurement of
// a schedule without the host's timer noise, so a statistic's behaviour
// under the noise model (the coverage of its intervals over many seeds) can
// be studied in milliseconds per cell. Not safe for concurrent use.
type NoisyServer struct {
	c Config
	n *noise
}

// NewNoisyServer is the virtual-time counterpart of a Server started with c:
// it draws the start's F_run from c.Noise.Seed, as New does.
func (c Config) NewNoisyServer() *NoisyServer {
	return &NoisyServer{c: c, n: newNoise(c.Noise)}
}

// Window starts a new profile window (a new F_run, as Server.ResetProfile)
// and replays arrivals in it as Replay does: one Timing per arrival in the
// order given, and the window's F_run (1 with run_sigma 0). With the model
// off it is Replay. Errors as Replay.
func (s *NoisyServer) Window(arrivals []Arrival) ([]Timing, float64, error) {
	s.n.redraw()
	ts, err := s.c.replay(arrivals, s.n, nil)
	return ts, s.n.run, err
}

// OpShares replays arrivals as Replay does and returns each op's share of the
// modelled step time (GPU time of the op / Σ step durations, CPU overhead
// included), keyed by op name (OpNames): the addressable fraction f of each
// op over the busy time of the schedule, what the Amdahl bound
// 1 / ((1 − f) + f / s) of a kernel s times faster takes. Known before any
// request is sent, so a run can say which candidates' bound its resolution
// cannot see.
func (c Config) OpShares(arrivals []Arrival) (map[string]float64, error) {
	var ops [numOps]time.Duration
	var total time.Duration
	if _, err := c.replay(arrivals, nil, func(sc StepCost) {
		for o := range ops {
			ops[o] += sc.Ops[o].Total()
		}
		total += sc.Duration()
	}); err != nil {
		return nil, err
	}
	if total <= 0 {
		return nil, errors.New("sim: OpShares: the replay made no step")
	}
	out := make(map[string]float64, numOps)
	for o := range ops {
		out[Op(o).String()] = float64(ops[o]) / float64(total)
	}
	return out, nil
}

// replay is Replay, each step's cost scaled by n's factors (when n is not
// nil), calling onStep (when not nil) with each step's cost.
func (c Config) replay(arrivals []Arrival, n *noise, onStep func(StepCost)) ([]Timing, error) {
	cm, err := NewCostModel(c)
	if err != nil {
		return nil, err
	}
	for i, a := range arrivals {
		if a.InputTokens < 1 || a.OutputTokens < 1 || a.InputTokens+a.OutputTokens > c.Model.MaxModelLen {
			return nil, fmt.Errorf("sim: Replay: arrival %d = %+v: need input, output ≥ 1 and input+output ≤ max_model_len %d", i, a.Lengths, c.Model.MaxModelLen)
		}
		if kv := c.Scheduler.KVCacheTokens; kv > 0 && a.InputTokens+a.OutputTokens > kv {
			return nil, fmt.Errorf("sim: Replay: arrival %d = %+v does not fit the KV cache (%d tokens)", i, a.Lengths, kv)
		}
	}
	order := make([]int, len(arrivals))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(arrivals[a].At - arrivals[b].At) })
	out := make([]Timing, len(arrivals))
	index := map[*seq]int{}
	sch := newScheduler(c.Scheduler)
	var now time.Duration
	next, done := 0, 0
	for done < len(arrivals) {
		for next < len(order) && arrivals[order[next]].At <= now {
			a := arrivals[order[next]]
			q := &seq{inputTokens: a.InputTokens, maxTokens: a.OutputTokens}
			index[q] = order[next]
			sch.enqueue(q)
			next++
		}
		p := sch.next()
		if p.empty() {
			if next == len(order) {
				return nil, errors.New("sim: Replay: scheduler stalled (limits admit nothing)")
			}
			now = arrivals[order[next]].At
			continue
		}
		sc := cm.Step(p.shape)
		if n != nil {
			sc, _ = n.apply(sc)
		}
		if onStep != nil {
			onStep(sc)
		}
		now += sc.Duration()
		sch.commit(p, func(q *seq, generated int) {
			i := index[q]
			if generated == 1 {
				out[i].FirstToken = now
			}
			if generated == q.maxTokens {
				out[i].LastToken = now
				done++
			}
		})
	}
	return out, nil
}
