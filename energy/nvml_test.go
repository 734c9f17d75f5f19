package energy

import (
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNVMLWithoutDriver checks the real NVML path on a machine without a
// driver (CI): unavailable, with the reason, never zeros. Skipped where a
// driver answers (TestNVMLOnGPU covers that case).
func TestNVMLWithoutDriver(t *testing.T) {
	s := NewNVML(0)
	err := s.Start(t.Context(), 0)
	if err == nil {
		_, _ = s.Stop()
		t.Skip("an NVIDIA driver answered: this machine has a GPU; see TestNVMLOnGPU")
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Start without a driver: %v, want ErrUnavailable", err)
	}
	w, err := s.Stop()
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Stop: %v, want ErrUnavailable", err)
	}
	if w.Available || w.UnavailableReason == "" || w.EnergyJ != nil || w.PowerMeanW != nil || w.Source != SourceNVML {
		t.Errorf("window %+v", w)
	}
	t.Logf("reason: %s", w.UnavailableReason)
}

// TestNVMLOnGPU reads GPU 0 (TRANSFERLAB_NVML_DEVICE) for
// TRANSFERLAB_NVML_SECONDS (default 5 s) and logs everything it read, for the
// H200 check. It skips with a message where there is no driver. Run on the
// GPU machine with a test binary built here:
//
//	CGO_ENABLED=1 go test -tags nvml -c -o bin/energy.test ./energy
//	bin/energy.test -test.run TestNVMLOnGPU -test.v
//
// Checks: power, VRAM and clock readings exist and are physical; the counter
// delta and the power integral agree within 10 % plus the counter's
// quantisation (2 updates of 100 ms over the window) — the GPU is expected
// to be idle or steady during the test.
func TestNVMLOnGPU(t *testing.T) {
	idx, _ := strconv.Atoi(os.Getenv("TRANSFERLAB_NVML_DEVICE"))
	secs := 5.0
	if v := os.Getenv("TRANSFERLAB_NVML_SECONDS"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			t.Fatalf("TRANSFERLAB_NVML_SECONDS=%q: want a positive number of seconds", v)
		}
		secs = f
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	s := NewNVML(idx, WithLogger(log), WithIdlePower(time.Second), WithPIDs(os.Getpid()))
	if err := s.Start(t.Context(), 0); err != nil {
		if errors.Is(err, ErrUnavailable) {
			_, _ = s.Stop()
			t.Skipf("no NVIDIA GPU/driver here (%v): the NVML path is checked on the GPU machine", err)
		}
		t.Fatal(err)
	}
	time.Sleep(time.Duration(secs * float64(time.Second)))
	w, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device: %+v", w.Device)
	t.Logf("summary: %s", w.Summary())
	t.Logf("power source %s, limit %s, idle %s, clock mean %s MHz, temp max %s C",
		w.PowerSource, fmtPtr(w.PowerLimitW, "W"), fmtPtr(w.IdlePowerW, "W"), fmtPtr(w.SMClockMeanMHz, ""), fmtPtr(w.TempMaxC, ""))
	t.Logf("counter: energy %s, counter %s, updates %d in %.3f s (≈ one per %.0f ms), quantisation %s",
		fmtPtr(w.EnergyJ, "J"), fmtPtr(w.CounterEnergyJ, "J"), w.CounterUpdates, w.DurationS,
		1000*w.DurationS/float64(max(w.CounterUpdates, 1)), fmtPtr(w.QuantisationPct, "%"))
	for _, g := range w.Gaps {
		t.Logf("gap: %+v", g)
	}
	for _, x := range w.Warnings {
		t.Logf("warning: %s", x)
	}
	if !w.Available || w.PowerMeanW == nil || *w.PowerMeanW <= 0 || w.VRAMPeakBytes == nil || w.Device.MemoryTotalBytes == 0 {
		t.Fatalf("missing readings: %s", w.Summary())
	}
	if w.EnergyJ == nil {
		t.Fatalf("no headline energy: %s", w.EnergyUnavailableReason)
	}
	tol := 10 + 2*100*DefaultCounterUpdatePeriod.Seconds()/w.DurationS
	if w.DisagreementPct == nil || *w.DisagreementPct > tol || *w.DisagreementPct < -tol {
		t.Errorf("counter %s vs power integral %s: disagreement %s, want within ±%.1f %%",
			fmtPtr(w.EnergyJ, "J"), fmtPtr(w.PowerIntegralJ, "J"), fmtPtr(w.DisagreementPct, "%"), tol)
	}
}

// testWriter sends slog output to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
