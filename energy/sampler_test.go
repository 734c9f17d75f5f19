package energy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// waitSamples polls until the fake has answered at least n energy reads, so
// the sampling goroutine is known to have ticked; the 30 s deadline only
// guards against a hung goroutine on a loaded CI machine.
func waitSamples(t *testing.T, f *fakeDevice, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		i := f.i
		f.mu.Unlock()
		if i >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sampler took only %d samples in 30 s", i)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRunnerLifecycle drives the real goroutine over a fake device: samples
// arrive in time order, Stop waits for the goroutine (goleak checks), the
// device is closed exactly once and never read after, misuse is an error,
// and the sampler can be reused.
func TestRunnerLifecycle(t *testing.T) {
	t.Parallel()
	f := newFake(t, time.Millisecond, time.Millisecond, 300)
	r := newDeviceSampler(0, func(int) (device, error) {
		f.mu.Lock()
		f.closed = false
		f.mu.Unlock()
		return f, nil
	}, WithSamples(true), WithCounterUpdatePeriod(time.Nanosecond))
	if _, err := r.Stop(); err == nil {
		t.Fatalf("Stop before Start succeeded")
	}
	if err := r.Start(t.Context(), time.Microsecond); err == nil {
		t.Fatalf("Start accepted a 1 µs period")
	}
	for round := range 2 {
		if err := r.Start(t.Context(), time.Millisecond); err != nil {
			t.Fatalf("round %d: Start: %v", round, err)
		}
		if err := r.Start(t.Context(), time.Millisecond); err == nil {
			t.Fatalf("round %d: second Start while running succeeded", round)
		}
		f.mu.Lock()
		from := f.i
		f.mu.Unlock()
		waitSamples(t, f, from+5)
		w, err := r.Stop()
		if err != nil {
			t.Fatalf("round %d: Stop: %v", round, err)
		}
		if w.SampleCount < 6 || len(w.Samples) != w.SampleCount {
			t.Errorf("round %d: %d samples (%d kept), want ≥ 6", round, w.SampleCount, len(w.Samples))
		}
		for i := 1; i < len(w.Samples); i++ {
			if w.Samples[i].At < w.Samples[i-1].At {
				t.Errorf("round %d: sample %d at %v before sample %d at %v", round, i, w.Samples[i].At, i-1, w.Samples[i-1].At)
			}
		}
		if w.Samples[0].At != 0 || !near(w.DurationS, w.Samples[len(w.Samples)-1].At.Seconds(), 1e-12) {
			t.Errorf("round %d: first sample at %v, duration %v s", round, w.Samples[0].At, w.DurationS)
		}
		if !w.End.After(w.Start) || !near(w.End.Sub(w.Start).Seconds(), w.DurationS, 1e-9) {
			t.Errorf("round %d: start %v end %v duration %v", round, w.Start, w.End, w.DurationS)
		}
		if !f.closed {
			t.Errorf("round %d: device not closed by Stop", round)
		}
	}
}

// TestRunnerContextCancel: cancelling the context stops sampling; Stop still
// returns the window, with a warning saying it stopped early.
func TestRunnerContextCancel(t *testing.T) {
	t.Parallel()
	f := newFake(t, time.Millisecond, time.Millisecond, 300)
	r := newDeviceSampler(0, func(int) (device, error) { return f, nil })
	ctx, cancel := context.WithCancel(t.Context())
	if err := r.Start(ctx, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitSamples(t, f, 3)
	cancel()
	<-r.done // the goroutine ends on its own after cancel
	w, err := r.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if !hasWarning(w, "stopped early") {
		t.Errorf("warnings %q", w.Warnings)
	}
}

// TestIdlePower: WithIdlePower samples power before the window and reports
// its mean; the idle samples are not part of the window.
func TestIdlePower(t *testing.T) {
	t.Parallel()
	f := newFake(t, time.Millisecond, time.Millisecond, 0)
	f.instant = func(i int) (float64, error) { return 77_000, nil }
	r := newDeviceSampler(0, func(int) (device, error) { return f, nil }, WithIdlePower(20*time.Millisecond))
	if err := r.Start(t.Context(), 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	w, err := r.Stop()
	if err != nil {
		t.Fatal(err)
	}
	wantNear(t, "idle_power_w", w.IdlePowerW, 77, 1e-9)

	// A cancelled context ends the idle measurement with an error and no leak.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r2 := newDeviceSampler(0, func(int) (device, error) { return newFake(t, time.Millisecond, time.Millisecond, 0), nil },
		WithIdlePower(time.Hour))
	if err := r2.Start(ctx, time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with cancelled idle measurement: %v", err)
	}
	if _, err := r2.Stop(); err == nil || !strings.Contains(err.Error(), "without a successful Start") {
		t.Errorf("Stop after failed Start: %v", err)
	}
}

// TestOptionErrors: bad options fail Start with the option named, and leave
// nothing to Stop.
func TestOptionErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opt  Option
		want string
	}{
		{"negative idle", WithIdlePower(-time.Second), "WithIdlePower"},
		{"negative update period", WithCounterUpdatePeriod(-time.Millisecond), "WithCounterUpdatePeriod"},
		{"zero disagreement limit", WithMaxDisagreement(0), "WithMaxDisagreement"},
		{"negative steady window", WithMinSteadyWindow(-time.Second), "WithMinSteadyWindow"},
		{"zero PID", WithPIDs(0), "WithPIDs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opened := false
			r := newDeviceSampler(0, func(int) (device, error) { opened = true; return nil, ErrUnavailable }, tc.opt)
			err := r.Start(t.Context(), 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, ErrUnavailable) {
				t.Errorf("Start = %v, want an option error naming %s", err, tc.want)
			}
			if opened {
				t.Errorf("the device was opened despite bad options")
			}
			if _, err := r.Stop(); err == nil {
				t.Errorf("Stop after a failed Start succeeded")
			}
		})
	}
}
