package loadgen

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/transferlab/transferlab/stats"
)

// Known failure classes of other serving benchmarks, each
// against a scripted server whose ground truth is recorded.

// stampAt converts a record offset to the server's clock.
func stampAt(sum Summary, d time.Duration) time.Time { return sum.Start.Add(d) }

func TestRoleOnlyChunkDoesNotStartTTFT(t *testing.T) {
	t.Parallel()
	ts := newTimedServer(t, func(string) []step {
		return []step{
			{0, chatDelta("role", "assistant")},
			{200 * time.Millisecond, chatDelta("content", "Hi")},
			{200 * time.Millisecond, usageDone(1)},
		}
	})
	rec, sum := replayOne(t, ts.URL, 1, WithEndpoint(EndpointChat))
	tr := ts.truth(rec.RequestID)
	ttft, ok := rec.TTFT()
	if !ok {
		t.Fatalf("TTFT undefined: %s", rec.Undefined(MetricTTFT))
	}
	within(t, "TTFT", ttft, tr.flushed[1].Sub(tr.arrived), tolDelivery)
	if ttft < 200*time.Millisecond {
		t.Errorf("TTFT %v < the scripted 200 ms: the role-only chunk was counted", ttft)
	}
	fm, _ := rec.FirstMessage()
	within(t, "first message", fm, tr.flushed[0].Sub(tr.arrived), tolDelivery)
	if stampAt(sum, rec.Events[0].At).Before(tr.writing[1]) {
		t.Errorf("token stamped before the server wrote it")
	}
}

func TestTTFTNeverLeaksIntoITL(t *testing.T) {
	t.Parallel()
	ts := newTimedServer(t, func(string) []step { return tokens(500*time.Millisecond, 10*time.Millisecond, 10) })
	rec, _ := replayOne(t, ts.URL, 10)
	tr := ts.truth(rec.RequestID)
	itl := rec.ITLs()
	if len(itl) != 9 {
		t.Fatalf("ITL samples = %d, want exactly 9", len(itl))
	}
	var span time.Duration
	for i, g := range itl {
		span += g
		if g > 400*time.Millisecond {
			t.Errorf("ITL[%d] = %v: the 500 ms TTFT leaked into ITL", i, g)
		}
	}
	within(t, "sum of ITLs", span, tr.flushed[9].Sub(tr.flushed[0]), tolDelivery)
	ttft, _ := rec.TTFT()
	if ttft < 500*time.Millisecond {
		t.Errorf("TTFT %v < scripted 500 ms", ttft)
	}
}

func TestMeanTPOTAndMeanITLDiffer(t *testing.T) {
	t.Parallel()
	// Request 0 (A): 100 tokens 10 ms apart; request 1 (B): 2 tokens 100 ms apart.
	ts := newTimedServer(t, func(id string) []step {
		if id == "0" {
			return tokens(0, 10*time.Millisecond, 100)
		}
		return tokens(0, 100*time.Millisecond, 2)
	})
	var sink SliceSink
	sum, err := Replay(context.Background(), urlServer{ts.URL}, schedule(2, 0, 4, 100), nil, &sink)
	if err != nil {
		t.Fatal(err)
	}
	var tpotSum, itlSum time.Duration
	var itlN int
	var truthTPOT, truthITL time.Duration
	for _, r := range sink.Records {
		tp, ok := r.TPOT()
		if !ok {
			t.Fatalf("request %d: TPOT undefined: %s", r.RequestID, r.Undefined(MetricTPOT))
		}
		tpotSum += tp
		for _, g := range r.ITLs() {
			itlSum += g
			itlN++
		}
		tr := ts.truth(r.RequestID)
		last := tr.flushed[len(tr.flushed)-1]
		truthTPOT += last.Sub(tr.flushed[0]) / time.Duration(r.OutputTokens-1)
		truthITL += tr.flushed[len(tr.flushed)-2].Sub(tr.flushed[0])
	}
	if itlN != 100 {
		t.Fatalf("ITL samples = %d, want 99 + 1", itlN)
	}
	meanTPOT, meanITL := tpotSum/2, itlSum/time.Duration(itlN)
	// Against the server's truth, with the delivery tolerance spread over the samples.
	within(t, "mean TPOT vs truth", meanTPOT, truthTPOT/2, tolDelivery)
	within(t, "mean ITL vs truth", meanITL, truthITL/100, tolDelivery)
	// Nominal values are (10 + 100)/2 = 55 ms and (99·10 + 100)/100 = 10.9 ms;
	// a loaded runner shifts single stamps by scheduler stalls (their match
	// with the server's truth is checked above), but cannot bring the
	// per-request mean (TPOT) near the per-gap mean (ITL).
	if meanTPOT < 3*meanITL {
		t.Errorf("mean TPOT %v vs mean ITL %v: want ≈ 55 ms vs ≈ 10.9 ms", meanTPOT, meanITL)
	}
	t.Logf("mean TPOT %v (nominal 55 ms), mean ITL %v (nominal 10.9 ms)", meanTPOT, meanITL)
	if got := sum.Hist.TPOT.TotalCount(); got != 2 {
		t.Errorf("TPOT histogram has %d samples, want 2", got)
	}
	if got := sum.Hist.ITL.TotalCount(); got != 100 {
		t.Errorf("ITL histogram has %d samples, want 100", got)
	}
}

