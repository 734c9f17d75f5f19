package canary

import "github.com/transferlab/transferlab/report"

// RuleFromA returns r with every decision-rule setting not given taken from
// rec, the rule recorded in A.json (the run's own config), so a comparison
// decides as the run did unless told otherwise. given reports whether a
// setting was given, asked by the names of compare's flags: metric,
// percentile, mean, margin, vram-budget-bytes, require-reproducible,
// interval, resamples, seed. A percentile given without mean asks for a
// percentile, whatever A decided on. With no recorded rule (rec nil) r is
// returned as it is.
func RuleFromA(r report.DecisionRule, rec *report.DecisionRule, given func(setting string) bool) report.DecisionRule {
	if rec == nil {
		return r
	}
	take := func(setting string, apply func()) {
		if !given(setting) {
			apply()
		}
	}
	take("metric", func() { r.Metric = rec.Metric })
	take("percentile", func() { r.Percentile = rec.Percentile })
	take("mean", func() { r.UseMean = rec.UseMean && !given("percentile") })
	take("margin", func() { r.RegressionMargin = rec.RegressionMargin })
	take("vram-budget-bytes", func() { r.VRAMBudgetBytes = rec.VRAMBudgetBytes })
	take("require-reproducible", func() { r.RequireReproducible = rec.RequireReproducible })
	take("interval", func() { r.IntervalLevel = rec.IntervalLevel })
	take("resamples", func() { r.Resamples = rec.Resamples })
	take("seed", func() { r.Seed = rec.Seed })
	return r
}
