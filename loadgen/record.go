package loadgen

import "time"

// State is the one final state every scheduled request ends in (DESIGN.md).
type State string

// The final states. Every scheduled request ends in exactly one of them.
const (
	StateOK          State = "ok"
	StateHTTPError   State = "http_error"
	StateStreamError State = "stream_error"
	StateTimeout     State = "timeout"
	StateCancelled   State = "cancelled"
	StateNotSent     State = "not_sent"
)

// States lists every State in report order.
var States = []State{StateOK, StateHTTPError, StateStreamError, StateTimeout, StateCancelled, StateNotSent}

// TokenEvent is one SSE event that carried at least one generated token.
type TokenEvent struct {
	// At is when the event's bytes reached the client (DESIGN.md: the
	// kernel's receive time on the reactor, else when the read returned), as
	// a monotonic offset from run start.
	At time.Duration `json:"at_ns"`
	// Tokens is how many tokens the event carried (≥ 1; > 1 for a
	// multi-token event): the growth of usage.completion_tokens since the
	// last token event when every chunk so far carried usage (vLLM's
	// continuous_usage_stats), else the generated token ids its choices list,
	// else one per choice with text.
	Tokens int `json:"tokens"`
	// Reasoning is true when the tokens were reasoning text, not answer text.
	Reasoning bool `json:"reasoning,omitempty"`
}

