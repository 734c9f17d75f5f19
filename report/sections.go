package report

import "slices"

// The measured sections of results.json. They are plain structs: the caller
// (cmd/transferlab) converts from the amdahl, energy, cost and integrate
// packages. A nil section, or one with NotMeasured set, renders as
// "not measured: <reason>", never as zeros.

// AmdahlSection compares the measured service-level speedup with the Amdahl
// bound 1 / ((1 − f) + f/s) (DESIGN.md, "Addressable fraction").
type AmdahlSection struct {
	// NotMeasured is the reason the section is empty ("" when measured).
	NotMeasured string       `json:"not_measured,omitempty"`
	Loads       []AmdahlLoad `json:"loads,omitempty"`
	// Ablation holds f by ablation and s in situ per candidate and load,
	// from the ceiling arm's cells (Results.Ceiling); it is measured whether
	// or not a profile was (NotMeasured is about the profile estimate).
	Ablation []AblationLoad `json:"ablation,omitempty"`
}

// AmdahlLoad is the bound and the measured speedups of one candidate at one offered load.
// The estimates of f_wall an AmdahlLoad can hold (AmdahlLoad.FFrom).
const (
	// FFromCostModel: the simulator's cost model over the load's schedule,
	// known before any request is sent (the bound the run prints first).
	FFromCostModel = "cost_model"
	// FFromProfile: the baseline's profile measured in the run (its
	// cells', or its profiling replays'); on the simulator, a second
	// estimate beside the cost model's, whose last digits can differ.
	FFromProfile = "profile"
)

type AmdahlLoad struct {
	Candidate      string  `json:"candidate"`
	OfferedLoadRPS float64 `json:"offered_load_rps"`
	// FGPU is the target op's GPU time / total GPU busy time (dimensionless);
	// nil when the profile cannot tell (hook timings see only the target).
	FGPU *float64 `json:"f_gpu"`
	// FWall is the target op's GPU time / active wall time of the window; the bound uses it.
	FWall float64 `json:"f_wall"`
	// FExcl is the target op's exclusive (not overlapped) GPU time / active wall time.
	// Nil when the profile has no kernel timeline (hook timings).
	FExcl *float64 `json:"f_excl"`
	// S is the frequency-weighted geometric mean isolated speedup on the served shapes.
	S float64 `json:"s"`
	// Bound is 1 / ((1 − FWall) + FWall/S); BoundLow/BoundHigh its interval (from f's and s's intervals).
	Bound     float64 `json:"bound"`
	BoundLow  float64 `json:"bound_low"`
	BoundHigh float64 `json:"bound_high"`
	// Measured are baseline/candidate speedups (>1: faster) of mean and p99
	// TTFT, TPOT and E2E; Analyze fills them from Stats when empty.
	Measured []Speedup `json:"measured,omitempty"`
	// TransferEfficiency is (measured − 1) / (Bound − 1) for TransferMetric
	// (the amdahl package's definition): the share of the possible gain that arrived.
	TransferEfficiency float64 `json:"transfer_efficiency"`
	TransferMetric     string  `json:"transfer_metric,omitempty"`
	// TransferEfficiencyLow and TransferEfficiencyHigh are its interval:
	// (measured − 1) / (bound − 1) at the corners of the measured speedup's
	// interval and the bound's (amdahl.Compare); nil when the measured
	// speedup has no interval (one repetition) or the bound's interval
	// reaches 1.
	TransferEfficiencyLow  *float64 `json:"transfer_efficiency_low,omitempty"`
	TransferEfficiencyHigh *float64 `json:"transfer_efficiency_high,omitempty"`
	// TransferEfficiencyNote is why the efficiency's point is no figure to
	// read: "not separable from 0: the measured e2e mean speedup's interval
	// [0.968, 1.03] contains 1 (no change)". "" when the gain is resolved.
	TransferEfficiencyNote string `json:"transfer_efficiency_note,omitempty"`
	// FNotMeasured says why FGPU and FExcl are nil when f did not come
	// from a profile of the op the candidate changes (a simulated candidate
	// changing another op than amdahl.target_op: its FWall is that op's
	// share of the cost model's step time); "" otherwise.
	FNotMeasured string `json:"f_not_measured,omitempty"`
	// FSource says where f came from (the simulator's cost model, hook timings,
	// or the profiler traces of unmeasured profiling replays, by path) and what
	// it counts; STiming how s was timed (graph, eager, exact).
	FSource string `json:"f_source,omitempty"`
	// FFrom says which estimate f_wall is, FFromCostModel or FFromProfile,
	// so a reader of the bound sees which of the run's two estimates it
	// is; "" in files written before it was recorded.
	FFrom   string `json:"f_from,omitempty"`
	STiming string `json:"s_timing,omitempty"`
	// FWallHook is f_wall from the hook's CUDA-event timings of the target
	// over the same profiled calls and active time, when the baseline's hook
	// timed them (nil otherwise). HookVsProfileSpanPct is (hook − profile) /
	// profile × 100 against the calls' GPU span (first kernel start to last
	// end: what events measure), HookVsProfilePct against their kernel time
	// (what f_wall counts; the gaps between a call's kernels left out)
	// (amdahl.CompareHookProfile). Events also hold CPU launch time where the
	// GPU waited inside a call: the two agree only on a GPU-bound server.
	FWallHook            *float64 `json:"f_wall_hook,omitempty"`
	HookVsProfileSpanPct *float64 `json:"hook_vs_profile_span_pct,omitempty"`
	HookVsProfilePct     *float64 `json:"hook_vs_profile_pct,omitempty"`
	// Verdict places the TransferMetric speedup against the bound's interval:
	// inside, below, above or unknown (amdahl.Compare); Note explains it.
	Verdict string `json:"verdict,omitempty"`
	Note    string `json:"note,omitempty"`
}

