package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Lengths is one request's prompt and output length in tokens.
type Lengths struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// ParseLengths reads "IN:OUT" token counts (serve-sim --capacity 1020:130).
func ParseLengths(spec string) (Lengths, error) {
	a, b, ok := strings.Cut(spec, ":")
	in, err1 := strconv.Atoi(a)
	out, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return Lengths{}, fmt.Errorf("%q: want IN:OUT token counts", spec)
	}
	return Lengths{InputTokens: in, OutputTokens: out}, nil
}

// Capacity is the engine's saturation throughput for a request mix, computed
// by running the scheduler and cost model in virtual time (no sleeping) with
// every request queued at t=0, so the batch is always as full as the limits
// allow. Throughputs are measured between the completions of the first and
// the last quarter of the requests, leaving out ramp-up and drain.
type Capacity struct {
	// Requests is how many requests the virtual run completed.
	Requests int `json:"requests"`
	// OutputTokPerS is the saturation output throughput, tokens/s (simulated).
	OutputTokPerS float64 `json:"output_tok_per_s"`
	// RequestsPerS is the saturation completion rate, requests/s (simulated).
	RequestsPerS float64 `json:"requests_per_s"`
	// MeanStep is the mean modelled step duration over the measured span.
	MeanStep time.Duration `json:"mean_step_ns"`
	// MeanRunningSeqs is the mean number of sequences per step over the span.
	MeanRunningSeqs float64 `json:"mean_running_seqs"`
}

// CapacityRequests is how many requests Capacity needs for c to measure a
// full batch: at least 2000 (steady-state figures for trace-like mixes under
// the default limits) and 6 × scheduler.max_num_seqs, so that requests are
// still waiting when the measured span closes (its last completion is the
// ¾ mark; at most max_num_seqs run at once).
func (c Config) CapacityRequests() int {
	return max(2000, 6*c.Scheduler.MaxNumSeqs)
}

// Capacity runs `requests` requests (cycling through mix) through the
// scheduler in virtual time and reports the saturation throughput.
// requests must be ≥ 8, and enough that some are still waiting when the
// measured span closes; otherwise every request was admitted before and the
// span measures the batch draining, not saturation, and Capacity returns an
// error naming CapacityRequests (a step of 8,192 sequences with 2,000
// requests reported 66,929 req/s against 3,108 at saturation).
func (c Config) Capacity(mix []Lengths, requests int) (Capacity, error) {
	cm, err := NewCostModel(c)
	if err != nil {
		return Capacity{}, err
	}
	if len(mix) == 0 {
		return Capacity{}, errors.New("sim: Capacity: empty mix")
	}
	if requests < 8 {
		return Capacity{}, fmt.Errorf("sim: Capacity: requests must be ≥ 8, got %d", requests)
	}
	for i, l := range mix {
		if l.InputTokens < 1 || l.OutputTokens < 1 || l.InputTokens+l.OutputTokens > c.Model.MaxModelLen {
			return Capacity{}, fmt.Errorf("sim: Capacity: mix[%d] = %+v: need input, output ≥ 1 and input+output ≤ max_model_len %d", i, l, c.Model.MaxModelLen)
		}
		if kv := c.Scheduler.KVCacheTokens; kv > 0 && l.InputTokens+l.OutputTokens > kv {
			return Capacity{}, fmt.Errorf("sim: Capacity: mix[%d] = %+v does not fit the KV cache (%d tokens)", i, l, kv)
		}
	}
	sch := newScheduler(c.Scheduler)
	seqs := make([]*seq, requests)
	for i := range seqs {
		l := mix[i%len(mix)]
		seqs[i] = &seq{inputTokens: l.InputTokens, maxTokens: l.OutputTokens}
		sch.enqueue(seqs[i])
	}
	lo, hi := requests/4, requests-requests/4 // completions bounding the measured span
	var (
		now, tLo, tHi    time.Duration
		completed        int
		tokens, tokensLo int64
		steps, stepsLo   int64
		seqSum, seqSumLo int64
		drained          bool // no request waiting when the span closed
	)
	for sch.busy() {
		p := sch.next()
		if p.empty() {
			return Capacity{}, errors.New("sim: Capacity: scheduler stalled (limits admit nothing)")
		}
		now += cm.Step(p.shape).Duration()
		steps++
		seqSum += int64(len(p.prefill) + len(p.decode))
		sch.commit(p, func(q *seq, generated int) {
			tokens++
			if generated == q.maxTokens {
				completed++
				switch completed {
				case lo:
					tLo, tokensLo, stepsLo, seqSumLo = now, tokens, steps, seqSum
				case hi:
					tHi = now
					drained = len(sch.waiting) == 0
				}
			}
		})
		if tHi > 0 {
			if drained {
				return Capacity{}, fmt.Errorf("sim: Capacity: %d requests are too few for this config: none was waiting when the measured span closed, so it measured the batch draining, not saturation (max_num_seqs %d); use at least %d",
					requests, c.Scheduler.MaxNumSeqs, c.CapacityRequests())
			}
			span := (tHi - tLo).Seconds()
			n := steps - stepsLo
			return Capacity{
				Requests:        hi - lo,
				OutputTokPerS:   float64(tokens-tokensLo) / span,
				RequestsPerS:    float64(hi-lo) / span,
				MeanStep:        (tHi - tLo) / time.Duration(n),
				MeanRunningSeqs: float64(seqSum-seqSumLo) / float64(n),
			}, nil
		}
	}
	return Capacity{}, errors.New("sim: Capacity: run ended before the measured span closed")
}
