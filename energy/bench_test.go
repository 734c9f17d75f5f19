package energy

import (
	"testing"
	"time"
)

// BenchmarkTake measures the sampler's own cost per sample over the fake
// device (the NVML calls themselves are not included).
func BenchmarkTake(b *testing.B) {
	t := &testing.T{}
	f := newFake(t, step40s, DefaultCounterUpdatePeriod, 500)
	r := newDeviceSampler(0, func(int) (device, error) { return f, nil }, WithPIDs(1))
	p := r.probe.(*deviceProbe)
	if _, err := p.open(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = p.take(time.Duration(i) * step40s)
	}
}

// BenchmarkAnalyse40s folds a 40 s window of 50 ms samples (801) into a Window.
func BenchmarkAnalyse40s(b *testing.B) {
	t := &testing.T{}
	f := newFake(t, step40s, DefaultCounterUpdatePeriod, 500)
	r := newDeviceSampler(0, func(int) (device, error) { return f, nil })
	p := r.probe.(*deviceProbe)
	info, err := p.open()
	if err != nil {
		b.Fatal(err)
	}
	f.i = -1
	samples := make([]Sample, 0, n40s+1)
	for k := 0; k <= n40s; k++ {
		samples = append(samples, p.take(time.Duration(k)*step40s))
	}
	in := analysisInput{info: info, cfg: r.cfg, period: step40s}
	b.ReportAllocs()
	for b.Loop() {
		_ = analyse(samples, in)
	}
}