// Speedup is baseline/candidate of one metric statistic with its interval.
type Speedup struct {
	Metric string   `json:"metric"` // ttft, tpot, e2e, itl
	Stat   string   `json:"stat"`   // mean, p99, ...
	Value  Estimate `json:"value"`
}

// EnergySection holds GPU-reported (or simulated) energy and memory per cell.
type EnergySection struct {
	NotMeasured string       `json:"not_measured,omitempty"`
	Cells       []EnergyCell `json:"cells,omitempty"`
}

// EnergyCell is one arm × offered load × repetition's energy and VRAM.
type EnergyCell struct {
	Arm            string  `json:"arm"`
	OfferedLoadRPS float64 `json:"offered_load_rps"`
	Repetition     int     `json:"repetition"`
	// Available is false without a driver (or sampler failure); UnavailableReason says why.
	Available         bool   `json:"available"`
	UnavailableReason string `json:"unavailable_reason,omitempty"`
	// Source is "GPU-reported" (NVML board energy counter, not facility energy) or "simulated".
	Source string `json:"source"`
	// EnergyJ is the board energy over the measured window, J (NVML counter deltas, mJ → J).
	EnergyJ float64 `json:"energy_j"`
	// JPerOutputToken is EnergyJ / output tokens of the window.
	JPerOutputToken float64 `json:"j_per_output_token"`
	// JPerRequest is EnergyJ / completed requests of the window.
	JPerRequest float64 `json:"j_per_request"`
	MeanPowerW  float64 `json:"mean_power_w"`
	PeakPowerW  float64 `json:"peak_power_w"`
	// IdlePowerW is the power before load, W.
	IdlePowerW float64 `json:"idle_power_w"`
	// PeakVRAMBytes and SteadyVRAMBytes are NVML memory used (max; median over the window).
	PeakVRAMBytes   uint64 `json:"peak_vram_bytes"`
	SteadyVRAMBytes uint64 `json:"steady_vram_bytes"`
	// Missing lists the JSON keys of figures above that were not measured in an
	// available window (e.g. "idle_power_w" with no idle sample): they render as
	// "not measured" and never decide or plot, whatever their zero value says.
	Missing []string `json:"missing,omitempty"`

	// The energy figure's checks (energy.Window): which reading the headline
	// uses ("counter_delta", "none", or SimulatedEnergyHeadline on the
	// simulator, which has no counter), the power-integral cross-check in J and
	// its disagreement with the counter in %, whether the disagreement exceeds
	// the flag threshold, the counter's quantisation error in % of the window's
	// energy, whether the window was shorter than the counter's resolution,
	// whether the GPU throttled (and why), and the sampler's warnings.
	EnergyHeadline      string   `json:"energy_headline,omitempty"`
	PowerIntegralJ      *float64 `json:"power_integral_j,omitempty"`
	DisagreementPct     *float64 `json:"disagreement_pct,omitempty"`
	DisagreementFlagged bool     `json:"disagreement_flagged,omitempty"`
	QuantisationPct     *float64 `json:"quantisation_pct,omitempty"`
	BelowResolution     bool     `json:"below_resolution,omitempty"`
	Throttled           bool     `json:"throttled,omitempty"`
	ThrottleReasons     []string `json:"throttle_reasons,omitempty"`
	// ProcessVRAMPeakBytes is the server processes' own peak VRAM (NVML per-process), bytes.
	ProcessVRAMPeakBytes *uint64  `json:"process_vram_peak_bytes,omitempty"`
	Warnings             []string `json:"warnings,omitempty"`
}

