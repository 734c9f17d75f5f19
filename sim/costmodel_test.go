package sim

import (
	"math"
	"testing"
	"time"
)

func mustCostModel(t testing.TB, cfg Config) *CostModel {
	t.Helper()
	cm, err := NewCostModel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func contexts(n, ctx int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = ctx
	}
	return s
}

// TestCostModelHandComputed checks single ops against the formulas of
// COSTMODEL.md written out with the default constants (Llama-3-8B, H200-like:
// GEMM 670 TFLOP/s and 3.9 TB/s, elementwise 3.0 TB/s, 3 µs per launch).
// Tolerance 1 ns: each op is rounded to whole nanoseconds once.
func TestCostModelHandComputed(t *testing.T) {
	t.Parallel()
	cm := mustCostModel(t, DefaultConfig())
	const launch = 3e-6
	cases := []struct {
		name  string
		shape StepShape
		op    Op
		wantS float64
	}{
		// decode, batch 1: the QKV GEMM streams its 4096×6144 bf16 weights: memory bound.
		{"qkv decode b1 is weight-bandwidth bound", StepShape{DecodeContexts: []int{1000}}, OpQKVProj,
			32 * ((4096*6144+4096+6144)*2/3.9e12 + launch)},
		// prefill of 1020 tokens: 2·1020·4096·6144 FLOP per layer: compute bound.
		{"qkv prefill 1020 is compute bound", StepShape{Prefill: []PrefillChunk{{NewTokens: 1020, Completes: true}}}, OpQKVProj,
			32 * (2*1020*4096*6144/670e12 + launch)},
		// fused add+RMSNorm: 65 calls, each reading x and residual and writing both (4·T·H·2 B) plus the weight.
		{"rmsnorm prefill 1020", StepShape{Prefill: []PrefillChunk{{NewTokens: 1020, Completes: true}}}, OpRMSNorm,
			65 * ((4*1020*4096*2+4096*2)/3.0e12 + launch)},
		// decode attention, 4 sequences of 2000: KV read 2·2000·1024·2 B each per layer (+q, o, KV write).
		{"attention decode", StepShape{DecodeContexts: contexts(4, 2000)}, OpAttention,
			32 * (4*(2*4096+2*2000*1024+2*1024)*2/3.4e12 + launch)},
		// lm_head for one row: the 128256×4096 weights dominate.
		{"lm_head one row", StepShape{DecodeContexts: []int{10}}, OpLMHead,
			(128256*4096+4096)*2/3.9e12 + 128256*4/3.9e12 + launch},
		// a prefill chunk that does not complete computes no logits.
		{"no lm_head without logits", StepShape{Prefill: []PrefillChunk{{NewTokens: 512}}}, OpLMHead, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := cm.Step(tc.shape).Ops[tc.op].Total()
			want := time.Duration(math.Round(tc.wantS * 1e9))
			if d := got - want; d > 1 || d < -1 {
				t.Errorf("%s = %v, want %v (hand-computed)", tc.op, got, want)
			}
		})
	}
}

func TestCostModelInvariants(t *testing.T) {
	t.Parallel()
	cm := mustCostModel(t, DefaultConfig())
	shapes := map[string]StepShape{
		"prefill 1020":         {Prefill: []PrefillChunk{{NewTokens: 1020, Completes: true}}},
		"prefill 2048":         {Prefill: []PrefillChunk{{NewTokens: 2048, Completes: true}}},
		"decode b1 ctx 1000":   {DecodeContexts: []int{1000}},
		"decode b32 ctx 1100":  {DecodeContexts: contexts(32, 1100)},
		"decode b128 ctx 1100": {DecodeContexts: contexts(128, 1100)},
		"mixed 1848+200":       {Prefill: []PrefillChunk{{NewTokens: 1848, PastTokens: 100}}, DecodeContexts: contexts(200, 1100)},
	}
	for name, sh := range shapes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := cm.Step(sh)
			var sum, pre, dec time.Duration
			for _, oc := range c.Ops {
				sum += oc.Total()
				pre += oc.Prefill
				dec += oc.Decode
			}
			if sum != c.GPU {
				t.Errorf("GPU %v != sum of ops %v", c.GPU, sum)
			}
			tp, td := sh.Tokens()
			if (tp == 0 && pre != 0) || (td == 0 && dec != 0) {
				t.Errorf("phase split: prefill %v decode %v for %d/%d tokens", pre, dec, tp, td)
			}
			if c.Duration() != c.GPU+3*time.Millisecond {
				t.Errorf("Duration %v != GPU %v + 3ms CPU overhead", c.Duration(), c.GPU)
			}
			// COSTMODEL.md states RMSNorm is a few % of GPU time on these shapes.
			share := float64(c.Ops[OpRMSNorm].Total()) / float64(c.GPU)
			if share < 0.02 || share > 0.06 {
				t.Errorf("rmsnorm share %.2f%%, documented 2–6%%", 100*share)
			}
		})
	}
	t.Run("attention phases are costed apart", func(t *testing.T) {
		t.Parallel()
		pre := StepShape{Prefill: []PrefillChunk{{NewTokens: 700, PastTokens: 300, Completes: true}}}
		dec := StepShape{DecodeContexts: contexts(9, 1500)}
		mixed := StepShape{Prefill: pre.Prefill, DecodeContexts: dec.DecodeContexts}
		m := cm.Step(mixed).Ops[OpAttention]
		if p, d := cm.Step(pre).Ops[OpAttention].Prefill, cm.Step(dec).Ops[OpAttention].Decode; m.Prefill != p || m.Decode != d {
			t.Errorf("mixed attention %+v, want prefill %v decode %v", m, p, d)
		}
	})
	t.Run("empty step costs nothing", func(t *testing.T) {
		t.Parallel()
		if c := cm.Step(StepShape{}); c.Duration() != 0 {
			t.Errorf("empty step %v", c.Duration())
		}
	})
}

