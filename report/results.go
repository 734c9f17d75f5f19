package report

import "time"

// SchemaVersion names the results.json schema. Bump it on any incompatible change.
const SchemaVersion = "transferlab.results/v1"

// Results is the content of results.json: everything one experiment measured,
// with the settings that produced it. Figures from the simulated server are
// labelled by Simulated = true and every rendering says "simulated".
type Results struct {
	SchemaVersion string    `json:"schema_version"`
	CreatedAt     time.Time `json:"created_at"`
	// RunID identifies the run: 128 random bits (crypto/rand.Text, 26
	// base32 characters) drawn once as the run starts. A resumed run
	// (run --resume) is the interrupted run finished: it keeps the run's
	// RunID and CreatedAt and appends its own start to ResumedAt (an
	// interrupted run recorded without a RunID gets a new one). A merge of
	// shards draws a new one and sets a new CreatedAt. A copy of
	// results.json keeps it, so two files with one RunID are one run
	// (canary.SameRun): a copy of the interrupted run's file and the
	// resumed run's share cells. Empty in files written before it was
	// recorded, and in a comparison.
	RunID string `json:"run_id,omitempty"`
	// Simulated is true when the server under test was the embedded simulator.
	Simulated bool `json:"simulated"`
	// Complete is false when the run ended early (deadline, interrupt, server
	// death); IncompleteReason then says why.
	Complete         bool   `json:"complete"`
	IncompleteReason string `json:"incomplete_reason,omitempty"`
	// Resumed is true when `run --resume` kept complete cells of an
	// interrupted run in this folder (Cell.Kept) and ran the others again;
	// ResumedFrom says which run it resumed.
	Resumed     bool         `json:"resumed,omitempty"`
	ResumedFrom *ResumedFrom `json:"resumed_from,omitempty"`
	// ResumedAt holds when each `run --resume` of this run started, oldest
	// first (CreatedAt is when the run first started).
	ResumedAt []time.Time `json:"resumed_at,omitempty"`
	// Warnings are problems of method the run detected that do not make it
	// incomplete but change how its figures read (e.g. measured cells right
	// after a server start with no warm-up replay). Rendered under the title.
	Warnings []string `json:"warnings,omitempty"`

	// Inputs names the results files a comparison (Compare) was made from,
	// labelled A (baseline side) and B (candidate side); empty for a run.
	Inputs []Input `json:"compared_inputs,omitempty"`

	Manifest Manifest  `json:"manifest"`
	Trace    TraceInfo `json:"trace"`
	SLO      SLO       `json:"slo"`
	// Cells holds one entry per arm × offered load × repetition, in run order.
	Cells []Cell `json:"cells"`
	// Aliases maps our metric names to other tools' names for the same formula.
	Aliases map[string]string `json:"aliases"`

	// Ceiling names the ceiling arm, if any: a timing-only ablation (the
	// target op's work removed; outputs meaningless). It is never validated,
	// never given a verdict, and every rendering labels it so; the Amdahl
	// section takes f by ablation and s in situ from its cells.
	Ceiling string `json:"ceiling_arm,omitempty"`

	// RunOrder is the interleaved order the cells were run in (RunOrder), as planned.
	RunOrder []CellKey `json:"run_order,omitempty"`
	// Rule is the decision rule the verdicts were reached with.
	Rule *DecisionRule `json:"decision_rule,omitempty"`
	// Stats holds the statistics over repetitions (Analyze); nil before analysis.
	Stats *Stats `json:"stats,omitempty"`
	// CapacitySearch holds each arm's capacity at SLO found by searching the
	// offered load (config capacity_search); nil when no search was declared.
	CapacitySearch *CapacitySearch `json:"capacity_search,omitempty"`
	// SimTruth holds, for a run on the simulator, the true candidate/baseline
	// ratios the measured ones estimate (TruthRatio); nil otherwise.
	SimTruth []TruthRatio `json:"sim_truth,omitempty"`
	// Verdicts holds one verdict per candidate arm (Analyze).
	Verdicts []Verdict `json:"verdicts,omitempty"`

	// The measured sections; nil or NotMeasured != "" renders as "not measured".
	Amdahl     *AmdahlSection     `json:"amdahl,omitempty"`
	Energy     *EnergySection     `json:"energy,omitempty"`
	Cost       *CostSection       `json:"cost,omitempty"`
	Validation *ValidationSection `json:"validation,omitempty"`
	Hook       *HookSection       `json:"hook,omitempty"`
}

