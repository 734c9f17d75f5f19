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

// TestSummaryScheduleLag checks, on 300 seeded random runs, that Summary's
// schedule-lag figures are over the measured sends only (warm-up and unsent
// requests left out) and that the p99 is the nearest-rank sample: the
// ⌈0.99·n⌉-th smallest, brute force from the definition (DESIGN.md).
func TestSummaryScheduleLag(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	const warmup = 200 * time.Millisecond
	for iter := range 300 {
		recs := randomRun(rng, warmup)
		z := newSummarizer(DefaultLagBudget, warmup)
		for i := range recs {
			z.add(&recs[i])
		}
		sum := z.finish()
		var lags []time.Duration
		late := 0
		for _, r := range recs {
			if r.Warmup || !r.sent() {
				continue
			}
			lags = append(lags, r.SentAt-r.ScheduledAt)
			if r.SentAt-r.ScheduledAt > DefaultLagBudget {
				late++
			}
		}
		var p99 time.Duration
		if n := len(lags); n > 0 {
			slices.Sort(lags)
			p99 = lags[int(math.Ceil(0.99*float64(n)))-1]
		}
		if sum.MeasuredSent != len(lags) || sum.ScheduleLagP99 != p99 || sum.ScheduleLate != late {
			t.Fatalf("iter %d: Summary measured sends %d, lag p99 %v, late %d; want %d, %v, %d",
				iter, sum.MeasuredSent, sum.ScheduleLagP99, sum.ScheduleLate, len(lags), p99, late)
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
		// two sends, both at lag: both late (flagged, p = 0.0001) or neither
		if _, _, got := ClientBoundFlag([]time.Duration{tc.lag, tc.lag}, tc.budget); got != tc.want {
			t.Errorf("ClientBoundFlag(2 × %v, %v) = %t, want %t", tc.lag, tc.budget, got, tc.want)
		}
	}
}

// TestClientBoundFlag: the figure is the nearest-rank p99 of the samples,
// always one of them (the largest below 100 samples, where no p99 is
// published), whatever their order; late counts the samples above the
// budget (the budget itself is not late); the flag is ClientBound of that
// count: more than 1 % late at 99 % confidence, so one late send among 4
// does not flag, three among 200 do not, and 150 among 200 do.
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
	if p99, late, bound := ClientBoundFlag(lags, 0); p99 != 198*us || late != 0 || bound {
		t.Errorf("200 samples: p99 %v late %d bound %t, want 198µs 0 false", p99, late, bound)
	}
	if !slices.Equal(lags, before) {
		t.Error("ClientBoundFlag reordered its input")
	}
	if p99, late, bound := ClientBoundFlag(lags, 197*us); p99 != 198*us || late != 3 || bound {
		t.Errorf("budget 197µs: p99 %v late %d bound %t, want 198µs 3 false (3 of 200: p = 0.32)", p99, late, bound)
	}
	if p99, late, bound := ClientBoundFlag(lags, 50*us); p99 != 198*us || late != 150 || !bound {
		t.Errorf("budget 50µs: p99 %v late %d bound %t, want 198µs 150 true", p99, late, bound)
	}
	// Below 100 samples the nearest-rank p99 is the largest; one late send
	// among 4 is shown (p = 0.039), not flagged; two are flagged (p = 0.0006).
	few := []time.Duration{300 * us, 2 * time.Millisecond, 100 * us, 200 * us}
	if p99, late, bound := ClientBoundFlag(few, 0); p99 != 2*time.Millisecond || late != 1 || bound {
		t.Errorf("4 samples: p99 %v late %d bound %t, want 2ms 1 false", p99, late, bound)
	}
	few[0] = time.Millisecond + us
	if _, late, bound := ClientBoundFlag(few, time.Millisecond); late != 2 || !bound {
		t.Errorf("4 samples, 2 late: late %d bound %t, want 2 true", late, bound)
	}
	if p99, late, bound := ClientBoundFlag(nil, 0); p99 != 0 || late != 0 || bound {
		t.Errorf("no samples: p99 %v late %d bound %t, want 0 0 false", p99, late, bound)
	}
}

// TestClientBoundThresholds: the exact binomial test at 99 % against a 1 %
// late share flags at the fewest late sends whose Binomial(n, 0.01) upper
// tail is below 1 % (2 of 30: P[X ≥ 2] = 0.036; 3 of 30: 0.0033).
func TestClientBoundThresholds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		late, n int
		want    bool
	}{
		{0, 30, false}, {1, 30, false}, {2, 30, false}, {3, 30, true},
		{4, 91, false}, {5, 91, true},
		{6, 220, false}, {7, 220, true},
		{1, 2, false}, {2, 2, true},
		{18, 1000, false}, {19, 1000, true},
		{5, 0, false},
	} {
		if got := ClientBound(tc.late, tc.n); got != tc.want {
			t.Errorf("ClientBound(%d, %d) = %t, want %t", tc.late, tc.n, got, tc.want)
		}
	}
}
