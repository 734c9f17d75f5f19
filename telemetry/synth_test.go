package telemetry

import (
	"time"

	"github.com/transferlab/transferlab/loadgen"
)

// truth is what a synthetic cell's records must produce, accumulated from
// the durations chosen while building them (not recomputed from the
// records), keyed by metric name.
type truth struct {
	count map[string]int
	sum   map[string]float64
	// requests counts records by final state and warm-up flag.
	requests map[stateWarmup]int
	// states counts records by final state, warm-up included.
	states map[loadgen.State]int
}

type stateWarmup struct {
	state  loadgen.State
	warmup bool
}

func newTruth() *truth {
	return &truth{count: map[string]int{}, sum: map[string]float64{}, requests: map[stateWarmup]int{}, states: map[loadgen.State]int{}}
}

func (t *truth) add(name string, v float64) {
	t.count[name]++
	t.sum[name] += v
}

// synthCell builds n records of one cell as loadgen would emit them, with a
// mix of every interesting case: warm-up (the first two), reasoning before
// the answer, multi-token events, HTTP errors, timeouts after some tokens and
// requests never sent. All offsets count from the cell's time zero.
func synthCell(arm string, loadRPS float64, rep, n int) ([]*loadgen.Record, *truth) {
	ms := time.Millisecond
	tr := newTruth()
	recs := make([]*loadgen.Record, 0, n)
	for i := range n {
		r := &loadgen.Record{
			RequestID: i, Arm: arm, OfferedLoad: loadRPS, Repetition: rep, SourceLine: 2 + i,
			Warmup: i < 2, InputTokens: 100 + i, RequestedOutputTokens: 8,
			ScheduledAt: time.Duration(i) * 100 * ms,
		}
		lag := time.Duration(i%7) * 50 * time.Microsecond
		measured := func(name string, d time.Duration) {
			if !r.Warmup {
				tr.add(name, d.Seconds())
			}
		}
		switch {
		case i%25 == 24:
			r.State = loadgen.StateNotSent
		case i%25 == 23:
			r.State, r.HTTPStatus, r.Error = loadgen.StateHTTPError, 503, "server overloaded"
			r.SentAt = r.ScheduledAt + lag
			measured(MetricScheduleLag, lag)
		case i%25 == 22:
			// Timeout after two single-token answer events: no end event.
			r.State, r.Error = loadgen.StateTimeout, "deadline exceeded"
			r.SentAt = r.ScheduledAt + lag
			ttfc, ttftD, gap := 20*ms, 25*ms, 12*ms
			r.FirstMessageAt = r.SentAt + ttfc
			r.Events = []loadgen.TokenEvent{{At: r.SentAt + ttftD, Tokens: 1}, {At: r.SentAt + ttftD + gap, Tokens: 1}}
			r.OutputTokens, r.OutputTokensSource = 2, "events"
			measured(MetricScheduleLag, lag)
			measured(MetricTimeToFirstChunk, ttfc)
			measured(MetricTTFT, ttftD)
			measured(MetricTTFTIntended, lag+ttftD)
			measured(MetricTTFO, ttftD)
			measured(MetricTimePerOutputChunk, gap)
		default:
			r.State = loadgen.StateOK
			r.SentAt = r.ScheduledAt + lag
			ttfc := 20*ms + time.Duration(i)*100*time.Microsecond
			ttftD := ttfc + 5*ms
			reasoning := 0
			if i%5 == 0 {
				reasoning = 2
			}
			nev := 3 + i%4
			at, out := ttftD, 0
			ttfoD := time.Duration(-1)
			for k := range nev {
				if k > 0 {
					gap := time.Duration(10+(i+k)%3) * ms
					at += gap
					measured(MetricTimePerOutputChunk, gap)
				}
				tokens := 1
				if k == 1 && i%6 == 0 {
					tokens = 2
				}
				isReasoning := k < reasoning
				if !isReasoning && ttfoD < 0 {
					ttfoD = at
				}
				r.Events = append(r.Events, loadgen.TokenEvent{At: r.SentAt + at, Tokens: tokens, Reasoning: isReasoning})
				out += tokens
			}
			end := at + ms
			r.FirstMessageAt = r.SentAt + ttfc
			r.EndAt = r.SentAt + end
			r.OutputTokens, r.OutputTokensSource, r.PromptTokens = out, "usage", r.InputTokens
			r.FinishReason = "length"
			measured(MetricScheduleLag, lag)
			measured(MetricTimeToFirstChunk, ttfc)
			measured(MetricTTFT, ttftD)
			measured(MetricTTFTIntended, lag+ttftD)
			measured(MetricTTFO, ttfoD)
			measured(MetricOperationDuration, end)
			if !r.Warmup {
				tr.add(MetricTPOT, (end-ttftD).Seconds()/float64(out-1))
			}
		}
		if r.State != loadgen.StateNotSent && !r.Warmup {
			tr.add(MetricTokenUsage+"/input", float64(r.InputTokens))
			tr.add(MetricTokenUsage+"/output", float64(r.OutputTokens))
		}
		tr.requests[stateWarmup{r.State, r.Warmup}]++
		tr.states[r.State]++
		recs = append(recs, r)
	}
	return recs, tr
}
