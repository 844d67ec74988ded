"""Reward and loss-mask rules for trials and groups (docs/contracts.md).

Pure functions over `FailureCause`s; a group is the samples of one prompt (task).

- a failure the policy causes is scored 0 and trained (`TRAINED_ZERO`): context overflow, a last
  turn cut at max tokens, a grader cut off while reading the agent's outputs (`grader_budget`), a
  limit hit that ended the run (`resource_limit`) or left the grader without a reward
  (`verifier_limit`), and an agent timeout of the policy's own making (`agent_timeout`, on the
  trajectory so far);
- a timeout the policy endpoint caused (`policy_timeout`) masks that trial alone;
- any other infrastructure, agent, config or task error in a group masks the whole group;
- a trial is retried up to 2 times on infrastructure errors before it counts.

Non-obvious choice: no timeout masks its group. RECIPE masks a group with two or more timeouts,
reading repeated timeouts as a slow environment, and masks each timed-out trial. Both let a policy
trade a 0 for a mask: a wrong answer, then `sleep` past the clock, and the trial (with two, every
member of the group, one that scored 1.0 included) carried no gradient. kwrl tells the two kinds
of timeout apart by the agent's turn statistics (`kwrl.rollout.failures.policy_was_slow`): the
policy's own timeout is an outcome like any other 0 that the group's advantages must see; the
endpoint's says nothing about the group's other samples, so masking it alone loses only itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kwrl.rollout.failures import INFRA, FailureCause

MAX_RETRIES = 2
TRAINED_ZERO: frozenset[FailureCause] = frozenset(
    {
        FailureCause.CONTEXT_OVERFLOW,
        FailureCause.MAX_TOKENS,
        FailureCause.GRADER_BUDGET,
        FailureCause.AGENT_TIMEOUT,
        FailureCause.RESOURCE_LIMIT,
        FailureCause.VERIFIER_LIMIT,
    }
)
"""Failures the policy causes: reward 0, trained."""
MASKED_ALONE: frozenset[FailureCause] = frozenset({FailureCause.POLICY_TIMEOUT})
"""Infrastructure failures that mask their trial but not its group."""
GROUP_ERRORS: frozenset[FailureCause] = (INFRA - MASKED_ALONE) | {
    FailureCause.AGENT,
    FailureCause.CANCELLED,
    FailureCause.CONFIG,
    FailureCause.TASK,
}
"""Failures that mask the whole group."""


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
    return any(c in GROUP_ERRORS for c in causes)


def group_decisions(
    causes: Sequence[FailureCause], rewards: Sequence[float | None]
) -> list[Decision]:
    """Decisions for every trial of a group: the trial rules, then the group rules on top."""
    if len(causes) != len(rewards):
        raise ValueError(f"{len(causes)} causes but {len(rewards)} rewards")
    if group_masked(causes):
        return [Decision(reward=None, trained=False) for _ in causes]
    return [trial_decision(c, r) for c, r in zip(causes, rewards, strict=True)]
