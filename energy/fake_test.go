package energy

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"
)

// fakeDevice is a scripted NVML-shaped device. Sample i is the i-th call of
// totalEnergyMJ (the first read of every sample); the other reads answer for
// the current sample. It fails the test if it is read after close, as a real
// NVML call after Shutdown (or after a failed Init) would crash the process.
type fakeDevice struct {
	t *testing.T

	mu     sync.Mutex
	i      int
	closed bool
	calls  int

	energy  func(i int) (uint64, error)  // nil: ERROR_NOT_SUPPORTED
	instant func(i int) (float64, error) // nil: ERROR_NOT_SUPPORTED
	usage   func(i int) (uint32, error)  // nil: ERROR_NOT_SUPPORTED
	used    func(i int) (uint64, error)
	procs   func(i int) ([]processMem, error)
	reasons func(i int) (uint64, error)
	limitMW uint32
}

var _ device = (*fakeDevice)(nil)

var errFakeNotSupported = fmt.Errorf("fake call: %w (ERROR_NOT_SUPPORTED)", errNotSupported)

func (f *fakeDevice) enter() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		f.t.Errorf("fake NVML device read after close")
	}
	f.calls++
	return f.i
}

func (f *fakeDevice) info() DeviceInfo {
	return DeviceInfo{Name: "Fake H200", UUID: "GPU-fake", DriverVersion: "580.00", MemoryTotalBytes: 141 << 30}
}

func (f *fakeDevice) totalEnergyMJ() (uint64, error) {
	f.mu.Lock()
	f.i++
	f.mu.Unlock()
	i := f.enter()
	if f.energy == nil {
		return 0, errFakeNotSupported
	}
	return f.energy(i)
}

func (f *fakeDevice) powerInstantMW() (float64, error) {
	i := f.enter()
	if f.instant == nil {
		return 0, errFakeNotSupported
	}
	return f.instant(max(i, 0))
}

func (f *fakeDevice) powerUsageMW() (uint32, error) {
	i := f.enter()
	if f.usage == nil {
		return 0, errFakeNotSupported
	}
	return f.usage(i)
}

func (f *fakeDevice) memoryUsedBytes() (uint64, error) {
	i := f.enter()
	if f.used == nil {
		return 40 << 30, nil
	}
	return f.used(i)
}

func (f *fakeDevice) processMemory() ([]processMem, error) {
	i := f.enter()
	if f.procs == nil {
		return nil, nil
	}
	return f.procs(i)
}

func (f *fakeDevice) smClockMHz() (uint32, error) { f.enter(); return 1980, nil }
func (f *fakeDevice) temperatureC() (uint32, error) {
	i := f.enter()
	return uint32(40 + i%7), nil
}
func (f *fakeDevice) enforcedPowerLimitMW() (uint32, error) {
	f.enter()
	if f.limitMW == 0 {
		return 0, errFakeNotSupported
	}
	return f.limitMW, nil
}

func (f *fakeDevice) clocksEventReasons() (uint64, error) {
	i := f.enter()
	if f.reasons == nil {
		return 0, nil
	}
	return f.reasons(i)
}

func (f *fakeDevice) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		f.t.Errorf("fake NVML device closed twice")
	}
	f.closed = true
	return nil
}

// newFake returns a fake whose sample i is taken at i × step, drawing
// powerW watts, with an energy counter that advances every updateEvery.
func newFake(t *testing.T, step, updateEvery time.Duration, powerW float64) *fakeDevice {
	return &fakeDevice{
		t:       t,
		i:       -1,
		limitMW: 700_000,
		energy: func(i int) (uint64, error) {
			at := time.Duration(i) * step
			updates := at / updateEvery
			// 1e12 mJ offset: the counter counts since driver load, not from 0.
			return 1e12 + uint64(math.Round(powerW*(time.Duration(updates)*updateEvery).Seconds()*1000)), nil
		},
		instant: func(int) (float64, error) { return powerW * 1000, nil },
	}
}

// scripted samples a fake at 0, step, 2·step, …, n·step through the
// deviceProbe (without goroutines or a clock) and analyses the result.
func scripted(t *testing.T, f *fakeDevice, step time.Duration, n int, opts ...Option) Window {
	t.Helper()
	r := newDeviceSampler(0, func(int) (device, error) { return f, nil }, opts...)
	p := r.probe.(*deviceProbe)
	info, err := p.open()
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	// open read the instant power once to choose the power source: restart the script.
	f.i = -1
	samples := make([]Sample, 0, n+1)
	for k := 0; k <= n; k++ {
		samples = append(samples, p.take(time.Duration(k)*step))
	}
	if err := p.close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	start := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	return analyse(samples, analysisInput{info: info, cfg: r.cfg, start: start,
		end: start.Add(time.Duration(n) * step), period: step})
}

// near reports whether got is within tol (absolute) of want.
func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func wantNear(t *testing.T, name string, got *float64, want, tol float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = null, want %.6g", name, want)
		return
	}
	if !near(*got, want, tol) {
		t.Errorf("%s = %.9g, want %.9g ± %.3g", name, *got, want, tol)
	}
}

var errTransient = errors.New("ERROR_GPU_IS_LOST (scripted transient failure)")
