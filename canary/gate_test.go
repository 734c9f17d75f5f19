package canary

import (
	"strings"
	"testing"

	"github.com/transferlab/transferlab/report"
)

// TestGate: one run as A and B decides nothing before anything else, an
// incomplete input next, then the first verdict that fails or is
// inconclusive, or that leaves a regression open (a no-difference interval
// reaching past L); passing verdicts pass.
func TestGate(t *testing.T) {
	t.Parallel()
	verdicts := func(outcomes ...string) []report.Verdict {
		var vs []report.Verdict
		for _, o := range outcomes {
			vs = append(vs, report.Verdict{Outcome: o, Candidate: "B:c", Baseline: "A:b"})
		}
		return vs
	}
	open := 0.06
	for _, tc := range []struct {
		name string
		c    Comparison
		want Gate
		err  string
	}{
		{"pass", Comparison{Results: report.Results{Complete: true, Verdicts: verdicts("pass", "pass")}}, GatePass, ""},
		{"fail after pass", Comparison{Results: report.Results{Complete: true, Verdicts: verdicts("pass", "fail")}}, GateFail, "compare: verdict"},
		{"inconclusive first", Comparison{Results: report.Results{Complete: true, Verdicts: verdicts("inconclusive", "fail")}}, GateInconclusive, "compare: verdict"},
		{"incomplete beats fail", Comparison{Results: report.Results{IncompleteReason: "deadline", Verdicts: verdicts("fail")}}, GateIncomplete, "incomplete run cannot pass or fail a gate (deadline)"},
		{"no difference, nothing open", Comparison{Results: report.Results{Complete: true, Verdicts: verdicts("no difference", "pass")}}, GatePass, ""},
		{"no difference, a regression open", Comparison{Results: report.Results{Complete: true, Verdicts: []report.Verdict{
			{Outcome: "pass", Candidate: "B:c", Baseline: "A:b"},
			{Outcome: "no difference", Candidate: "B:c", Baseline: "A:b", RegressionNotRuledOut: &open},
		}}}, GateInconclusive, "a regression up to 6.0 % is not ruled out at A's resolution, so the gate does not pass"},
		{"same run beats all", Comparison{SameRun: "both created T", Results: report.Results{Verdicts: verdicts("fail")}}, GateSameRun, "A and B are the same run (both created T)"},
	} {
		g, err := tc.c.Gate()
		if g != tc.want {
			t.Errorf("%s: gate %q, want %q", tc.name, g, tc.want)
		}
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		}
	}
}