func TestInFlightCapQueuesAndShowsInIntendedTTFT(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("2 s run; skipped under -short")
	}
	ts := newTimedServer(t, func(string) []step { return tokens(190*time.Millisecond, 0, 1) })
	const n = 40
	var sink SliceSink
	sum, err := Replay(context.Background(), urlServer{ts.URL}, schedule(n, 25*time.Millisecond, 4, 1), nil, &sink, WithMaxInFlight(4))
	if err != nil {
		t.Fatal(err)
	}
	if sum.States[StateOK] != n {
		t.Fatalf("states %v", sum.States)
	}
	ts.mu.Lock() // the reactor's raw syscalls give the race detector no happens-before through the socket
	maxOpen := ts.maxOpen
	ts.mu.Unlock()
	if maxOpen > 4 {
		t.Errorf("server saw %d concurrent requests with a cap of 4", maxOpen)
	}
	if sum.QueuedByCap == 0 || sum.Mode != "open-loop max_in_flight=4" {
		t.Errorf("queued by cap = %d, mode %q: the report must say the cap queued requests", sum.QueuedByCap, sum.Mode)
	}
	byID := make([]Record, n)
	for _, r := range sink.Records {
		byID[r.RequestID] = r
	}
	// TTFT from send stays flat: the median of the last 10 requests is
	// within tolDelivery of the first 10's (medians shrug off scheduler stalls).
	ttftQ := func(rs []Record) time.Duration {
		var d []float64
		for _, r := range rs {
			v, _ := r.TTFT()
			d = append(d, float64(v))
		}
		slices.Sort(d)
		return time.Duration(stats.NearestRank(d, 0.5))
	}
	early, late := ttftQ(byID[:10]), ttftQ(byID[n-10:])
	within(t, "median TTFT from send, last 10 vs first 10", late, early, tolDelivery)
	for _, r := range byID {
		if ttft, _ := r.TTFT(); ttft < 190*time.Millisecond {
			t.Errorf("request %d: TTFT %v below the server's 190 ms", r.RequestID, ttft)
		}
	}
	// 40 req/s against a capacity of 4/0.19 s ≈ 21 req/s: the backlog grows
	// by ≈ 0.9 s over the run, so the last request's intended TTFT is far above the first's.
	first, _ := byID[0].TTFTIntended()
	last, _ := byID[n-1].TTFTIntended()
	if last-first < 500*time.Millisecond {
		t.Errorf("TTFT (intended) first %v last %v: did not grow with the backlog", first, last)
	}
	if lag, _ := byID[n-1].ScheduleLag(); lag < 500*time.Millisecond || !byID[n-1].QueuedByCap {
		t.Errorf("last request lag %v queued %t", lag, byID[n-1].QueuedByCap)
	}
}

