package energy

import (
	"strings"
	"testing"
	"time"
)

// TestSimulatedModel checks the simulated sampler against its stated model,
// P = idle + (peak − idle) × busy fraction, with a scripted busy time and
// hand-computed energies (H200 model: 77 W idle, 690 W peak).
func TestSimulatedModel(t *testing.T) {
	t.Parallel()
	s := time.Second
	cases := []struct {
		name string
		// busy[k] is the cumulative busy time read at sample k (sample k at k seconds).
		busy    []time.Duration
		wantJ   float64
		wantPk  float64
		clamped bool
	}{
		// 1 s idle (77 J) + 1 s half busy (383.5 J) + 1 s fully busy (690 J).
		{"idle, half, full", []time.Duration{5 * s, 5 * s, 5*s + s/2, 6*s + s/2}, 77 + 383.5 + 690, 690, false},
		// Busy time advancing faster than wall time is clamped to fully busy and reported.
		{"over-busy clamped", []time.Duration{0, 3 * s}, 690, 690, true},
		{"idle throughout", []time.Duration{0, 0, 0}, 2 * 77, 77, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := 0
			r := newSimulated(DefaultPowerModel(), func() time.Duration { return tc.busy[min(k, len(tc.busy)-1)] })
			p := r.probe.(*simProbe)
			info, err := p.open()
			if err != nil {
				t.Fatal(err)
			}
			var samples []Sample
			for k = 0; k < len(tc.busy); k++ {
				samples = append(samples, p.take(time.Duration(k)*s))
			}
			closeErr := p.close()
			if (closeErr != nil) != tc.clamped {
				t.Errorf("close error %v, want clamped=%t", closeErr, tc.clamped)
			}
			w := analyse(samples, analysisInput{info: info, cfg: r.cfg, period: s})
			wantNear(t, "energy_j", w.EnergyJ, tc.wantJ, 1e-9)
			wantNear(t, "power_integral_j", w.PowerIntegralJ, tc.wantJ, 1e-9)
			wantNear(t, "disagreement_pct", w.DisagreementPct, 0, 1e-9)
			wantNear(t, "power_peak_w", w.PowerPeakW, tc.wantPk, 1e-9)
			wantNear(t, "power_mean_w", w.PowerMeanW, tc.wantJ/float64(len(tc.busy)-1), 1e-9)
			wantNear(t, "power_limit_w", w.PowerLimitW, 700, 0)
			if w.Source != SourceSimulated || !strings.HasPrefix(w.Label, "simulated") || w.PowerSource != PowerSimulated {
				t.Errorf("source %q label %q power source %q", w.Source, w.Label, w.PowerSource)
			}
			if w.BelowResolution || w.QuantisationPct != nil || len(w.Warnings) != 0 {
				t.Errorf("simulated counter has no resolution limit: below %t quant %v warnings %q", w.BelowResolution, w.QuantisationPct, w.Warnings)
			}
			if w.VRAMPeakBytes != nil {
				t.Errorf("simulated VRAM reported without WithSimulatedVRAM")
			}
			if _, label, _ := w.BestEnergy(); !strings.HasPrefix(label, "simulated (counter delta") {
				t.Errorf("BestEnergy label %q", label)
			}
		})
	}
}

// TestSimulatedRunner runs the simulated sampler with its goroutine. With a
// busy time that never advances, every interval is idle, so the energy is
// exactly 77 W × the window's own duration whatever the scheduling; with a
// busy time that races ahead, it is exactly 690 W × duration.
func TestSimulatedRunner(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		busy  func() time.Duration
		wantW float64
	}{
		{"never busy", func() time.Duration { return 0 }, 77},
		{"always busy (clamped)", func() func() time.Duration {
			var n time.Duration
			return func() time.Duration { n += time.Hour; return n }
		}(), 690},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := NewSimulated(DefaultPowerModel(), tc.busy, WithSimulatedVRAM(func() uint64 { return 12 << 30 }))
			if err := r.Start(t.Context(), 2*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond) // any length works: the check scales with the measured duration
			w, err := r.Stop()
			if err != nil {
				t.Fatal(err)
			}
			wantNear(t, "energy_j", w.EnergyJ, tc.wantW*w.DurationS, 1e-9)
			if w.VRAMPeakBytes == nil || *w.VRAMPeakBytes != 12<<30 {
				t.Errorf("vram %v", deref(w.VRAMPeakBytes))
			}
		})
	}
}

func TestPowerModelValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		m    PowerModel
		want string // "" = valid
	}{
		{"H200", DefaultPowerModel(), ""},
		{"no limit", PowerModel{IdleW: 50, PeakW: 300}, ""},
		{"negative idle", PowerModel{IdleW: -1, PeakW: 300}, "idle_w"},
		{"peak below idle", PowerModel{IdleW: 100, PeakW: 50}, "peak_w"},
		{"limit below peak", PowerModel{IdleW: 77, PeakW: 690, LimitW: 600}, "limit_w"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.m.Validate()
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate = %v, want error containing %q", err, tc.want)
			}
			if tc.want != "" {
				s := NewSimulated(tc.m, func() time.Duration { return 0 })
				if err := s.Start(t.Context(), 0); err == nil {
					t.Errorf("Start accepted an invalid model")
				}
				_, _ = s.Stop()
			}
		})
	}
}
