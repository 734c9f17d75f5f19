package analysis_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/stats"

	"github.com/transferlab/transferlab/loadgen"
	"github.com/transferlab/transferlab/traces"
)

func TestBuildCell(t *testing.T) {
	t.Parallel()
	// Window: first measured send 1 ms → last end 155 ms = 0.154 s.
	const windowS = 0.154
	c := analysis.BuildCell(analysistest.HandRecords(), analysis.CellOptions{Arm: "baseline", OfferedLoadRPS: 2, Confidence: 0.5, SLO: report.SLO{TTFTMs: 30}})

	t.Run("states", func(t *testing.T) {
		want := map[string]int{"ok": 2, "http_error": 1, "stream_error": 0, "timeout": 0, "cancelled": 0, "not_sent": 1}
		if len(c.States) != len(want) {
			t.Errorf("States has %d keys, want %d (every State, zeros included): %v", len(c.States), len(want), c.States)
		}
		for k, v := range want {
			if got, ok := c.States[k]; !ok || got != v {
				t.Errorf("States[%s] = %d (present %v), want %d", k, got, ok, v)
			}
		}
		if c.WarmupRecords != 1 {
			t.Errorf("WarmupRecords = %d, want 1", c.WarmupRecords)
		}
	})
	t.Run("window and rates", func(t *testing.T) {
		analysistest.Near(t, "WindowS", analysistest.Val(c.WindowS), windowS, 1e-12)
		if c.OutputTokens != 5 || c.InputTokens != 100 {
			t.Errorf("OutputTokens, InputTokens = %d, %d; want 5, 100", c.OutputTokens, c.InputTokens)
		}
		analysistest.Near(t, "ThroughputTokPerS", analysistest.Val(c.ThroughputTokPerS), 5/windowS, 1e-9)
		// SLO TTFT ≤ 30 ms: request 1 (10 ms) meets, request 2 (50 ms) does not.
		// Goodput is the measured arrival rate (4 requests scheduled over
		// 0.3 s: 3 / 0.3 s = 10 req/s) × the 1 of 4 measured requests that
		// met every SLO, not 1 / the window (whose drain would put it below
		// the arrival rate with every request good).
		analysistest.Near(t, "ArrivalRateRPS", analysistest.Val(c.ArrivalRateRPS), 10, 1e-9)
		analysistest.Near(t, "GoodputRPS", analysistest.Val(c.GoodputRPS), 2.5, 1e-9)
		if c.MultiTokenEvents != 1 || c.UsageMismatches != 1 {
			t.Errorf("MultiTokenEvents, UsageMismatches = %d, %d; want 1, 1", c.MultiTokenEvents, c.UsageMismatches)
		}
		if c.UsageSourceCounts["usage"] != 1 || c.UsageSourceCounts["events"] != 1 {
			t.Errorf("UsageSourceCounts = %v", c.UsageSourceCounts)
		}
	})
	t.Run("distributions", func(t *testing.T) {
		// At confidence 0.5 p50 needs 1 sample and p90 needs 7: p50 given, p90 refused.
		cases := []struct {
			name     string
			d        report.Dist
			n        int
			mean, mx float64
			p50      float64
		}{
			{"TTFT", c.TTFT, 2, 30, 50, 10},
			{"TTFT intended", c.TTFTIntended, 2, 30.5, 50, 11},
			{"TTFO", c.TTFO, 2, 35, 50, 20},
			{"ITL", c.ITL, 2, 15, 20, 10},
			{"TPOT", c.TPOT, 1, 34.0 / 3, 34.0 / 3, 34.0 / 3},
			{"E2E", c.E2E, 2, 49.5, 55, 44},
			{"schedule lag", c.ScheduleLag, 3, 2, 5, 1},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if tc.d.N != tc.n {
					t.Fatalf("N = %d, want %d", tc.d.N, tc.n)
				}
				analysistest.Near(t, "mean", *tc.d.MeanMs, tc.mean, 1e-6)
				analysistest.Near(t, "max", *tc.d.MaxMs, tc.mx, 1e-6)
				if tc.d.P50Ms == nil {
					t.Fatal("p50 refused, want given")
				}
				analysistest.Near(t, "p50", *tc.d.P50Ms, tc.p50, 1e-6)
				if tc.d.P90Ms != nil || tc.d.P99Ms != nil {
					t.Errorf("p90/p99 given with n=%d, want refused; Refused=%v", tc.d.N, tc.d.Refused)
				}
			})
		}
	})
}

