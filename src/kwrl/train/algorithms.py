"""RL algorithms as pure functions: advantages, policy losses, loss reductions, KL.

Shapes are in the names: `_B` one value per sequence, `_B_T` per token (sequences padded to T),
`mask_B_T` is the loss mask (1 = a policy-sampled token that is trained). Every function here is
deterministic and side-effect free; the trainer composes them. Values match SkyRL 0.3.0's
`ppo_utils` on the same inputs (tests/unit/train/test_algorithms.py checks that).

Conventions (as in SkyRL): advantages are outcome-level (one per sequence, broadcast over tokens);
the loss reduction is applied as a per-token weight so that `sum(loss_B_T * weight_B_T)` is the
reduced loss, which keeps micro-batching exact.

The policy losses' configs, which name a loss and carry its settings to its function here, are
`kwrl.train.losses` (torch-free); a new loss adds its function here and its class there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch

Reduction = Literal["token_mean", "sequence_mean", "prompt_mean"]


# --------------------------------------------------------------------------- advantages


def group_ids_to_boundaries(group_ids: Sequence[int | str]) -> list[tuple[int, int]]:
    """Contiguous (start, end) slices of equal group ids; groups must be contiguous."""
    bounds: list[tuple[int, int]] = []
    seen: set[int | str] = set()
    start = 0
    for i in range(1, len(group_ids) + 1):
        if i == len(group_ids) or group_ids[i] != group_ids[start]:
            if group_ids[start] in seen:
                raise ValueError(f"group {group_ids[start]!r} is not contiguous")
            seen.add(group_ids[start])
            bounds.append((start, i))
            start = i
    return bounds


def grpo_advantages(
    rewards_B: torch.Tensor,
    group_ids: Sequence[int | str],
    *,
    norm_by_std: bool = False,
    eps: float = 1e-6,
    valid_B: Sequence[bool] | None = None,
) -> torch.Tensor:
    """GRPO outcome advantages: reward minus its group's mean (optionally / group std, unbiased).

    A group of one gets mean 0 and std 1, as in SkyRL. The recipe trains without std normalisation.
    `valid_B` False marks a member with no reward to learn from (a masked trial): it is left out
    of its group's mean and std and gets advantage 0, so a mask never shifts the baseline of the
    members that were scored (a placeholder 0 in the mean would raise their advantages).
    """
    rewards_B = rewards_B.to(torch.float32)
    adv_B = torch.zeros_like(rewards_B)
    groups = _groups(group_ids, valid_B)
    for idx in groups.values():
        r = rewards_B[idx]
        if len(idx) == 1:
            mean, std = torch.tensor(0.0), torch.tensor(1.0)
        else:
            mean, std = r.mean(), r.std()
        adv_B[idx] = (r - mean) / (std + eps) if norm_by_std else r - mean
    return adv_B


def _groups(
    group_ids: Sequence[int | str], valid_B: Sequence[bool] | None
) -> dict[int | str, list[int]]:
    """Indices of each group's valid members (all members when `valid_B` is None)."""
    if valid_B is not None and len(valid_B) != len(group_ids):
        raise ValueError(f"{len(valid_B)} valid flags for {len(group_ids)} sequences")
    groups: dict[int | str, list[int]] = {}
    for i, g in enumerate(group_ids):
        if valid_B is None or valid_B[i]:
            groups.setdefault(g, []).append(i)
    return groups


def zero_variance_keep(
    rewards_B: torch.Tensor,
    group_ids: Sequence[int | str],
    valid_B: Sequence[bool] | None = None,
) -> torch.Tensor:
    """Boolean mask of sequences whose group has more than one distinct reward (others carry no
    signal); only valid members count, and an invalid one is never kept (`grpo_advantages`)."""
    keep_B = torch.zeros(len(group_ids), dtype=torch.bool)
    groups = _groups(group_ids, valid_B)
    for idx in groups.values():
        r = rewards_B[idx]
        keep_B[idx] = bool((r.max() - r.min()).abs() > 0)
    return keep_B


def trained_advantages(
    rewards_B: torch.Tensor,
    group_ids: Sequence[int | str],
    trained_B: Sequence[bool],
    *,
    norm_by_std: bool = False,
    drop_zero_variance: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The one reward-to-advantage path of a batch of grouped trials: GRPO advantages over each
    group's trained members (`trained_B`; a masked member is left out of the baseline and gets
    0), and which members train (trained, and with `drop_zero_variance` in a group whose trained
    members scored differently). kwrl's trainer trains on these; SkyRL's GRPO, given
    `placeholder_rewards` for the masked rows, computes the same advantages for the trained ones
    (tests/unit/train/skyrl/test_trained_advantages.py)."""
    adv_B = grpo_advantages(rewards_B, group_ids, norm_by_std=norm_by_std, valid_B=trained_B)
    keep_B = torch.tensor([bool(x) for x in trained_B], dtype=torch.bool)
    if drop_zero_variance:
        keep_B &= zero_variance_keep(rewards_B, group_ids, valid_B=trained_B)
    return adv_B, keep_B


def placeholder_rewards(
    rewards_B: Sequence[float], group_ids: Sequence[int | str], trained_B: Sequence[bool]
) -> list[float]:
    """Rewards for a trainer that keeps every row in its GRPO baseline (SkyRL): a masked row gets
    its group's trained members' mean (0.0 when none is), so the group's mean, and so the trained
    members' advantages, stay what `trained_advantages` gives (without std normalisation)."""
    groups = _groups(group_ids, trained_B)
    means = {g: sum(float(rewards_B[i]) for i in idx) / len(idx) for g, idx in groups.items()}
    return [
        float(r) if ok else means.get(g, 0.0)
        for r, g, ok in zip(rewards_B, group_ids, trained_B, strict=True)
    ]