// SimulatedEnergyHeadline is EnergyCell.EnergyHeadline of a simulated run:
// its energy is the simulator's power model, not a counter delta.
const SimulatedEnergyHeadline = "simulated power model"

// has reports whether the figure with JSON key k was measured.
func (c EnergyCell) Has(k string) bool { return !slices.Contains(c.Missing, k) }

// CostSection holds cost per token per cell with every input echoed.
type CostSection struct {
	NotMeasured string     `json:"not_measured,omitempty"`
	Cells       []CostCell `json:"cells,omitempty"`
}

// CostCell is cost per 1M tokens of one arm × offered load × repetition:
// (PricePerGPUHour × GPUs × WindowS/3600) / tokens × 10⁶ (DESIGN.md, "Energy, memory, cost").
type CostCell struct {
	Arm            string  `json:"arm"`
	OfferedLoadRPS float64 `json:"offered_load_rps"`
	Repetition     int     `json:"repetition"`
	// Inputs, echoed.
	Currency        string  `json:"currency"`
	PricePerGPUHour float64 `json:"price_per_gpu_hour"`
	PriceDate       string  `json:"price_date"`
	// PriceSource says where the price came from (echoed from the config).
	PriceSource           string  `json:"price_source,omitempty"`
	GPUs                  int     `json:"gpus"`
	UtilisationAssumption float64 `json:"utilisation_assumption"`
	WindowS               float64 `json:"window_s"`
	OutputTokens          int     `json:"output_tokens"`
	TotalTokens           int     `json:"total_tokens"`
	// EnergyPricePerKWh is 0 when no energy price was given (Currency per kWh).
	EnergyPricePerKWh float64 `json:"energy_price_per_kwh,omitempty"`
	// EnergyPriceSource says where the energy price came from (echoed from
	// the config, where it is required with energy_price_per_kwh).
	EnergyPriceSource string `json:"energy_price_source,omitempty"`
	// Results, in Currency.
	CostPer1MOutputTokens       float64 `json:"cost_per_1m_output_tokens"`
	CostPer1MTotalTokens        float64 `json:"cost_per_1m_total_tokens"`
	EnergyCostPer1MOutputTokens float64 `json:"energy_cost_per_1m_output_tokens,omitempty"`
}

// ValidationSection holds the validation gate's outcome per candidate.
type ValidationSection struct {
	NotMeasured string                `json:"not_measured,omitempty"`
	Candidates  []ValidationCandidate `json:"candidates,omitempty"`
}

// ValidationCandidate is one candidate kernel's validation report, as hashed.
type ValidationCandidate struct {
	Candidate    string `json:"candidate"`
	ReportPath   string `json:"report_path,omitempty"`
	ReportSHA256 string `json:"report_sha256"`
	// Verdict is "pass" or "fail"; FailedGates names the gates that failed.
	Verdict     string   `json:"verdict"`
	FailedGates []string `json:"failed_gates,omitempty"`
	// UncoveredShapes counts shapes the server produced that the report did not validate.
	UncoveredShapes int            `json:"uncovered_shapes"`
	Shapes          []ShapeSpeedup `json:"shapes,omitempty"`
	// S is the frequency-weighted geometric mean of the per-shape speedups.
	S float64 `json:"s"`
}