func TestBuildCellSLOClauses(t *testing.T) {
	t.Parallel()
	// Only declared targets count; a TPOT target skips the 1-token request (no TPOT).
	cases := []struct {
		name string
		slo  report.SLO
		good int
	}{
		{"none declared: every ok request is good", report.SLO{}, 2},
		{"TTFT 30 ms", report.SLO{TTFTMs: 30}, 1},
		{"TPOT 10 ms fails request 1 (11.3 ms); request 2 has no TPOT", report.SLO{TPOTMs: 10}, 1},
		{"TPOT 12 ms", report.SLO{TPOTMs: 12}, 2},
		{"E2E 50 ms", report.SLO{E2EMs: 50}, 1},
		{"TTFT 30 and E2E 40: none", report.SLO{TTFTMs: 30, E2EMs: 40}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := analysis.BuildCell(analysistest.HandRecords(), analysis.CellOptions{SLO: tc.slo})
			if c.GoodRequests != tc.good {
				t.Errorf("GoodRequests = %d, want %d", c.GoodRequests, tc.good)
			}
		})
	}
}

func TestBuildCellWindow(t *testing.T) {
	t.Parallel()
	// Window: first measured send 10 ms (A) → last event of a measured
	// request 70 ms (C's end; B's last event is 35 ms) = 60 ms.
	// Tokens inside: W 20 ms (1×2) + 40 ms (2×2) = 6; A 2; B 3 (delivered
	// before its timeout); C 1; W's 5 ms and D's 80 ms events are outside = 12.
	// Ending ok requests only (the old report rule) would give A+C = 3.
	const windowS, tokens = 0.060, 12.0
	recs := analysistest.WindowRecords()
	c := analysis.BuildCell(recs, analysis.CellOptions{Confidence: 0.5})
	analysistest.Near(t, "WindowS", analysistest.Val(c.WindowS), windowS, 1e-12)
	analysistest.Near(t, "WindowOutputTokens", c.WindowOutputTokens, tokens, 1e-12)
	analysistest.Near(t, "ThroughputTokPerS", analysistest.Val(c.ThroughputTokPerS), tokens/windowS, 1e-9)
	wf := loadgen.Window(recs)
	if !wf.Measured || wf.Start != 10*analysistest.MsD || wf.End != 70*analysistest.MsD || wf.OutputTokens != c.WindowOutputTokens || wf.ThroughputTokPerS != analysistest.Val(c.ThroughputTokPerS) {
		t.Errorf("loadgen.Window = %+v; BuildCell window %g s, %g tokens, %g tok/s", wf, analysistest.Val(c.WindowS), c.WindowOutputTokens, analysistest.Val(c.ThroughputTokPerS))
	}
	if c.OutputTokens != 3 || c.MissingUsage != 1 || c.PromptMismatches != 1 || c.QueuedByCap != 1 || c.WarmupRecords != 2 {
		t.Errorf("OutputTokens %d MissingUsage %d PromptMismatches %d QueuedByCap %d WarmupRecords %d; want 3 1 1 1 2",
			c.OutputTokens, c.MissingUsage, c.PromptMismatches, c.QueuedByCap, c.WarmupRecords)
	}
	// Dispatch lag over A (0.5 ms) and B (2 ms); C was held by the cap.
	if c.DispatchLag.N != 2 || c.DispatchLag.MaxMs == nil || *c.DispatchLag.MaxMs != 2 {
		t.Fatalf("DispatchLag = %+v, want n=2, max 2 ms", c.DispatchLag)
	}

	t.Run("client-bound", func(t *testing.T) {
		// n = 2 cannot support a p99 at the default confidence; the flag
		// counts late sends (A 0.5 ms, B 2 ms) and tests their share
		// (loadgen.ClientBound: more than 1 % at 99 % confidence).
		cases := []struct {
			name   string
			budget time.Duration
			late   int
			want   bool
		}{
			{"default budget 1 ms (loadgen.DefaultLagBudget): 1 of 2 late, p = 0.02", 0, 1, false},
			{"budget 0.4 ms: 2 of 2 late", 400 * time.Microsecond, 2, true},
			{"budget 3 ms: none late", 3 * analysistest.MsD, 0, false},
			{"budget exactly the max: not above", 2 * analysistest.MsD, 0, false},
		}
		for _, tc := range cases {
			got := analysis.BuildCell(recs, analysis.CellOptions{ClientBoundLag: tc.budget})
			if got.DispatchLag.P99Ms != nil {
				t.Fatalf("p99 given with n=2: %+v", got.DispatchLag)
			}
			if got.ClientBound != tc.want || got.DispatchLateSends != tc.late {
				t.Errorf("%s: ClientBound = %t, late %d; want %t, %d", tc.name, got.ClientBound, got.DispatchLateSends, tc.want, tc.late)
			}
		}
		// A 5 ms schedule lag with a punctual dispatch (a server slow to
		// accept) is not the client's fault.
		slow := analysistest.WindowRecords()[:2]
		slow[1].SentAt = slow[1].ScheduledAt + 5*analysistest.MsD
		if got := analysis.BuildCell(slow, analysis.CellOptions{}); got.ClientBound || *got.ScheduleLag.MaxMs != 5 {
			t.Errorf("schedule lag 5 ms, dispatch lag 0.5 ms: ClientBound %t, schedule lag max %v", got.ClientBound, *got.ScheduleLag.MaxMs)
		}
	})

	empty := analysis.BuildCell(nil, analysis.CellOptions{})
	if empty.WindowS != nil || empty.ThroughputTokPerS != nil || empty.GoodputRPS != nil || empty.ArrivalRateRPS != nil || empty.NotMeasured != analysis.NoMeasuredRequestSent ||
		empty.TTFT.MeanMs != nil || empty.ClientBound || len(empty.States) != len(loadgen.States) {
		t.Errorf("empty cell: %+v", empty)
	}
}

