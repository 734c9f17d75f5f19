package loadgen

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Summary is what one Replay measured, folded as records ended. Offsets
// (WindowStart, WindowEnd, every Record time) count from Start.
type Summary struct {
	// Start is the run start; Record offsets are monotonic durations from it,
	// so Start.Add(r.SentAt) is comparable with other time.Time readings.
	Start time.Time
	// Mode is "open-loop", "open-loop max_in_flight=N" or "closed-loop concurrency=N".
	Mode        string
	Arm         string
	OfferedLoad float64
	Repetition  int
	// Scheduled is the number of requests in the schedule; Sent those written to the server.
	Scheduled int
	Sent      int
	// States counts records per final state; the counts sum to Scheduled.
	States map[State]int
	// QueuedByCap counts requests that were due while WithMaxInFlight's cap
	// was full and were sent late (never dropped).
	QueuedByCap int
	// WindowStart is the first measured (non-warm-up) send; WindowEnd the
	// last event of any measured request. Zero when nothing was measured.
	WindowStart, WindowEnd time.Duration
	// WindowOutputTokens are output tokens whose events fell inside the
	// window (tokens of warm-up requests that straddle its start count only
	// for events after it). Events of a request whose usage disagrees with its
	// event count are weighted by usage/events.
	WindowOutputTokens float64
	// ThroughputTokPerS = WindowOutputTokens / (WindowEnd − WindowStart) in
	// output tokens per second (DESIGN.md "Throughput").
	ThroughputTokPerS float64
	// ScheduleLagP99 is the p99 of SentAt − ScheduledAt over sent requests (HDR, µs resolution).
	ScheduleLagP99 time.Duration
	// DispatchLagP99 is the p99 of DispatchedAt − ScheduledAt over requests
	// not held by the in-flight cap: the instrument's own lateness, without
	// the wait for a server connection (a server slow to accept shows in
	// ScheduleLagP99 only).
	DispatchLagP99 time.Duration
	// ClientBound is true when DispatchLagP99 exceeds the lag budget (1 ms
	// by default, issue 5): the client itself, not the server, was late.
	ClientBound bool
	// MultiTokenEvents counts token events that carried more than one token (DESIGN.md).
	MultiTokenEvents int
	// MissingUsage counts ok requests whose stream carried no usage.
	MissingUsage int
	// UsageMismatches counts requests whose usage disagreed with their event count.
	UsageMismatches int
	// PromptMismatches counts requests whose usage.prompt_tokens differed from InputTokens.
	PromptMismatches int
	// Complete is false when the run's context ended before every request
	// ended; IncompleteReason then says why.
	Complete         bool
	IncompleteReason string
	// Hist holds the HDR histograms (µs, 3 significant digits).
	Hist *Histograms
}

// Window is WindowEnd − WindowStart.
func (s *Summary) Window() time.Duration { return s.WindowEnd - s.WindowStart }

// summarizer folds records into a Summary as they end.
type summarizer struct {
	s         Summary
	lagBudget time.Duration
	warmup    time.Duration
	dispatch  *hdrhistogram.Histogram
	measured  bool
	tokens    float64
	// straddle holds warm-up requests' token events at or after the warm-up
	// boundary (the window starts no earlier), weighted; filtered at the end.
	straddle []straddleEvent
}

type straddleEvent struct {
	at time.Duration
	w  float64
}

func newSummarizer(lagBudget, warmup time.Duration) *summarizer {
	return &summarizer{
		s:         Summary{States: make(map[State]int, len(States)), Hist: NewHistograms()},
		lagBudget: lagBudget,
		warmup:    warmup,
		dispatch:  hdrhistogram.New(histMinUs, histMaxUs, histSigFigs),
	}
}

// eventWeight is the tokens one event token stands for: usage/events when
// usage was reported and disagrees, else 1.
func eventWeight(r *Record) float64 {
	ev := r.EventTokens()
	if r.OutputTokensSource == SourceUsage && ev > 0 && r.OutputTokens != ev {
		return float64(r.OutputTokens) / float64(ev)
	}
	return 1
}

func (z *summarizer) add(r *Record) {
	s := &z.s
	s.States[r.State]++
	if !r.sent() {
		return
	}
	s.Sent++
	_ = s.Hist.Add(r)
	if r.QueuedByCap {
		s.QueuedByCap++
	} else if lag, ok := r.DispatchLag(); ok {
		recordUs(z.dispatch, lag)
	}
	s.MultiTokenEvents += r.MultiTokenEvents()
	if r.MissingUsage() {
		s.MissingUsage++
	}
	if r.UsageMismatch {
		s.UsageMismatches++
	}
	if r.PromptMismatch() {
		s.PromptMismatches++
	}
	w := eventWeight(r)
	if r.Warmup {
		for _, e := range r.Events {
			if e.At >= z.warmup {
				z.straddle = append(z.straddle, straddleEvent{at: e.At, w: w * float64(e.Tokens)})
			}
		}
		return
	}
	if !z.measured || r.SentAt < s.WindowStart {
		s.WindowStart = r.SentAt
	}
	end := r.EndAt
	if n := len(r.Events); n > 0 && r.Events[n-1].At > end {
		end = r.Events[n-1].At
	}
	if !z.measured || end > s.WindowEnd {
		s.WindowEnd = end
	}
	z.measured = true
	z.tokens += w * float64(r.EventTokens())
}

// finish computes the window figures and the client-bound flag.
func (z *summarizer) finish() Summary {
	s := z.s
	tok := z.tokens
	if z.measured {
		for _, e := range z.straddle {
			if e.at >= s.WindowStart && e.at <= s.WindowEnd {
				tok += e.w
			}
		}
	}
	s.WindowOutputTokens = tok
	if win := s.Window(); win > 0 {
		s.ThroughputTokPerS = tok / win.Seconds()
	}
	s.ScheduleLagP99 = QuantileDuration(s.Hist.ScheduleLag, 99)
	s.DispatchLagP99 = QuantileDuration(z.dispatch, 99)
	s.ClientBound = s.DispatchLagP99 > z.lagBudget
	return s
}

// String is a one-line human summary.
func (s *Summary) String() string {
	return fmt.Sprintf("%s arm=%s load=%g req/s: scheduled=%d sent=%d states=%v queued_by_cap=%d window=%s throughput=%.1f tok/s lag_p99=%s client_bound=%t complete=%t",
		s.Mode, s.Arm, s.OfferedLoad, s.Scheduled, s.Sent, s.States, s.QueuedByCap, s.Window(), s.ThroughputTokPerS, s.ScheduleLagP99, s.ClientBound, s.Complete)
}
