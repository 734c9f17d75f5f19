"""Fused RMSNorm in Triton, a drop-in for transformers' LlamaRMSNorm.forward.

Computes exactly what LlamaRMSNorm.forward (transformers 5.x) computes:

    x32 = x.float();  rstd = 1 / sqrt(mean(x32**2, -1) + eps)
    y   = weight * (x32 * rstd).to(x.dtype)          # product rounded to x.dtype

in one kernel launch per call (the eager original launches ~6: cast, pow, mean,
add+rsqrt, mul, cast, mul). Every Triton kernel here is named with the prefix
``tl_`` so a profile shows whose kernels ran.

Target:    transformers.models.llama.modeling_llama:LlamaRMSNorm.forward
Candidate: configs/kernels/rmsnorm_triton.py:llama_rmsnorm_forward
"""

import torch
import triton
import triton.language as tl

KERNEL_PREFIX = "tl_"


@triton.jit
def tl_rmsnorm_fwd(X, W, Y, stride_x, stride_y, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    var = tl.sum(x * x, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    # Round the normalised value to the input dtype before the weight product,
    # as the original does (hidden_states.to(input_dtype) then weight * ...).
    xn = (x * rstd).to(Y.dtype.element_ty).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * stride_y + cols, (w * xn).to(Y.dtype.element_ty), mask=mask)


def _as_rows(x):
    """Returns x viewed as (rows, N) with unit stride on the last dim (copying only if it must)."""
    n = x.shape[-1]
    if x.stride(-1) != 1:
        x = x.contiguous()
    x2 = x.reshape(-1, n)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    return x2


def rmsnorm(x, weight, eps):
    """RMSNorm over the last dim of x (any leading shape), output dtype = promote(weight, x)."""
    n = x.shape[-1]
    if weight.shape[-1] != n:
        raise ValueError(f"rmsnorm: weight has {weight.shape[-1]} elements, input's last dim is {n}")
    out_dtype = torch.promote_types(weight.dtype, x.dtype)
    x2 = _as_rows(x)
    y = torch.empty((x2.shape[0], n), dtype=out_dtype, device=x.device)
    if x2.shape[0] == 0:
        return y.reshape(x.shape)
    block = triton.next_power_of_2(n)
    warps = 4 if block <= 1024 else (8 if block <= 4096 else 16)
    tl_rmsnorm_fwd[(x2.shape[0],)](x2, weight.contiguous(), y, x2.stride(0), y.stride(0), n, eps,
                                   BLOCK=block, num_warps=warps)
    return y.reshape(x.shape)


def llama_rmsnorm_forward(self, hidden_states):
    """Replacement for LlamaRMSNorm.forward(self, hidden_states)."""
    return rmsnorm(hidden_states, self.weight, self.variance_epsilon)


def rms_norm_op(input, normalized_shape, weight=None, eps=None):
    """Replacement for aten::rms_norm(input, normalized_shape, weight, eps) over the last dim only."""
    if len(normalized_shape) != 1 or weight is None:
        raise NotImplementedError("tl rms_norm_op: only last-dim normalisation with a weight is implemented")
    if eps is None:
        eps = torch.finfo(input.dtype).eps
    n = input.shape[-1]
    x2 = _as_rows(input)
    y = torch.empty((x2.shape[0], n), dtype=input.dtype, device=input.device)
    block = triton.next_power_of_2(n)
    tl_rmsnorm_fwd[(x2.shape[0],)](x2, weight.contiguous(), y, x2.stride(0), y.stride(0), n, eps,
                                   BLOCK=block, num_warps=8 if block > 1024 else 4)
    return y.reshape(input.shape)
