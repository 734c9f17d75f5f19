package report

import "math"

// CapacitySearch is results.json's "capacity_search": each arm's capacity at
// SLO found by searching the offered load (DESIGN.md "Capacity at SLO"),
// each candidate's capacity gain, and the cost at capacity. Absent from
// results written before the search existed and from runs that declared no
// search; the schema version is unchanged (an optional section).
type CapacitySearch struct {
	// Method says how loads were chosen and how the interval was computed.
	Method string `json:"method"`
	// SLO is what each probe is judged against (targets in ms, percentile).
	SLO SLO `json:"slo"`
	// RelativePrecision: the search stops when fail/pass − 1 ≤ this.
	RelativePrecision float64 `json:"relative_precision"`
	// MinRPS and MaxRPS bound the loads probed (req/s).
	MinRPS float64 `json:"min_rps"`
	MaxRPS float64 `json:"max_rps"`
	// ProbeDurationS and ProbeWarmupS are each search probe's measured span
	// and its unmeasured warm-up span of arrivals (s).
	ProbeDurationS float64 `json:"probe_duration_s"`
	ProbeWarmupS   float64 `json:"probe_warmup_s"`
	// ProbeWindow, when set, is what each probe replays instead of a span
	// of ProbeWarmupS + ProbeDurationS (trace mode: the whole trace).
	ProbeWindow string `json:"probe_window,omitempty"`
	// Concurrent: the arms were searched at once, each on a server of its
	// own (capacity_search.concurrent_arms).
	Concurrent bool `json:"concurrent,omitempty"`
	// ArmBudgetS and BudgetS are the wall-time budgets per arm and for the
	// whole search (s; 0: none).
	ArmBudgetS float64 `json:"arm_budget_s,omitempty"`
	BudgetS    float64 `json:"budget_s,omitempty"`
	// Level is the confidence level of each arm's capacity interval (0.95).
	Level float64       `json:"level"`
	Arms  []CapacityArm `json:"arms"`
	// Gains are each candidate's capacity over the baseline's.
	Gains []CapacitySearchGain `json:"gains,omitempty"`
	// NotRun says why the search did not run (the arms are then empty).
	NotRun string `json:"not_run,omitempty"`
	// Interrupted, when the run ended during the search (a signal, the
	// run deadline), says so: by what, after how many search probes, each
	// arm's bracket so far (Arms holds the arms reached, Gains is then
	// empty), and how `run --resume` finishes it.
	Interrupted string `json:"interrupted,omitempty"`
}

// CapacityArm is one arm's searched capacity at SLO.
type CapacityArm struct {
	Arm string `json:"arm"`
	// Probes are the loads measured for this arm: the sweep's cells
	// (source "sweep") and the search's own replays (source "search").
	Probes []CapacityProbe `json:"probes"`
	// PassRPS is the highest load that met the SLO below every load that
	// missed it (0: none met); FailRPS is the lowest load that missed it
	// (0: none missed). Point outcomes, pooled per load.
	PassRPS float64 `json:"pass_rps"`
	FailRPS float64 `json:"fail_rps"`
	// CapacityRPS is the capacity (req/s): the geometric midpoint of
	// [PassRPS, FailRPS] (PassRPS alone when nothing missed: a lower bound),
	// with its interval (Low, High; DESIGN.md) and a Note when a figure is
	// a bound, unknown, or not bracketed to the precision.
	CapacityRPS Estimate `json:"capacity_rps"`
	// Stopped says why the search of this arm ended: "bracketed" (to the
	// precision), "max_rps" (the arm met the SLO at max_rps), "min_rps" (it
	// missed at min_rps), "budget: <config field>" (that budget ran out), or
	// "interrupted (<cause>)" (the run ended during its search).
	Stopped string `json:"stopped"`
	// ElapsedS is the wall time the arm's search probes took (s).
	ElapsedS float64 `json:"elapsed_s"`
	// Cost is the cost per 1M output tokens at PassRPS (nil: no cost inputs
	// or no passing load).
	Cost *CapacityCost `json:"cost,omitempty"`
	// SimTruth is the simulator's sustained capacity at the SLO for this
	// arm (nil for another server kind).
	SimTruth *CapacityTruth `json:"sim_truth,omitempty"`
	// SuspectFailEnd: the bracket's fail end rests on suspect probes only
	// (client-bound ones whose miss the client's lateness can explain, or
	// host-slowed ones: analysis.SuspectProbe), so the arm has no capacity:
	// CapacityRPS has no value, its Note says why, and PassRPS, which the
	// arm met, is all it shows.
	SuspectFailEnd bool `json:"suspect_fail_end,omitempty"`
}

