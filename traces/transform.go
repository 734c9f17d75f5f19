package traces

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// derive returns a copy of s's metadata (maps and Transforms copied, never
// shared) with the given requests renumbered 0..n-1 and step appended to
// Transforms. SourceLine and every other request field are kept.
func derive(s Schedule, reqs []Request, step string) Schedule {
	out := s
	out.Requests = reqs
	for i := range out.Requests {
		out.Requests[i].ID = i
	}
	out.SkippedByReason = maps.Clone(s.SkippedByReason)
	out.SkippedLines = slices.Clone(s.SkippedLines)
	out.Dropped = maps.Clone(s.Dropped)
	out.Transforms = append(slices.Clone(s.Transforms), step)
	return out
}

// scaleOffsets multiplies every offset by timeFactor, rounding to the ns.
func scaleOffsets(reqs []Request, timeFactor float64) []Request {
	out := slices.Clone(reqs)
	for i := range out {
		out[i].Offset = time.Duration(math.Round(float64(out[i].Offset) * timeFactor))
	}
	return out
}

// ScaleToRate time-scales s so that its MeanRate ((n−1)/Duration, the same
// definition as Schedule.MeanRate) becomes rateRPS, in requests per second.
// Every offset is multiplied by the same factor MeanRate/rateRPS, so the
// burst shape (relative gaps, duplicate timestamps) is kept; the result's
// MeanRate equals rateRPS up to the 1 ns rounding of each offset. Errors when
// rateRPS is not a positive finite number or when s has no defined mean rate
// (fewer than two requests, or all at one instant).
func ScaleToRate(s Schedule, rateRPS float64) (Schedule, error) {
	if !(rateRPS > 0) || math.IsInf(rateRPS, 0) {
		return Schedule{}, fmt.Errorf("traces: scale to rate: rate %g req/s must be positive and finite", rateRPS)
	}
	mr := s.MeanRate()
	if mr == 0 {
		return Schedule{}, fmt.Errorf("traces: scale to rate: %s has no mean rate (%d requests over %s)", s.Source, len(s.Requests), s.Duration())
	}
	f := mr / rateRPS
	return derive(s, scaleOffsets(s.Requests, f), fmt.Sprintf("scale_to_rate rate_rps=%g time_factor=%.6g", rateRPS, f)), nil
}

// DroppedFirst keys Schedule.Dropped for requests cut by First.
const DroppedFirst = "first_n"

// First keeps the first n requests (all of them when n ≥ len, none when n ≤ 0),
// counting the rest in Schedule.Dropped["first_n"]. Offsets are unchanged.
func First(s Schedule, n int) Schedule {
	n = min(max(n, 0), len(s.Requests))
	out := derive(s, slices.Clone(s.Requests[:n]), fmt.Sprintf("first n=%d", n))
	addDropped(&out, DroppedFirst, len(s.Requests)-n)
	return out
}

// addDropped counts n requests left out by the policy named reason.
func addDropped(s *Schedule, reason string, n int) {
	if n <= 0 {
		return
	}
	if s.Dropped == nil {
		s.Dropped = map[string]int{}
	}
	s.Dropped[reason] += n
}

// ClampContext fits every request into a server context of limit tokens
// (prompt + generated, as vLLM's max_model_len counts): when
// InputTokens + OutputTokens > limit the input is cut to limit − OutputTokens
// (keeping the output, which is what TPOT measures), and if the output alone
// does not fit, the input becomes 1 and the output limit − 1. Each changed
// request is counted in Schedule.Clamped. A limit below 2 is treated as 2,
// the smallest servable context (1 prompt + 1 generated token).
func ClampContext(s Schedule, limit int) Schedule {
	limit = max(limit, 2)
	reqs := slices.Clone(s.Requests)
	n := 0
	for i := range reqs {
		r := &reqs[i]
		if r.InputTokens+r.OutputTokens <= limit {
			continue
		}
		n++
		r.InputTokens = max(limit-r.OutputTokens, 1)
		r.OutputTokens = limit - r.InputTokens
	}
	out := derive(s, reqs, fmt.Sprintf("clamp_context limit=%d clamped=%d", limit, n))
	out.Clamped += n
	return out
}

// Trim applies a config's trace.first and trace.clamp_context in the order
// an experiment applies them (before any offered load's scaling): the first
// n requests (First, when n > 0), then every request fitted into a context
// of limit tokens (ClampContext, when limit > 0). n above the schedule's
// rows is an error (a *FirstError): the rows asked are not there, and
// keeping every row silently would replay another workload than asked.
// Every caller (a config's trace.first, `trace stats --first`) trims here.
func Trim(s Schedule, n, limit int) (Schedule, error) {
	if n > len(s.Requests) {
		return s, &FirstError{Asked: n, Rows: len(s.Requests)}
	}
	if n > 0 {
		s = First(s, n)
	}
	if limit > 0 {
		s = ClampContext(s, limit)
	}
	return s, nil
}

// FirstError is a first-N trim asking for more rows than the trace has.
type FirstError struct {
	Asked, Rows int
}

func (e *FirstError) Error() string {
	return fmt.Sprintf("%d rows asked, but the trace has %d: give at most %d (or leave it out: 0 or absent keeps every row)", e.Asked, e.Rows, e.Rows)
}

// Shard returns worker i's share of s for n load workers: requests whose
// index k satisfies k mod n == i (round robin, so every shard keeps the
// burst shape at 1/n of the rate), with offsets and ids unchanged (unlike the
// other transforms, which renumber) so all workers share one clock, send the
// ids (and so the prompts) of the unsplit schedule, and the n shards
// partition s request for request. Errors unless 0 ≤ i < n.
func Shard(s Schedule, i, n int) (Schedule, error) {
	if n < 1 || i < 0 || i >= n {
		return Schedule{}, fmt.Errorf("traces: shard %d/%d: want 0 ≤ i < n", i, n)
	}
	var reqs []Request
	for k := i; k < len(s.Requests); k += n {
		reqs = append(reqs, s.Requests[k])
	}
	out := derive(s, reqs, fmt.Sprintf("shard i=%d n=%d", i, n))
	for j := range out.Requests {
		out.Requests[j].ID = s.Requests[i+j*n].ID
	}
	return out, nil
}
