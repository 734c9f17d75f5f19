package report

import (
	"testing"
	"time"

	"github.com/transferlab/transferlab/loadgen"
)

const msD = time.Millisecond

// handRecords are four measured requests and one warm-up, with every figure
// worked out by hand in TestBuildCell.
func handRecords() []loadgen.Record {
	return []loadgen.Record{
		{ // warm-up: must not appear anywhere but WarmupRecords
			RequestID: 0, Warmup: true, State: loadgen.StateOK, ScheduledAt: 0, SentAt: 0,
			Events: []loadgen.TokenEvent{{At: 900 * msD, Tokens: 1}}, EndAt: 950 * msD, OutputTokens: 1, OutputTokensSource: "usage",
		},
		{ // reasoning first, then answer, one 2-token event; usage says 4 tokens
			RequestID: 1, State: loadgen.StateOK, ScheduledAt: 0, SentAt: 1 * msD, InputTokens: 10,
			Events: []loadgen.TokenEvent{{At: 11 * msD, Tokens: 1, Reasoning: true}, {At: 21 * msD, Tokens: 1}, {At: 41 * msD, Tokens: 2}},
			EndAt:  45 * msD, OutputTokens: 4, OutputTokensSource: "usage",
		},
		{ // one-token answer counted from events, usage mismatch flagged
			RequestID: 2, State: loadgen.StateOK, ScheduledAt: 100 * msD, SentAt: 100 * msD, InputTokens: 20,
			Events: []loadgen.TokenEvent{{At: 150 * msD, Tokens: 1}}, EndAt: 155 * msD, OutputTokens: 1, OutputTokensSource: "events", UsageMismatch: true,
		},
		{RequestID: 3, State: loadgen.StateHTTPError, ScheduledAt: 200 * msD, SentAt: 205 * msD, HTTPStatus: 503, InputTokens: 30},
		{RequestID: 4, State: loadgen.StateNotSent, ScheduledAt: 300 * msD, InputTokens: 40},
	}
}

func TestBuildCell(t *testing.T) {
	t.Parallel()
	// Window: first measured send 1 ms → last end 155 ms = 0.154 s.
	const windowS = 0.154
	c := BuildCell(handRecords(), CellOptions{Arm: "baseline", OfferedLoadRPS: 2, Confidence: 0.5, SLO: SLO{TTFTMs: 30}})

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
		near(t, "WindowS", c.WindowS, windowS, 1e-12)
		if c.OutputTokens != 5 || c.InputTokens != 100 {
			t.Errorf("OutputTokens, InputTokens = %d, %d; want 5, 100", c.OutputTokens, c.InputTokens)
		}
		near(t, "ThroughputTokPerS", c.ThroughputTokPerS, 5/windowS, 1e-9)
		// SLO TTFT ≤ 30 ms: request 1 (10 ms) meets, request 2 (50 ms) does not.
		near(t, "GoodputRPS", c.GoodputRPS, 1/windowS, 1e-9)
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
			d        Dist
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
				near(t, "mean", *tc.d.MeanMs, tc.mean, 1e-6)
				near(t, "max", *tc.d.MaxMs, tc.mx, 1e-6)
				if tc.d.P50Ms == nil {
					t.Fatal("p50 refused, want given")
				}
				near(t, "p50", *tc.d.P50Ms, tc.p50, 1e-6)
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
		slo  SLO
		good int
	}{
		{"none declared: every ok request is good", SLO{}, 2},
		{"TTFT 30 ms", SLO{TTFTMs: 30}, 1},
		{"TPOT 10 ms fails request 1 (11.3 ms); request 2 has no TPOT", SLO{TPOTMs: 10}, 1},
		{"TPOT 12 ms", SLO{TPOTMs: 12}, 2},
		{"E2E 50 ms", SLO{E2EMs: 50}, 1},
		{"TTFT 30 and E2E 40: none", SLO{TTFTMs: 30, E2EMs: 40}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := BuildCell(handRecords(), CellOptions{SLO: tc.slo})
			if c.GoodRequests != tc.good {
				t.Errorf("GoodRequests = %d, want %d", c.GoodRequests, tc.good)
			}
		})
	}
}

func TestBuildCellWindowEnd(t *testing.T) {
	t.Parallel()
	// A window ending at 100 ms leaves request 2 (ends 155 ms) outside.
	c := BuildCell(handRecords(), CellOptions{WindowEnd: 100 * msD})
	near(t, "WindowS", c.WindowS, 0.099, 1e-12)
	if c.OutputTokens != 4 {
		t.Errorf("OutputTokens = %d, want 4", c.OutputTokens)
	}
	empty := BuildCell(nil, CellOptions{})
	if empty.WindowS != 0 || empty.ThroughputTokPerS != 0 || empty.TTFT.MeanMs != nil || len(empty.States) != len(loadgen.States) {
		t.Errorf("empty cell: %+v", empty)
	}
}

func TestBuildDistLarge(t *testing.T) {
	t.Parallel()
	s := make([]float64, 1000)
	for i := range s {
		s[len(s)-1-i] = float64(i + 1) // descending: BuildDist must sort a copy
	}
	d := BuildDist(s, DefaultConfidence, 10)
	near(t, "mean", *d.MeanMs, 500.5, 1e-9)
	near(t, "p50", *d.P50Ms, 500, 0)
	near(t, "p90", *d.P90Ms, 900, 0)
	near(t, "p99", *d.P99Ms, 990, 0)
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
		at := time.Duration(i) * msD
		recs = append(recs, loadgen.Record{RequestID: i, State: loadgen.StateOK, SentAt: 0,
			Events: []loadgen.TokenEvent{{At: at, Tokens: 1}}, EndAt: at + msD, OutputTokens: 1})
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
			c := BuildCell(recs, CellOptions{SLO: SLO{TTFTMs: tc.targetMs, Percentile: 99}})
			if len(c.SLOClaims) != tc.wantClaims {
				t.Fatalf("%d claims, want %d (only declared targets)", len(c.SLOClaims), tc.wantClaims)
			}
			cl := c.SLOClaims[0]
			if cl.Metric != "ttft" || cl.N != 1010 || cl.Over != tc.over || cl.Holds != tc.holds {
				t.Errorf("claim %+v; want n=1010 over=%d holds=%v", cl, tc.over, tc.holds)
			}
			near(t, "p-value", cl.PValue, exactCDF(tc.over, 1010, 0.01), 1e-9)
		})
	}
	// Without timeouts and with a generous target the p99 claim holds: 0 over of 1000 ≥ 459.
	c := BuildCell(recs[:1000], CellOptions{SLO: SLO{TTFTMs: 2000}})
	if cl := c.SLOClaims[0]; !cl.Holds || cl.Over != 0 || cl.N != 1000 {
		t.Errorf("claim %+v, want holds with 0 over of 1000", cl)
	}
}