// CapacityProbe is one measured load of a capacity search.
type CapacityProbe struct {
	LoadRPS float64 `json:"load_rps"`
	// Source is "sweep" (a cell of load.rates_rps) or "search".
	Source string `json:"source"`
	// Repetition is the sweep cell's repetition (0 for search probes).
	Repetition int `json:"repetition"`
	// Attainment counts, per declared SLO target, the requests judged (N)
	// and those over the target (Over); a sent request that failed is over
	// every target (as in Cell.SLOClaims).
	Attainment []SLOAttainment `json:"attainment"`
	// Met is the point outcome: every target's attained fraction ≥ the
	// SLO quantile (the nearest-rank percentile ≤ the target).
	Met bool `json:"met"`
	// Decided is "met" or "missed" when the outcome holds at the interval's
	// confidence (Clopper–Pearson, DESIGN.md), "" when it does not.
	Decided string `json:"decided,omitempty"`
	// ClientBound: the client's own dispatch lag exceeded its budget.
	ClientBound bool `json:"client_bound,omitempty"`
	// DispatchLagMaxMs is the probe's largest dispatch lag (ms): the latest
	// the client released a send, warm-up included, requests held by the
	// in-flight cap not (search probes).
	DispatchLagMaxMs float64 `json:"dispatch_lag_max_ms,omitempty"`
	// LatenessMarginMs is D = DispatchLagMaxMs + one decode step (the
	// median inter-token gap of the probe's records): how far the client's lateness can have moved any
	// request's latency (DESIGN.md "Capacity at SLO, searched").
	LatenessMarginMs float64 `json:"lateness_margin_ms,omitempty"`
	// AttainmentLoosened is, for a client-bound search probe, Attainment
	// recounted with every target loosened by LatenessMarginMs (TPOT by
	// D/(output tokens − 1)): a lower bound on what an on-time client
	// would have counted over.
	AttainmentLoosened []SLOAttainment `json:"attainment_loosened,omitempty"`
	// Scheduled is how many measured requests (after the warm-up) the
	// probe schedules: the whole the SLO's share is of when the probe stops
	// early (search probes; 0 in files written before it).
	Scheduled int `json:"scheduled,omitempty"`
	// MissRobustToLateness: a client-bound probe that missed the SLO misses
	// it still against AttainmentLoosened, judged as its stop was, over
	// the Scheduled requests: some target's loosened over-count alone is
	// more than 1 − quantile of them, whatever the requests it cancelled
	// would have done. So the miss is the server's and stands
	// (analysis.Search.Capacity sets it).
	MissRobustToLateness bool `json:"miss_robust_to_lateness,omitempty"`
	// HostStallS is the time the simulated server lost to host stalls
	// during the probe (s; sim.Server.StallLost; server kind sim only).
	HostStallS float64 `json:"host_stall_s,omitempty"`
	// HostSlowed: HostStallS is more than analysis.HostStallShare of the
	// probe's DurationS, so its miss may be the host's, not the server's
	// (analysis.Search.Capacity sets it).
	HostSlowed bool `json:"host_slowed,omitempty"`
	// WindowS, OutputTokens and TotalTokens are the measured window (s) and
	// the tokens completed in it (cost at capacity uses them).
	WindowS      float64 `json:"window_s,omitempty"`
	OutputTokens int     `json:"output_tokens,omitempty"`
	TotalTokens  int     `json:"total_tokens,omitempty"`
	// E2EP90Ms is the nearest-rank p90 of the measured ok requests' E2E
	// (ms; 0 when too few for it): how long a request stayed in the server,
	// which bounds how soon a probe from an idle server fills its batch.
	E2EP90Ms float64 `json:"e2e_p90_ms,omitempty"`
	// DurationS is the probe's wall time, replay and tail (s; search probes).
	DurationS float64 `json:"duration_s,omitempty"`
	// Incomplete says why a probe did not run to its end ("" when it did).
	Incomplete string `json:"incomplete,omitempty"`
	// StoppedEarly, when set, says why a probe was stopped once its
	// outcome was decided: missed, once it could no longer meet the SLO,
	// or met ("met: …"), once its requests yet to end could not undo it;
	// the requests still in flight were cancelled (those over the TTFT
	// target count over it in Attainment, the others nowhere), the unsent
	// ones were not sent.
	StoppedEarly string `json:"stopped_early,omitempty"`
}

