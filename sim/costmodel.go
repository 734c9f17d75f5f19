package sim

import (
	"fmt"
	"math"
	"time"
)

// PrefillChunk is the part of one request's prompt processed in a step.
type PrefillChunk struct {
	// NewTokens is the number of prompt tokens processed in this step (≥ 1).
	NewTokens int
	// PastTokens is the number of this request's tokens already in the KV cache.
	PastTokens int
	// Completes is true when this chunk ends the prompt: the step then computes
	// logits for it and emits the request's first token.
	Completes bool
}

// StepShape is what one engine step computes.
type StepShape struct {
	// Prefill holds the prompt chunks of the step, one per request.
	Prefill []PrefillChunk
	// DecodeContexts holds, per decoding sequence, the number of tokens its
	// attention reads (prompt + generated so far, the token fed in included).
	DecodeContexts []int
}

// Tokens is the number of tokens the step feeds through the model.
func (s StepShape) Tokens() (prefill, decode int) {
	for _, c := range s.Prefill {
		prefill += c.NewTokens
	}
	return prefill, len(s.DecodeContexts)
}

// OpCost is one op's GPU time in one step, split by phase. The split follows
// each op's work: the prefill share of tokens (rows for lm_head and sampling);
// attention's prefill and decode kernels are costed apart, so its split is exact.
type OpCost struct {
	// Prefill is the op's GPU time attributed to prompt tokens.
	Prefill time.Duration
	// Decode is the op's GPU time attributed to decoding sequences.
	Decode time.Duration
	// Launches is the number of kernel launches the op made in the step.
	Launches int
}

// Total is Prefill + Decode.
func (c OpCost) Total() time.Duration { return c.Prefill + c.Decode }

// StepCost is the cost model's answer for one step.
type StepCost struct {
	// Ops is indexed by Op.
	Ops [numOps]OpCost
	// GPU is the sum of every op's Total: the step's GPU busy time.
	GPU time.Duration
	// CPUOverhead is the configured fixed host time of the step.
	CPUOverhead time.Duration
}

// Duration is the step's modelled wall time: GPU + CPUOverhead.
func (c StepCost) Duration() time.Duration { return c.GPU + c.CPUOverhead }

// CostModel prices a step as the sum of per-op roofline costs:
// op time = (max(FLOPs / FLOP/s, bytes / B/s) + launches · launch overhead) / override factor;
// an op in Config.Ceilings costs 0 (no time, no launch). COSTMODEL.md derives every term.
type CostModel struct {
	m       ModelConfig
	g       GPUConfig
	cpu     time.Duration
	factor  [numOps]float64
	ceiling [numOps]bool
	launchS float64
}

// NewCostModel builds the cost model of cfg (validated first).
func NewCostModel(cfg Config) (*CostModel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	cm := &CostModel{
		m:       cfg.Model,
		g:       cfg.GPU,
		cpu:     msToDuration(cfg.Scheduler.CPUOverheadMs),
		launchS: cfg.GPU.LaunchOverheadUs * 1e-6,
	}
	for o := range cm.factor {
		cm.factor[o] = 1
	}
	for name, f := range cfg.Overrides {
		o, _ := OpByName(name)
		cm.factor[o] = f
	}
	for _, name := range cfg.Ceilings {
		o, _ := OpByName(name)
		cm.ceiling[o] = true
	}
	return cm, nil
}

func msToDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}

// roofline is max(flops/rate, bytes/bw) in seconds (rates in 10^12 units).
func roofline(flops, bytes, tflops, tbps float64) float64 {
	return math.Max(flops/(tflops*1e12), bytes/(tbps*1e12))
}

// attention is the attention op's seconds of the step's prefill chunks
// (flash, causal: each new token attends to the past and to the new tokens
// before it) and of its decode rows (paged: one query over its context),
// before any override, and its kernel launches (one per layer for each
// part the step has).
func (c *CostModel) attention(s StepShape) (preSec, decSec float64, launches int) {
	m, g := c.m, c.g
	L := float64(m.Layers)
	db := float64(m.DTypeBytes)
	qDim := float64(m.Heads * m.HeadDim)
	kvDim := float64(m.KVHeads * m.HeadDim)
	tp, td := s.Tokens()
	if tp > 0 {
		var flops, bytes float64
		for _, ch := range s.Prefill {
			nn, p := float64(ch.NewTokens), float64(ch.PastTokens)
			flops += 4 * qDim * (nn*p + nn*(nn+1)/2)
			bytes += (2*nn*qDim + 2*(p+nn)*kvDim + 2*nn*kvDim) * db
		}
		preSec = L*roofline(flops, bytes, g.AttentionTFLOPS, g.AttentionBandwidthTBps) + L*c.launchS
		launches += m.Layers
	}
	if td > 0 {
		var flops, bytes float64
		for _, ctx := range s.DecodeContexts {
			cx := float64(ctx)
			flops += 4 * qDim * cx
			bytes += (2*qDim + 2*cx*kvDim + 2*kvDim) * db
		}
		decSec = L*roofline(flops, bytes, g.AttentionTFLOPS, g.AttentionBandwidthTBps) + L*c.launchS
		launches += m.Layers
	}
	return preSec, decSec, launches
}