// TruthRatio is the simulator's true candidate/baseline ratio of one metric
// statistic at one load: the schedule replayed in virtual time under each
// arm's cost model (sim.Config.Replay), over the Requests both arms'
// first repetition measured ok. A measured Ratio's interval should contain it.
type TruthRatio struct {
	Candidate      string  `json:"candidate"`
	OfferedLoadRPS float64 `json:"offered_load_rps"`
	Metric         string  `json:"metric"`
	Stat           string  `json:"stat"`
	Value          float64 `json:"value"`
	Requests       int     `json:"requests"`
}

// ResumedFrom describes the interrupted run that `run --resume` continued.
type ResumedFrom struct {
	// CreatedAt is the interrupted run's created_at.
	CreatedAt time.Time `json:"created_at"`
	// IncompleteReason is why the interrupted run stopped.
	IncompleteReason string `json:"incomplete_reason,omitempty"`
	// KeptCells and RerunCells count the cells kept and those run (again) by
	// the resumed run.
	KeptCells  int `json:"kept_cells"`
	RerunCells int `json:"rerun_cells"`
	// Server is the interrupted run's manifest.server (per arm: the server's
	// self-description and its per-cell records, such as sim truth and
	// warm-up replays, of the kept cells); the manifest's server block
	// describes the servers the resumed run started.
	Server map[string]any `json:"server,omitempty"`
}

// Input is one results file a comparison read.
type Input struct {
	// Label is "A" or "B"; Arm the arm taken from the file, Name its name in the comparison.
	Label string `json:"label"`
	Path  string `json:"path"`
	// CreatedAt is the file's own created_at (when that run was made).
	CreatedAt time.Time `json:"created_at"`
	// RunID is the file's own run_id ("" in files written before it).
	RunID    string `json:"run_id,omitempty"`
	Arm      string `json:"arm"`
	Name     string `json:"name"`
	Complete bool   `json:"complete"`
}

// text is the input as the report header prints it.
func (in Input) Text() string {
	s := OrText(in.Path, "(path not given)")
	if !in.CreatedAt.IsZero() {
		s += ", created " + in.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")
	}
	if in.RunID != "" {
		s += ", run_id " + in.RunID
	}
	s += ", arm " + in.Arm + " as " + in.Name
	if !in.Complete {
		s += " (incomplete run)"
	}
	return s
}

// Manifest is what is needed to reproduce the run.
type Manifest struct {
	Command      []string `json:"command"`
	ConfigPath   string   `json:"config_path"`
	ConfigSHA256 string   `json:"config_sha256"`
	// Requested is the config as written, keyed as the config file is
	// (its YAML keys; files before that used Go field names, which
	// ConfigKeyDiffs translates); Effective is it with defaults filled
	// (Go field names).
	Requested any    `json:"config_requested"`
	Effective any    `json:"config_effective"`
	Seed      int64  `json:"seed"`
	GoVersion string `json:"go_version"`
	GitCommit string `json:"git_commit,omitempty"`
	// Machine is the host the run was made on: "hostname (os/arch, N CPUs)".
	Machine  string         `json:"machine,omitempty"`
	Server   map[string]any `json:"server,omitempty"`
	ArmOrder []string       `json:"arm_order"`
}

