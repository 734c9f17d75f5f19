package integrate

import (
	"strings"
	"testing"
)

// TestNegativeControlsExpectations: every control but the slow one must be
// rejected by a named gate on a named set.
func TestNegativeControlsExpectations(t *testing.T) {
	t.Parallel()
	for _, c := range NegativeControls() {
		if c.Function == "slow_forward" {
			if c.WantGate != "" {
				t.Errorf("slow_forward must pass")
			}
			continue
		}
		if c.WantGate == "" || (c.WantSet != "captured" && c.WantSet != "stress") {
			t.Errorf("%s: expectation %q on %q", c.Function, c.WantGate, c.WantSet)
		}
	}
	if got := SelectControls([]string{"slow_forward", "nope"}); len(got) != 1 || got[0].Function != "slow_forward" {
		t.Errorf("SelectControls = %+v", got)
	}
	if got := SelectControls(nil); len(got) != len(NegativeControls()) {
		t.Errorf("SelectControls(nil) = %d controls, want all", len(got))
	}
}

// TestControlJudge: a control is as expected only with the verdict and the
// reason (gate and set) it was built to produce; the slow one only when it
// passes slower.
func TestControlJudge(t *testing.T) {
	t.Parallel()
	rep := func(verdict, gate, set string, s float64) *ValidationReport {
		r := &ValidationReport{Verdict: verdict, FailedGate: gate, FailedSet: set}
		r.Speedup.S = &s
		return r
	}
	zeros := NegativeControl{"zeros_forward", "values", "captured"}
	slow := NegativeControl{"slow_forward", "", ""}
	cases := []struct {
		c    NegativeControl
		rep  *ValidationReport
		want bool
	}{
		{zeros, rep("fail", "values", "captured", 1), true},
		{zeros, rep("fail", "values", "stress", 1), false},    // right gate, wrong set
		{zeros, rep("fail", "nan_inf", "captured", 1), false}, // wrong reason
		{zeros, rep("pass", "", "", 1), false},                // a wrong kernel passed
		{slow, rep("pass", "", "", 0.07), true},
		{slow, rep("pass", "", "", 1.2), false}, // not slower: the timing is wrong
		{slow, rep("fail", "values", "captured", 0.07), false},
	}
	for i, tc := range cases {
		want, ok := tc.c.Judge(tc.rep)
		if ok != tc.want || want == "" {
			t.Errorf("case %d (%s on %+v): %q, %v; want %v", i, tc.c.Function, *tc.rep, want, ok, tc.want)
		}
	}
	noS := &ValidationReport{Verdict: "pass"}
	if _, ok := slow.Judge(noS); ok {
		t.Error("slow control without a measured s judged as expected")
	}
}

// TestValidateSummary: the summary names the command, target and captured
// set, and has one row per candidate with its s and whether it was expected.
func TestValidateSummary(t *testing.T) {
	t.Parallel()
	s := 6.47
	ok := &ValidationReport{Verdict: "pass", Reason: "every gate passed", CapturedSignatures: 9, CapturedCalls: 2340}
	ok.Speedup.S = &s
	bad := &ValidationReport{Verdict: "pass", Reason: "every gate passed"}
	res := &ValidateResult{Captured: "/o/captured-shapes.json", Rows: []ValidateRow{
		{Name: "triton", Want: "pass", Report: ok, AsExpected: true},
		{Name: "zeros_forward", Want: "fail: values on captured", Report: bad, AsExpected: false},
	}}
	v := Validate{Arm: "triton-rmsnorm", Override: Override{Target: "m:C.forward"}, Command: []string{"transferlab", "validate"}}
	got := v.summary(res)
	for _, want := range []string{"# Validation: triton-rmsnorm", "`transferlab validate`", "Target: `m:C.forward`",
		"`/o/captured-shapes.json` (9 signatures, 2340 calls)", "6.470", "n/a", "fail: values on captured"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if res.Unexpected() != 1 {
		t.Errorf("Unexpected = %d, want 1", res.Unexpected())
	}
}