// Step prices one step. A step with no tokens costs nothing (not even the CPU overhead).
func (c *CostModel) Step(s StepShape) StepCost {
	var out StepCost
	tp, td := s.Tokens()
	if tp+td == 0 {
		return out
	}
	m := c.m
	L := float64(m.Layers)
	H := float64(m.HiddenSize)
	I := float64(m.IntermediateSize)
	V := float64(m.VocabSize)
	db := float64(m.DTypeBytes)
	qDim := float64(m.Heads * m.HeadDim)
	kvDim := float64(m.KVHeads * m.HeadDim)
	T := float64(tp + td)
	rp := 0
	for _, ch := range s.Prefill {
		if ch.Completes {
			rp++
		}
	}
	R := float64(rp + td) // rows that need logits
	tokShare := float64(tp) / T
	rowShare := 0.0
	if R > 0 {
		rowShare = float64(rp) / R
	}
	g := c.g

	// gemm is one projection per layer repeated `times`: rows×in · in×out, weights streamed once.
	gemm := func(rows, in, out, times float64) (float64, int) {
		flops := 2 * rows * in * out
		bytes := (in*out + rows*in + rows*out) * db
		return times*roofline(flops, bytes, g.GEMMTFLOPS, g.GEMMBandwidthTBps) + times*c.launchS, int(times)
	}
	elem := func(flops, bytes, times float64) (float64, int) {
		return times*roofline(flops, bytes, g.VectorTFLOPS, g.ElementwiseBandwidthTBps) + times*c.launchS, int(times)
	}
	set := func(o Op, sec float64, launches int, share float64) {
		if c.ceiling[o] {
			return
		}
		total := time.Duration(math.Round(sec / c.factor[o] * 1e9))
		pre := time.Duration(math.Round(float64(total) * share))
		out.Ops[o] = OpCost{Prefill: pre, Decode: total - pre, Launches: launches}
	}

	sec, n := elem(0, T*H*db*2+T*4, 1)
	set(OpEmbedding, sec, n, tokShare)

	// fused add + RMSNorm: read x and residual, write both, plus the weight.
	sec, n = elem(6*T*H, 4*T*H*db+H*db, 2*L+1)
	set(OpRMSNorm, sec, n, tokShare)

	sec, n = gemm(T, H, qDim+2*kvDim, L)
	set(OpQKVProj, sec, n, tokShare)

	sec, n = elem(3*T*(qDim+kvDim), 2*T*(qDim+kvDim)*db, L)
	set(OpRotary, sec, n, tokShare)

	// attention: prefill (flash, causal) and decode (paged) kernels costed apart.
	preSec, decSec, launches := c.attention(s)
	pre := time.Duration(math.Round(preSec / c.factor[OpAttention] * 1e9))
	dec := time.Duration(math.Round(decSec / c.factor[OpAttention] * 1e9))
	if !c.ceiling[OpAttention] {
		out.Ops[OpAttention] = OpCost{Prefill: pre, Decode: dec, Launches: launches}
	}

	sec, n = gemm(T, qDim, H, L)
	set(OpOProj, sec, n, tokShare)

	sec, n = gemm(T, H, 2*I, L)
	set(OpGateUpProj, sec, n, tokShare)

	sec, n = elem(5*T*I, 3*T*I*db, L)
	set(OpSiLUMul, sec, n, tokShare)

	sec, n = gemm(T, I, H, L)
	set(OpDownProj, sec, n, tokShare)

	if R > 0 {
		// logits are written in fp32 (4 B) for sampling.
		flops := 2 * R * H * V
		bytes := (V*H+R*H)*db + R*V*4
		set(OpLMHead, roofline(flops, bytes, g.GEMMTFLOPS, g.GEMMBandwidthTBps)+c.launchS, 1, rowShare)
		// sampling: two kernels (softmax, then sample), each one pass over the fp32 logits.
		sec, n = elem(2.5*R*V, R*V*4, 2)
		set(OpSampling, sec, n, rowShare)
	}

	for _, oc := range out.Ops {
		out.GPU += oc.Total()
	}
	out.CPUOverhead = c.cpu
	return out
}
