package telemetry

import (
	"time"

	"github.com/transferlab/transferlab/loadgen"
)

// Per-request metrics come from loadgen.Record's own methods (TTFT, TTFO,
// TTFTIntended, FirstMessage, E2E, ITLs, TPOT, ScheduleLag), which apply
// DESIGN.md "Metric definitions"; this package never recomputes them.

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