// TraceInfo describes the schedule source as replayed. Every data row of
// the file is accounted for: RowsRead = Rows + Skipped + the sum of Dropped
// (traces.Schedule.RowsRead); RowsText says it for people.
type TraceInfo struct {
	Source string `json:"source"`
	Format string `json:"format"`
	SHA256 string `json:"sha256"`
	// Rows is the number of requests replayed (per offered load the cells
	// replay these, time-scaled).
	Rows int `json:"rows"`
	// RowsRead is the number of data rows in the file (0 for a synthetic schedule).
	RowsRead int `json:"rows_read"`
	// Skipped counts malformed rows skipped (trace.lenient), by reason in
	// SkippedByReason; SkippedLines names their file lines (the first
	// traces.MaxSkippedLines).
	Skipped         int            `json:"skipped_rows"`
	SkippedByReason map[string]int `json:"skipped_by_reason,omitempty"`
	SkippedLines    []int          `json:"skipped_lines,omitempty"`
	// Dropped counts well-formed rows left out by a policy, by policy
	// ("burstgpt_failed", "first_n").
	Dropped     map[string]int `json:"dropped_by_reason,omitempty"`
	Clamped     int            `json:"clamped_rows"`
	DurationS   float64        `json:"duration_s"`
	MeanRateRPS float64        `json:"mean_rate_rps"`
}

// SLO holds the service-level objectives goodput is measured against (ms).
// A zero field is not declared and never decides anything.
type SLO struct {
	TTFTMs     float64 `json:"ttft_ms,omitempty"`
	TPOTMs     float64 `json:"tpot_ms,omitempty"`
	E2EMs      float64 `json:"e2e_ms,omitempty"`
	Percentile float64 `json:"percentile,omitempty"`
}