func TestWarmupStraddle(t *testing.T) {
	t.Parallel()
	// Request 0 is warm-up (due at 0, warm-up 100 ms) and streams 10 tokens
	// 20 ms apart; request 1 is due at 100 ms and streams 5 tokens 20 ms apart.
	ts := newTimedServer(t, func(id string) []step {
		if id == "0" {
			return tokens(0, 20*time.Millisecond, 10)
		}
		return tokens(0, 20*time.Millisecond, 5)
	})
	var sink SliceSink
	sum, err := Replay(context.Background(), urlServer{ts.URL}, schedule(2, 100*time.Millisecond, 4, 10), nil, &sink, WithWarmup(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var a, b Record
	for _, r := range sink.Records {
		if r.RequestID == 0 {
			a = r
		} else {
			b = r
		}
	}
	if !a.Warmup || b.Warmup {
		t.Fatalf("warm-up flags: %t %t", a.Warmup, b.Warmup)
	}
	if sum.WindowStart != b.SentAt || sum.WindowEnd != b.EndAt {
		t.Errorf("window [%v, %v], want [%v, %v]", sum.WindowStart, sum.WindowEnd, b.SentAt, b.EndAt)
	}
	want := 5
	for _, e := range a.Events {
		if e.At >= sum.WindowStart && e.At <= sum.WindowEnd {
			want++
		}
	}
	if want == 5 || want == 15 {
		t.Fatalf("scripted straddle failed: %d of request 0's tokens inside the window", want-5)
	}
	if sum.WindowOutputTokens != float64(want) {
		t.Errorf("tokens in window = %g, want %d (only events inside the window)", sum.WindowOutputTokens, want)
	}
	if got := sum.Hist.TTFT.TotalCount(); got != 1 {
		t.Errorf("TTFT histogram has %d samples, want 1 (warm-up excluded)", got)
	}
}

func TestReasoningThenTextAndCutStream(t *testing.T) {
	t.Parallel()
	ts := newTimedServer(t, func(id string) []step {
		if id == "0" {
			return []step{
				{0, chatDelta("role", "assistant")},
				{10 * time.Millisecond, chatDelta("reasoning_content", "hmm")},
				{2 * time.Second, chatDelta("content", "Yes")},
				{2 * time.Second, usageDone(2)},
			}
		}
		return []step{{0, chatDelta("role", "assistant")}, {5 * time.Millisecond, chatDelta("reasoning", "let")}} // then the connection closes
	})
	var sink SliceSink
	if _, err := Replay(context.Background(), urlServer{ts.URL}, schedule(2, 0, 4, 2), nil, &sink, WithEndpoint(EndpointChat)); err != nil {
		t.Fatal(err)
	}
	for _, r := range sink.Records {
		tr := ts.truth(r.RequestID)
		ttft, ok := r.TTFT()
		if !ok {
			t.Fatalf("request %d: TTFT undefined: %s", r.RequestID, r.Undefined(MetricTTFT))
		}
		within(t, "TTFT (first reasoning token)", ttft, tr.flushed[1].Sub(tr.arrived), tolDelivery)
		switch r.RequestID {
		case 0:
			ttfo, ok := r.TTFO()
			if !ok || r.State != StateOK {
				t.Fatalf("TTFO undefined (%s), state %s", r.Undefined(MetricTTFO), r.State)
			}
			within(t, "TTFO", ttfo, tr.flushed[2].Sub(tr.arrived), tolDelivery)
			if ttfo-ttft < 1500*time.Millisecond {
				t.Errorf("TTFO %v − TTFT %v: the 2 s of reasoning vanished", ttfo, ttft)
			}
		case 1:
			if r.State != StateStreamError {
				t.Errorf("cut stream ended %s", r.State)
			}
			if _, ok := r.TTFO(); ok || r.Undefined(MetricTTFO) == "" {
				t.Errorf("TTFO of a stream cut before any text must be undefined with a reason")
			}
			if r.Undefined(MetricE2E) == "" || r.Undefined(MetricTPOT) == "" {
				t.Errorf("E2E/TPOT of a cut stream must be undefined with a reason")
			}
		}
	}
}

func TestOneTokenResponse(t *testing.T) {
	t.Parallel()
	ts := newTimedServer(t, func(string) []step { return tokens(0, 0, 1) })
	rec, sum := replayOne(t, ts.URL, 1)
	if rec.OutputTokens != 1 || rec.State != StateOK {
		t.Fatalf("output tokens %d, state %s", rec.OutputTokens, rec.State)
	}
	if tp, ok := rec.TPOT(); ok {
		t.Errorf("TPOT = %v for a 1-token response, want undefined", tp)
	}
	if rec.Undefined(MetricTPOT) == "" {
		t.Errorf("TPOT undefined without a reason")
	}
	if sum.Hist.TPOT.TotalCount() != 0 || sum.Hist.TTFT.TotalCount() != 1 {
		t.Errorf("histograms: TPOT %d TTFT %d samples", sum.Hist.TPOT.TotalCount(), sum.Hist.TTFT.TotalCount())
	}
}
