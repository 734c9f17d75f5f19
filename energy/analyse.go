package energy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/transferlab/transferlab/stats"
)

// Clocks-event (throttle) reason bits, from nvml.h (nvmlClocksEventReason*).
const (
	reasonGpuIdle          = 0x1
	reasonAppClocks        = 0x2
	reasonSwPowerCap       = 0x4
	reasonHwSlowdown       = 0x8
	reasonSyncBoost        = 0x10
	reasonSwThermal        = 0x20
	reasonHwThermal        = 0x40
	reasonHwPowerBrake     = 0x80
	reasonDisplayClock     = 0x100
	reasonPowerBoardLimit  = 0x200
	reasonReliability      = 0x400
	jumpPowerLimitFactor   = 3.0
	jumpSlack              = time.Second
	defaultJumpLimitW      = 1000.0
	steadyVRAMFromFraction = 0.5
)

var reasonNames = []struct {
	bit  uint64
	name string
}{
	{reasonGpuIdle, "gpu_idle"}, {reasonAppClocks, "applications_clocks_setting"},
	{reasonSwPowerCap, "sw_power_cap"}, {reasonHwSlowdown, "hw_slowdown"}, {reasonSyncBoost, "sync_boost"},
	{reasonSwThermal, "sw_thermal_slowdown"}, {reasonHwThermal, "hw_thermal_slowdown"},
	{reasonHwPowerBrake, "hw_power_brake_slowdown"}, {reasonDisplayClock, "display_clock_setting"},
	{reasonPowerBoardLimit, "board_limit"}, {reasonReliability, "reliability"},
}

// analysisInput is what analyse needs besides the samples.
type analysisInput struct {
	info       sourceInfo
	cfg        config
	start, end time.Time
	period     time.Duration
	idlePowerW *float64
}

// errNotSupported marks a quantity the device does not support (NVML
// ERROR_NOT_SUPPORTED); a read failing with it is not a transient gap.
var errNotSupported = errors.New("not supported")

// analyse folds the samples of one window (sorted by At, first at 0) into a Window.
func analyse(samples []Sample, in analysisInput) Window {
	w := Window{
		Source:         in.info.source,
		Label:          in.info.label,
		Device:         in.info.device,
		Available:      true,
		Start:          in.start,
		End:            in.end,
		SamplePeriodMs: ms(in.period),
		SampleCount:    len(samples),
		PowerSource:    in.info.powerSource,
		PowerLimitW:    in.info.powerLimitW,
		IdlePowerW:     in.idlePowerW,
		EnergyHeadline: HeadlineNone,
	}
	if len(samples) > 0 {
		w.DurationS = samples[len(samples)-1].At.Seconds()
	}
	w.raw, w.in = samples, in
	if in.cfg.keepSamples {
		w.Samples = samples
	}
	gapsAndUnread(&w, samples)
	updatePeriod := in.cfg.counterUpdatePeriod
	if in.info.counterUpdatePeriod != 0 {
		updatePeriod = max(in.info.counterUpdatePeriod, 0)
	}
	w.CounterUpdatePeriodMs = ms(updatePeriod)
	counterEnergy(&w, samples, updatePeriod, in)
	powerFigures(&w, samples, in.info.powerIsIntervalMean)
	crossCheck(&w, in.cfg.maxDisagreementPct)
	memoryFigures(&w, samples, len(in.cfg.pids) > 0 || in.cfg.simVRAM != nil)
	clockFigures(&w, samples)
	if d := time.Duration(w.DurationS * float64(time.Second)); updatePeriod > 0 && d < in.cfg.minSteadyWindow {
		w.Warnings = append(w.Warnings, fmt.Sprintf(
			"window %.3f s is shorter than the %.0f s steady state recommended for energy (ML.ENERGY): counter quantisation may exceed 1 %%",
			w.DurationS, in.cfg.minSteadyWindow.Seconds()))
	}
	return w
}

