package energy

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sources of a Window.
const (
	// SourceNVML marks figures read from NVML (GPU-reported, board counter).
	SourceNVML = "nvml"
	// SourceSimulated marks figures from a PowerModel applied to the simulated server.
	SourceSimulated = "simulated"
)

// What Window.EnergyHeadline says energy_j came from.
const (
	// HeadlineCounter: energy_j is the delta of the total-energy counter.
	HeadlineCounter = "counter_delta"
	// HeadlineNone: no headline energy (energy_j is null); see EnergyUnavailableReason.
	HeadlineNone = "none"
)

// Power sources (Window.PowerSource).
const (
	PowerInstant   = "nvml_field_power_instant"         // NVML field FI_DEV_POWER_INSTANT, mW
	PowerUsageAvg  = "nvml_power_usage_driver_averaged" // nvmlDeviceGetPowerUsage, mW, averaged by the driver
	PowerSimulated = "simulated_power_model"
)

// DeviceInfo identifies the measured GPU.
type DeviceInfo struct {
	Index         int    `json:"index"`
	Name          string `json:"name,omitempty"`
	UUID          string `json:"uuid,omitempty"`
	DriverVersion string `json:"driver_version,omitempty"`
	NVMLVersion   string `json:"nvml_version,omitempty"`
	// MemoryTotalBytes is the device's total memory (GetMemoryInfo_v2), bytes.
	MemoryTotalBytes uint64 `json:"memory_total_bytes,omitempty"`
}

// Gap is one failed read inside a window; the window survives it.
type Gap struct {
	// AtMs is the sample's offset from the window start, in ms.
	AtMs  float64 `json:"at_ms"`
	Field string  `json:"field"`
	Error string  `json:"error"`
}

// CounterReset is a step where the energy counter went backwards or jumped
// implausibly far: more energy than 3 × the power limit (1000 W if unknown)
// delivers between the last sample before the counter's previous advance
// and this sample, plus the update period and 1 s of slack for counters
// slower than assumed. The step is not counted.
type CounterReset struct {
	AtMs   float64 `json:"at_ms"`
	FromMJ float64 `json:"from_mj"`
	ToMJ   float64 `json:"to_mj"`
	Kind   string  `json:"kind"` // "backwards" | "implausible_jump"
	Detail string  `json:"detail,omitempty"`
}

// ThrottleCount is how many samples saw one clocks-event (throttle) reason.
type ThrottleCount struct {
	Reason  string `json:"reason"`
	Samples int    `json:"samples"`
}

