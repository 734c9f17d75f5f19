package analysis

import (
	"time"

	"github.com/transferlab/transferlab/loadgen"
)

// requestMetrics are one record's latencies; each ok flag says whether the
// metric is defined for the record.
type requestMetrics struct {
	ttft, ttftIntended, ttfo, tpot, e2e time.Duration
	ttftOK, ttfoOK, tpotOK, e2eOK       bool
	itls                                []time.Duration
	tokens                              int // output tokens
}

// measure collects one record's metrics through loadgen.Record's methods, so
// DESIGN.md's formulas (TTFT, TTFT intended, TTFO, E2E, ITL per gap, TPOT for
// output ≥ 2) are written once, in loadgen/record.go.
func measure(r *loadgen.Record) requestMetrics {
	var m requestMetrics
	m.ttft, m.ttftOK = r.TTFT()
	m.ttftIntended, _ = r.TTFTIntended()
	m.ttfo, m.ttfoOK = r.TTFO()
	m.e2e, m.e2eOK = r.E2E()
	m.tpot, m.tpotOK = r.TPOT()
	m.itls = r.ITLs()
	m.tokens = r.OutputTokens
	return m
}