// Cell is one arm × offered load × repetition.
type Cell struct {
	Arm            string  `json:"arm"`
	OfferedLoadRPS float64 `json:"offered_load_rps"`
	Repetition     int     `json:"repetition"`
	// Order is the cell's position in the interleaved run order (0-based).
	Order int `json:"order"`
	// StartedAt is when the cell's measured replay started (its time zero,
	// UTC); nil when not known.
	StartedAt *time.Time `json:"started_at,omitempty"`
	// Kept is true for a cell measured by an interrupted run and kept by
	// `run --resume` (Results.Resumed); StartedAt is then that run's.
	Kept        bool           `json:"kept,omitempty"`
	RecordsFile string         `json:"records_file"`
	States      map[string]int `json:"states"`
	// FirstError describes the measured request with the earliest scheduled
	// time that did not end ok: its state, HTTP status and error text
	// ("timeout (HTTP 200): SSE event 10: read: i/o timeout"); "" when every
	// measured request ended ok. FailureWarning quotes it.
	FirstError string `json:"first_error,omitempty"`
	// NotMeasured says why the cell has no window (WindowS,
	// ThroughputTokPerS, GoodputRPS and ArrivalRateRPS are then nil, null in
	// JSON): NoMeasuredRequestSent when no measured request was sent (e.g. a
	// deadline landed in the warm-up). "" when the window was measured.
	NotMeasured string `json:"not_measured,omitempty"`
	// WindowS is the measured window length in seconds: from the first
	// measured send to the last event of any measured request (loadgen.Window);
	// nil when NotMeasured.
	WindowS *float64 `json:"window_s"`
	// ThroughputTokPerS is WindowOutputTokens / WindowS (tok/s); nil when
	// NotMeasured or the window has zero length.
	ThroughputTokPerS *float64 `json:"throughput_tok_per_s"`
	// WindowOutputTokens is throughput's numerator: output tokens whose token
	// events fell inside the window, warm-up stragglers and failed requests'
	// delivered tokens included, weighted by usage/events on a mismatch
	// (loadgen.WindowFigures; may be fractional). OutputTokens is different:
	// the per-request output_tokens of ok measured requests.
	WindowOutputTokens float64 `json:"window_output_tokens"`
	// GoodputRPS is ArrivalRateRPS × GoodRequests / measured requests
	// (req/s): the rate of requests that met every declared SLO, equal to the
	// arrival rate when all did, never above it (DESIGN.md, "Goodput"). Not
	// GoodRequests / WindowS: the window's drain would put it below the
	// arrival rate with every request good. nil with no arrival rate.
	GoodputRPS        *float64       `json:"goodput_rps"`
	MultiTokenEvents  int            `json:"multi_token_events"`
	OutputTokens      int            `json:"output_tokens"`
	InputTokens       int            `json:"input_tokens"`
	UsageSourceCounts map[string]int `json:"output_tokens_source"`
	UsageMismatches   int            `json:"usage_mismatches"`
	// ClientBound is loadgen.ClientBoundFlag's flag over the cell's ClientLag
	// samples: more than 1 % of them above analysis.CellOptions.ClientBoundLag
	// (1 ms by default) at 99 % confidence, so the client's own lateness,
	// not the server, may have set the pace.
	ClientBound bool `json:"client_bound"`
	// DispatchLateSends counts the measured sends dispatched later than the
	// lag budget (loadgen.ClientBoundFlag), flagged or not.
	DispatchLateSends int `json:"dispatch_late_sends"`
	// DispatchLagP99ForFlagMs is the nearest-rank p99 of the dispatch-lag
	// samples (ms), shown beside the late count, computed
	// even when DispatchLag refuses to publish a p99 for want of samples.
	// With fewer than 100 samples (DispatchLag.N < 100) the nearest-rank p99
	// IS the largest sample (ceil(0.99 n) = n): it is then the max, and
	// analysis.DispatchLagFlagText labels it so.
	DispatchLagP99ForFlagMs float64 `json:"dispatch_lag_p99_for_flag_ms"`
	// QueuedByCap counts measured requests the in-flight cap held back (sent late, in order).
	QueuedByCap int `json:"queued_by_cap"`
	// MissingUsage counts ok measured requests whose stream carried no usage
	// (their output_tokens count token events).
	MissingUsage int `json:"missing_usage"`
	// PromptMismatches counts measured requests whose usage.prompt_tokens
	// differed from the scheduled input length (PromptCheck.Mismatches).
	PromptMismatches int `json:"prompt_mismatches"`
	// PromptCheck compares usage.prompt_tokens with the intended input
	// length over the measured sent requests.
	PromptCheck PromptCheck `json:"prompt_check"`
	// ArrivalRateRPS is the mean arrival rate of the measured (non-warm-up)
	// requests, (n − 1) / (last − first scheduled time), in req/s; nil when
	// NotMeasured (no measured request was sent: they never arrived) or
	// fewer than two. OfferedLoadRPS is the mean over the whole schedule
	// (warm-up included), so a bursty trace's measured part can differ.
	ArrivalRateRPS *float64 `json:"arrival_rate_rps"`
	// Incomplete is why the cell did not run to its end (interrupt, deadline,
	// server death); "" when it did. Analyze leaves incomplete cells out of
	// statistics, ratios, capacity and verdicts: their surviving requests are
	// biased toward the short ones.
	Incomplete string `json:"incomplete,omitempty"`
	// WarmupRecords counts warm-up records, left out of every other figure
	// except WindowOutputTokens (their token events inside the window).
	WarmupRecords int `json:"warmup_records"`
	// GoodRequests counts ok requests inside the window meeting every declared SLO.
	GoodRequests int `json:"good_requests"`
	// SLOClaims test each declared SLO target at the SLO percentile by MLPerf
	// LoadGen's early-stopping rule (EarlyStopping), one entry per target.
	SLOClaims []SLOClaim `json:"slo_claims,omitempty"`

	TTFT         Dist `json:"ttft"`
	TTFTIntended Dist `json:"ttft_intended"`
	TTFO         Dist `json:"ttfo"`
	ITL          Dist `json:"itl"`
	TPOT         Dist `json:"tpot"`
	E2E          Dist `json:"e2e"`
	ScheduleLag  Dist `json:"schedule_lag"`
	// DispatchLag is over loadgen.ClientLag: DispatchedAt − ScheduledAt of
	// measured requests not held by the in-flight cap (the client's own lateness).
	DispatchLag Dist `json:"dispatch_lag"`
	// Requests are the ok measured requests' figures by request ID
	// (RequestFigures), for comparisons request by request between arms
	// that replayed the same schedule; absent in results written before
	// they were kept (comparisons then go over repetitions).
	Requests []RequestFigures `json:"requests,omitempty"`
}