// Window is everything measured over one window. Pointer fields are null in
// JSON when the figure could not be measured: a missing figure is never 0.
// Energy is GPU-reported (board counter) for Source "nvml", and comes from the
// PowerModel for Source "simulated" (Label says so on every figure).
type Window struct {
	// Source is SourceNVML or SourceSimulated; Label says the same in words.
	Source string     `json:"source"`
	Label  string     `json:"label"`
	Device DeviceInfo `json:"device"`
	// Available is false when nothing could be read; UnavailableReason says why.
	Available         bool   `json:"available"`
	UnavailableReason string `json:"unavailable_reason,omitempty"`

	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	DurationS float64   `json:"duration_s"`
	// SamplePeriodMs is the requested sampling period.
	SamplePeriodMs float64 `json:"sample_period_ms"`
	// SampleCount counts samples taken, including the first and last.
	SampleCount int `json:"sample_count"`
	// Gaps lists failed reads of quantities read at other samples; the
	// figures are computed from the other samples.
	Gaps []Gap `json:"gaps,omitempty"`
	// Unread lists quantities never read in the window (at_ms 0), each with
	// its first error (e.g. NVML ERROR_NOT_SUPPORTED); their figures are null.
	Unread []Gap `json:"unread,omitempty"`

	// EnergyJ is the headline energy in joules: the delta of NVML's
	// total-energy counter (mJ / 1000) between the first and last sample,
	// summed over steps and skipping counter resets. Null when refused;
	// EnergyUnavailableReason then says why and the power integral is offered
	// as a labelled fallback (BestEnergy), never swapped in here.
	EnergyJ                 *float64 `json:"energy_j"`
	EnergyHeadline          string   `json:"energy_headline"`
	EnergyUnavailableReason string   `json:"energy_unavailable_reason,omitempty"`
	// CounterEnergyJ is the counter delta as read, even when refused as the
	// headline (partial coverage, below resolution); null when never read.
	CounterEnergyJ *float64 `json:"counter_energy_j"`
	// CounterUpdates counts the steps at which the counter advanced.
	CounterUpdates int `json:"counter_updates"`
	// CounterUpdatePeriodMs is the counter update period assumed for the
	// resolution check (0 for a resolution-free simulated counter).
	CounterUpdatePeriodMs float64 `json:"counter_update_period_ms"`
	// CounterUpdatePeriodObservedMs is the mean time between observed counter
	// advances (resolved to the sampling period); null with < 2 advances.
	CounterUpdatePeriodObservedMs *float64       `json:"counter_update_period_observed_ms"`
	CounterResets                 []CounterReset `json:"counter_resets,omitempty"`
	// BelowResolution is true when the window is shorter than the counter's
	// update period, or the counter never advanced: its delta is refused.
	BelowResolution bool `json:"below_resolution"`
	// QuantisationPct bounds the counter's quantisation error: 100 × update
	// period / window length (one update's worth of energy at mean power);
	// the observed period is used when it is over 1.5 × the assumed one.
	QuantisationPct *float64 `json:"quantisation_pct"`

	// PowerIntegralJ is the time integral of the power samples in joules
	// (trapezoids between successful samples; rectangles when each reading
	// is an interval mean), the cross-check of EnergyJ.
	PowerIntegralJ *float64 `json:"power_integral_j"`
	PowerSource    string   `json:"power_source,omitempty"`
	// DisagreementPct = 100 × (PowerIntegralJ − CounterEnergyJ) / CounterEnergyJ.
	DisagreementPct *float64 `json:"disagreement_pct"`
	// DisagreementFlagged is true when |DisagreementPct| exceeds the limit (default 10 %).
	DisagreementFlagged bool `json:"disagreement_flagged"`

	// PowerMeanW is PowerIntegralJ over the span it covers (time-weighted), W.
	PowerMeanW *float64 `json:"power_mean_w"`
	PowerPeakW *float64 `json:"power_peak_w"`
	// IdlePowerW is the mean power sampled before the window (WithIdlePower), W.
	IdlePowerW *float64 `json:"idle_power_w"`
	// PowerLimitW is the enforced power limit at the start, W.
	PowerLimitW *float64 `json:"power_limit_w"`

	// VRAMPeakBytes is the highest device memory used (GetMemoryInfo_v2.Used).
	VRAMPeakBytes *uint64 `json:"vram_peak_bytes"`
	// VRAMSteadyBytes is the median (nearest rank, stats.NearestRank) device
	// memory used over the second half of the window.
	VRAMSteadyBytes *uint64 `json:"vram_steady_bytes"`
	// ProcessVRAMPeakBytes / ProcessVRAMSteadyBytes: the same for the sum over
	// the server's PIDs (WithPIDs); null when not asked for or never seen.
	ProcessVRAMPeakBytes   *uint64 `json:"process_vram_peak_bytes"`
	ProcessVRAMSteadyBytes *uint64 `json:"process_vram_steady_bytes"`

	SMClockMeanMHz *float64 `json:"sm_clock_mean_mhz"`
	SMClockMinMHz  *float64 `json:"sm_clock_min_mhz"`
	TempMaxC       *float64 `json:"temp_max_c"`

	// ThrottledPower: some sample saw SW power cap or HW power brake.
	ThrottledPower bool `json:"throttled_power"`
	// ThrottledThermal: some sample saw SW or HW thermal slowdown.
	ThrottledThermal bool `json:"throttled_thermal"`
	// Throttled: any of the above or HW slowdown.
	Throttled bool `json:"throttled"`
	// ThrottleReasons counts samples per clocks-event reason (idle and
	// application-clock reasons included, for the record).
	ThrottleReasons []ThrottleCount `json:"throttle_reasons,omitempty"`

	Warnings []string `json:"warnings,omitempty"`
	// Samples are the raw samples, kept only WithSamples(true).
	Samples []Sample `json:"samples,omitempty"`

	// raw and in let Trim re-analyse a sub-window (not serialised).
	raw []Sample
	in  analysisInput
}