// TestOverrideScalesOnlyItsOp: an override divides exactly the named op's
// time (1 ns rounding per op per step) and leaves every other op unchanged.
func TestOverrideScalesOnlyItsOp(t *testing.T) {
	t.Parallel()
	base := mustCostModel(t, DefaultConfig())
	for _, tc := range []struct {
		op     string
		factor float64
	}{{"rmsnorm", 2.5}, {"attention", 1.3}, {"gate_up_proj", 0.8}, {"sampling", 4}} {
		t.Run(tc.op, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.Overrides = map[string]float64{tc.op: tc.factor}
			over := mustCostModel(t, cfg)
			target, _ := OpByName(tc.op)
			sh := StepShape{Prefill: []PrefillChunk{{NewTokens: 900, Completes: true}}, DecodeContexts: contexts(17, 1300)}
			b, o := base.Step(sh), over.Step(sh)
			for op := Op(0); op < numOps; op++ {
				if op == target {
					// attention rounds its two phases apart: 2 ns.
					if !within(float64(o.Ops[op].Total())*tc.factor, float64(b.Ops[op].Total()), 2*tc.factor) {
						t.Errorf("%s: %v × %v != baseline %v", op, o.Ops[op].Total(), tc.factor, b.Ops[op].Total())
					}
					continue
				}
				if o.Ops[op] != b.Ops[op] {
					t.Errorf("%s changed: %+v != %+v", op, o.Ops[op], b.Ops[op])
				}
			}
		})
	}
}

// TestCeilingRemovesOnlyItsOp: an op in Ceilings costs nothing (no time,
// no launch) in every phase, every other op is unchanged, and the step's
// GPU time drops by exactly the op's baseline time.
func TestCeilingRemovesOnlyItsOp(t *testing.T) {
	t.Parallel()
	base := mustCostModel(t, DefaultConfig())
	for _, name := range []string{"rmsnorm", "attention", "sampling"} {
		cfg := DefaultConfig()
		cfg.Ceilings = []string{name}
		ceil := mustCostModel(t, cfg)
		target, _ := OpByName(name)
		sh := StepShape{Prefill: []PrefillChunk{{NewTokens: 900, Completes: true}}, DecodeContexts: contexts(17, 1300)}
		b, c := base.Step(sh), ceil.Step(sh)
		if c.Ops[target] != (OpCost{}) || b.Ops[target].Total() == 0 {
			t.Errorf("%s: ceiling cost %+v (baseline %+v), want zero", name, c.Ops[target], b.Ops[target])
		}
		for op := Op(0); op < numOps; op++ {
			if op != target && c.Ops[op] != b.Ops[op] {
				t.Errorf("%s ceiling changed %s: %+v != %+v", name, op, c.Ops[op], b.Ops[op])
			}
		}
		if c.GPU != b.GPU-b.Ops[target].Total() || c.CPUOverhead != b.CPUOverhead {
			t.Errorf("%s ceiling: GPU %v, want %v − %v", name, c.GPU, b.GPU, b.Ops[target].Total())
		}
	}
}

func TestOpNames(t *testing.T) {
	t.Parallel()
	names := OpNames()
	if len(names) != int(numOps) {
		t.Fatalf("%d names for %d ops", len(names), numOps)
	}
	for i, n := range names {
		o, ok := OpByName(n)
		if !ok || int(o) != i || n == "unknown" {
			t.Errorf("OpByName(%q) = %v, %v", n, o, ok)
		}
	}
	for _, req := range []string{"embedding", "rmsnorm", "qkv_proj", "attention", "o_proj", "gate_up_proj", "silu_mul", "down_proj", "lm_head", "sampling"} {
		if _, ok := OpByName(req); !ok {
			t.Errorf("required op %q missing", req)
		}
	}
}
