package sim

// Op is one kind of GPU kernel in a forward step of the simulated model.
// Its name (String) is the key of Config.Overrides and of the profile.
type Op int

// The ops of one forward step, in execution order. Residual adds are fused
// into RMSNorm (vLLM's fused_add_rms_norm); KV-cache writes into attention.
const (
	OpEmbedding  Op = iota // token embedding gather
	OpRMSNorm              // 2 per layer + final norm, residual add fused
	OpQKVProj              // fused Q/K/V projection GEMM
	OpRotary               // rotary position embedding on Q and K
	OpAttention            // flash attention (prefill) and paged attention (decode), KV write included
	OpOProj                // attention output projection GEMM
	OpGateUpProj           // fused gate/up MLP projection GEMM
	OpSiLUMul              // SiLU(gate) · up activation
	OpDownProj             // MLP down projection GEMM
	OpLMHead               // final vocabulary projection, for rows that need logits
	OpSampling             // softmax/sampling over the vocabulary
	numOps
)

// String is the op's name as used in overrides and profiles ("rmsnorm", ...).
func (o Op) String() string {
	switch o {
	case OpEmbedding:
		return "embedding"
	case OpRMSNorm:
		return "rmsnorm"
	case OpQKVProj:
		return "qkv_proj"
	case OpRotary:
		return "rotary"
	case OpAttention:
		return "attention"
	case OpOProj:
		return "o_proj"
	case OpGateUpProj:
		return "gate_up_proj"
	case OpSiLUMul:
		return "silu_mul"
	case OpDownProj:
		return "down_proj"
	case OpLMHead:
		return "lm_head"
	case OpSampling:
		return "sampling"
	}
	return "unknown"
}

// OpNames lists every op name in execution order (a fresh slice).
func OpNames() []string {
	names := make([]string, numOps)
	for o := Op(0); o < numOps; o++ {
		names[o] = o.String()
	}
	return names
}

// OpByName returns the op with the given name.
func OpByName(name string) (Op, bool) {
	for o := Op(0); o < numOps; o++ {
		if o.String() == name {
			return o, true
		}
	}
	return 0, false
}