// ShapeSpeedup is the isolated speedup on one shape (median of ≥ 30 CUDA-event timings each side).
type ShapeSpeedup struct {
	Shape   string  `json:"shape"`
	Count   int     `json:"count"`
	Stress  bool    `json:"stress,omitempty"`
	Speedup float64 `json:"speedup"`
}

// HookSection holds the override hook's counters per arm: proof that the candidate ran.
type HookSection struct {
	NotMeasured string    `json:"not_measured,omitempty"`
	Arms        []HookArm `json:"arms,omitempty"`
}

// HookArm is the hook's counters of one arm.
type HookArm struct {
	Arm          string `json:"arm"`
	Target       string `json:"target"`
	Candidate    string `json:"candidate,omitempty"`
	ReportSHA256 string `json:"report_sha256,omitempty"`
	// CallsEager and CallsCapture count the target's calls in eager mode and under graph capture.
	CallsEager   int64 `json:"calls_eager"`
	CallsCapture int64 `json:"calls_capture"`
	// Receipts are the hook's own statements (e.g. "patched vllm...:RMSNorm.forward at import").
	Receipts []string `json:"receipts,omitempty"`
}

// profileLoad is the profile estimate of cand at load, or nil.
func (a *AmdahlSection) ProfileLoad(cand string, load float64) *AmdahlLoad {
	for i := range a.Loads {
		if a.Loads[i].Candidate == cand && a.Loads[i].OfferedLoadRPS == load {
			return &a.Loads[i]
		}
	}
	return nil
}

// AblationLoad is the Amdahl figures by ablation of one candidate at one
// offered load: one entry per latency statistic (amdahl.AblationEstimate),
// with the profile's bound beside them.
type AblationLoad struct {
	Candidate      string           `json:"candidate"`
	Ceiling        string           `json:"ceiling"`
	OfferedLoadRPS float64          `json:"offered_load_rps"`
	Metrics        []AblationMetric `json:"metrics"`
}

// AblationMetric is one latency statistic's ablation figures (dimensionless
// ratios; intervals over repetitions). BoundProfile is the profile path's
// bound at this load (AmdahlLoad.Bound; nil when no profile measured f), set
// beside BoundAblation; ProfileGap, when the profile bound lies below the
// candidate's measured speedup, says by how much the profile's f and s
// differ from the ablation's.
type AblationMetric struct {
	Metric             string   `json:"metric"`
	Stat               string   `json:"stat"`
	FAblation          Estimate `json:"f_ablation"`
	SInSitu            Estimate `json:"s_in_situ"`
	BoundAblation      Estimate `json:"bound_ablation"`
	BoundProfile       *float64 `json:"bound_profile"`
	CeilingSpeedup     Estimate `json:"ceiling_speedup"`
	CandidateSpeedup   Estimate `json:"candidate_speedup"`
	TransferEfficiency Estimate `json:"transfer_efficiency_vs_ceiling"`
	ProfileGap         string   `json:"profile_gap,omitempty"`
}

// TransferEfficiencyText is l's transfer efficiency as the reports print
// it: "0.85 [0.62, 1.08]", or "0.85" without an interval, or, when the
// measured gain's interval contains no change (TransferEfficiencyNote),
// "not separable from 0 [−3.90, 1.21]": its point (e.g. −1.38 for a
// speedup of 0.978 against a bound of 1.016) would read as a figure the run
// measured. "" when it was not computed (TransferMetric empty).
func TransferEfficiencyText(l AmdahlLoad) string {
	if l.TransferMetric == "" {
		return ""
	}
	iv := ""
	if l.TransferEfficiencyLow != nil && l.TransferEfficiencyHigh != nil {
		iv = " [" + Num(*l.TransferEfficiencyLow) + ", " + Num(*l.TransferEfficiencyHigh) + "]"
	}
	if l.TransferEfficiencyNote != "" {
		return "not separable from 0" + iv
	}
	return Num(l.TransferEfficiency) + iv
}
