package canary

import (
	"fmt"

	"github.com/transferlab/transferlab/analysis"
)

// Gate is what a canary gate (compare --exit-code) makes of a comparison.
type Gate string

// The gate's outcomes, in the order Comparison.Gate decides them.
const (
	// GateSameRun: A and B are one run (SameRun), so nothing was tested,
	// whatever the verdict says; the gate neither passes nor fails.
	GateSameRun Gate = "same run"
	// GateIncomplete: A or B did not complete (stopped by a deadline, a
	// signal or a failed stage); the gate decides nothing on part of a run.
	GateIncomplete Gate = "incomplete input"
	// GateFail: a verdict is fail (a regression beyond the margin and
	// beyond A's resolution).
	GateFail Gate = "fail"
	// GateInconclusive: a verdict is inconclusive, or passes or finds no
	// difference while leaving a regression open (RegressionNotRuledOut).
	GateInconclusive Gate = "inconclusive"
	// GatePass: every verdict passes, or finds no difference detectable at
	// A's resolution, with no regression beyond L = max(1 + margin, 1 +
	// resolution) left open.
	GatePass Gate = "pass"
)

// Gate decides c as a canary gate: GateSameRun first, then GateIncomplete,
// then the first verdict that is fail or inconclusive, or that passes or
// finds no difference with a regression not ruled out
// (report.Verdict.RegressionNotRuledOut: a no-difference interval whose
// high end reaches past L), else GatePass. The error says why the gate did
// not pass (nil for GatePass).
//
// Capacities decide no gate: a capacity gain, determined or not (an arm
// whose search missed only in client-bound probes has no capacity,
// analysis.SuspectCapacity), neither passes nor fails it.
//
// The gate is kept conservative: a report is read by a person, who reads
// "a regression up to 6.0 % is not ruled out" beside the NO DIFFERENCE; a
// gate's exit status is read by a script, which promotes the canary on 0.
// So the gate passes only what the rule passed before a no-difference
// interval could reach past L: a regression beyond the margin and the
// resolution ruled out at every load. One that is not ruled out is
// GateInconclusive (more repetitions narrow the interval).
func (c Comparison) Gate() (Gate, error) {
	if c.SameRun != "" {
		return GateSameRun, fmt.Errorf("compare: A and B are the same run (%s): the gate tested nothing; give it the production run as A and the canary's own run as B", c.SameRun)
	}
	if !c.Results.Complete {
		return GateIncomplete, fmt.Errorf("compare: an incomplete run cannot pass or fail a gate (%s): measure it to the end and compare again", c.Results.IncompleteReason)
	}
	for _, v := range c.Results.Verdicts {
		switch v.Outcome {
		case "fail":
			return GateFail, fmt.Errorf("compare: verdict %s", analysis.VerdictLine(v))
		case "inconclusive":
			return GateInconclusive, fmt.Errorf("compare: verdict %s", analysis.VerdictLine(v))
		}
		if r := v.RegressionNotRuledOut; r != nil {
			return GateInconclusive, fmt.Errorf("compare: a regression up to %.1f %% is not ruled out at A's resolution, so the gate does not pass (run more repetitions to narrow the interval): verdict %s", 100**r, analysis.VerdictLine(v))
		}
	}
	return GatePass, nil
}