// SLOAttainment is one SLO target's request counts in one probe.
type SLOAttainment struct {
	Metric   string  `json:"metric"`
	TargetMs float64 `json:"target_ms"`
	N        int     `json:"n"`
	Over     int     `json:"over_target"`
}

// CapacityCost is the cost per 1M output tokens at an arm's capacity: at
// the highest load that met the SLO (LoadRPS), from that probe's window.
type CapacityCost struct {
	LoadRPS               float64 `json:"load_rps"`
	Currency              string  `json:"currency"`
	CostPer1MOutputTokens float64 `json:"cost_per_1m_output_tokens"`
}

// CapacitySearchGain is candidate capacity / baseline capacity.
type CapacitySearchGain struct {
	Candidate string `json:"candidate"`
	Baseline  string `json:"baseline"`
	// Gain is the ratio of the arms' CapacityRPS values; its interval is
	// [candidate low / baseline high, candidate high / baseline low].
	Gain Estimate `json:"gain"`
	// Separable is false when the arms' capacity intervals overlap (the
	// gain's interval holds 1): the search cannot tell the capacities apart.
	Separable bool `json:"separable"`
	// CostChangePct is the candidate's cost per 1M output tokens at its
	// capacity against the baseline's at its own, in % (nil: not both).
	CostChangePct *float64 `json:"cost_change_pct,omitempty"`
	// CostNote says why CostChangePct is nil although both arms have a
	// cost, when the reason is not an unbracketed or suspect arm: both
	// arms' costs are at the same offered load ("" otherwise).
	CostNote string `json:"cost_note,omitempty"`
	// SimTruth is the ratio of the arms' simulator's sustained capacities
	// (CapacityTruth.RPS; 0: not both known).
	SimTruth float64 `json:"sim_truth,omitempty"`
	// SuspectArms names the arms whose capacity rests on client-bound
	// misses (CapacityArm.SuspectFailEnd): the gain then has no value, at
	// most a lower bound (Gain.Low, Gain.Derived says how), its Note says why.
	SuspectArms []string `json:"suspect_arms,omitempty"`
}

// CapacityTruth is, on the simulator, an arm's true sustained capacity at
// the SLO: the schedule's load block replayed over a long window in virtual
// time (no host noise) at each rate, bisected until the met and missed
// rates are within TruthPrecision of each other.
type CapacityTruth struct {
	// MetRPS is the highest rate found to meet the SLO, MissedRPS the
	// lowest found to miss it (req/s; 0: none within the bounds searched).
	MetRPS    float64 `json:"met_rps"`
	MissedRPS float64 `json:"missed_rps"`
	// Window says which arrivals were replayed and which were measured.
	Window string `json:"window"`
	// Note says where the truth lies against the searched interval when
	// outside it, and why ("" inside).
	Note string `json:"note,omitempty"`
}

// RPS is the truth's point value, √(MetRPS·MissedRPS) (req/s); 0 when a
// side was not found within the bounds searched.
func (t CapacityTruth) RPS() float64 {
	if t.MetRPS <= 0 || t.MissedRPS <= 0 {
		return 0
	}
	return math.Sqrt(t.MetRPS * t.MissedRPS)
}
