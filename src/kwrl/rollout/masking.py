"""Reward and loss-mask rules for trials and groups (DESIGN §7, RECIPE tito_harbor_generator).

Pure functions over `FailureCause`s; a group is the samples of one prompt (task).

- context overflow, a last turn cut at max tokens, or a grader cut off while reading the agent's
  outputs (`grader_budget`): reward 0, still trained;
- agent timeout (or a resource limit that ended the run, the agent's own doing): that trial is
  masked;
- any infrastructure, agent or config error in a group masks the whole group;
- two or more timeouts in a group mask the whole group;
- a trial is retried up to 2 times on infrastructure errors before it counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kwrl.rollout.failures import INFRA, FailureCause

MAX_RETRIES = 2
TRAINED_ZERO: frozenset[FailureCause] = frozenset(
    {FailureCause.CONTEXT_OVERFLOW, FailureCause.MAX_TOKENS, FailureCause.GRADER_BUDGET}
)
TIMEOUTS: frozenset[FailureCause] = frozenset(
    {FailureCause.AGENT_TIMEOUT, FailureCause.RESOURCE_LIMIT}
)
GROUP_ERRORS: frozenset[FailureCause] = INFRA | {
    FailureCause.AGENT,
    FailureCause.CANCELLED,
    FailureCause.CONFIG,
}
MAX_GROUP_TIMEOUTS = 1
"""A group with more timeouts than this is masked whole."""


@dataclass(frozen=True)
class Decision:
    """What training does with one trial."""

    reward: float | None
    """The reward used for training (None when there is none to use)."""
    trained: bool
    """False: the trial's loss mask is all zeros."""


def should_retry(cause: FailureCause, attempt: int, max_retries: int = MAX_RETRIES) -> bool:
    """Retry infra failures; `attempt` counts from 0 (the first run)."""
    return cause in INFRA and attempt < max_retries


def trial_decision(cause: FailureCause, reward: float | None) -> Decision:
    """The decision for one trial, ignoring its group."""
    if cause is FailureCause.NONE:
        return Decision(reward=reward, trained=reward is not None)
    if cause in TRAINED_ZERO:
        return Decision(reward=0.0, trained=True)
    return Decision(reward=None, trained=False)


def group_masked(causes: Sequence[FailureCause]) -> bool:
    """True when the whole group must be masked."""
    if any(c in GROUP_ERRORS for c in causes):
        return True
    return sum(c in TIMEOUTS for c in causes) > MAX_GROUP_TIMEOUTS


def group_decisions(
    causes: Sequence[FailureCause], rewards: Sequence[float | None]
) -> list[Decision]:
    """Decisions for every trial of a group: the trial rules, then the group rules on top."""
    if len(causes) != len(rewards):
        raise ValueError(f"{len(causes)} causes but {len(rewards)} rewards")
    if group_masked(causes):
        return [Decision(reward=None, trained=False) for _ in causes]
    return [trial_decision(c, r) for c, r in zip(causes, rewards, strict=True)]