func TestBuildDistLarge(t *testing.T) {
	t.Parallel()
	s := make([]float64, 1000)
	for i := range s {
		s[len(s)-1-i] = float64(i + 1) // descending: BuildDist must sort a copy
	}
	d := analysis.BuildDist(s, stats.DefaultConfidence, 10)
	analysistest.Near(t, "mean", *d.MeanMs, 500.5, 1e-9)
	analysistest.Near(t, "p50", *d.P50Ms, 500, 0)
	analysistest.Near(t, "p90", *d.P90Ms, 900, 0)
	analysistest.Near(t, "p99", *d.P99Ms, 990, 0)
	if d.P999Ms != nil || len(d.Refused) != 1 || d.Refused[0] != "p99.9" {
		t.Errorf("p99.9 with n=1000 at 99%%: got %v, Refused %v; want refused (needs 4603)", d.P999Ms, d.Refused)
	}
	if s[0] != 1000 {
		t.Error("BuildDist modified its input")
	}
	if len(d.CDF) != 10 || d.CDF[9].Ms != 1000 || d.CDF[0].Ms != 100 {
		t.Errorf("CDF = %v", d.CDF)
	}
}

func TestBuildCellSLOClaims(t *testing.T) {
	t.Parallel()
	// 1000 ok requests with TTFT i ms (i = 1..1000) and 10 timeouts. SLO: TTFT p99 ≤ 995 ms.
	// Over target: 5 (996..1000) + 10 timeouts = 15 of n = 1010. The claim holds
	// when P(Binomial(1010, 0.01) ≤ 15) ≤ 0.01; its mean is 10.1, so 15 is far too many.
	var recs []loadgen.Record
	for i := 1; i <= 1000; i++ {
		at := time.Duration(i) * analysistest.MsD
		recs = append(recs, loadgen.Record{RequestID: i, State: loadgen.StateOK, SentAt: 0,
			Events: []loadgen.TokenEvent{{At: at, Tokens: 1}}, EndAt: at + analysistest.MsD, OutputTokens: 1})
	}
	for i := range 10 {
		recs = append(recs, loadgen.Record{RequestID: 2000 + i, State: loadgen.StateTimeout})
	}
	recs = append(recs, loadgen.Record{RequestID: 3000, State: loadgen.StateNotSent})
	cases := []struct {
		name       string
		targetMs   float64
		over       int
		holds      bool
		wantClaims int
	}{
		{"995 ms: 15 over, refused", 995, 15, false, 1},
		{"2000 ms: only the 10 timeouts over: still refused", 2000, 10, false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := analysis.BuildCell(recs, analysis.CellOptions{SLO: report.SLO{TTFTMs: tc.targetMs, Percentile: 99}})
			if len(c.SLOClaims) != tc.wantClaims {
				t.Fatalf("%d claims, want %d (only declared targets)", len(c.SLOClaims), tc.wantClaims)
			}
			cl := c.SLOClaims[0]
			if cl.Metric != "ttft" || cl.N != 1010 || cl.Over != tc.over || cl.Holds != tc.holds {
				t.Errorf("claim %+v; want n=1010 over=%d holds=%v", cl, tc.over, tc.holds)
			}
			analysistest.Near(t, "p-value", cl.PValue, exactCDF(tc.over, 1010, 0.01), 1e-9)
		})
	}
	// Without timeouts and with a generous target the p99 claim holds: 0 over of 1000 ≥ 459.
	c := analysis.BuildCell(recs[:1000], analysis.CellOptions{SLO: report.SLO{TTFTMs: 2000}})
	if cl := c.SLOClaims[0]; !cl.Holds || cl.Over != 0 || cl.N != 1000 {
		t.Errorf("claim %+v, want holds with 0 over of 1000", cl)
	}
}

