"""From trajectories to padded training tensors (pure).

A trajectory (TITO: token in, token out) is one strictly appending token list: `prompt_ids` (the first
rendering of system + user) then `response_ids` (everything after: policy turns and the
observations between them), with `loss_mask` (1 = policy-sampled) and `logprobs` (the sampler's,
0.0 where the mask is 0) aligned to `response_ids`.

The learner feeds `input_ids = prompt + response` and predicts token t+1 at position t, so every
per-response-token quantity is shifted to the position that predicts it. `Batch` holds tensors of
shape `_B_L` (sequences x padded length) already in that alignment: `mask_B_L[b, t] = 1` means
"the logit at position t predicts a trained token".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from kwrl.rollout.failures import FailureCause
from kwrl.rollout.trial import TrialFiles, read_trial

if TYPE_CHECKING:
    from kwrl.rollout.runner import TrialRecord


@dataclass
class Trajectory:
    prompt_ids: list[int]
    response_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    reward: float = 0.0
    group_id: int | str = 0
    """Trajectories of one prompt share a group id (GRPO's group)."""
    trainable: bool = True
    """False for masked trajectories (infra error, timeout): they contribute no gradient."""
    policy_version: int = 0
    """Weight version of the policy that sampled it (staleness accounting)."""
    trained: bool = True
    """Whether its group's decisions train it (`TrialRecord.trained`): False for a masked trial,
    left out of its group's baseline (GRPO) and of dynamic sampling's counts."""
    raw_reward: float | None = None
    """The grader's reward of its trial (`TrialRecord.reward`; `reward` is the training one);
    None: not graded."""
    cause: FailureCause = FailureCause.NONE
    """How its trial ended (`TrialRecord.cause`)."""
    trial: str = ""
    """Its trial's name (harbor's trial dir name)."""

    def __post_init__(self) -> None:
        n = len(self.response_ids)
        if len(self.loss_mask) != n or len(self.logprobs) != n:
            raise ValueError(
                f"trajectory arrays differ in length: response_ids {n}, loss_mask "
                f"{len(self.loss_mask)}, logprobs {len(self.logprobs)}"
            )


def trajectories_from_records(
    records: Sequence[TrialRecord], version: int, files: Sequence[TrialFiles] | None = None
) -> list[Trajectory]:
    """TITO trajectories of finished trials (their files through `kwrl.rollout.trial.read_trial`,
    or `files`, the records' files in order, from a caller that reads them for more: each trial is
    read once).

    A trial without token arrays (it crashed before its first turn) is kept as an untrainable
    placeholder so its group still sees it.
    """
    read = list(files) if files is not None else [read_trial(r.trial_dir) for r in records]
    out: list[Trajectory] = []
    for r, f in zip(records, read, strict=True):
        resp = f.response_ids
        t = Trajectory(
            prompt_ids=f.prompt_ids,
            response_ids=resp,
            loss_mask=f.loss_mask,
            logprobs=f.logprobs,
            reward=float(r.train_reward or 0.0),
            group_id=r.task,
            trainable=bool(r.trained) and bool(resp),
            policy_version=version,
            trained=bool(r.trained),
            raw_reward=r.reward,
            cause=r.cause,
            trial=r.trial_name,
        )
        out.append(t)
    return out


@dataclass
class Batch:
    input_ids_B_L: torch.Tensor
    attention_mask_B_L: torch.Tensor
    mask_B_L: torch.Tensor
    """1.0 where the logit at t predicts a trained (policy-sampled) token."""
    targets_B_L: torch.Tensor
    """The token predicted at t (input_ids shifted left; 0 where nothing is predicted)."""
    rollout_logprobs_B_L: torch.Tensor
    advantages_B_L: torch.Tensor
    group_ids: list[int | str]

    @property
    def num_tokens(self) -> int:
        return int(self.attention_mask_B_L.sum())

    def slice(self, s: int, e: int) -> Batch:
        return Batch(
            self.input_ids_B_L[s:e],
            self.attention_mask_B_L[s:e],
            self.mask_B_L[s:e],
            self.targets_B_L[s:e],
            self.rollout_logprobs_B_L[s:e],
            self.advantages_B_L[s:e],
            self.group_ids[s:e],
        )


def collate(
    trajectories: Sequence[Trajectory],
    advantages_B: Sequence[float],
    *,
    pad_id: int = 0,
    max_len: int | None = None,
) -> Batch:
    """Right-pad trajectories into a Batch; masked (non-trainable) ones get an all-zero loss mask."""
    if len(trajectories) != len(advantages_B):
        raise ValueError("one advantage per trajectory")
    lengths = [len(t.prompt_ids) + len(t.response_ids) for t in trajectories]
    L = max(lengths) if max_len is None else min(max(lengths), max_len)
    B = len(trajectories)
    ids = torch.full((B, L), pad_id, dtype=torch.long)
    attn = torch.zeros(B, L, dtype=torch.long)
    mask = torch.zeros(B, L)
    targets = torch.zeros(B, L, dtype=torch.long)
    lps = torch.zeros(B, L)
    adv = torch.zeros(B, L)
    for b, (t, a) in enumerate(zip(trajectories, advantages_B, strict=True)):
        seq = (t.prompt_ids + t.response_ids)[:L]
        n = len(seq)
        ids[b, :n] = torch.tensor(seq)
        attn[b, :n] = 1
        targets[b, : n - 1] = ids[b, 1:n]
        P = len(t.prompt_ids)
        for i, (m, lp) in enumerate(zip(t.loss_mask, t.logprobs, strict=True)):
            pos = P + i - 1  # the logit at pos predicts response token i
            if pos >= n - 1 or pos < 0:
                break
            if m and t.trainable:
                mask[b, pos] = 1.0
                lps[b, pos] = lp
        adv[b] = float(a)
    return Batch(ids, attn, mask, targets, lps, adv * mask, [t.group_id for t in trajectories])
