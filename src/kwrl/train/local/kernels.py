"""Triton kernels of the LM head's logprob reduction and its logits gradient (CUDA only).

The head's elementwise work runs over N x V logits (34k scored tokens x a 152k vocabulary is
10.5 GB in bf16), so it is bound by memory bandwidth. torch.compile's versions read the logits
twice in the forward (logsumexp's max pass, then its sum pass) and write the gradient into a new
tensor. These read the logits once per pass:

- `logprob_lse`: one program per row, an online logsumexp over vocabulary blocks (running max and
  rescaled sum), plus the target's logit: log p(target) and the logsumexp, float32.
- `dlogits_`: g (onehot(t) - softmax(logits / T)) / T, written over the logits in place (the
  head's backward needs them no more), so the gradient costs no second N x V buffer. The head's
  backward can therefore run once per forward (no `retain_graph` second pass).

Both take the same arguments as `learner._logprob_lse` / `learner._dlogits_fused` (hence the
shared signature). They are checked against those functions under Triton's interpreter on the
CPU (tests/unit/train/local/test_kernels.py) and against float32 autograd on the GPU
(`benchmarks/learner_profile.py`, `check_head`).
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

_BLOCK = 4096


@triton.jit
def _lse_kernel(
    logits_ptr,
    targets_ptr,
    lp_ptr,
    lse_ptr,
    V,
    stride,
    inv_t,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * stride
    m = -float("inf")
    s = 0.0
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(base + offs, mask=offs < V, other=-float("inf")).to(tl.float32) * inv_t
        m_new = tl.maximum(m, tl.max(x, 0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    lse = m + tl.log(s)
    t = tl.load(targets_ptr + row)
    xt = tl.load(base + t).to(tl.float32) * inv_t
    tl.store(lse_ptr + row, lse)
    tl.store(lp_ptr + row, xt - lse)


@triton.jit
def _dlogits_kernel(
    logits_ptr,
    lse_ptr,
    targets_ptr,
    g_ptr,
    V,
    stride,
    inv_t,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    keep = offs < V
    ptr = logits_ptr + row * stride + offs
    x = tl.load(ptr, mask=keep, other=0.0).to(tl.float32) * inv_t
    lse = tl.load(lse_ptr + row)
    gt = tl.load(g_ptr + row) * inv_t
    t = tl.load(targets_ptr + row)
    d = (tl.where(offs == t, 1.0, 0.0) - tl.exp(x - lse)) * gt
    tl.store(ptr, d.to(logits_ptr.dtype.element_ty), mask=keep)


def _check(logits_N_V: torch.Tensor) -> None:
    # Triton's interpreter (TRITON_INTERPRET=1) runs them on CPU tensors: the CPU tests do that.
    on_device = logits_N_V.is_cuda or os.environ.get("TRITON_INTERPRET") == "1"
    if not on_device or logits_N_V.dim() != 2 or logits_N_V.stride(-1) != 1:
        raise ValueError("the head kernels take CUDA logits of shape N x V, contiguous rows")


def logprob_lse(
    logits_N_V: torch.Tensor, targets_N: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(target) and logsumexp of logits / temperature, per row (float32)."""
    _check(logits_N_V)
    N, V = logits_N_V.shape
    lp = torch.empty(N, dtype=torch.float32, device=logits_N_V.device)
    lse = torch.empty_like(lp)
    if N:
        _lse_kernel[(N,)](
            logits_N_V, targets_N.contiguous(), lp, lse, V, logits_N_V.stride(0),
            1.0 / temperature, BLOCK=_BLOCK, num_warps=16,  # pyright: ignore[reportCallIssue]
        )  # fmt: skip
    return lp, lse


def dlogits_(
    logits_N_V: torch.Tensor,
    lse_N: torch.Tensor,
    targets_N: torch.Tensor,
    g_N: torch.Tensor,
    temperature: float,
) -> torch.Tensor:
    """d(sum_i g_i log p_i(t_i)) / d logits, written over `logits_N_V` (returned)."""
    _check(logits_N_V)
    N, V = logits_N_V.shape
    if N:
        _dlogits_kernel[(N, triton.cdiv(V, _BLOCK))](
            logits_N_V, lse_N.contiguous(), targets_N.contiguous(), g_N.float().contiguous(), V,
            logits_N_V.stride(0), 1.0 / temperature, BLOCK=_BLOCK, num_warps=8,  # pyright: ignore[reportCallIssue]
        )  # fmt: skip
    return logits_N_V