# --------------------------------------------------------------------------- losses


@dataclass(frozen=True)
class LossOutput:
    loss_B_T: torch.Tensor
    """Per-token loss before reduction."""
    clipped_B_T: torch.Tensor
    """1.0 where the clip / divergence mask removed the token's gradient, else 0.0."""
    mask_B_T: torch.Tensor
    """The trained tokens."""

    @property
    def clip_frac(self) -> float:
        """Fraction of trained tokens whose gradient the clip / divergence mask removed."""
        return _masked_mean(self.clipped_B_T, self.mask_B_T)


def _ratio(delta: torch.Tensor) -> torch.Tensor:
    return torch.clamp(delta.to(torch.float32), -20.0, 20.0).exp().to(delta.dtype)


def _masked_mean(x: torch.Tensor, mask: torch.Tensor) -> float:
    return float((x * mask).sum() / mask.sum().clamp(min=1))


def ppo_clip_loss(
    logprobs_B_T: torch.Tensor,
    old_logprobs_B_T: torch.Tensor,
    advantages_B_T: torch.Tensor,
    mask_B_T: torch.Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.2,
) -> LossOutput:
    """PPO's clipped surrogate: -min(r A, clip(r, 1-eps_low, 1+eps_high) A)."""
    ratio = _ratio(logprobs_B_T - old_logprobs_B_T)
    surr1 = ratio * advantages_B_T
    surr2 = ratio.clamp(1 - eps_low, 1 + eps_high) * advantages_B_T
    clipped = (-surr2 > -surr1).float()
    return LossOutput(-torch.min(surr1, surr2), clipped, mask_B_T)


def dppo_loss(
    logprobs_B_T: torch.Tensor,
    behaviour_logprobs_B_T: torch.Tensor,
    advantages_B_T: torch.Tensor,
    mask_B_T: torch.Tensor,
    *,
    delta_low: float = 0.15,
    delta_high: float = 0.15,
    kind: Literal["binary_tv", "binary_kl"] = "binary_tv",
) -> LossOutput:
    """DPPO (arXiv 2602.04879): importance-weighted surrogate against the *rollout* (behaviour)
    logprobs, with a binary trust-region mask on the per-token probability divergence instead of
    ratio clipping. A token is dropped when it moved too far in the direction its advantage pushes.
    """
    ratio = _ratio(logprobs_B_T - behaviour_logprobs_B_T)
    with torch.no_grad():
        p = logprobs_B_T.exp()
        mu = behaviour_logprobs_B_T.exp()
        diff = p - mu
        up, down = advantages_B_T > 0, advantages_B_T < 0
        if kind == "binary_tv":
            drop = (up & (diff > delta_high)) | (down & (-diff > delta_low))
        else:
            eps = 1e-8
            bkl = mu * (behaviour_logprobs_B_T - logprobs_B_T) + (1 - mu) * torch.log(
                (1 - mu + eps) / (1 - p + eps)
            )
            drop = (up & (diff > 0) & (bkl > delta_high)) | (down & (diff < 0) & (bkl > delta_low))
        # A 0/1 product, not boolean-index assignment: no host synchronisation on a GPU.
        clipped = drop.to(advantages_B_T.dtype)
    return LossOutput(-(ratio * advantages_B_T * (1 - clipped)), clipped, mask_B_T)


def kl_k3(logprobs_B_T: torch.Tensor, ref_logprobs_B_T: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(policy || ref), clamped as SkyRL does."""
    log_ratio = torch.clamp(ref_logprobs_B_T - logprobs_B_T, -20, 20)
    return torch.clamp(log_ratio.exp() - log_ratio - 1, -10, 10)


# --------------------------------------------------------------------------- reductions


def reduction_weights(
    mask_B_T: torch.Tensor,
    reduction: Reduction,
    prompt_boundaries: Sequence[tuple[int, int]] | None = None,
) -> torch.Tensor:
    """Per-token weights w with sum(loss * w) = the reduced loss over trained tokens.

    token_mean: mean over all trained tokens; sequence_mean: mean over sequences of each
    sequence's token mean; prompt_mean: mean over prompts (groups) of each prompt's token mean.
    """
    mask = mask_B_T.to(torch.float32)
    B = mask.shape[0]
    if reduction == "token_mean":
        return mask / mask.sum().clamp(min=1)
    if reduction == "sequence_mean":
        return mask / (B * mask.sum(dim=-1, keepdim=True).clamp(min=1))
    if reduction == "prompt_mean":
        if prompt_boundaries is None:
            raise ValueError("prompt_mean needs prompt_boundaries (the (start, end) of each group)")
        w = torch.zeros_like(mask)
        n = len(prompt_boundaries)
        for s, e in prompt_boundaries:
            w[s:e] = mask[s:e] / (n * mask[s:e].sum().clamp(min=1))
        return w
    raise ValueError(
        f"unknown loss reduction {reduction!r}; use token_mean, sequence_mean or prompt_mean"
    )


def reduce_loss(loss_B_T: torch.Tensor, weights_B_T: torch.Tensor) -> torch.Tensor:
    return (loss_B_T * weights_B_T).sum()