// Dist summarises one latency metric exactly from raw samples, in ms.
// Method names how percentiles were computed; a percentile whose claim needs
// more samples than N is omitted (nil) and listed in Refused.
type Dist struct {
	N       int      `json:"n"`
	Method  string   `json:"method"`
	MeanMs  *float64 `json:"mean_ms"`
	P50Ms   *float64 `json:"p50_ms"`
	P90Ms   *float64 `json:"p90_ms"`
	P95Ms   *float64 `json:"p95_ms"`
	P99Ms   *float64 `json:"p99_ms"`
	P999Ms  *float64 `json:"p999_ms"`
	MaxMs   *float64 `json:"max_ms"`
	Refused []string `json:"refused,omitempty"`
	// CDF holds evenly spaced points of the empirical CDF (kept for TTFT and ITL, for plots).
	CDF []CDFPoint `json:"cdf,omitempty"`
}

// SLOClaim is the claim "the SLO percentile of Metric ≤ TargetMs" for one
// cell. N counts the requests with the metric defined plus those sent that
// never completed ok (timeouts, errors: they missed every target and count in
// Over); not_sent and cancelled requests are left out.
type SLOClaim struct {
	Metric   string  `json:"metric"`
	TargetMs float64 `json:"target_ms"`
	EarlyStop
}

// CDFPoint is one point of an empirical CDF: the fraction of samples ≤ Ms.
type CDFPoint struct {
	Fraction float64 `json:"fraction"`
	Ms       float64 `json:"ms"`
}

// PromptCheck compares the server's usage.prompt_tokens with the intended
// input length (the trace's) over a cell's measured sent requests.
type PromptCheck struct {
	// Reported counts requests whose usage carried prompt_tokens.
	Reported int `json:"reported"`
	// Mismatches counts those whose prompt_tokens differed from the intended length.
	Mismatches int `json:"mismatches"`
	// TextPrompts counts reporting requests whose prompt was text: their
	// token count is the server tokenizer's (and chat template's), so a
	// difference is expected and does not mean input was lost.
	TextPrompts int `json:"text_prompts"`
	// Diff is the distribution of the differences; nil without mismatches.
	Diff *PromptDiff `json:"diff,omitempty"`
}

// PromptDiff is the distribution of prompt_tokens − intended input length
// over the mismatching requests: in tokens, and in % of the intended length.
// The median is the nearest-rank 0.5 quantile (NearestRank).
type PromptDiff struct {
	MinTokens    int     `json:"min_tokens"`
	MedianTokens int     `json:"median_tokens"`
	MaxTokens    int     `json:"max_tokens"`
	MinPct       float64 `json:"min_pct"`
	MedianPct    float64 `json:"median_pct"`
	MaxPct       float64 `json:"max_pct"`
}

// EarlyStop is the outcome of MLPerf LoadGen's early-stopping test for the
// claim "the q-quantile of the metric is ≤ the target".
type EarlyStop struct {
	// N is the number of samples; Over how many exceeded the target.
	N    int `json:"n"`
	Over int `json:"over_target"`
	// Quantile is the claimed quantile (0.99 for p99); Confidence the one-sided level.
	Quantile   float64 `json:"quantile"`
	Confidence float64 `json:"confidence"`
	// MaxOver is the largest over-target count at which the claim holds for N
	// samples (−1 when no count does: N is below MinSamples).
	MaxOver int `json:"max_over_target"`
	// PValue is P(X ≤ Over) for X ~ Binomial(N, 1 − Quantile): the chance of
	// seeing this few over-target samples if the true q-quantile were the target.
	PValue float64 `json:"p_value"`
	// Holds is true when PValue ≤ 1 − Confidence, i.e. the claim is supported.
	Holds bool `json:"holds"`
}

// RequestFigures are one ok measured request's figures, in ms, kept in the
// cell so that two arms that replayed the same schedule can be compared
// request by request (requestRatio). A metric the request does not define
// (TPOT of a one-token output) is nil.
type RequestFigures struct {
	// ID is loadgen.Record.RequestID: the request's identity in the schedule,
	// the same in every arm at one offered load.
	ID     int      `json:"id"`
	TTFTMs *float64 `json:"ttft_ms,omitempty"`
	TPOTMs *float64 `json:"tpot_ms,omitempty"`
	E2EMs  *float64 `json:"e2e_ms,omitempty"`
}
