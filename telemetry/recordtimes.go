package telemetry

import (
	"time"

	"github.com/transferlab/transferlab/loadgen"
)

// The per-request metrics below apply DESIGN.md "Metric definitions" to a
// loadgen.Record's fields. loadgen is adding the same methods on Record
// (TTFT, TTFO, TPOT, ITLs, E2E, ScheduleLag); these are to be replaced by
// them when they land, and must agree with them meanwhile.

// ttft is the first token-bearing event (answer or reasoning) − SentAt.
func ttft(r *loadgen.Record) (time.Duration, bool) {
	if len(r.Events) == 0 {
		return 0, false
	}
	return r.Events[0].At - r.SentAt, true
}

// ttfo is the first event with answer (non-reasoning) text − SentAt.
func ttfo(r *loadgen.Record) (time.Duration, bool) {
	for _, ev := range r.Events {
		if !ev.Reasoning {
			return ev.At - r.SentAt, true
		}
	}
	return 0, false
}

// timeToFirstChunk is the first SSE message of any kind − SentAt (the
// GenAI conventions' time to first chunk; FirstMessageAt 0 means none came).
func timeToFirstChunk(r *loadgen.Record) (time.Duration, bool) {
	if r.FirstMessageAt <= 0 {
		return 0, false
	}
	return r.FirstMessageAt - r.SentAt, true
}

// e2e is the last event of the response − SentAt (EndAt 0 means none came).
func e2e(r *loadgen.Record) (time.Duration, bool) {
	if r.EndAt <= 0 {
		return 0, false
	}
	return r.EndAt - r.SentAt, true
}

// tpotSeconds is (E2E − TTFT) / (OutputTokens − 1) in seconds, for
// OutputTokens ≥ 2 (computed in float so no nanosecond is truncated).
func tpotSeconds(r *loadgen.Record) (float64, bool) {
	end, ok1 := e2e(r)
	first, ok2 := ttft(r)
	if !ok1 || !ok2 || r.OutputTokens < 2 {
		return 0, false
	}
	return (end - first).Seconds() / float64(r.OutputTokens-1), true
}

// scheduleLag is SentAt − ScheduledAt, defined once the request was sent.
func scheduleLag(r *loadgen.Record) (time.Duration, bool) {
	if r.State == loadgen.StateNotSent {
		return 0, false
	}
	return r.SentAt - r.ScheduledAt, true
}

// inputTokens is usage.prompt_tokens when the server reported it, else the
// prompt length sent (exact: the prompt is sent as token ids).
func inputTokens(r *loadgen.Record) int {
	if r.PromptTokens > 0 {
		return r.PromptTokens
	}
	return r.InputTokens
}

// spanTimes are a request span's start and end offsets from run start: from
// SentAt (ScheduledAt when never sent) to EndAt, or to the last thing seen
// from a request that did not finish (its first message or last token event).
func spanTimes(r *loadgen.Record) (start, end time.Duration) {
	if r.State == loadgen.StateNotSent {
		return r.ScheduledAt, r.ScheduledAt
	}
	start, end = r.SentAt, r.SentAt
	if r.EndAt > 0 {
		return start, max(end, r.EndAt)
	}
	end = max(end, r.FirstMessageAt)
	if n := len(r.Events); n > 0 {
		end = max(end, r.Events[n-1].At)
	}
	return start, end
}
