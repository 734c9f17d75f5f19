package report

// Estimate is a point estimate over repetitions with its bootstrap interval.
// Interval is false (Low = High = Value) when fewer than two repetitions
// support it; Note then says why.
type Estimate struct {
	Value float64 `json:"value"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	Reps  int     `json:"reps"`
	// Requests is the number of request pairs a per-request estimate
	// (pairedRatio) was made from; 0 for estimates over repetitions.
	Requests int    `json:"requests,omitempty"`
	Interval bool   `json:"interval"`
	Note     string `json:"note,omitempty"`
	// Unit is Value's unit ("req/s"), for an estimate whose unit its name
	// does not already say; "" otherwise.
	Unit string `json:"unit,omitempty"`
	// Derived, when set, says how Value was computed from other figures of
	// the results rather than over repetitions (a capacity search's point
	// capacity: "√(pass_rps·fail_rps)"); such a Value is written whatever
	// Reps.
	Derived string `json:"derived,omitempty"`
}

// Stats holds statistics over repetitions, computed by Analyze.
type Stats struct {
	// Method names the estimator and interval (e.g. "mean over repetitions;
	// percentile bootstrap, 2000 resamples, 95 %, seed 1").
	Method string      `json:"method"`
	Cells  []CellStats `json:"cells"`
	Ratios []Ratio     `json:"ratios,omitempty"`
	// Resolution is the run's noise floor per load and metric statistic,
	// from the baseline's A/A replicate (AAArm); empty when the run had none.
	Resolution []Resolution `json:"resolution,omitempty"`
	// ResolutionMethod says how Resolution and the widened intervals are computed.
	ResolutionMethod string         `json:"resolution_method,omitempty"`
	Capacity         []Capacity     `json:"capacity,omitempty"`
	CapacityGain     []CapacityGain `json:"capacity_gain,omitempty"`
	// CapacityNotMeasured says why capacity is absent (e.g. no SLO declared).
	CapacityNotMeasured string `json:"capacity_not_measured,omitempty"`
	// CapacitySuperseded, when set, says that the run's capacity answer is
	// its search's (results.json capacity_search, whose probes include the
	// swept loads): Capacity and CapacityGain, the swept loads' reading,
	// are then left out, so the file gives one capacity answer.
	CapacitySuperseded string `json:"capacity_superseded,omitempty"`
}

// CellStats are one arm × offered load's figures over its repetitions.
type CellStats struct {
	Arm            string       `json:"arm"`
	OfferedLoadRPS float64      `json:"offered_load_rps"`
	Reps           int          `json:"reps"`
	Metrics        []MetricStat `json:"metrics"`
}

// MetricStat is one metric statistic (ms for latencies, tok/s, req/s) over repetitions.
type MetricStat struct {
	Metric string   `json:"metric"`
	Stat   string   `json:"stat"`
	Unit   string   `json:"unit"`
	Value  Estimate `json:"value"`
	// Refused counts repetitions whose sample size could not support Stat.
	Refused int `json:"refused_reps,omitempty"`
}

// Ratio is candidate/baseline of one metric statistic at one load (< 1: candidate lower).
type Ratio struct {
	Candidate      string  `json:"candidate"`
	Baseline       string  `json:"baseline"`
	OfferedLoadRPS float64 `json:"offered_load_rps"`
	Metric         string  `json:"metric"`
	Stat           string  `json:"stat"`
	// Value is the ratio with its interval: request by request when both
	// cells kept per-request figures (Estimate.Requests > 0), over
	// repetitions otherwise; widened by the run-to-run spread of the blocks
	// (stats.resolution's run_to_run) when one was pooled.
	Value Estimate `json:"value"`
	// Resolution is the run's resolution for this metric statistic at this
	// load (a fraction: ±Resolution around 1); nil when not measured.
	Resolution *float64 `json:"resolution,omitempty"`
	// Excluded says why the ratio feeds no verdict (client-bound cells
	// leaving fewer than 2 blocks); the ratio is still shown, labelled.
	Excluded string `json:"excluded,omitempty"`
	// LeftOut names the cells ("gate-up-2x rep 2") whose blocks
	// (repetitions) were left out of Value because the cell was client-bound;
	// the ratio is of the other blocks ("" when none was left out).
	LeftOut string `json:"left_out,omitempty"`
}

// Capacity is one arm's capacity at SLO: the highest swept load whose
// repetitions meet every declared SLO at the SLO percentile.
type Capacity struct {
	Arm string `json:"arm"`
	// CapacityRPS is the mean over repetitions of each repetition's highest
	// passing load, with its interval. When every repetition met the SLOs at
	// the arm's highest measured load it is a lower bound (Derived says so:
	// that load, no interval, a Note saying so);
	// when every repetition gave the same load there is no interval either
	// (a zero-width one would say the swept loads pinned it down).
	CapacityRPS Estimate `json:"capacity_rps"`
	// NextLoadRPS is the lowest measured load above the capacity (0, null in
	// JSON, when the highest measured load passed):
	// the true capacity lies between the two at the sweep's resolution.
	NextLoadRPS float64 `json:"next_load_rps"`
	// NotMeasuredRPS are loads the run planned for this arm (RunOrder) above
	// the capacity and below NextLoadRPS that have no complete cell (an
	// incomplete run): the capacity may lie among them.
	NotMeasuredRPS []float64 `json:"planned_not_measured_rps,omitempty"`
	// PerRepRPS are the repetitions' capacities.
	PerRepRPS []float64 `json:"per_rep_rps"`
	Detail    string    `json:"detail,omitempty"`
}

// CapacityGain is candidate capacity / baseline capacity: the buyer's headline.
type CapacityGain struct {
	Candidate string   `json:"candidate"`
	Baseline  string   `json:"baseline"`
	Gain      Estimate `json:"gain"`
}

// Resolution is this run's noise floor for one metric statistic at one
// offered load: the A/A replicate against the baseline, compared as the
// candidates are.
type Resolution struct {
	OfferedLoadRPS float64 `json:"offered_load_rps"`
	Metric         string  `json:"metric"`
	Stat           string  `json:"stat"`
	// AA is A/A replicate / baseline with its interval (ideally 1).
	AA Estimate `json:"aa"`
	// PlusMinus is the resolution as a fraction: the farther end of AA's
	// interval from 1, max(|AA.Low − 1|, |AA.High − 1|). A candidate/baseline
	// ratio within 1 ± PlusMinus is no difference this run can detect.
	// Nil when the A/A comparison has no interval (AA.Note says why).
	PlusMinus *float64 `json:"plus_minus"`
	// RunToRun is the run-to-run half-width every ratio at this load and
	// statistic is widened by, as a fraction (exp(h) − 1 of an arm with as
	// many blocks as the A/A replicate), from RunToRunDF degrees of freedom
	// pooled over the blocks; nil when none was pooled (1 repetition, no A/A).
	RunToRun   *float64 `json:"run_to_run,omitempty"`
	RunToRunDF int      `json:"run_to_run_df,omitempty"`
	// Excluded says why the A/A comparison is suspect (client-bound cells
	// leaving fewer than 2 blocks).
	Excluded string `json:"excluded,omitempty"`
	// LeftOut names the cells whose blocks were left out of AA because the
	// cell was client-bound, as Ratio.LeftOut.
	LeftOut string `json:"left_out,omitempty"`
}
