package loadgen

import (
	"fmt"
	"slices"
	"time"

	"github.com/transferlab/transferlab/stats"
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
	// They, WindowOutputTokens and ThroughputTokPerS are the run's
	// WindowFigures (see there: the one definition, also analysis.BuildCell's).
	WindowStart, WindowEnd time.Duration
	// WindowOutputTokens are output tokens whose events fell inside the
	// window (tokens of warm-up requests that straddle its start count only
	// for events after it). Events of a request whose usage disagrees with its
	// event count are weighted by usage/events.
	WindowOutputTokens float64
	// ThroughputTokPerS = WindowOutputTokens / (WindowEnd − WindowStart) in
	// output tokens per second (DESIGN.md "Throughput").
	ThroughputTokPerS float64
	// MeasuredSent counts the measured (non-warm-up) requests that were
	// sent: the ScheduleLagSample samples of ScheduleLagP99 and ScheduleLate.
	MeasuredSent int
	// ScheduleLagP99 is LagP99 (stats.NearestRank over the exact samples) of
	// SentAt − ScheduledAt over the measured sends (ScheduleLagSample): the
	// figure analysis.BuildCell publishes as the cell's schedule-lag p99.
	ScheduleLagP99 time.Duration
	// ScheduleLate counts those samples above the lag budget (LateSends).
	ScheduleLate int
	// DispatchLagP99 is the p99 (ClientBoundFlag: stats.NearestRank over
	// the exact samples, the figure analysis.BuildCell's flag carries) of ClientLag: the
	// DispatchedAt − ScheduledAt of measured requests not held by the
	// in-flight cap, the instrument's own lateness without the wait for a
	// server connection (a server slow to accept shows in ScheduleLagP99 only).
	DispatchLagP99 time.Duration
	// DispatchLate counts the ClientLag samples above the lag budget (1 ms
	// by default): measured sends the client itself dispatched late.
	DispatchLate int
	// ClientBound is ClientBoundFlag's flag: more than 1 % of the sends late
	// at 99 % confidence (ClientBound): the client itself, not the server,
	// was systematically late.
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

// WindowFigures are the measured window of one run and the throughput over
// it: DESIGN.md "Throughput = output tokens completed inside the measured
// window / window length; the window excludes warm-up and starts at the first
// measured send". This is the one implementation: Replay's Summary and
// analysis.BuildCell both come from it, so a live run and a re-report from
// records.jsonl give the same figure.
type WindowFigures struct {
	// Measured is false when no measured (non-warm-up) request was sent;
	// every other field is then 0.
	Measured bool
	// Start is the first measured send (SentAt of a non-warm-up record); End
	// the last event of any measured request (the later of its EndAt and its
	// last token event). Monotonic offsets from run start; End ≥ Start.
	Start, End time.Duration
	// OutputTokens are the output tokens whose token events arrived inside
	// [Start, End], over every sent record, whatever its final state: all of a
	// measured request's events lie inside by construction; a warm-up request
	// that straddles Start counts only its events at or after Start.
	// An event carrying k tokens counts k × usage/events when the request's
	// usage.completion_tokens disagrees with its event token count, else k
	// (DESIGN.md: output_tokens is usage when reported), so it can be fractional.
	OutputTokens float64
	// ThroughputTokPerS = OutputTokens / (End − Start) in output tokens per
	// second; 0 when the window has no length.
	ThroughputTokPerS float64
}

// Length is End − Start.
func (w WindowFigures) Length() time.Duration { return w.End - w.Start }

// Window computes the window figures of one cell's records (any order),
// exactly as Replay's Summary folds them as they end.
func Window(recs []Record) WindowFigures {
	var f windowFold
	for i := range recs {
		f.add(&recs[i])
	}
	return f.figures()
}

// windowFold folds records, in any order, into WindowFigures. Tokens of
// measured requests are summed at once (they lie inside the window); warm-up
// events are kept until the window start is known. Events before from are
// dropped early: the summarizer sets from to the warm-up boundary, which no
// measured send precedes (measured requests are scheduled at or after it).
type windowFold struct {
	from       time.Duration
	start, end time.Duration
	measured   bool
	tokens     float64
	straddle   []straddleEvent
}

type straddleEvent struct {
	at time.Duration
	w  float64
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

func (f *windowFold) add(r *Record) {
	if !r.sent() {
		return
	}
	w := eventWeight(r)
	if r.Warmup {
		for _, e := range r.Events {
			if e.At >= f.from {
				f.straddle = append(f.straddle, straddleEvent{at: e.At, w: w * float64(e.Tokens)})
			}
		}
		return
	}
	end := r.EndAt
	if n := len(r.Events); n > 0 {
		end = max(end, r.Events[n-1].At)
	}
	if !f.measured {
		f.start, f.end, f.measured = r.SentAt, end, true
	} else {
		f.start, f.end = min(f.start, r.SentAt), max(f.end, end)
	}
	f.tokens += w * float64(r.EventTokens())
}

func (f *windowFold) figures() WindowFigures {
	if !f.measured {
		return WindowFigures{}
	}
	// An end with no event after the first send (only failures without
	// events) leaves a zero-length window: End is never before Start.
	wf := WindowFigures{Measured: true, Start: f.start, End: max(f.end, f.start), OutputTokens: f.tokens}
	for _, e := range f.straddle {
		if e.at >= wf.Start && e.at <= wf.End {
			wf.OutputTokens += e.w
		}
	}
	if win := wf.Length(); win > 0 {
		wf.ThroughputTokPerS = wf.OutputTokens / win.Seconds()
	}
	return wf
}

// ClientLag is r's sample for the client-bound rule: its
// DispatchLag (DispatchedAt − ScheduledAt, the client's own lateness, without
// the wait for a server connection), for measured (non-warm-up) requests that
// were dispatched and not held back by the in-flight cap (their lateness is
// the cap's, reported as QueuedByCap).
func ClientLag(r *Record) (time.Duration, bool) {
	if r.Warmup || r.QueuedByCap {
		return 0, false
	}
	return r.DispatchLag()
}

// ClientBoundShare is the share of a cell's measured sends that may be later
// than the lag budget while the client keeps its promise: 1 %, i.e. a
// dispatch-lag p99 within the budget.
const ClientBoundShare = 0.01

// ClientBoundConfidence is the confidence with which ClientBound must find
// more than ClientBoundShare of the sends late before it flags a cell: 99 %,
// so that a run of a dozen cells from a client that keeps its budget is
// rarely flagged by chance.
const ClientBoundConfidence = 0.99

// ClientBound is the client-bound rule: the client itself, not the server,
// set the pace when more than ClientBoundShare (1 %) of a cell's n measured
// sends (ClientLag samples) were dispatched later than the lag budget, at
// ClientBoundConfidence (99 %): the exact one-sided binomial test of "at
// most 1 % of sends late" (a dispatch-lag p99 within the budget) rejects,
// P[X ≥ late] < 1 − 0.99 for X ~ Binomial(n, 0.01) (stats.BinomialCDF,
// gonum underneath). It flags 3 late sends of 30, 5 of 91, 7 of 220, 19 of
// 1,000. One late send of 30 (p = 0.26) is no evidence of a systematic lag,
// and that request's own TTFT, TPOT and E2E are measured from its sent_at
// (DESIGN.md), so it is counted and shown, not flagged. late ≤ 0 or n ≤ 0
// is false.
func ClientBound(late, n int) bool {
	if late <= 0 || n <= 0 {
		return false
	}
	return 1-stats.BinomialCDF(late-1, n, ClientBoundShare) < 1-ClientBoundConfidence
}

// ScheduleLagSample is r's sample for the schedule-lag figures: its
// ScheduleLag (SentAt − ScheduledAt) when r is measured (not warm-up) and was
// sent. Summary's ScheduleLagP99 and ScheduleLate and analysis.BuildCell's
// ScheduleLag distribution all take their samples from here.
func ScheduleLagSample(r *Record) (time.Duration, bool) {
	if r.Warmup {
		return 0, false
	}
	return r.ScheduleLag()
}

// LagP99 is the p99 of lags (left unchanged) by DESIGN.md's nearest rank
// (stats.NearestRank over the exact samples: a measured sample; for fewer
// than 100 samples the largest), the one implementation of every lag p99
// Summary carries; 0 with no sample. Unlike analysis.BuildDist it does not
// refuse a p99 for a small sample: it is shown beside counts, not claimed.
func LagP99(lags []time.Duration) time.Duration {
	if len(lags) == 0 {
		return 0
	}
	ns := make([]float64, len(lags))
	for i, l := range lags {
		ns[i] = float64(l)
	}
	slices.Sort(ns)
	return time.Duration(stats.NearestRank(ns, 0.99))
}

// LateSends counts the lags later than budget (≤ 0: DefaultLagBudget, 1 ms).
func LateSends(lags []time.Duration, budget time.Duration) int {
	if budget <= 0 {
		budget = DefaultLagBudget
	}
	late := 0
	for _, l := range lags {
		if l > budget {
			late++
		}
	}
	return late
}

// ClientBoundFlag is the one implementation of the client-bound figures and
// flag, which Summary and analysis.BuildCell both take from here, over lags,
// one cell's ClientLag samples (left unchanged): p99 is LagP99(lags), shown
// beside the flag and not refused for small samples; late is
// LateSends(lags, budget); bound is ClientBound(late, len(lags)). With no
// sample all are zero.
func ClientBoundFlag(lags []time.Duration, budget time.Duration) (p99 time.Duration, late int, bound bool) {
	late = LateSends(lags, budget)
	return LagP99(lags), late, ClientBound(late, len(lags))
}

// summarizer folds records into a Summary as they end.
type summarizer struct {
	s         Summary
	lagBudget time.Duration
	schedule  []time.Duration // ScheduleLagSample samples (8 B per request)
	dispatch  []time.Duration // ClientLag samples (8 B per request)
	window    windowFold
}

func newSummarizer(lagBudget, warmup time.Duration) *summarizer {
	return &summarizer{
		s:         Summary{States: make(map[State]int, len(States)), Hist: NewHistograms()},
		lagBudget: lagBudget,
		window:    windowFold{from: warmup},
	}
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
	}
	if lag, ok := ScheduleLagSample(r); ok {
		z.schedule = append(z.schedule, lag)
	}
	if lag, ok := ClientLag(r); ok {
		z.dispatch = append(z.dispatch, lag)
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
	z.window.add(r)
}

// finish computes the window figures (Window's fold), the schedule-lag
// figures and the client-bound flag.
func (z *summarizer) finish() Summary {
	s := z.s
	wf := z.window.figures()
	s.WindowStart, s.WindowEnd = wf.Start, wf.End
	s.WindowOutputTokens, s.ThroughputTokPerS = wf.OutputTokens, wf.ThroughputTokPerS
	s.MeasuredSent = len(z.schedule)
	s.ScheduleLagP99, s.ScheduleLate = LagP99(z.schedule), LateSends(z.schedule, z.lagBudget)
	s.DispatchLagP99, s.DispatchLate, s.ClientBound = ClientBoundFlag(z.dispatch, z.lagBudget)
	return s
}

// String is a one-line human summary.
func (s *Summary) String() string {
	return fmt.Sprintf("%s arm=%s load=%g req/s: scheduled=%d sent=%d states=%v queued_by_cap=%d window=%s throughput=%.1f tok/s lag_p99=%s client_bound=%t complete=%t",
		s.Mode, s.Arm, s.OfferedLoad, s.Scheduled, s.Sent, s.States, s.QueuedByCap, s.Window(), s.ThroughputTokPerS, s.ScheduleLagP99, s.ClientBound, s.Complete)
}
