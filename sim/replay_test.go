package sim

import (
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
