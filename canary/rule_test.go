package canary

import (
	"slices"
	"testing"

	"github.com/transferlab/transferlab/report"
)

// TestRuleFromA: settings not given come from A's recorded rule, given ones
// stay, a percentile given alone turns A's mean off, and without a recorded
// rule nothing changes.
func TestRuleFromA(t *testing.T) {
	t.Parallel()
	rec := report.DecisionRule{Metric: "e2e", Percentile: 95, UseMean: true, RegressionMargin: 0.02, VRAMBudgetBytes: 1 << 30,
		RequireReproducible: true, IntervalLevel: 0.9, Resamples: 300, Seed: 7}
	givenOf := func(names ...string) func(string) bool {
		return func(s string) bool { return slices.Contains(names, s) }
	}
	cli := report.DecisionRule{Metric: "ttft", Percentile: 99, Resamples: 50}
	for _, tc := range []struct {
		name  string
		rec   *report.DecisionRule
		given []string
		want  report.DecisionRule
	}{
		{"nothing given: A's rule", &rec, nil, rec},
		{"metric and resamples given", &rec, []string{"metric", "resamples"},
			report.DecisionRule{Metric: "ttft", Percentile: 95, UseMean: true, RegressionMargin: 0.02, VRAMBudgetBytes: 1 << 30,
				RequireReproducible: true, IntervalLevel: 0.9, Resamples: 50, Seed: 7}},
		{"percentile alone asks for a percentile", &rec, []string{"percentile"},
			report.DecisionRule{Metric: "e2e", Percentile: 99, RegressionMargin: 0.02, VRAMBudgetBytes: 1 << 30,
				RequireReproducible: true, IntervalLevel: 0.9, Resamples: 300, Seed: 7}},
		{"no recorded rule", nil, nil, cli},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleFromA(cli, tc.rec, givenOf(tc.given...)); got != tc.want {
				t.Errorf("RuleFromA = %+v, want %+v", got, tc.want)
			}
		})
	}
}
