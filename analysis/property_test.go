package analysis_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/analysis/analysistest"
	"github.com/transferlab/transferlab/report"

	"github.com/transferlab/transferlab/loadgen"
)

// randomRecords draws a record set with every state, warm-up records,
// reasoning and multi-token events, and missing ends.
func randomRecords(rng *rand.Rand) []loadgen.Record {
	n := rng.IntN(300)
	recs := make([]loadgen.Record, n)
	for i := range recs {
		r := loadgen.Record{RequestID: i, Warmup: rng.IntN(10) == 0, InputTokens: 1 + rng.IntN(50),
			ScheduledAt: time.Duration(rng.IntN(1e9)), State: loadgen.States[rng.IntN(len(loadgen.States))]}
		if r.State != loadgen.StateNotSent {
			r.SentAt = r.ScheduledAt + time.Duration(rng.IntN(1e6))
			at := r.SentAt
			for range rng.IntN(20) {
				at += time.Duration(1 + rng.IntN(5e7))
				r.Events = append(r.Events, loadgen.TokenEvent{At: at, Tokens: 1 + rng.IntN(2), Reasoning: rng.IntN(5) == 0})
			}
			if r.State == loadgen.StateOK || rng.IntN(2) == 0 {
				r.EndAt = at + time.Duration(1+rng.IntN(1e6))
			}
			r.OutputTokens = r.EventTokens()
			r.OutputTokensSource = loadgen.SourceEvents
		}
		recs[i] = r
	}
	return recs
}

// TestBuildCellInvariants checks, on 300 seeded random record sets, what
// holds for every input: nothing disappears from the state counts, sample
// counts match the records, percentiles are ordered, throughput × window is
// the output token count.
func TestBuildCellInvariants(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	for iter := range 300 {
		recs := randomRecords(rng)
		c := analysis.BuildCell(recs, analysis.CellOptions{SLO: report.SLO{TTFTMs: 500, TPOTMs: 20}, Confidence: 0.9})
		var measured, warm, ttftN, itlN, tpotN, okN int
		for i := range recs {
			r := &recs[i]
			if r.Warmup {
				warm++
				continue
			}
			measured++
			if r.State != loadgen.StateOK {
				continue
			}
			okN++
			if len(r.Events) > 0 {
				ttftN++
				itlN += len(r.Events) - 1
			}
			if _, ok := r.TPOT(); ok {
				tpotN++
			}
		}
		sum := 0
		for _, v := range c.States {
			sum += v
		}
		if sum != measured || len(c.States) != len(loadgen.States) || c.WarmupRecords != warm {
			t.Fatalf("iter %d: states %v sum %d, measured %d, warm-up %d/%d", iter, c.States, sum, measured, c.WarmupRecords, warm)
		}
		if c.TTFT.N != ttftN || c.ITL.N != itlN || c.TPOT.N != tpotN || c.GoodRequests > okN {
			t.Fatalf("iter %d: n TTFT %d/%d ITL %d/%d TPOT %d/%d good %d > ok %d", iter, c.TTFT.N, ttftN, c.ITL.N, itlN, c.TPOT.N, tpotN, c.GoodRequests, okN)
		}
		for _, d := range []report.Dist{c.TTFT, c.TTFTIntended, c.TTFO, c.ITL, c.TPOT, c.E2E, c.ScheduleLag} {
			prev := -1e300
			for _, v := range []*float64{d.P50Ms, d.P90Ms, d.P95Ms, d.P99Ms, d.P999Ms, d.MaxMs} {
				if v == nil {
					continue
				}
				if *v < prev {
					t.Fatalf("iter %d: percentiles out of order in %+v", iter, d)
				}
				prev = *v
			}
			if d.MeanMs != nil && *d.MeanMs > *d.MaxMs+1e-9 {
				t.Fatalf("iter %d: mean above max in %+v", iter, d)
			}
		}
		if c.WindowS != nil && *c.WindowS > 0 {
			analysistest.Near(t, "throughput × window", analysistest.Val(c.ThroughputTokPerS)*analysistest.Val(c.WindowS), c.WindowOutputTokens, 1e-6*(c.WindowOutputTokens+1))
		}
	}
}