// Record is everything measured about one scheduled request. All times are
// monotonic offsets from the run's start (time.Duration, ns in JSON).
type Record struct {
	RequestID   int     `json:"request_id"`
	Arm         string  `json:"arm"`
	OfferedLoad float64 `json:"offered_load_rps"`
	Repetition  int     `json:"repetition"`
	SourceLine  int     `json:"source_line"`
	// Warmup is true for requests sent before the measured window began.
	Warmup bool `json:"warmup,omitempty"`
	// QueuedByCap is true when the request was due while the in-flight cap
	// (WithMaxInFlight) was full, so it was sent late, in order.
	QueuedByCap bool `json:"queued_by_cap,omitempty"`

	InputTokens           int `json:"input_tokens"`
	RequestedOutputTokens int `json:"requested_output_tokens"`

	ScheduledAt time.Duration `json:"scheduled_at_ns"`
	// DispatchedAt is when the client released the request to its HTTP
	// transport (before any connection wait); DispatchedAt − ScheduledAt is
	// the instrument's own lateness, SentAt − DispatchedAt the wait for a
	// connection and the write. 0 for requests never dispatched.
	DispatchedAt time.Duration `json:"dispatched_at_ns,omitempty"`
	SentAt       time.Duration `json:"sent_at_ns"`
	// FirstMessageAt is when the first SSE message of any kind arrived (0: none).
	FirstMessageAt time.Duration `json:"first_message_at_ns,omitempty"`
	// Events are the token-bearing events in arrival order.
	Events []TokenEvent `json:"events"`
	// EndAt is the last event of the response ([DONE], or at a body's end
	// without it the last data event after a finish_reason), 0 if none.
	EndAt time.Duration `json:"end_at_ns,omitempty"`
	// FinalAt is when the record reached its final state, whatever it is:
	// EndAt for a response that ended, else when the client gave up on it
	// (HTTP error, stream error, timeout, cancellation; for a request never
	// sent, when the replay let it go). EndAt alone marks a complete
	// response, so E2E stays undefined for the others.
	FinalAt time.Duration `json:"final_at_ns"`

	// OutputTokens is usage.completion_tokens when reported, else the event token count.
	OutputTokens int `json:"output_tokens"`
	// OutputTokensSource is "usage" or "events".
	OutputTokensSource string `json:"output_tokens_source"`
	// UsageMismatch is true when usage and the event token count disagree.
	UsageMismatch bool `json:"usage_mismatch,omitempty"`
	// PromptTokens is usage.prompt_tokens when reported (0 otherwise).
	PromptTokens int `json:"prompt_tokens,omitempty"`
	// PromptText is true when the prompt was sent as text (chat, or
	// WithPromptText): its token count is then the server tokenizer's, only
	// about InputTokens; a token-id prompt has exactly InputTokens.
	PromptText bool `json:"prompt_text,omitempty"`

	// FinishReason is the last finish_reason the server sent ("length", "stop", ...), "" if none.
	FinishReason string `json:"finish_reason,omitempty"`

	State      State  `json:"state"`
	HTTPStatus int    `json:"http_status,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Metric names one per-request metric of DESIGN.md, for Record.Undefined.
type Metric string

// The per-request metrics a Record defines (DESIGN.md, "Metric definitions").
const (
	MetricTTFT         Metric = "ttft"
	MetricTTFTIntended Metric = "ttft_intended"
	MetricTTFO         Metric = "ttfo"
	MetricFirstMessage Metric = "first_message"
	MetricE2E          Metric = "e2e"
	MetricTPOT         Metric = "tpot"
	MetricScheduleLag  Metric = "schedule_lag"
)

// Output-token sources (Record.OutputTokensSource).
const (
	// SourceUsage means OutputTokens is usage.completion_tokens as the server reported it.
	SourceUsage = "usage"
	// SourceEvents means the server reported no usage; OutputTokens sums the token events' Tokens.
	SourceEvents = "events"
)

// sent reports whether the request was written to the server.
func (r *Record) sent() bool { return r.State != StateNotSent && r.State != "" }

// TTFT is the time to first token: the first event carrying ≥ 1 generated
// token (answer or reasoning text) − SentAt. Defined when such an event arrived
// (DESIGN.md, "Metric definitions"); Undefined(MetricTTFT) says why not.
func (r *Record) TTFT() (time.Duration, bool) {
	if !r.sent() || len(r.Events) == 0 {
		return 0, false
	}
	return r.Events[0].At - r.SentAt, true
}

// TTFTIntended is the coordinated-omission-safe TTFT: the first token event −
// ScheduledAt, as MLPerf LoadGen and wrk2 measure (DESIGN.md).
func (r *Record) TTFTIntended() (time.Duration, bool) {
	if !r.sent() || len(r.Events) == 0 {
		return 0, false
	}
	return r.Events[0].At - r.ScheduledAt, true
}

// TTFO is the time to first output: the first event with answer
// (non-reasoning) text − SentAt (DESIGN.md). It equals TTFT unless the model
// streamed reasoning text first.
func (r *Record) TTFO() (time.Duration, bool) {
	if !r.sent() {
		return 0, false
	}
	for i := range r.Events {
		if !r.Events[i].Reasoning {
			return r.Events[i].At - r.SentAt, true
		}
	}
	return 0, false
}

// FirstMessage is the time from SentAt to the first SSE event of any kind
// (role-only, empty, usage-only or token-bearing; SSE comments are not
// events), kept so other tools' "time to first chunk" can be recomputed.
func (r *Record) FirstMessage() (time.Duration, bool) {
	if !r.sent() || r.FirstMessageAt == 0 {
		return 0, false
	}
	return r.FirstMessageAt - r.SentAt, true
}

// E2E is the end-to-end latency: the last event of the response ([DONE] or the
// final usage event) − SentAt (DESIGN.md). Undefined when the response never ended.
func (r *Record) E2E() (time.Duration, bool) {
	if !r.sent() || r.EndAt == 0 {
		return 0, false
	}
	return r.EndAt - r.SentAt, true
}

// ITLs are the inter-token latencies: one sample per gap between successive
// token-bearing events (DESIGN.md; vLLM's ITL, AIPerf's ICL). A multi-token
// event makes one gap, not k. Nil for fewer than two token events.
func (r *Record) ITLs() []time.Duration {
	if len(r.Events) < 2 {
		return nil
	}
	out := make([]time.Duration, len(r.Events)-1)
	for i := 1; i < len(r.Events); i++ {
		out[i-1] = r.Events[i].At - r.Events[i-1].At
	}
	return out
}

// TPOT is the mean time per output token after the first:
// (E2E − TTFT) / (OutputTokens − 1), defined for OutputTokens ≥ 2 (DESIGN.md).
// AIPerf, GenAI-Perf and GuideLLM call it ITL. Never 0 for a 1-token response: undefined.
func (r *Record) TPOT() (time.Duration, bool) {
	ttft, ok1 := r.TTFT()
	e2e, ok2 := r.E2E()
	if !ok1 || !ok2 || r.OutputTokens < 2 {
		return 0, false
	}
	return (e2e - ttft) / time.Duration(r.OutputTokens-1), true
}

// ScheduleLag is SentAt − ScheduledAt: how late the client sent the request
// (DESIGN.md). Defined for every request that was sent.
func (r *Record) ScheduleLag() (time.Duration, bool) {
	if !r.sent() {
		return 0, false
	}
	return r.SentAt - r.ScheduledAt, true
}

// DispatchLag is DispatchedAt − ScheduledAt: how late the client itself
// released the request (its pacing and dispatch), excluding the wait for a
// connection to the server. Defined for every dispatched request.
func (r *Record) DispatchLag() (time.Duration, bool) {
	if !r.sent() || r.DispatchedAt == 0 {
		return 0, false
	}
	return r.DispatchedAt - r.ScheduledAt, true
}

// MultiTokenEvents counts token events that carried more than one token.
func (r *Record) MultiTokenEvents() int {
	n := 0
	for i := range r.Events {
		if r.Events[i].Tokens > 1 {
			n++
		}
	}
	return n
}

// EventTokens is the sum of Tokens over the token-bearing events.
func (r *Record) EventTokens() int {
	n := 0
	for i := range r.Events {
		n += r.Events[i].Tokens
	}
	return n
}

// MissingUsage reports a request that ended ok but whose stream carried no
// usage (OutputTokens then counts events; DESIGN.md asks the report to say so).
func (r *Record) MissingUsage() bool {
	return r.State == StateOK && r.OutputTokensSource == SourceEvents
}

// PromptMismatch reports a server-reported usage.prompt_tokens that differs
// from the scheduled InputTokens: for a text prompt (PromptText) the server's
// tokenizer or chat template counted its words otherwise; for token ids the
// server changed the prompt (a BOS token added, truncation).
func (r *Record) PromptMismatch() bool {
	return r.PromptTokens != 0 && r.PromptTokens != r.InputTokens
}

// Undefined returns why metric m is undefined for r, or "" when it is defined.
func (r *Record) Undefined(m Metric) string {
	if !r.sent() {
		return "request was never sent (state " + string(r.State) + ")"
	}
	noToken := "no token-bearing event arrived (state " + string(r.State) + ")"
	switch m {
	case MetricTTFT, MetricTTFTIntended:
		if len(r.Events) == 0 {
			return noToken
		}
	case MetricTTFO:
		if len(r.Events) == 0 {
			return noToken
		}
		if _, ok := r.TTFO(); !ok {
			return "only reasoning tokens arrived, no answer text (state " + string(r.State) + ")"
		}
	case MetricFirstMessage:
		if r.FirstMessageAt == 0 {
			return "no SSE event arrived (state " + string(r.State) + ")"
		}
	case MetricE2E:
		if r.EndAt == 0 {
			return "the response never ended with [DONE] or a finish_reason (state " + string(r.State) + ")"
		}
	case MetricTPOT:
		if len(r.Events) == 0 {
			return noToken
		}
		if r.EndAt == 0 {
			return "the response never ended (state " + string(r.State) + ")"
		}
		if r.OutputTokens < 2 {
			return "fewer than 2 output tokens: TPOT needs (output_tokens − 1) ≥ 1"
		}
	case MetricScheduleLag:
	default:
		return "unknown metric " + string(m)
	}
	return ""
}
