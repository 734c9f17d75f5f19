"""Ceiling for RMSNorm: transformers' LlamaRMSNorm.forward with its work removed.

A timing-only ablation, not a kernel: it returns its input unchanged (the
correctly shaped output with the least possible work: no kernel, no copy), so
a server running it measures the most that any RMSNorm kernel could give at
each offered load, queueing included. Its outputs are meaningless (nothing is
normalised: activations grow layer after layer), so an arm that runs it has
`role: ceiling`, is never validated and never given a verdict; with
`ignore_eos` and fixed `max_tokens` every request still does the same work,
so the timings hold.

The declaration below is what `transferlab run` checks: only a file that holds
it runs as a ceiling, and a file that holds it is refused as a candidate.

Target:    transformers.models.llama.modeling_llama:LlamaRMSNorm.forward
Candidate: configs/kernels/rmsnorm_ceiling.py:llama_rmsnorm_ceiling
"""

TRANSFERLAB_ROLE = "ceiling"


def llama_rmsnorm_ceiling(self, hidden_states):
    """Returns hidden_states as is (same shape, dtype and device as the original's output)."""
    return hidden_states
