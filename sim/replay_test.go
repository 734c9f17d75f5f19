package sim

import (
	"math"
	"testing"
	"time"
)

// TestReplayOneRequest: a lone request's virtual-time timings are the cost
// model's steps summed: one prefill step, then one decode step per further
// token; a request arriving after the engine went idle starts at its arrival.
func TestReplayOneRequest(t *testing.T) {
	cfg := DefaultConfig()
	cm, err := NewCostModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const in, out = 100, 5
	first := cm.Step(StepShape{Prefill: []PrefillChunk{{NewTokens: in, Completes: true}}}).Duration()
	last := first
	for g := 1; g < out; g++ {
		last += cm.Step(StepShape{DecodeContexts: []int{in + g}}).Duration()
	}
	late := 10 * time.Second
	arr := []Arrival{{At: late, Lengths: Lengths{in, out}}, {At: 0, Lengths: Lengths{in, out}}}
	ts, err := cfg.Replay(arr)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range arr {
		if ts[i].TTFT(a) != first || ts[i].E2E(a) != last {
			t.Errorf("arrival %d: TTFT %v, E2E %v; want %v, %v", i, ts[i].TTFT(a), ts[i].E2E(a), first, last)
		}
	}
	cfg.Overrides = map[string]float64{"gate_up_proj": 2}
	fast, err := cfg.Replay(arr)
	if err != nil {
		t.Fatal(err)
	}
	if !(fast[0].E2E(arr[0]) < last) {
		t.Errorf("a 2× gate/up GEMM did not shorten E2E: %v vs %v", fast[0].E2E(arr[0]), last)
	}
}

// TestOpSharesGiveAmdahlExactlyForALoneRequest: a lone request's E2E is the
// sum of its steps, so with op o s times faster its E2E shrinks to
// (1 − f) + f / s of the baseline's, f being OpShares' share of o: Amdahl's
// law holds exactly without queueing. Shares are fractions of the step
// time, summing with the CPU overhead's share to 1.
func TestOpSharesGiveAmdahlExactlyForALoneRequest(t *testing.T) {
	cfg := DefaultConfig()
	arr := []Arrival{{At: 0, Lengths: Lengths{InputTokens: 700, OutputTokens: 40}}}
	shares, err := cfg.OpShares(arr)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range shares {
		if !(f >= 0 && f < 1) {
			t.Fatalf("shares %v: each must lie in [0, 1)", shares)
		}
		sum += f
	}
	if !(sum > 0.5 && sum < 1) {
		t.Errorf("shares sum to %.4f: want the GPU's share of the step time, in (0.5, 1)", sum)
	}
	base, err := cfg.Replay(arr)
	if err != nil {
		t.Fatal(err)
	}
	for op, s := range map[string]float64{"rmsnorm": 2.5, "gate_up_proj": 2} {
		c := cfg
		c.Overrides = map[string]float64{op: s}
		fast, err := c.Replay(arr)
		if err != nil {
			t.Fatal(err)
		}
		got := float64(fast[0].E2E(arr[0])) / float64(base[0].E2E(arr[0]))
		f := shares[op]
		if want := (1 - f) + f/s; math.Abs(got-want) > 1e-6 {
			t.Errorf("%s %g×: E2E ratio %.6f, Amdahl with f %.4f says %.6f", op, s, got, f, want)
		}
	}
}

// TestNoisyServerWindow: with the noise model off a NoisyServer's window
// (noisyReplay: a fresh server's first) is Replay; with only the run factor
// on, every step of a lone request is scaled by the same F_run (the first
// window's: the draw after the start's), so its TTFT and E2E are F_run
// times Replay's (to the nanosecond rounding of each step), and
// NoisyReplay's by the seed's first draw; with the step factor on too, the
// same seed gives the same timings and another seed others; Replay ignores
// the model.
func TestNoisyServerWindow(t *testing.T) {
	cfg := DefaultConfig()
	arr := []Arrival{{At: 0, Lengths: Lengths{200, 20}}, {At: time.Millisecond, Lengths: Lengths{100, 30}}}
	clean, err := cfg.Replay(arr)
	if err != nil {
		t.Fatal(err)
	}
	same, err := noisyReplay(cfg, arr)
	if err != nil {
		t.Fatal(err)
	}
	for i := range arr {
		if same[i] != clean[i] {
			t.Errorf("noise off: arrival %d: %+v, Replay %+v", i, same[i], clean[i])
		}
	}

	lone := arr[:1]
	if clean, err = cfg.Replay(lone); err != nil {
		t.Fatal(err)
	}
	cfg.Noise = NoiseConfig{RunSigma: 0.03, Seed: 7}
	// The first window's F_run: the draw after the start's, as a server's
	// first cell draws it at its profile reset.
	n := newNoise(cfg.Noise)
	n.redraw()
	f := n.run
	if f == 1 {
		t.Fatal("run factor 1: the seed draws no noise")
	}
	ts, err := noisyReplay(cfg, lone)
	if err != nil {
		t.Fatal(err)
	}
	steps := float64(lone[0].OutputTokens) // one prefill step, then one per further token
	for _, m := range []struct {
		name        string
		got, noised time.Duration
	}{{"TTFT", ts[0].TTFT(lone[0]), clean[0].TTFT(lone[0])}, {"E2E", ts[0].E2E(lone[0]), clean[0].E2E(lone[0])}} {
		if want := float64(m.noised) * f; math.Abs(float64(m.got)-want) > steps {
			t.Errorf("run factor %.4f only: %s %v, want %v × F = %.0f ns", f, m.name, m.got, m.noised, want)
		}
	}
	// NoisyReplay is one window drawn afresh: F_run the seed's first draw.
	first, err := cfg.NoisyReplay(lone)
	if err != nil {
		t.Fatal(err)
	}
	if f0 := newNoise(cfg.Noise).run; math.Abs(float64(first[0].E2E(lone[0]))-float64(clean[0].E2E(lone[0]))*f0) > steps {
		t.Errorf("NoisyReplay: E2E %v, want %v × the seed's first F_run %.4f", first[0].E2E(lone[0]), clean[0].E2E(lone[0]), f0)
	}
	if again, err := cfg.Replay(lone); err != nil || again[0] != clean[0] {
		t.Errorf("Replay with the model on: %+v (%v), want the noiseless %+v", again[0], err, clean[0])
	}

	cfg.Noise.StepSigma = 0.015
	a, errA := noisyReplay(cfg, arr)
	b, errB := noisyReplay(cfg, arr)
	cfg.Noise.Seed = 8
	c, errC := noisyReplay(cfg, arr)
	if errA != nil || errB != nil || errC != nil {
		t.Fatal(errA, errB, errC)
	}
	if a[1] != b[1] || a[1] == c[1] {
		t.Errorf("step noise: seed 7 gave %+v then %+v, seed 8 %+v: want the same twice, another with another seed", a[1], b[1], c[1])
	}
}

// noisyReplay is the first window of a fresh NoisyServer of cfg.
func noisyReplay(cfg Config, arr []Arrival) ([]Timing, error) {
	ts, _, err := cfg.NewNoisyServer().Window(arr)
	return ts, err
}
