package energy

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const (
	step40s = 50 * time.Millisecond // the default sampling period
	n40s    = 800                   // 800 × 50 ms = 40 s, a steady-state window
)

func hasWarning(w Window, sub string) bool {
	for _, s := range w.Warnings {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// TestDeviceCases runs the fake-device cases, each with
// its right outcome. Ground truth: 500 W for 40 s = 20 000 J; the counter
// advances every 100 ms, and 40 s is a whole number of updates, so the
// counter delta is exact and the trapezoid integral of a constant is exact
// (tolerance 1e-6 J is float rounding only).
func TestDeviceCases(t *testing.T) {
	t.Parallel()
	const truthJ = 500.0 * 40
	cases := []struct {
		name  string
		setup func(f *fakeDevice)
		step  time.Duration
		n     int
		opts  []Option
		check func(t *testing.T, w Window)
	}{
		{
			name: "steady 40 s window: counter delta is the headline and agrees with the integral",
			check: func(t *testing.T, w Window) {
				wantNear(t, "energy_j", w.EnergyJ, truthJ, 1e-6)
				wantNear(t, "power_integral_j", w.PowerIntegralJ, truthJ, 1e-6)
				wantNear(t, "disagreement_pct", w.DisagreementPct, 0, 1e-9)
				wantNear(t, "power_mean_w", w.PowerMeanW, 500, 1e-9)
				wantNear(t, "quantisation_pct", w.QuantisationPct, 0.25, 1e-9)
				wantNear(t, "power_limit_w", w.PowerLimitW, 700, 0)
				wantNear(t, "counter_update_period_observed_ms", w.CounterUpdatePeriodObservedMs, 100, 1e-9)
				if w.EnergyHeadline != HeadlineCounter || w.DisagreementFlagged || w.BelowResolution || len(w.Warnings) != 0 {
					t.Errorf("headline %q flagged %t below %t warnings %q", w.EnergyHeadline, w.DisagreementFlagged, w.BelowResolution, w.Warnings)
				}
				if w.CounterUpdates != 400 || w.SampleCount != n40s+1 || w.PowerSource != PowerInstant {
					t.Errorf("updates %d samples %d power source %q", w.CounterUpdates, w.SampleCount, w.PowerSource)
				}
				if j, ok := JPerToken(w, 10_000); !ok || !near(j, 2, 1e-9) {
					t.Errorf("JPerToken = %v %v, want 2 J/token", j, ok)
				}
			},
		},
		{
			name:  "energy counter NOT_SUPPORTED: energy unavailable with the reason, integral offered as a labelled fallback",
			setup: func(f *fakeDevice) { f.energy = nil },
			check: func(t *testing.T, w Window) {
				if w.EnergyJ != nil || w.CounterEnergyJ != nil || w.EnergyHeadline != HeadlineNone {
					t.Errorf("energy_j %v counter %v headline %q, want null/null/none", w.EnergyJ, w.CounterEnergyJ, w.EnergyHeadline)
				}
				if !w.Available || !strings.Contains(w.EnergyUnavailableReason, "not supported") {
					t.Errorf("available %t reason %q", w.Available, w.EnergyUnavailableReason)
				}
				wantNear(t, "power_integral_j", w.PowerIntegralJ, truthJ, 1e-6)
				j, label, ok := w.BestEnergy()
				if !ok || !near(j, truthJ, 1e-6) || !strings.Contains(label, "power integral, fallback") || !strings.Contains(label, "GPU-reported") {
					t.Errorf("BestEnergy = %v %q %v", j, label, ok)
				}
				if _, ok := JPerToken(w, 100); ok {
					t.Errorf("JPerToken must refuse a window without headline energy")
				}
				if !hasWarning(w, "offered as a labelled fallback") {
					t.Errorf("warnings %q lack the fallback note", w.Warnings)
				}
				if len(w.Gaps) != 0 || len(w.Unread) != 1 || w.Unread[0].Field != "energy" || !strings.Contains(w.Unread[0].Error, "NOT_SUPPORTED") {
					t.Errorf("an unsupported counter is one unread field, not %d gaps: unread %+v", len(w.Gaps), w.Unread)
				}
			},
		},
		{
			name: "counter goes backwards mid-window: detected, reported, no negative energy",
			setup: func(f *fakeDevice) {
				orig := f.energy
				f.energy = func(i int) (uint64, error) {
					v, _ := orig(i)
					if i >= 400 { // driver reload: counter restarts near 0
						return v - 1e12 - 10_000_000, nil
					}
					return v, nil
				}
			},
			check: func(t *testing.T, w Window) {
				if w.EnergyJ != nil || len(w.CounterResets) != 1 || w.CounterResets[0].Kind != "backwards" {
					t.Fatalf("energy_j %v resets %+v", w.EnergyJ, w.CounterResets)
				}
				wantNear(t, "counter_resets[0].at_ms", &w.CounterResets[0].AtMs, 20_000, 0)
				// One 50 ms step is dropped; at most one 100 ms update (50 J) is lost.
				if *w.CounterEnergyJ < 0 || *w.CounterEnergyJ > truthJ || *w.CounterEnergyJ < truthJ-50 {
					t.Errorf("counter_energy_j %v, want in [%v, %v]", *w.CounterEnergyJ, truthJ-50, truthJ)
				}
				if !strings.Contains(w.EnergyUnavailableReason, "reset") || !hasWarning(w, "reset") {
					t.Errorf("reason %q warnings %q", w.EnergyUnavailableReason, w.Warnings)
				}
			},
		},
		{
			name: "counter jumps by a garbage value: detected as implausible, not a huge energy",
			setup: func(f *fakeDevice) {
				orig := f.energy
				f.energy = func(i int) (uint64, error) {
					v, _ := orig(i)
					if i >= 123 {
						return v + 1e9, nil // +1 MJ in 50 ms: 20 MW
					}
					return v, nil
				}
			},
			check: func(t *testing.T, w Window) {
				if w.EnergyJ != nil || len(w.CounterResets) != 1 || w.CounterResets[0].Kind != "implausible_jump" {
					t.Fatalf("energy_j %v resets %+v", w.EnergyJ, w.CounterResets)
				}
				if *w.CounterEnergyJ > truthJ {
					t.Errorf("counter_energy_j %v exceeds the truth %v", *w.CounterEnergyJ, truthJ)
				}
			},
		},
		{
			name: "window shorter than the 100 ms counter update period: refused, below resolution",
			step: 20 * time.Millisecond, n: 3, // a 60 ms window
			check: func(t *testing.T, w Window) {
				if w.EnergyJ != nil || !w.BelowResolution || !strings.Contains(w.EnergyUnavailableReason, "update period") {
					t.Errorf("energy_j %v below %t reason %q", w.EnergyJ, w.BelowResolution, w.EnergyUnavailableReason)
				}
				// 500 W × 60 ms.
				wantNear(t, "power_integral_j", w.PowerIntegralJ, 30, 1e-9)
			},
		},
		{
			name: "the same 60 ms window on a GPU whose counter updates every 10 ms: kept, with quantisation warnings",
			setup: func(f *fakeDevice) {
				*f = *newFake(f.t, 20*time.Millisecond, 10*time.Millisecond, 500)
			},
			step: 20 * time.Millisecond, n: 3,
			opts: []Option{WithCounterUpdatePeriod(10 * time.Millisecond)},
			check: func(t *testing.T, w Window) {
				wantNear(t, "energy_j", w.EnergyJ, 30, 1e-9)
				wantNear(t, "quantisation_pct", w.QuantisationPct, 100.0/6, 1e-9)
				if w.BelowResolution || !hasWarning(w, "quantisation up to") || !hasWarning(w, "30 s steady state") {
					t.Errorf("below %t warnings %q", w.BelowResolution, w.Warnings)
				}
			},
		},
		{
			name: "counter slower than assumed (1 s, not 100 ms): observed period used for quantisation, with a warning",
			setup: func(f *fakeDevice) {
				*f = *newFake(f.t, step40s, time.Second, 500)
			},
			check: func(t *testing.T, w Window) {
				wantNear(t, "energy_j", w.EnergyJ, truthJ, 1e-6) // 40 s is a whole number of 1 s updates
				wantNear(t, "counter_update_period_observed_ms", w.CounterUpdatePeriodObservedMs, 1000, 1e-9)
				wantNear(t, "quantisation_pct", w.QuantisationPct, 2.5, 1e-9)
				if !hasWarning(w, "slower than the assumed") || !hasWarning(w, "quantisation up to 2.50") {
					t.Errorf("warnings %q", w.Warnings)
				}
			},
		},
		{
			name: "counter never advances inside a window longer than the period: below resolution",
			setup: func(f *fakeDevice) {
				f.energy = func(int) (uint64, error) { return 5e9, nil }
			},
			step: 50 * time.Millisecond, n: 4,
			check: func(t *testing.T, w Window) {
				if w.EnergyJ != nil || !w.BelowResolution || !strings.Contains(w.EnergyUnavailableReason, "did not advance") {
					t.Errorf("energy_j %v below %t reason %q", w.EnergyJ, w.BelowResolution, w.EnergyUnavailableReason)
				}
			},
		},
		{
			name: "counter and integral disagree by 20 %: flagged, headline stays the counter and says so",
			setup: func(f *fakeDevice) {
				f.instant = func(int) (float64, error) { return 600_000, nil }
			},
			check: func(t *testing.T, w Window) {
				wantNear(t, "energy_j", w.EnergyJ, truthJ, 1e-6)
				wantNear(t, "disagreement_pct", w.DisagreementPct, 20, 1e-9)
				if !w.DisagreementFlagged || w.EnergyHeadline != HeadlineCounter || !hasWarning(w, "headline energy_j uses the counter delta") {
					t.Errorf("flagged %t headline %q warnings %q", w.DisagreementFlagged, w.EnergyHeadline, w.Warnings)
				}
			},
		},
		{
			name: "a 5 % disagreement is reported but not flagged",
			setup: func(f *fakeDevice) {
				f.instant = func(int) (float64, error) { return 525_000, nil }
			},
			check: func(t *testing.T, w Window) {
				wantNear(t, "disagreement_pct", w.DisagreementPct, 5, 1e-9)
				if w.DisagreementFlagged {
					t.Errorf("5 %% flagged with the default 10 %% limit")
				}
			},
		},
		{
			name: "one energy read and one power read fail mid-window: the window survives with gaps noted",
			setup: func(f *fakeDevice) {
				e, p := f.energy, f.instant
				f.energy = func(i int) (uint64, error) {
					if i == 300 {
						return 0, errTransient
					}
					return e(i)
				}
				f.instant = func(i int) (float64, error) {
					if i == 500 {
						return 0, errTransient
					}
					return p(i)
				}
			},
			check: func(t *testing.T, w Window) {
				// The counter is cumulative: skipping a read loses nothing.
				wantNear(t, "energy_j", w.EnergyJ, truthJ, 1e-6)
				// Trapezoid across the gap of a constant power is still exact.
				wantNear(t, "power_integral_j", w.PowerIntegralJ, truthJ, 1e-6)
				if len(w.Unread) != 0 || len(w.Gaps) != 2 || w.Gaps[0].Field != "energy" || w.Gaps[0].AtMs != 15_000 || w.Gaps[1].Field != "power" || w.Gaps[1].AtMs != 25_000 {
					t.Errorf("gaps %+v", w.Gaps)
				}
				if w.SampleCount != n40s+1 {
					t.Errorf("sample count %d", w.SampleCount)
				}
			},
		},
		{
			name: "energy read fails at the last sample: partial delta refused as headline",
			setup: func(f *fakeDevice) {
				e := f.energy
				f.energy = func(i int) (uint64, error) {
					if i == n40s {
						return 0, errTransient
					}
					return e(i)
				}
			},
			check: func(t *testing.T, w Window) {
				if w.EnergyJ != nil || !strings.Contains(w.EnergyUnavailableReason, "start or end") {
					t.Errorf("energy_j %v reason %q", w.EnergyJ, w.EnergyUnavailableReason)
				}
			},
		},
		{
			name: "instant power field unsupported: driver-averaged power usage is used and named",
			setup: func(f *fakeDevice) {
				f.instant = nil
				f.usage = func(int) (uint32, error) { return 500_000, nil }
			},
			check: func(t *testing.T, w Window) {
				if w.PowerSource != PowerUsageAvg {
					t.Errorf("power source %q", w.PowerSource)
				}
				wantNear(t, "power_integral_j", w.PowerIntegralJ, truthJ, 1e-6)
			},
		},
		{
			name: "power cap and thermal slowdown samples set the throttle flags; idle reason does not",
			setup: func(f *fakeDevice) {
				f.reasons = func(i int) (uint64, error) {
					switch {
					case i == 10:
						return reasonSwPowerCap, nil
					case i == 11:
						return reasonHwThermal | reasonGpuIdle, nil
					}
					return reasonGpuIdle, nil
				}
			},
			check: func(t *testing.T, w Window) {
				if !w.ThrottledPower || !w.ThrottledThermal || !w.Throttled || !hasWarning(w, "throttled") {
					t.Errorf("power %t thermal %t any %t", w.ThrottledPower, w.ThrottledThermal, w.Throttled)
				}
				// Sample 10 had no idle bit.
				want := map[string]int{"gpu_idle": n40s, "sw_power_cap": 1, "hw_thermal_slowdown": 1}
				if len(w.ThrottleReasons) != len(want) {
					t.Errorf("reasons %+v", w.ThrottleReasons)
				}
				for _, r := range w.ThrottleReasons {
					if want[r.Reason] != r.Samples {
						t.Errorf("reason %s: %d samples, want %d", r.Reason, r.Samples, want[r.Reason])
					}
				}
			},
		},
		{
			name: "idle GPU only: no throttle flags",
			setup: func(f *fakeDevice) {
				f.reasons = func(int) (uint64, error) { return reasonGpuIdle, nil }
			},
			check: func(t *testing.T, w Window) {
				if w.Throttled || w.ThrottledPower || w.ThrottledThermal {
					t.Errorf("idle reason counted as throttling")
				}
			},
		},
		{
			name: "VRAM: device peak and steady, server PIDs attributed, other processes ignored",
			setup: func(f *fakeDevice) {
				f.used = func(i int) (uint64, error) {
					if i == 100 {
						return 90 << 30, nil // a transient peak in the first half
					}
					if i < 400 {
						return 40 << 30, nil
					}
					return 60 << 30, nil
				}
				f.procs = func(i int) ([]processMem, error) {
					return []processMem{
						{PID: 4242, UsedBytes: ptr(uint64(30 << 30))},
						{PID: 4243, UsedBytes: ptr(uint64(2 << 30))},
						{PID: 999, UsedBytes: ptr(uint64(7 << 30))}, // someone else's process
						{PID: 4244, UsedBytes: nil},                 // NVML_VALUE_NOT_AVAILABLE
					}, nil
				}
			},
			opts: []Option{WithPIDs(4242, 4243, 4244)},
			check: func(t *testing.T, w Window) {
				if w.VRAMPeakBytes == nil || *w.VRAMPeakBytes != 90<<30 || w.VRAMSteadyBytes == nil || *w.VRAMSteadyBytes != 60<<30 {
					t.Errorf("vram peak %v steady %v", deref(w.VRAMPeakBytes), deref(w.VRAMSteadyBytes))
				}
				if w.ProcessVRAMPeakBytes == nil || *w.ProcessVRAMPeakBytes != 32<<30 || *w.ProcessVRAMSteadyBytes != 32<<30 {
					t.Errorf("process vram peak %v", deref(w.ProcessVRAMPeakBytes))
				}
			},
		},
		{
			name: "server PIDs never listed by NVML: process VRAM null with a warning, never 0",
			setup: func(f *fakeDevice) {
				f.procs = func(int) ([]processMem, error) {
					return []processMem{{PID: 1, UsedBytes: ptr(uint64(1 << 30))}}, nil
				}
			},
			opts: []Option{WithPIDs(77)},
			check: func(t *testing.T, w Window) {
				if w.ProcessVRAMPeakBytes != nil || !hasWarning(w, "PID namespace") {
					t.Errorf("process vram %v warnings %q", deref(w.ProcessVRAMPeakBytes), w.Warnings)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			step, n := tc.step, tc.n
			if step == 0 {
				step, n = step40s, n40s
			}
			f := newFake(t, step, DefaultCounterUpdatePeriod, 500)
			if tc.setup != nil {
				tc.setup(f)
			}
			w := scripted(t, f, step, n, tc.opts...)
			if w.Source != SourceNVML || !w.Available || !strings.Contains(w.Label, "GPU-reported") {
				t.Errorf("source %q available %t label %q", w.Source, w.Available, w.Label)
			}
			tc.check(t, w)
		})
	}
}

func deref(p *uint64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestOpenFailures: a device that cannot be opened is unavailable, with the
// reason, and errors.Is(err, ErrUnavailable).
func TestOpenFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		index   int
		openErr error
		want    string
	}{
		{"no driver", 0, errors.New("nvmlInit: ERROR_LIBRARY_NOT_FOUND"), "ERROR_LIBRARY_NOT_FOUND"},
		{"already wrapped", 3, ErrUnavailable, "unavailable"},
		{"negative index", -1, nil, "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opened := false
			r := newDeviceSampler(tc.index, func(int) (device, error) {
				opened = true
				return nil, tc.openErr
			})
			err := r.Start(t.Context(), 0)
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Start: %v, want ErrUnavailable", err)
			}
			if tc.index < 0 && opened {
				t.Errorf("opened a negative index")
			}
			w, err := r.Stop()
			if !errors.Is(err, ErrUnavailable) || w.Available || !strings.Contains(w.UnavailableReason, tc.want) {
				t.Errorf("Stop: %v, window available %t reason %q", err, w.Available, w.UnavailableReason)
			}
			if w.EnergyJ != nil || w.PowerMeanW != nil || w.VRAMPeakBytes != nil || w.EnergyHeadline != HeadlineNone {
				t.Errorf("unavailable window carries figures: %+v", w)
			}
			if _, _, ok := w.BestEnergy(); ok {
				t.Errorf("BestEnergy of an unavailable window")
			}
			if !strings.Contains(w.Summary(), "unavailable") {
				t.Errorf("summary %q", w.Summary())
			}
		})
	}
}

