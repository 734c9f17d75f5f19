package loadgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// randomRun draws records as Replay makes them: warm-up requests due before
// warmup, measured ones due (and so sent) at or after it, every state,
// multi-token events, usage that disagrees with the events, missing ends.
func randomRun(rng *rand.Rand, warmup time.Duration) []Record {
	recs := make([]Record, rng.IntN(200))
	for i := range recs {
		due := time.Duration(rng.Int64N(int64(4 * warmup)))
		r := Record{RequestID: i, ScheduledAt: due, Warmup: due < warmup, State: States[rng.IntN(len(States))]}
		if r.State != StateNotSent {
			r.DispatchedAt = due + time.Duration(rng.IntN(3e6))
			r.SentAt = r.DispatchedAt + time.Duration(rng.IntN(1e6))
			at := r.SentAt
			for range rng.IntN(15) {
				at += time.Duration(1 + rng.IntN(3e7))
				r.Events = append(r.Events, TokenEvent{At: at, Tokens: 1 + rng.IntN(3)})
			}
			if r.State == StateOK || rng.IntN(2) == 0 {
				r.EndAt = at + time.Duration(rng.IntN(1e6))
			}
			r.OutputTokens, r.OutputTokensSource = r.EventTokens(), SourceEvents
			if rng.IntN(3) == 0 {
				r.OutputTokens, r.OutputTokensSource = r.EventTokens()+rng.IntN(5)-2, SourceUsage
				r.OutputTokens = max(r.OutputTokens, 0)
			}
		}
		recs[i] = r
	}
	return recs
}

// TestSummaryWindowIsWindow checks, on 300 seeded random runs folded in a
// random end order, that Replay's summarizer (which drops warm-up events
// before the warm-up boundary early) gives exactly loadgen.Window's figures,
// and that those match a brute-force count of the events inside the window.
func TestSummaryWindowIsWindow(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	const warmup = 200 * time.Millisecond
	for iter := range 300 {
		recs := randomRun(rng, warmup)
		z := newSummarizer(DefaultLagBudget, warmup)
		for _, i := range rng.Perm(len(recs)) {
			z.add(&recs[i])
		}
		sum := z.finish()
		wf := Window(recs)
		// Folded in another order the float sums may differ in the last bits.
		if sum.WindowStart != wf.Start || sum.WindowEnd != wf.End ||
			math.Abs(sum.ThroughputTokPerS-wf.ThroughputTokPerS) > 1e-9*(1+wf.ThroughputTokPerS) ||
			math.Abs(sum.WindowOutputTokens-wf.OutputTokens) > 1e-9*(1+wf.OutputTokens) {
			t.Fatalf("iter %d: Summary window [%v, %v] %g tok %g tok/s; Window %+v", iter, sum.WindowStart, sum.WindowEnd, sum.WindowOutputTokens, sum.ThroughputTokPerS, wf)
		}
		// Brute force, straight from the definition.
		var start, end time.Duration
		measured := false
		for _, r := range recs {
			if r.Warmup || !r.sent() {
				continue
			}
			last := r.EndAt
			if n := len(r.Events); n > 0 {
				last = max(last, r.Events[n-1].At)
			}
			if !measured {
				start, end, measured = r.SentAt, last, true
			}
			start, end = min(start, r.SentAt), max(end, last)
		}
		end = max(end, start)
		var tok float64
		for _, r := range recs {
			w := 1.0
			if ev := r.EventTokens(); r.OutputTokensSource == SourceUsage && ev > 0 {
				w = float64(r.OutputTokens) / float64(ev)
			}
			for _, e := range r.Events {
				if measured && e.At >= start && e.At <= end {
					tok += w * float64(e.Tokens)
				}
			}
		}
		if wf.Measured != measured || wf.Start != start || wf.End != end || math.Abs(wf.OutputTokens-tok) > 1e-9*(1+tok) {
			t.Fatalf("iter %d: Window %+v; brute force measured %t [%v, %v] %g tokens", iter, wf, measured, start, end, tok)
		}
		if wf.Length() > 0 && math.Abs(wf.ThroughputTokPerS*wf.Length().Seconds()-wf.OutputTokens) > 1e-9*(1+tok) {
			t.Fatalf("iter %d: throughput × window ≠ tokens: %+v", iter, wf)
		}
	}
}

