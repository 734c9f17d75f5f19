package experiment

import (
	"errors"
	"fmt"

	"github.com/transferlab/transferlab/analysis"
	"github.com/transferlab/transferlab/cost"
	"github.com/transferlab/transferlab/report"
	"github.com/transferlab/transferlab/telemetry"
)

// ExtraConfig holds the optional sections: decision rule, cost inputs and
// OpenTelemetry export.
type ExtraConfig struct {
	// Decision configures the acceptance rule (DESIGN.md "Arms, interleaving, statistics").
	Decision *DecisionConfig `yaml:"decision,omitempty"`
	// Cost holds the explicit price inputs; no price is built in.
	Cost *cost.Inputs `yaml:"cost,omitempty"`
	// OTel configures export to an observability stack (off by default).
	OTel telemetry.Config `yaml:"otel,omitempty"`
	// Resolution configures how the run measures its own resolution.
	Resolution ResolutionConfig `yaml:"resolution,omitempty"`
	// CapacitySearch, when declared, searches each arm's capacity at SLO
	// after the sweep (off without the block).
	CapacitySearch *CapacitySearchConfig `yaml:"capacity_search,omitempty"`
}

// ResolutionConfig is the `resolution` block.
type ResolutionConfig struct {
	// AAReplicate runs the baseline a second time in every block, as the
	// arm report.AAArm(baseline), interleaved like the arms, so the report
	// can put the run's own noise floor beside every ratio
	// (report.Resolution). Default true; false saves one cell per block and
	// leaves the resolution "not measured".
	AAReplicate *bool `yaml:"aa_replicate,omitempty"`
}

// aa reports whether the A/A replicate runs (default true).
func (r ResolutionConfig) aa() bool { return r.AAReplicate == nil || *r.AAReplicate }

// DecisionConfig is the `decision` block; it maps onto report.DecisionRule,
// whose fields document each one. Undeclared clauses never decide a verdict.
type DecisionConfig struct {
	Metric              string  `yaml:"metric,omitempty"`
	Percentile          float64 `yaml:"percentile,omitempty"`
	UseMean             bool    `yaml:"use_mean,omitempty"`
	RegressionMargin    float64 `yaml:"regression_margin,omitempty"`
	VRAMBudgetBytes     uint64  `yaml:"vram_budget_bytes,omitempty"`
	RequireValidation   bool    `yaml:"require_validation,omitempty"`
	RequireReproducible bool    `yaml:"require_reproducible,omitempty"`
	IntervalLevel       float64 `yaml:"interval_level,omitempty"`
	Resamples           int     `yaml:"resamples,omitempty"`
	// ExpectedResolution is the resolution (a fraction: ±x around a ratio of
	// 1) the run is expected to reach on the decision metric, e.g. a previous
	// run's A/A (results.json stats.resolution). Used only before the run, to
	// announce candidates whose Amdahl bound is below it; the run measures
	// its own. 0: unknown.
	ExpectedResolution float64 `yaml:"expected_resolution,omitempty"`
}

// rule converts the block to the report's rule; baseline is the first arm.
func (d *DecisionConfig) rule(baseline string, seed int64) report.DecisionRule {
	r := report.DecisionRule{Baseline: baseline, Seed: uint64(seed)}
	if d != nil {
		r.Metric, r.Percentile, r.UseMean = d.Metric, d.Percentile, d.UseMean
		r.RegressionMargin, r.VRAMBudgetBytes = d.RegressionMargin, d.VRAMBudgetBytes
		r.RequireValidation, r.RequireReproducible = d.RequireValidation, d.RequireReproducible
		r.IntervalLevel, r.Resamples = d.IntervalLevel, d.Resamples
	}
	return r.WithDefaults()
}

func (x ExtraConfig) validate() error {
	var errs []error
	if x.Decision != nil {
		if err := analysis.ValidateRule(x.Decision.rule("baseline", 1)); err != nil {
			errs = append(errs, fmt.Errorf("decision: %w", err))
		}
		if e := x.Decision.ExpectedResolution; !(e >= 0 && e < 1) {
			errs = append(errs, fmt.Errorf("decision.expected_resolution: %g: want a fraction in [0, 1) (0.005 is ±0.5 %%)", e))
		}
	}
	if x.Cost != nil {
		if err := x.Cost.Validate(); err != nil {
			errs = append(errs, err) // each names cost.<key>
		}
	}
	if err := x.OTel.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("otel: %w", err))
	}
	return errors.Join(errs...)
}
