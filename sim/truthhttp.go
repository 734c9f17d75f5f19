package sim

import (
	"bufio"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"time"
)

// TruthPath is the route of the ground-truth export (GET; see TruthLine).
const TruthPath = "/v1/truth"

// NoiseRunFactorHeader is the GET /v1/truth response header that carries
// the server's noise run factor (Server.NoiseRunFactor; "1" when the noise
// model is off): every token time in the lines already includes it.
const NoiseRunFactorHeader = "X-Truth-Noise-Run-Factor"

// TruthLine is one line of GET /v1/truth: one request's ground truth as the
// simulator holds it (Server.Truth), with every time given as integer
// nanoseconds on the simulator's own monotonic clock, counted from the
// Server's creation (New). The offsets are taken with time.Time.Sub on
// readings that kept their monotonic part, so the difference of two offsets
// is the exact elapsed time between the two events as the simulator's process
// saw it; they are not wall-clock times and are not comparable with another
// process's clock (only differences are: e.g. a true ITL is
// TokenFlushedNs[i] − TokenFlushedNs[i−1]).
type TruthLine struct {
	// ID is the request's X-Request-Id.
	ID string `json:"id"`
	// InputTokens is the prompt length in tokens, as counted by the simulator.
	InputTokens int `json:"input_tokens"`
	// MaxTokens is the number of output tokens asked for (and generated).
	MaxTokens int `json:"max_tokens"`
	// Stream is true for an SSE response.
	Stream bool `json:"stream"`
	// ArrivedNs is when the handler was entered, ns since the server's creation.
	ArrivedNs int64 `json:"arrived_ns"`
	// AdmittedNs is when the scheduler admitted the request, ns since the
	// server's creation; null when it was never admitted.
	AdmittedNs *int64 `json:"admitted_ns"`
	// PrefillStartStep and PrefillEndStep are engine step indices (-1: not yet).
	PrefillStartStep int64 `json:"prefill_start_step"`
	PrefillEndStep   int64 `json:"prefill_end_step"`
	// TokenGeneratedNs holds, per generated token, the end of the engine step
	// that produced it, ns since the server's creation.
	TokenGeneratedNs []int64 `json:"token_generated_ns"`
	// TokenFlushedNs holds, per token event, the time right after the event
	// was written and flushed, ns since the server's creation (non-streaming:
	// all equal to the body's flush).
	TokenFlushedNs []int64 `json:"token_flushed_ns"`
	// DoneNs is when the response's last bytes were flushed or the request was
	// aborted, ns since the server's creation; null while in flight.
	DoneNs *int64 `json:"done_ns"`
	// Aborted is true when the request ended before all its tokens were written.
	Aborted bool `json:"aborted"`
}

// line returns r's truth as a TruthLine (offsets from r.base).
func (r *truthRecord) line() TruthLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	off := func(t time.Time) *int64 {
		if t.IsZero() {
			return nil
		}
		ns := int64(t.Sub(r.base))
		return &ns
	}
	return TruthLine{
		ID: r.t.ID, InputTokens: r.t.InputTokens, MaxTokens: r.t.MaxTokens, Stream: r.t.Stream,
		ArrivedNs: int64(r.t.ArrivedAt.Sub(r.base)), AdmittedNs: off(r.t.AdmittedAt),
		PrefillStartStep: r.t.PrefillStartStep, PrefillEndStep: r.t.PrefillEndStep,
		TokenGeneratedNs: append([]int64{}, r.genNs...), TokenFlushedNs: append([]int64{}, r.flushNs...),
		DoneNs: off(r.t.DoneAt), Aborted: r.t.Aborted,
	}
}

// records returns the records the store holds, in order of arrival.
func (s *truthStore) records() []*truthRecord {
	s.mu.Lock()
	out := make([]*truthRecord, 0, len(s.byID))
	for _, r := range s.byID {
		out = append(out, r)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].gen < out[j].gen })
	return out
}

// TruthLines returns the ground truth of every request the server holds (at
// most Config.TruthCapacity, the latest per X-Request-Id), in arrival order,
// as GET /v1/truth serves it.
func (s *Server) TruthLines() []TruthLine {
	recs := s.truth.records()
	out := make([]TruthLine, len(recs))
	for i, r := range recs {
		out[i] = r.line()
	}
	return out
}

// serveTruth writes GET /v1/truth: JSON lines (application/x-ndjson), one
// TruthLine per request held, in arrival order. Requests still in flight are
// included as they stand (done_ns null); each flush time is stamped right
// after its Flush returns, so such a line may lack the last event its client
// has already read (every earlier one is there: the next event is written
// only after the previous one's stamp). A stream read to its end (EOF) is
// complete in the export: done_ns is stamped before the handler returns.
func (s *Server) serveTruth(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Truth-Clock", "ns since the simulator's creation, monotonic")
	w.Header().Set(NoiseRunFactorHeader, strconv.FormatFloat(s.NoiseRunFactor(), 'g', -1, 64))
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	for _, l := range s.TruthLines() {
		if err := enc.Encode(l); err != nil {
			return // the client is gone; nothing else to tell it
		}
	}
	_ = bw.Flush()
}
