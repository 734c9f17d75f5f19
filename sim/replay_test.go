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