// gapsAndUnread lists failed reads: a field never read in the window is
// listed once in Unread; a field read at least once has its failures listed
// as Gaps (the window survives them).
func gapsAndUnread(w *Window, samples []Sample) {
	for _, f := range fieldNames {
		read, first := 0, ""
		for _, s := range samples {
			if s.ok(f.f) {
				read++
			} else if e, bad := s.Errors[f.name]; bad && first == "" {
				first = e
			}
		}
		if read == 0 && first != "" {
			w.Unread = append(w.Unread, Gap{Field: f.name, Error: first})
			continue
		}
		for _, s := range samples {
			if e, bad := s.Errors[f.name]; bad {
				w.Gaps = append(w.Gaps, Gap{AtMs: ms(s.At), Field: f.name, Error: e})
			}
		}
	}
	slices.SortStableFunc(w.Gaps, func(a, b Gap) int { return cmp.Compare(a.AtMs, b.AtMs) })
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ptr[T any](v T) *T { return &v }

// counterEnergy computes the counter delta, detecting resets, partial
// coverage and windows below the counter's resolution.
func counterEnergy(w *Window, samples []Sample, updatePeriod time.Duration, in analysisInput) {
	var okIdx []int
	var firstErr string
	for i, s := range samples {
		if s.ok(fieldEnergy) {
			okIdx = append(okIdx, i)
		} else if e := s.Errors[fieldEnergy.String()]; e != "" && firstErr == "" {
			firstErr = e
		}
	}
	if len(okIdx) == 0 {
		w.EnergyUnavailableReason = "energy counter never read in this window"
		if firstErr != "" {
			w.EnergyUnavailableReason = "energy counter unavailable: " + firstErr
		}
		return
	}
	limitW := defaultJumpLimitW
	if in.info.powerLimitW != nil && *in.info.powerLimitW > 0 {
		limitW = *in.info.powerLimitW
	}
	var totalMJ float64
	var firstChange, lastChange time.Duration
	prev := samples[okIdx[0]]
	// base is the last time the counter was seen holding the value it held
	// before its latest advance: the energy of the next advance accrued
	// after it (give or take the slack).
	base := prev.At
	slack := updatePeriod + jumpSlack
	for _, i := range okIdx[1:] {
		cur := samples[i]
		d := cur.EnergyMJ - prev.EnergyMJ
		maxMJ := jumpPowerLimitFactor * limitW * (cur.At - base + slack).Seconds() * 1000
		switch {
		case d < 0:
			w.CounterResets = append(w.CounterResets, CounterReset{AtMs: ms(cur.At), FromMJ: prev.EnergyMJ, ToMJ: cur.EnergyMJ,
				Kind: "backwards", Detail: "counter went backwards (reset or driver reload); this step is not counted"})
			base = prev.At
		case d > maxMJ:
			w.CounterResets = append(w.CounterResets, CounterReset{AtMs: ms(cur.At), FromMJ: prev.EnergyMJ, ToMJ: cur.EnergyMJ,
				Kind: "implausible_jump", Detail: fmt.Sprintf("step of %.0f mJ exceeds %.0f mJ (3 × %.0f W power limit since %.3f s, plus %.1f s slack); not counted",
					d, maxMJ, limitW, base.Seconds(), slack.Seconds())})
			base = prev.At
		case d > 0:
			totalMJ += d
			if w.CounterUpdates == 0 {
				firstChange = cur.At
			}
			lastChange = cur.At
			w.CounterUpdates++
			base = prev.At
		}
		prev = cur
	}
	w.CounterEnergyJ = ptr(totalMJ / 1000)
	dur := time.Duration(w.DurationS * float64(time.Second))
	quantPeriod := updatePeriod
	if updatePeriod > 0 && w.CounterUpdates >= 2 {
		// Mean time between observed counter advances: the update period as
		// seen, resolved to the sampling period.
		obs := (lastChange - firstChange) / time.Duration(w.CounterUpdates-1)
		w.CounterUpdatePeriodObservedMs = ptr(ms(obs))
		// Sampling slower than the counter only ever sees the sampling period.
		if float64(obs) > 1.5*float64(max(updatePeriod, in.period)) {
			quantPeriod = obs
			w.Warnings = append(w.Warnings, fmt.Sprintf(
				"the energy counter advanced every %.0f ms on average, slower than the assumed %.0f ms: quantisation uses the observed period (set WithCounterUpdatePeriod)",
				ms(obs), ms(updatePeriod)))
		}
	}
	if quantPeriod > 0 && dur > 0 {
		w.QuantisationPct = ptr(100 * quantPeriod.Seconds() / dur.Seconds())
	}
	first, last := okIdx[0], okIdx[len(okIdx)-1]
	switch {
	case len(w.CounterResets) > 0:
		w.EnergyUnavailableReason = fmt.Sprintf("energy counter reset or jumped %d time(s) in the window (first at %.0f ms, %s): the delta misses the energy of those steps, refused as headline",
			len(w.CounterResets), w.CounterResets[0].AtMs, w.CounterResets[0].Kind)
	case first != 0 || last != len(samples)-1:
		w.EnergyUnavailableReason = fmt.Sprintf("energy counter not read at the window's start or end (read from %.0f ms to %.0f ms of %.0f ms): partial delta refused as headline",
			ms(samples[first].At), ms(samples[last].At), ms(dur))
	case updatePeriod > 0 && dur < updatePeriod:
		w.BelowResolution = true
		w.EnergyUnavailableReason = fmt.Sprintf("window %.1f ms is shorter than the energy counter's update period %.0f ms: counter delta refused (below resolution)",
			ms(dur), ms(updatePeriod))
	case updatePeriod > 0 && w.CounterUpdates == 0:
		w.BelowResolution = true
		w.EnergyUnavailableReason = fmt.Sprintf("energy counter did not advance during the %.1f ms window: below resolution, refused", ms(dur))
	default:
		w.EnergyJ = ptr(totalMJ / 1000)
		w.EnergyHeadline = HeadlineCounter
		if w.QuantisationPct != nil && *w.QuantisationPct > 1 {
			w.Warnings = append(w.Warnings, fmt.Sprintf("energy counter quantisation up to %.2f %% (update period %.0f ms over a %.3f s window)",
				*w.QuantisationPct, ms(quantPeriod), w.DurationS))
		}
	}
	if len(w.CounterResets) > 0 {
		w.Warnings = append(w.Warnings, w.EnergyUnavailableReason)
	}
}

// powerFigures integrates power over the successful samples.
func powerFigures(w *Window, samples []Sample, intervalMean bool) {
	var integral, peak float64
	var spanStart, spanEnd time.Duration
	n := 0
	var prev Sample
	for _, s := range samples {
		if !s.ok(fieldPower) {
			continue
		}
		if n == 0 {
			spanStart = s.At
		} else {
			dt := (s.At - prev.At).Seconds()
			if intervalMean {
				integral += s.PowerW * dt
			} else {
				integral += (s.PowerW + prev.PowerW) / 2 * dt
			}
		}
		if n == 0 || s.PowerW > peak {
			peak = s.PowerW
		}
		spanEnd = s.At
		prev = s
		n++
	}
	if n == 0 {
		return
	}
	w.PowerPeakW = ptr(peak)
	if n < 2 || spanEnd <= spanStart {
		w.Warnings = append(w.Warnings, "fewer than two power samples: no power integral")
		return
	}
	w.PowerIntegralJ = ptr(integral)
	w.PowerMeanW = ptr(integral / (spanEnd - spanStart).Seconds())
	if spanStart != 0 || spanEnd != samples[len(samples)-1].At {
		w.Warnings = append(w.Warnings, fmt.Sprintf("power integral covers %.0f ms to %.0f ms of the window only",
			ms(spanStart), ms(spanEnd)))
	}
}

// crossCheck compares the counter delta with the power integral.
func crossCheck(w *Window, maxPct float64) {
	if w.EnergyJ == nil {
		if w.PowerIntegralJ != nil {
			w.Warnings = append(w.Warnings, fmt.Sprintf(
				"no headline energy (%s); the power integral %.3f J (%s) is offered as a labelled fallback only",
				w.EnergyUnavailableReason, *w.PowerIntegralJ, w.PowerSource))
		}
		return
	}
	if w.PowerIntegralJ == nil || *w.EnergyJ <= 0 {
		return
	}
	pct := 100 * (*w.PowerIntegralJ - *w.EnergyJ) / *w.EnergyJ
	w.DisagreementPct = ptr(pct)
	if math.Abs(pct) > maxPct {
		w.DisagreementFlagged = true
		w.Warnings = append(w.Warnings, fmt.Sprintf(
			"energy counter delta %.3f J and power integral %.3f J (%s) disagree by %+.1f %% (limit %.0f %%); the headline energy_j uses the counter delta",
			*w.EnergyJ, *w.PowerIntegralJ, w.PowerSource, pct, maxPct))
	}
}

// memoryFigures computes peak and steady VRAM (device and server processes).
func memoryFigures(w *Window, samples []Sample, processAsked bool) {
	if len(samples) == 0 {
		return
	}
	steadyFrom := time.Duration(float64(samples[len(samples)-1].At) * steadyVRAMFromFraction)
	dev := pickMem(samples, fieldMemory, steadyFrom, func(s Sample) uint64 { return s.DeviceUsedBytes })
	w.VRAMPeakBytes, w.VRAMSteadyBytes = dev.peak, dev.steady
	proc := pickMem(samples, fieldProcess, steadyFrom, func(s Sample) uint64 { return s.ProcessUsedBytes })
	w.ProcessVRAMPeakBytes, w.ProcessVRAMSteadyBytes = proc.peak, proc.steady
	if processAsked && proc.peak == nil {
		w.Warnings = append(w.Warnings, "process VRAM asked for but never read (PIDs not in NVML's process list: another PID namespace, or no permission)")
	}
}

type memFigures struct{ peak, steady *uint64 }

func pickMem(samples []Sample, f field, steadyFrom time.Duration, get func(Sample) uint64) memFigures {
	var out memFigures
	var steady []float64 // bytes (exact in a float64 below 2^53 B)
	for _, s := range samples {
		if !s.ok(f) {
			continue
		}
		v := get(s)
		if out.peak == nil || v > *out.peak {
			out.peak = ptr(v)
		}
		if s.At >= steadyFrom {
			steady = append(steady, float64(v))
		}
	}
	if len(steady) > 0 {
		slices.Sort(steady)
		out.steady = ptr(uint64(stats.NearestRank(steady, 0.5)))
	}
	return out
}

// clockFigures: SM clock, temperature and throttle reasons.
func clockFigures(w *Window, samples []Sample) {
	var clockSum float64
	var clockN int
	counts := map[uint64]int{}
	for _, s := range samples {
		if s.ok(fieldSMClock) {
			c := float64(s.SMClockMHz)
			clockSum += c
			clockN++
			if w.SMClockMinMHz == nil || c < *w.SMClockMinMHz {
				w.SMClockMinMHz = ptr(c)
			}
		}
		if s.ok(fieldTemp) {
			t := float64(s.TempC)
			if w.TempMaxC == nil || t > *w.TempMaxC {
				w.TempMaxC = ptr(t)
			}
		}
		if s.ok(fieldReasons) {
			for _, r := range reasonNames {
				if s.ClocksEventReasons&r.bit != 0 {
					counts[r.bit]++
				}
			}
		}
	}
	if clockN > 0 {
		w.SMClockMeanMHz = ptr(clockSum / float64(clockN))
	}
	for _, r := range reasonNames {
		if counts[r.bit] > 0 {
			w.ThrottleReasons = append(w.ThrottleReasons, ThrottleCount{Reason: r.name, Samples: counts[r.bit]})
		}
	}
	w.ThrottledPower = counts[reasonSwPowerCap]+counts[reasonHwPowerBrake] > 0
	w.ThrottledThermal = counts[reasonSwThermal]+counts[reasonHwThermal] > 0
	w.Throttled = w.ThrottledPower || w.ThrottledThermal || counts[reasonHwSlowdown] > 0
	if w.Throttled {
		w.Warnings = append(w.Warnings, fmt.Sprintf("the GPU throttled during the window (power=%t, thermal=%t); see throttle_reasons",
			w.ThrottledPower, w.ThrottledThermal))
	}
}