// Trim returns the window re-analysed over the samples taken between from
// and to (times from this process's clock, e.g. the first measured send and
// the last completion, so energy and tokens count over the same window).
// The effective window runs from the first to the last sample inside
// [from, to], so it is shorter than asked by less than one sampling period
// at each end; a warning says so when the shortfall exceeds one period.
// It fails on an unavailable window, a window decoded from JSON (no raw
// samples), or a range holding fewer than two samples.
func (w Window) Trim(from, to time.Time) (Window, error) {
	if !w.Available {
		return w, fmt.Errorf("energy: Trim: window unavailable (%s)", w.UnavailableReason)
	}
	if len(w.raw) == 0 {
		return w, errors.New("energy: Trim: no raw samples (window not produced by Stop in this process)")
	}
	if !to.After(from) {
		return w, fmt.Errorf("energy: Trim: empty range %s .. %s", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	}
	lo, hi := from.Sub(w.Start), to.Sub(w.Start)
	var sub []Sample
	for _, s := range w.raw {
		if s.At >= lo && s.At <= hi {
			sub = append(sub, s)
		}
	}
	if len(sub) < 2 {
		return w, fmt.Errorf("energy: Trim: %d sample(s) between %.3f s and %.3f s of a %.3f s window: too few",
			len(sub), lo.Seconds(), hi.Seconds(), w.DurationS)
	}
	shift := sub[0].At
	for i := range sub {
		sub[i].At -= shift
	}
	in := w.in
	in.start = w.Start.Add(shift)
	in.end = in.start.Add(sub[len(sub)-1].At)
	t := analyse(sub, in)
	if short := (hi - lo) - sub[len(sub)-1].At; short > in.period {
		t.Warnings = append(t.Warnings, fmt.Sprintf("trimmed window covers %.3f s of the %.3f s asked for (sampling period %.0f ms)",
			t.DurationS, (hi-lo).Seconds(), ms(in.period)))
	}
	return t, nil
}

// BestEnergy returns the headline counter energy when there is one, else the
// power integral as a labelled fallback. ok is false when neither exists.
// The label always says which one it is, for the report to print.
func (w Window) BestEnergy() (energyJ float64, label string, ok bool) {
	if w.EnergyJ != nil {
		return *w.EnergyJ, w.labelled("counter delta"), true
	}
	if w.PowerIntegralJ != nil {
		return *w.PowerIntegralJ, w.labelled("power integral, fallback: counter " + orUnknown(w.EnergyUnavailableReason)), true
	}
	return 0, "", false
}

func (w Window) labelled(what string) string {
	if w.Source == SourceSimulated {
		return "simulated (" + what + ")"
	}
	return "GPU-reported (" + what + ")"
}

func orUnknown(s string) string {
	if s == "" {
		return "unavailable"
	}
	return s
}

// JPerToken is the headline energy per token in J/token: EnergyJ / tokens.
// ok is false when EnergyJ is null or tokens ≤ 0.
func JPerToken(w Window, tokens int) (jPerToken float64, ok bool) {
	return perUnit(w, tokens)
}

// JPerRequest is the headline energy per completed request in J/request.
// ok is false when EnergyJ is null or requests ≤ 0.
func JPerRequest(w Window, requests int) (jPerRequest float64, ok bool) {
	return perUnit(w, requests)
}

func perUnit(w Window, n int) (float64, bool) {
	if w.EnergyJ == nil || n <= 0 {
		return 0, false
	}
	return *w.EnergyJ / float64(n), true
}

// Summary is a one-line human description (for logs), "unavailable" when so.
func (w Window) Summary() string {
	if !w.Available {
		return fmt.Sprintf("%s: unavailable (%s)", w.Source, w.UnavailableReason)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %.3f s, %d samples", w.Label, w.DurationS, w.SampleCount)
	fmt.Fprintf(&b, ", energy %s (%s)", fmtPtr(w.EnergyJ, "J"), w.EnergyHeadline)
	fmt.Fprintf(&b, ", power integral %s, disagreement %s", fmtPtr(w.PowerIntegralJ, "J"), fmtPtr(w.DisagreementPct, "%"))
	fmt.Fprintf(&b, ", mean %s, peak %s", fmtPtr(w.PowerMeanW, "W"), fmtPtr(w.PowerPeakW, "W"))
	if w.VRAMPeakBytes != nil {
		fmt.Fprintf(&b, ", VRAM peak %.3f GiB", float64(*w.VRAMPeakBytes)/(1<<30))
	}
	if len(w.Gaps) > 0 {
		fmt.Fprintf(&b, ", %d gaps", len(w.Gaps))
	}
	for _, u := range w.Unread {
		fmt.Fprintf(&b, ", %s unread (%s)", u.Field, u.Error)
	}
	if len(w.Warnings) > 0 {
		fmt.Fprintf(&b, ", %d warnings", len(w.Warnings))
	}
	return b.String()
}

func fmtPtr(p *float64, unit string) string {
	if p == nil {
		return "unavailable"
	}
	return fmt.Sprintf("%.3f %s", *p, unit)
}
