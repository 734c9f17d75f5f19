package sim

import (
	"strings"
	"testing"
)

// TestCapacityOneSeq checks the virtual-time run against a closed form: with
// max_num_seqs = 1 requests run one after another, each taking one prefill
// step plus out−1 decode steps (context n+1 … n+out−1), so req/s is 1/that
// and output tok/s is out× that. Tolerance 1e-9 relative (float rounding).
func TestCapacityOneSeq(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Scheduler.MaxNumSeqs = 1
	const in, out = 300, 12
	cm := mustCostModel(t, cfg)
	per := cm.Step(StepShape{Prefill: []PrefillChunk{{NewTokens: in, Completes: true}}}).Duration()
	for k := 1; k < out; k++ {
		per += cm.Step(StepShape{DecodeContexts: []int{in + k}}).Duration()
	}
	got, err := cfg.Capacity([]Lengths{{in, out}}, 40)
	if err != nil {
		t.Fatal(err)
	}
	want := 1 / per.Seconds()
	if !within(got.RequestsPerS, want, 1e-9*want) || !within(got.OutputTokPerS, out*want, 1e-9*out*want) {
		t.Errorf("capacity %+v, want %.6f req/s and %.6f tok/s", got, want, out*want)
	}
	if got.MeanRunningSeqs != 1 {
		t.Errorf("mean running seqs %v, want 1", got.MeanRunningSeqs)
	}
}

func TestCapacityErrors(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cases := []struct {
		name     string
		mix      []Lengths
		requests int
	}{
		{"empty mix", nil, 100},
		{"too few requests", []Lengths{{10, 10}}, 3},
		{"too long", []Lengths{{8000, 500}}, 100},
		{"zero output", []Lengths{{10, 0}}, 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := cfg.Capacity(tc.mix, tc.requests); err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestCapacityAzureConv records the saturation point the quickstart is sized
// from (median Azure conversation lengths: 1020 in, 130 out) and checks the
// batch is full: at saturation the running set sits near the configured limit
// or the token budget binds.
func TestCapacityAzureConv(t *testing.T) {
	t.Parallel()
	c, err := DefaultConfig().Capacity([]Lengths{{1020, 130}}, 2000)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("saturation (simulated): %.0f output tok/s, %.2f req/s, mean step %v, mean running %.0f", c.OutputTokPerS, c.RequestsPerS, c.MeanStep, c.MeanRunningSeqs)
	if !within(c.OutputTokPerS, 130*c.RequestsPerS, 0.02*c.OutputTokPerS) {
		t.Errorf("tok/s %.1f != 130 × req/s %.2f (steady state)", c.OutputTokPerS, c.RequestsPerS)
	}
	if c.MeanRunningSeqs < 100 {
		t.Errorf("mean running seqs %.0f: the batch is not full at saturation", c.MeanRunningSeqs)
	}
}

// TestParseLengths: "IN:OUT" gives both token counts; anything else is
// refused naming the spec.
func TestParseLengths(t *testing.T) {
	t.Parallel()
	if l, err := ParseLengths("1020:130"); err != nil || l != (Lengths{InputTokens: 1020, OutputTokens: 130}) {
		t.Errorf("ParseLengths(1020:130) = %+v, %v", l, err)
	}
	for _, bad := range []string{"1020", "1020:x", ":130", "a:b"} {
		if _, err := ParseLengths(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseLengths(%q): %v, want a refusal naming it", bad, err)
		}
	}
}

// TestCapacityNeedsWaitingRequests: with a batch of 8,192 sequences, 2,000
// requests are all admitted at once and finish together; Capacity used to
// report that drain as saturation (66,929 req/s for 32:128 at 16× ops,
// against 3,108) and now refuses it, naming CapacityRequests, with which the
// batch is full and output tokens are 128 per completed request.
func TestCapacityNeedsWaitingRequests(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Scheduler.MaxNumSeqs, cfg.Scheduler.MaxBatchTokens = 8192, 16384
	mix := []Lengths{{32, 128}}
	_, err := cfg.Capacity(mix, 2000)
	if err == nil || !strings.Contains(err.Error(), "use at least 49152") {
		t.Fatalf("2000 requests with max_num_seqs 8192: %v, want a refusal naming 49152", err)
	}
	if n := cfg.CapacityRequests(); n != 49152 {
		t.Fatalf("CapacityRequests = %d, want 6 × 8192", n)
	}
	c, err := cfg.Capacity(mix, cfg.CapacityRequests())
	if err != nil {
		t.Fatal(err)
	}
	if !within(c.OutputTokPerS, 128*c.RequestsPerS, 0.02*c.OutputTokPerS) {
		t.Errorf("tok/s %.0f != 128 × req/s %.2f: not a steady state", c.OutputTokPerS, c.RequestsPerS)
	}
	if c.MeanRunningSeqs < 0.95*8192 {
		t.Errorf("mean running seqs %.0f: the batch is not full at saturation", c.MeanRunningSeqs)
	}
	if n := DefaultConfig().CapacityRequests(); n != 2000 {
		t.Errorf("default CapacityRequests = %d, want 2000", n)
	}
}
