package report

// Defaults of DecisionRule.
const (
	DefaultBaseline       = "baseline"
	DefaultRuleMetric     = "tpot"
	DefaultRulePercentile = 99.0
	DefaultIntervalLevel  = 0.95
	DefaultResamples      = 2000
	DefaultBootstrapSeed  = 1
	DefaultSLOPercentile  = 99.0
	VerdictPass           = "pass"
	VerdictFail           = "fail"
	VerdictInconclusive   = "inconclusive"
	// verdictNoDifference: no difference detectable at the run's resolution.
	VerdictNoDifference = "no difference"
	ClauseNotDeclared   = "not declared"
)

// DecisionRule is DESIGN.md's acceptance rule, as configured. Only declared
// clauses decide: a zero VRAMBudgetBytes, a false RequireValidation or
// RequireReproducible leaves that clause out. Zero values take the defaults.
type DecisionRule struct {
	// Baseline names the baseline arm (default "baseline"); every other arm is a candidate.
	Baseline string `json:"baseline"`
	// Metric is the SLO metric of clause (b): ttft, ttft_intended, ttfo, itl, tpot or e2e (default tpot).
	Metric string `json:"metric"`
	// Percentile of Metric per repetition: 50, 90, 95, 99 or 99.9 (default 99); 0 with
	// UseMean true takes the mean instead.
	Percentile float64 `json:"percentile"`
	UseMean    bool    `json:"use_mean,omitempty"`
	// RegressionMargin is the tolerated slowdown as a fraction (0.02 = 2 %; default 0):
	// (b) passes when the whole interval of candidate/baseline lies below 1 + margin,
	// fails when it lies above, and is inconclusive when it straddles it.
	RegressionMargin float64 `json:"regression_margin"`
	// VRAMBudgetBytes declares clause (c) when > 0: the candidate's peak VRAM must not exceed it.
	VRAMBudgetBytes uint64 `json:"vram_budget_bytes,omitempty"`
	// RequireValidation declares clause (a): a passing validation report covering every served shape.
	RequireValidation bool `json:"require_validation,omitempty"`
	// RequireReproducible declares clause (d): complete run, config and trace hashes recorded.
	RequireReproducible bool `json:"require_reproducible,omitempty"`
	// IntervalLevel is the two-sided bootstrap interval level (default 0.95).
	IntervalLevel float64 `json:"interval_level"`
	// Resamples is the bootstrap resample count (default 2000).
	Resamples int `json:"resamples"`
	// Seed seeds the bootstrap (default 1); recorded so intervals reproduce.
	Seed uint64 `json:"seed"`
	// Independent resamples the arms independently even when they ran the same
	// repetitions (set by Compare: two separate runs were not interleaved).
	// Default false: arms that ran the same repetitions are paired by repetition.
	Independent bool `json:"independent_arms,omitempty"`
}

// WithDefaults returns r with every zero field set to its stated default.
func (r DecisionRule) WithDefaults() DecisionRule {
	if r.Baseline == "" {
		r.Baseline = DefaultBaseline
	}
	if r.Metric == "" {
		r.Metric = DefaultRuleMetric
	}
	if r.Percentile == 0 && !r.UseMean {
		r.Percentile = DefaultRulePercentile
	}
	if r.IntervalLevel == 0 {
		r.IntervalLevel = DefaultIntervalLevel
	}
	if r.Resamples == 0 {
		r.Resamples = DefaultResamples
	}
	if r.Seed == 0 {
		r.Seed = DefaultBootstrapSeed
	}
	return r
}

// Verdict is the decision for one candidate, naming the clause that decided it.
type Verdict struct {
	Candidate string `json:"candidate"`
	Baseline  string `json:"baseline"`
	// Outcome is "pass", "fail", "inconclusive" or "no difference" (no
	// difference detectable at the run's resolution: the ratio lies within
	// the A/A noise floor or its interval contains 1, and the whole interval
	// is not above the limit; RegressionNotRuledOut says when its high end
	// reaches past the limit).
	Outcome string `json:"outcome"`
	// DecidingClause is "a", "b", "c" or "d" (DESIGN.md's clauses); Reason says why.
	DecidingClause string `json:"deciding_clause"`
	Reason         string `json:"reason"`
	// Summary is the verdict in one sentence a buyer reads (VerdictLine):
	// the outcome, the change on the decision metric with its interval at
	// the loads that decided it, the run's resolution, and the loads left out.
	Summary string         `json:"summary,omitempty"`
	Clauses []ClauseResult `json:"clauses"`
	// ClientBound is "N of M cells client-bound: their figures are suspect"
	// when any cell of the run is flagged Cell.ClientBound (ClientBoundNote);
	// "" when none is. VerdictLine and both reports print it with the verdict.
	ClientBound string `json:"client_bound,omitempty"`
	// RegressionNotRuledOut, on a pass or no-difference verdict, is the
	// largest regression (interval high end − 1, a fraction) a load read as
	// no difference leaves open because its interval's high end reaches the
	// limit L = max(1 + margin, 1 + resolution) or past it; the summary says
	// so. Nil when none does. A canary gate does not pass such a verdict.
	RegressionNotRuledOut *float64 `json:"regression_not_ruled_out,omitempty"`
}

// ClauseResult is one clause's outcome; Outcome is "not declared" when the config left it out.
type ClauseResult struct {
	Clause  string `json:"clause"`
	Name    string `json:"name"`
	Outcome string `json:"outcome"`
	Detail  string `json:"detail"`
}
