package report

import (
	"time"

	"github.com/transferlab/transferlab/loadgen"
)

// requestMetrics are one record's latencies by DESIGN.md's definitions; each
// ok flag says whether the metric is defined for the record.
type requestMetrics struct {
	ttft, ttftIntended, ttfo, tpot, e2e time.Duration
	ttftOK, ttfoOK, tpotOK, e2eOK       bool
	itls                                []time.Duration
}

// measure computes one record's metrics (DESIGN.md, "Metric definitions"):
// TTFT = first token-bearing event − SentAt (reasoning or answer text);
// TTFT intended = the same event − ScheduledAt; TTFO = first answer
// (non-reasoning) event − SentAt; E2E = EndAt − SentAt; ITL = one sample per
// gap between successive token-bearing events; TPOT = (E2E − TTFT) /
// (OutputTokens − 1) for OutputTokens ≥ 2.
func measure(r *loadgen.Record) requestMetrics {
	var m requestMetrics
	if len(r.Events) > 0 {
		m.ttft, m.ttftOK = r.Events[0].At-r.SentAt, true
		m.ttftIntended = r.Events[0].At - r.ScheduledAt
		for _, ev := range r.Events {
			if !ev.Reasoning {
				m.ttfo, m.ttfoOK = ev.At-r.SentAt, true
				break
			}
		}
		if len(r.Events) > 1 {
			m.itls = make([]time.Duration, 0, len(r.Events)-1)
			for i := 1; i < len(r.Events); i++ {
				m.itls = append(m.itls, r.Events[i].At-r.Events[i-1].At)
			}
		}
	}
	if r.EndAt > 0 {
		m.e2e, m.e2eOK = r.EndAt-r.SentAt, true
	}
	if m.ttftOK && m.e2eOK && r.OutputTokens >= 2 {
		m.tpot, m.tpotOK = (m.e2e-m.ttft)/time.Duration(r.OutputTokens-1), true
	}
	return m
}