func TestClientLagAndBound(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	lagCases := []struct {
		name string
		r    Record
		lag  time.Duration
		ok   bool
	}{
		{"measured, dispatched 2 ms late", Record{State: StateOK, ScheduledAt: 10 * ms, DispatchedAt: 12 * ms, SentAt: 20 * ms}, 2 * ms, true},
		{"warm-up: not measured", Record{Warmup: true, State: StateOK, ScheduledAt: 10 * ms, DispatchedAt: 12 * ms, SentAt: 12 * ms}, 0, false},
		{"held by the in-flight cap: the cap's lateness", Record{QueuedByCap: true, State: StateOK, ScheduledAt: 10 * ms, DispatchedAt: 90 * ms, SentAt: 90 * ms}, 0, false},
		{"never sent", Record{State: StateNotSent, ScheduledAt: 10 * ms}, 0, false},
		{"never dispatched (no DispatchedAt)", Record{State: StateHTTPError, ScheduledAt: 10 * ms, SentAt: 11 * ms}, 0, false},
	}
	for _, tc := range lagCases {
		t.Run(tc.name, func(t *testing.T) {
			lag, ok := ClientLag(&tc.r)
			if lag != tc.lag || ok != tc.ok {
				t.Errorf("ClientLag = %v, %t; want %v, %t", lag, ok, tc.lag, tc.ok)
			}
		})
	}
	boundCases := []struct {
		lag, budget time.Duration
		want        bool
	}{
		{DefaultLagBudget + time.Microsecond, 0, true},
		{DefaultLagBudget, 0, false}, // not above the budget
		{5 * ms, 10 * ms, false},
		{11 * ms, 10 * ms, true},
		{2 * ms, -1, true}, // ≤ 0: the default 1 ms
	}
	for _, tc := range boundCases {
		if got := ClientBound(tc.lag, tc.budget); got != tc.want {
			t.Errorf("ClientBound(%v, %v) = %t, want %t", tc.lag, tc.budget, got, tc.want)
		}
	}
}

// TestClientBoundFlag: the figure is the nearest-rank p99 of the samples,
// always one of them (the largest below 100 samples, where no p99 is
// published), whatever their order; the flag is that figure above the budget.
func TestClientBoundFlag(t *testing.T) {
	t.Parallel()
	us := time.Microsecond
	// 200 samples 1..200 µs, shuffled: ⌈0.99·200⌉ = 198th smallest.
	lags := make([]time.Duration, 200)
	for i := range lags {
		lags[i] = time.Duration(i+1) * us
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(lags), func(i, j int) { lags[i], lags[j] = lags[j], lags[i] })
	before := slices.Clone(lags)
	if p99, bound := ClientBoundFlag(lags, 0); p99 != 198*us || bound {
		t.Errorf("200 samples: p99 %v bound %t, want 198µs false", p99, bound)
	}
	if !slices.Equal(lags, before) {
		t.Error("ClientBoundFlag reordered its input")
	}
	if p99, bound := ClientBoundFlag(lags, 150*us); p99 != 198*us || !bound {
		t.Errorf("budget 150µs: p99 %v bound %t, want 198µs true", p99, bound)
	}
	// Below 100 samples the nearest-rank p99 is the largest: one late send
	// among 4 decides the flag.
	few := []time.Duration{300 * us, 2 * time.Millisecond, 100 * us, 200 * us}
	if p99, bound := ClientBoundFlag(few, 0); p99 != 2*time.Millisecond || !bound {
		t.Errorf("4 samples: p99 %v bound %t, want 2ms true", p99, bound)
	}
	if p99, bound := ClientBoundFlag(nil, 0); p99 != 0 || bound {
		t.Errorf("no samples: p99 %v bound %t, want 0 false", p99, bound)
	}
}