// scriptedSSE serves per-request scripted streams (X-Request-Id picks the
// script): n token events gap apart from arrival, then a usage chunk
// claiming usageOut completion tokens (none when usageOut < 0) and
// prompt_tokens prompt, then [DONE].
type sseScript struct {
	n, usageOut, prompt int
	gap                 time.Duration
}

func scriptedSSE(t *testing.T, scripts map[string]sseScript) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		sc, ok := scripts[r.Header.Get(loadgen.RequestIDHeader)]
		if !ok {
			http.Error(w, "no script", http.StatusNotFound)
			return
		}
		arrived := time.Now()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for k := range sc.n {
			time.Sleep(time.Until(arrived.Add(time.Duration(k) * sc.gap))) // absolute deadlines: no drift
			_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"text":"t","finish_reason":null}]}`+"\n\n")
			fl.Flush()
		}
		if sc.usageOut >= 0 {
			fmt.Fprintf(w, `data: {"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`+"\n\n", sc.prompt, sc.usageOut, sc.prompt+sc.usageOut)
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		fl.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv
}

type urlServer string

func (u urlServer) BaseURL() string                 { return string(u) }
func (u urlServer) Ready(ctx context.Context) error { return ctx.Err() }

// TestSummaryAndBuildCellAgree runs a scripted open-loop replay and checks
// that the live Summary and BuildCell over the same records (what a
// re-report from records.jsonl does) give one throughput and one window
// (both take the client-bound flag from loadgen.ClientBoundFlag). The run has two warm-up requests straddling the
// window start, a usage/event mismatch, a stream without usage and a
// prompt-length mismatch; the expected window tokens are also recomputed
// from the raw events, independently of loadgen.Window.
func TestSummaryAndBuildCellAgree(t *testing.T) {
	t.Parallel()
	const warmup = 200 * time.Millisecond
	// Due at 0 and 100 ms (warm-up: before 200 ms), then 200, 300, 400,
	// 500 ms. Warm-ups stream 10 events 40 ms apart, so they straddle the
	// window start by 200 ms each way: a host stall shorter than that
	// (a loaded CI box) keeps the straddle.
	scripts := map[string]sseScript{
		"0": {n: 10, gap: 40 * time.Millisecond, usageOut: 10, prompt: 4},
		"1": {n: 10, gap: 40 * time.Millisecond, usageOut: 20, prompt: 4}, // usage 2× events
		"2": {n: 4, gap: 20 * time.Millisecond, usageOut: 8, prompt: 4},   // usage 2× events
		"3": {n: 5, gap: 20 * time.Millisecond, usageOut: -1},             // no usage
		"4": {n: 5, gap: 20 * time.Millisecond, usageOut: 5, prompt: 99},  // prompt mismatch
		"5": {n: 5, gap: 20 * time.Millisecond, usageOut: 5, prompt: 4},
	}
	srv := scriptedSSE(t, scripts)
	sched := traces.Schedule{Source: "test", Format: "synthetic"}
	for i := range 6 {
		sched.Requests = append(sched.Requests, traces.Request{ID: i, Offset: time.Duration(i) * 100 * time.Millisecond, InputTokens: 4, OutputTokens: 10})
	}
	var sink loadgen.SliceSink
	sum, err := loadgen.Replay(context.Background(), urlServer(srv.URL), sched, nil, &sink, loadgen.WithWarmup(warmup))
	if err != nil {
		t.Fatal(err)
	}
	if sum.States[loadgen.StateOK] != 6 {
		t.Fatalf("states %v: the scripted run needs 6 ok requests", sum.States)
	}

	// Ground truth from the raw records: every token event inside
	// [first measured send, last measured event], weighted by usage/events.
	var start, end time.Duration
	first := true
	for _, r := range sink.Records {
		if r.Warmup {
			continue
		}
		if first || r.SentAt < start {
			start = r.SentAt
		}
		end = max(end, r.EndAt, r.Events[len(r.Events)-1].At)
		first = false
	}
	var want float64
	var warmIn, warmOut int
	for _, r := range sink.Records {
		w := 1.0
		if r.OutputTokensSource == loadgen.SourceUsage {
			w = float64(r.OutputTokens) / float64(r.EventTokens())
		}
		for _, e := range r.Events {
			if e.At >= start && e.At <= end {
				want += w * float64(e.Tokens)
				if r.Warmup {
					warmIn++
				}
			} else if r.Warmup {
				warmOut++
			}
		}
	}
	if warmIn == 0 || warmOut == 0 {
		t.Fatalf("scripted straddle failed: warm-up events inside %d, outside %d (window %v–%v)", warmIn, warmOut, start, end)
	}

	c := analysis.BuildCell(sink.Records, analysis.CellOptions{})
	if sum.WindowStart != start || sum.WindowEnd != end {
		t.Errorf("Summary window [%v, %v], want [%v, %v]", sum.WindowStart, sum.WindowEnd, start, end)
	}
	analysistest.Near(t, "Summary.WindowOutputTokens", sum.WindowOutputTokens, want, 1e-9)
	analysistest.Near(t, "Cell.WindowOutputTokens", c.WindowOutputTokens, want, 1e-9)
	analysistest.Near(t, "Cell.WindowS", analysistest.Val(c.WindowS), (end - start).Seconds(), 1e-12)
	if sum.ThroughputTokPerS <= 0 {
		t.Fatalf("Summary throughput %g", sum.ThroughputTokPerS)
	}
	analysistest.Near(t, "Cell/Summary throughput", analysistest.Val(c.ThroughputTokPerS)/sum.ThroughputTokPerS, 1, 1e-12)
	t.Logf("window %v–%v: %g tokens (warm-up events inside %d, outside %d); throughput Summary %.4f, Cell %.4f tok/s; dispatch-lag p99 Summary %v, Cell max %v ms",
		start, end, want, warmIn, warmOut, sum.ThroughputTokPerS, analysistest.Val(c.ThroughputTokPerS), sum.DispatchLagP99, *c.DispatchLag.MaxMs)
	if sum.MissingUsage != c.MissingUsage || c.MissingUsage != 1 || sum.PromptMismatches != c.PromptMismatches || c.PromptMismatches != 1 {
		t.Errorf("missing usage %d/%d, prompt mismatches %d/%d (Summary/Cell); want 1 each", sum.MissingUsage, c.MissingUsage, sum.PromptMismatches, c.PromptMismatches)
	}
}

// TestClientBoundRuleText: the rule in words carries loadgen's constants
// (1 %, 99 %) and the default budget (1 ms), as every report and console line
// that names it prints it.
func TestClientBoundRuleText(t *testing.T) {
	t.Parallel()
	const want = "more than 1 % of the cell's sends left the client more than 1.00 ms late, at 99 % confidence"
	if got := analysis.ClientBoundRule(); got != want {
		t.Errorf("ClientBoundRule() = %q, want %q", got, want)
	}
}