// TestTrim re-analyses a 40 s window over a sub-range, so energy and tokens
// can count over the same measured window. Truth: 500 W × 20 s = 10 000 J.
func TestTrim(t *testing.T) {
	t.Parallel()
	w := scripted(t, newFake(t, step40s, DefaultCounterUpdatePeriod, 500), step40s, n40s)
	at := func(s float64) time.Time { return w.Start.Add(time.Duration(s * float64(time.Second))) }
	tw, err := w.Trim(at(10), at(30))
	if err != nil {
		t.Fatal(err)
	}
	wantNear(t, "trimmed energy_j", tw.EnergyJ, 10_000, 1e-6)
	wantNear(t, "trimmed power_integral_j", tw.PowerIntegralJ, 10_000, 1e-6)
	if tw.DurationS != 20 || !tw.Start.Equal(at(10)) || !tw.End.Equal(at(30)) || tw.SampleCount != 401 {
		t.Errorf("trimmed duration %v start %v end %v samples %d", tw.DurationS, tw.Start, tw.End, tw.SampleCount)
	}
	if !hasWarning(tw, "30 s steady state") {
		t.Errorf("a 20 s window should warn about the 30 s steady state: %q", tw.Warnings)
	}

	// A range not on sample times loses < 1 period at each end; a warning
	// says so when the total shortfall exceeds one period.
	tw, err = w.Trim(at(10.01), at(30.04))
	if err != nil {
		t.Fatal(err)
	}
	if !near(tw.DurationS, 19.95, 1e-9) || !hasWarning(tw, "trimmed window covers") {
		t.Errorf("duration %v warnings %q", tw.DurationS, tw.Warnings)
	}

	bad := []struct {
		name     string
		w        Window
		from, to time.Time
		want     string
	}{
		{"one sample only", w, at(10), at(10.04), "too few"},
		{"reversed", w, at(30), at(10), "empty range"},
		{"unavailable", Window{UnavailableReason: "no driver"}, at(0), at(1), "unavailable"},
		{"decoded from JSON", Window{Available: true}, at(0), at(1), "no raw samples"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.w.Trim(tc.from, tc.to); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Trim error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestSteadyVRAMIsNearestRankMedian: steady VRAM is the nearest-rank median
// (stats.NearestRank, DESIGN.md's one percentile) of the samples from
// steadyFrom on: of 1, 4, 3, 2 GiB the 2nd smallest, 2 GiB, not the upper
// middle; earlier samples count for the peak only.
func TestSteadyVRAMIsNearestRankMedian(t *testing.T) {
	t.Parallel()
	var samples []Sample
	for i, gib := range []uint64{9, 1, 4, 3, 2} {
		samples = append(samples, Sample{At: time.Duration(i) * time.Second, DeviceUsedBytes: gib << 30, has: fieldMemory})
	}
	m := pickMem(samples, fieldMemory, time.Second, func(s Sample) uint64 { return s.DeviceUsedBytes })
	if m.peak == nil || *m.peak != 9<<30 || m.steady == nil || *m.steady != 2<<30 {
		t.Errorf("peak %v steady %v, want 9 GiB and 2 GiB", deref(m.peak), deref(m.steady))
	}
}
