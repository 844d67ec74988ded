"""Shared-prefix packing: a GRPO group's common prompt runs once through the decoder.

The trials of a group start with the same tokens (the task's prompt). Computed row by row, every
trial pays for that prefix again in every projection, MLP and norm. Packed, each group is one row,
``[prefix, suffix_1, suffix_2, ...]``, with the position ids each token has in its own trial, so
everything outside attention runs on ``P + sum(len_i - P)`` tokens instead of ``sum(len_i)``.
Attention alone needs each trial's own view: ``prefix_attention`` gathers every trial's
``[prefix, suffix_i]`` back into the original B x L layout (the shared prefix's queries, keys and
values repeated, so their gradients add up over the group), runs the usual causal SDPA there
(cuDNN / flash, as unpacked), and scatters the outputs back to the packed row (the prefix's from
the group's first trial). The result is the unpacked forward up to float rounding: same positions,
same causal context, same kernels.

The packing is planned on the host from the token ids (`plan`), so the GPU never waits for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

ATTENTION = "kwrl_prefix_sdpa"
"""Name of `prefix_attention` in transformers' attention registry (not a mask implementation:
transformers then passes no mask and leaves packed position ids alone)."""


@dataclass
class PrefixPlan:
    """How one micro-batch (B x L, right-padded) is packed into G rows of Lp tokens."""

    input_ids_G_Lp: torch.Tensor
    position_ids_G_Lp: torch.Tensor
    unpack_BL: torch.Tensor
    """For each original position b * L + t, its packed position g * Lp + p (padding: any)."""
    repack_GLp: torch.Tensor
    """For each packed position, the original position whose attention output it takes (the
    packing's padding: a position whose output nobody takes)."""
    tokens: int
    """Real tokens in the packed rows (what the decoder body runs on, padding aside)."""


def _runs(group_ids: list[Any]) -> list[tuple[int, int]]:
    """[start, end) of each run of equal, adjacent group ids."""
    out: list[tuple[int, int]] = []
    for i, g in enumerate(group_ids):
        if out and group_ids[out[-1][0]] == g:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def plan(
    input_ids_B_L: torch.Tensor,
    attention_mask_B_L: torch.Tensor,
    group_ids: list[Any],
    *,
    min_prefix: int = 1,
) -> PrefixPlan | None:
    """The packing of a right-padded micro-batch (host tensors), or None when no group of two or
    more rows shares at least `min_prefix` leading tokens (nothing to save)."""
    ids = input_ids_B_L.cpu()
    lens = attention_mask_B_L.cpu().sum(-1).tolist()
    B, L = ids.shape
    groups: list[tuple[list[int], int]] = []  # (rows, shared prefix length)
    saved = 0
    for s, e in _runs(list(group_ids)):
        rows = [r for r in range(s, e) if lens[r] > 0]
        if not rows:
            continue
        p = 0
        if len(rows) > 1:
            n = min(int(lens[r]) for r in rows) - 1  # every row keeps a token of its own
            same = (ids[rows, :n] == ids[rows[0], :n]).all(0) if n > 0 else torch.zeros(0)
            p = int(same.long().cumprod(0).sum()) if n > 0 else 0
            if p < min_prefix:
                p = 0
        groups.append((rows, p))
        saved += p * (len(rows) - 1)
    if saved == 0:
        return None
    lengths = [p + sum(int(lens[r]) - p for r in rows) for rows, p in groups]
    G, Lp = len(groups), max(lengths)
    # A copy of a shared prefix's first token outside its first trial: no output is taken from
    # it, so its query's gradient is exactly zero. Packing's padding points there.
    dead = next(rows[1] * L for rows, p in groups if p > 0)
    packed_ids = torch.zeros(G, Lp, dtype=ids.dtype)
    positions = torch.zeros(G, Lp, dtype=torch.long)
    unpack = torch.zeros(B, L, dtype=torch.long)
    repack = torch.full((G, Lp), dead, dtype=torch.long)
    for g, (rows, p) in enumerate(groups):
        base = g * Lp
        first = rows[0]
        packed_ids[g, :p] = ids[first, :p]
        positions[g, :p] = torch.arange(p)
        repack[g, :p] = first * L + torch.arange(p)
        off = p
        for r in rows:
            n = int(lens[r]) - p
            packed_ids[g, off : off + n] = ids[r, p : p + n]
            positions[g, off : off + n] = torch.arange(p, p + n)
            repack[g, off : off + n] = r * L + torch.arange(p, p + n)
            unpack[r, :p] = base + torch.arange(p)
            unpack[r, p : p + n] = base + off + torch.arange(n)
            unpack[r, p + n :] = base + off + n - 1  # padding: after the row's last token
            off += n
    return PrefixPlan(packed_ids, positions, unpack.reshape(-1), repack.reshape(-1), sum(lengths))


def prefix_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    *,
    kwrl_unpack: torch.Tensor | None = None,
    kwrl_repack: torch.Tensor | None = None,
    kwrl_rows: int | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' SDPA attention over packed rows (`kwrl_*` from a `PrefixPlan`); plain SDPA
    when no plan is passed. query/key/value: [G, heads, Lp, d]; returns [G, Lp, heads, d]."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if kwrl_unpack is None or kwrl_repack is None or kwrl_rows is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    G, heads, Lp, d = query.shape
    B = kwrl_rows
    L = kwrl_unpack.shape[0] // B

    def flat(x: torch.Tensor) -> torch.Tensor:
        return x.transpose(1, 2).reshape(G * Lp, x.shape[1], d)

    def rows(x: torch.Tensor) -> torch.Tensor:
        return x.view(B, L, x.shape[1], d).transpose(1, 2)

    # Queries: only each packed token's own position (`repack`) gets a gradient (the other copies'
    # outputs are dropped), so their backward is a gather too. Keys and values: every trial's
    # queries read the shared prefix, so their gradients add up (index_select's backward).
    q = rows(_Gather.apply(flat(query), kwrl_unpack, kwrl_repack))
    k = rows(flat(key).index_select(0, kwrl_unpack))
    v = rows(flat(value).index_select(0, kwrl_unpack))
    out, _ = sdpa_attention_forward(module, q, k, v, None, **kwargs)  # [B, L, heads, d]
    out = _Gather.apply(out.reshape(B * L, heads, d), kwrl_repack, kwrl_unpack, True)
    return out.view(G, Lp, heads, d), None


class _Gather(torch.autograd.Function):
    """y = x[index], whose backward gathers as well: dx = dy[inverse].

    Exact when each row of x has at most one row of y with a nonzero gradient, `inverse` naming
    it (or a row whose gradient is zero). `masked`: rows i of x with `index[inverse[i]] != i`,
    the unpacked positions no packed token takes its output from (a shared prefix's later
    copies, padding), get a zero gradient instead of a copy of the packed one.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, x: torch.Tensor, index: torch.Tensor, inverse: torch.Tensor, masked: bool = False
    ) -> torch.Tensor:
        ctx.save_for_backward(index, inverse)
        ctx.masked = masked
        return x.index_select(0, index)

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # type: ignore[override]
        index, inverse = ctx.saved_tensors
        dx = grads[0].index_select(0, inverse)
        if ctx.masked:
            own = index.index_select(0, inverse) == torch.arange(inverse.numel(), device=dx.device)
            dx = dx * own.view(-1, *([1] * (dx.dim() - 1))).to(dx.dtype)
        return dx, None, None, None


def register() -> None:
    """Add `prefix_attention` to transformers' attention functions (idempotent)."""
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION, prefix_attention)  # type: ignore[arg-type]


def supports(model: torch.nn.Module) -> bool:
    """A transformers causal LM running SDPA attention (what the packed path replaces)."""
    cfg = getattr(model, "config", None)
    return getattr(cfg, "_attn_implementation", None) in ("sdpa", ATTENTION)


def enable(model: torch.nn.Module) -> bool:
    """Switch a supported model's attention to `prefix_attention`; whether it was switched."""
    if not supports(model):
        return False
    register()
    model.config._attn_implementation = ATTENTION  # type: ignore[union-attr]
    return True
