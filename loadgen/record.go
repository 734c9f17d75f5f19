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
	// At is when the event's bytes reached the reader, as a monotonic offset from run start.
	At time.Duration `json:"at_ns"`
	// Tokens is how many tokens the event carried (≥ 1; >1 for multi-token events).
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

	InputTokens           int `json:"input_tokens"`
	RequestedOutputTokens int `json:"requested_output_tokens"`

	ScheduledAt time.Duration `json:"scheduled_at_ns"`
	SentAt      time.Duration `json:"sent_at_ns"`
	// FirstMessageAt is when the first SSE message of any kind arrived (0: none).
	FirstMessageAt time.Duration `json:"first_message_at_ns,omitempty"`
	// Events are the token-bearing events in arrival order.
	Events []TokenEvent `json:"events"`
	// EndAt is the last event of the response ([DONE] or final usage event), 0 if none.
	EndAt time.Duration `json:"end_at_ns,omitempty"`

	// OutputTokens is usage.completion_tokens when reported, else the event token count.
	OutputTokens int `json:"output_tokens"`
	// OutputTokensSource is "usage" or "events".
	OutputTokensSource string `json:"output_tokens_source"`
	// UsageMismatch is true when usage and the event token count disagree.
	UsageMismatch bool `json:"usage_mismatch,omitempty"`
	// PromptTokens is usage.prompt_tokens when reported (0 otherwise).
	PromptTokens int `json:"prompt_tokens,omitempty"`

	State      State  `json:"state"`
	HTTPStatus int    `json:"http_status,omitempty"`
	Error      string `json:"error,omitempty"`
}
