"""Policy losses of the local learner as configs: each loss is one class carrying its settings and
its function, and `LearnerConfig.loss` is their discriminated union (`PolicyLossConfig`).

In TOML a loss is a table keyed by `kind`: `[learner.loss]` with `kind = "ppo"` and `eps_high =
0.28`, or inline `loss = {kind = "dppo", delta_low = 0.15}`; a flag takes the same inline table
(`--learner.loss '{kind = "ppo"}'`). The learner calls `cfg.loss.compute(...)` and never branches
on the kind, so a new loss changes this file (and its math in `kwrl.train.algorithms`) only.

Non-obvious choice: this module imports no torch (configs parse cheaply); `compute` imports the
loss's pure function from `kwrl.train.algorithms` when the learner first calls it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal, get_args

from pydantic import Field

from kwrl.config import KwrlConfig

if TYPE_CHECKING:
    import torch

    from kwrl.train.algorithms import LossOutput


class PolicyLoss(KwrlConfig):
    """A policy loss: `kind` names it in configs, its fields are its settings, `compute` applies it.

    Example::

        class ScaledPG(PolicyLoss):
            kind: Literal["scaled_pg"] = "scaled_pg"
            scale: float = 1.0
            \"\"\"Multiplies the plain policy gradient.\"\"\"

            def compute(self, logprobs_B_T, old_logprobs_B_T, advantages_B_T, mask_B_T):
                from kwrl.train.algorithms import LossOutput

                loss_B_T = -self.scale * advantages_B_T * logprobs_B_T
                return LossOutput(loss_B_T, torch.zeros_like(loss_B_T), mask_B_T)
    """

    # Each subclass declares `kind: Literal["NAME"] = "NAME"`, the discriminator of
    # `LearnerConfig.loss` (a `str` here would make every Literal an invalid override).

    def compute(
        self,
        logprobs_B_T: torch.Tensor,
        old_logprobs_B_T: torch.Tensor,
        advantages_B_T: torch.Tensor,
        mask_B_T: torch.Tensor,
    ) -> LossOutput:
        """Per-token loss, the tokens whose gradient the loss removed, and the mask.

        `old_logprobs_B_T` are the sampler's (behaviour) logprobs; the learner reduces the
        per-token loss itself (`kwrl.train.algorithms.reduction_weights`)."""
        raise NotImplementedError


class DPPOLoss(PolicyLoss):
    """DPPO (the recipe's): a binary trust region on each token's probability divergence from
    the sampler's (`kwrl.train.algorithms.dppo_loss`)."""

    kind: Literal["dppo"] = "dppo"
    delta_low: float = Field(default=0.15, ge=0.0)
    """Max probability decrease for a negative-advantage token before it is masked."""
    delta_high: float = Field(default=0.15, ge=0.0)
    """Max probability increase for a positive-advantage token before it is masked."""
    divergence: Literal["binary_tv", "binary_kl"] = "binary_tv"
    """The divergence the trust region bounds: total variation (the recipe's) or binary KL."""

    def compute(
        self,
        logprobs_B_T: torch.Tensor,
        old_logprobs_B_T: torch.Tensor,
        advantages_B_T: torch.Tensor,
        mask_B_T: torch.Tensor,
    ) -> LossOutput:
        from kwrl.train.algorithms import dppo_loss

        return dppo_loss(
            logprobs_B_T, old_logprobs_B_T, advantages_B_T, mask_B_T,
            delta_low=self.delta_low, delta_high=self.delta_high, kind=self.divergence,
        )  # fmt: skip


class PPOLoss(PolicyLoss):
    """PPO's clipped surrogate against the sampler's logprobs (`kwrl.train.algorithms.ppo_clip_loss`)."""

    kind: Literal["ppo"] = "ppo"
    eps_low: float = Field(default=0.2, ge=0.0)
    """Lower clip epsilon: the ratio is clipped at 1 - eps_low."""
    eps_high: float = Field(default=0.2, ge=0.0)
    """Upper clip epsilon: the ratio is clipped at 1 + eps_high (DAPO's clip-higher raises it)."""

    def compute(
        self,
        logprobs_B_T: torch.Tensor,
        old_logprobs_B_T: torch.Tensor,
        advantages_B_T: torch.Tensor,
        mask_B_T: torch.Tensor,
    ) -> LossOutput:
        from kwrl.train.algorithms import ppo_clip_loss

        return ppo_clip_loss(
            logprobs_B_T, old_logprobs_B_T, advantages_B_T, mask_B_T,
            eps_low=self.eps_low, eps_high=self.eps_high,
        )  # fmt: skip


PolicyLossConfig = Annotated[DPPOLoss | PPOLoss, Field(discriminator="kind")]
"""The policy losses of the local learner, by `kind` (`LearnerConfig.loss`).

To add one: a `PolicyLoss` subclass above with `kind: Literal["NAME"] = "NAME"`, its settings as
fields (a docstring under each) and `compute` calling a pure function in `kwrl.train.algorithms`
(`(logprobs_B_T, old_logprobs_B_T, advantages_B_T, mask_B_T, **settings) -> LossOutput`), then
the class in this union. Nothing else changes: the learner only calls `compute`, and TOML, flags
and saved configs take the table (`loss = {kind = "NAME", ...}`). The SkyRL path does not use
these (it takes SkyRL's `trainer.algorithm.policy_loss_type`). Tests:
tests/unit/train/test_algorithms.py (the function, by hand and against SkyRL's ppo_utils where
SkyRL has the loss), tests/unit/train/test_losses.py (every member loads from TOML and computes).
docs/extending.md lists every extension point."""

POLICY_LOSSES: dict[str, type[PolicyLoss]] = {
    cls.model_fields["kind"].default: cls for cls in get_args(get_args(PolicyLossConfig)[0])
}
"""{kind: class} of `PolicyLossConfig`'s members, derived from the union (edit the union)."""
