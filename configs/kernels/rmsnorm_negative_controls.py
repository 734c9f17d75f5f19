"""Negative controls for the validation gate: RMSNorm candidates that are wrong in one known way
each, plus one that is correct but slower. All are drop-ins for LlamaRMSNorm.forward(self, hidden_states).

| function                 | defect                                                   | gate that must reject it        |
| ------------------------ | -------------------------------------------------------- | ------------------------------- |
| zeros_forward            | writes zeros everywhere                                  | values                          |
| partial_forward          | writes only the first half of each row                   | all_written (poisoned buffer)   |
| nan_to_finite_forward    | correct, but replaces NaN/Inf in the input by 0 first    | nan_inf                         |
| one_hidden_size_forward  | divides by 4096 instead of the real hidden size          | values, on held-out shapes only |
| slow_forward             | correct; ONE program (one warp) walks every row in turn, | none: passes, reported slower   |
|                          | 256 elements at a time, two passes: no parallelism | than the original (s < 1)       |

Kernel names carry the prefix ``tl_neg_`` (and ``tl_slow_``) so a profile shows them.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def tl_neg_zeros(Y, stride_y, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    tl.store(Y + row * stride_y + cols, tl.zeros([BLOCK], dtype=tl.float32).to(Y.dtype.element_ty), mask=cols < N)


@triton.jit
def tl_neg_partial(X, W, Y, stride_x, stride_y, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    xn = (x * rstd).to(Y.dtype.element_ty).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * stride_y + cols, (w * xn).to(Y.dtype.element_ty), mask=cols < N // 2)


@triton.jit
def tl_neg_nan_to_finite(X, W, Y, stride_x, stride_y, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    finite = (x == x) & (tl.abs(x) < float("inf"))
    x = tl.where(finite, x, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    xn = (x * rstd).to(Y.dtype.element_ty).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * stride_y + cols, (w * xn).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def tl_neg_one_hidden(X, W, Y, stride_x, stride_y, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / 4096 + eps)  # the defect: hidden size hard-coded
    xn = (x * rstd).to(Y.dtype.element_ty).to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(Y + row * stride_y + cols, (w * xn).to(Y.dtype.element_ty), mask=mask)


@triton.jit
def tl_slow_rmsnorm(X, W, Y, stride_x, stride_y, M, N, eps, BLOCK: tl.constexpr):
    # One program for the whole tensor: rows one after another (correct, deliberately slow).
    for r in range(0, M):
        row = r.to(tl.int64)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, N, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(X + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
            acc += x * x
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
        for start in range(0, N, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            m = cols < N
            x = tl.load(X + row * stride_x + cols, mask=m, other=0.0).to(tl.float32)
            xn = (x * rstd).to(Y.dtype.element_ty).to(tl.float32)
            w = tl.load(W + cols, mask=m, other=0.0).to(tl.float32)
            tl.store(Y + row * stride_y + cols, (w * xn).to(Y.dtype.element_ty), mask=m)


def _prep(self, x):
    n = x.shape[-1]
    if x.stride(-1) != 1:
        x = x.contiguous()
    x2 = x.reshape(-1, n)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    out_dtype = torch.promote_types(self.weight.dtype, x.dtype)
    y = torch.empty((x2.shape[0], n), dtype=out_dtype, device=x.device)
    return x2, y, n, triton.next_power_of_2(n)


def zeros_forward(self, hidden_states):
    x2, y, n, block = _prep(self, hidden_states)
    tl_neg_zeros[(x2.shape[0],)](y, y.stride(0), n, BLOCK=block)
    return y.reshape(hidden_states.shape)


def _launch(kernel, self, hidden_states, **kw):
    x2, y, n, block = _prep(self, hidden_states)
    kernel[(x2.shape[0],)](x2, self.weight.contiguous(), y, x2.stride(0), y.stride(0), n, self.variance_epsilon,
                           BLOCK=kw.get("BLOCK", block), num_warps=kw.get("num_warps", 8))
    return y.reshape(hidden_states.shape)


def partial_forward(self, hidden_states):
    return _launch(tl_neg_partial, self, hidden_states)


def nan_to_finite_forward(self, hidden_states):
    return _launch(tl_neg_nan_to_finite, self, hidden_states)


def one_hidden_size_forward(self, hidden_states):
    return _launch(tl_neg_one_hidden, self, hidden_states)


def slow_forward(self, hidden_states):
    x2, y, n, _ = _prep(self, hidden_states)
    tl_slow_rmsnorm[(1,)](x2, self.weight.contiguous(), y, x2.stride(0), y.stride(0), x2.shape[0], n,
                          self.variance_epsilon, BLOCK=256, num_warps=1)
    return y.reshape(hidden_states.shape)
