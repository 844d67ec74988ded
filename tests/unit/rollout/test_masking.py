"""Masking and retry rules (DESIGN §7) as behaviour sentences."""

from __future__ import annotations

from kwrl.rollout.failures import FailureCause as F
from kwrl.rollout.masking import (
    Decision,
    group_decisions,
    group_masked,
    should_retry,
    trial_decision,
)


def test_a_graded_trial_trains_on_its_reward() -> None:
    assert trial_decision(F.NONE, 0.75) == Decision(reward=0.75, trained=True)


def test_failures_the_policy_causes_train_with_reward_zero() -> None:
    """Overflow, a cut last turn, a timeout of its own making, a limit hit that ended the run or
    starved the grader: 0 and trained, whatever the grader said (a masked trial is worth more to
    a policy than a 0)."""
    for cause in (
        F.CONTEXT_OVERFLOW, F.MAX_TOKENS, F.GRADER_BUDGET, F.AGENT_TIMEOUT, F.RESOURCE_LIMIT,
        F.VERIFIER_LIMIT,
    ):  # fmt: skip
        assert trial_decision(cause, None) == Decision(reward=0.0, trained=True), cause
        assert trial_decision(cause, 1.0) == Decision(reward=0.0, trained=True), cause


def test_infra_errors_and_a_slow_policy_endpoint_mask_the_trial() -> None:
    for cause in (F.POLICY_TIMEOUT, F.SANDBOX, F.MODEL, F.VERIFIER, F.VERIFIER_TIMEOUT):
        assert trial_decision(cause, 1.0) == Decision(reward=None, trained=False)


def test_no_timeout_masks_its_group() -> None:
    """The wrong answer, then sleeping past the clock, twice in a group: every member trains, the
    one that scored 1.0 with its 1.0."""
    out = group_decisions([F.NONE, F.AGENT_TIMEOUT, F.AGENT_TIMEOUT], [1.0, 0.0, None])
    assert [(d.trained, d.reward) for d in out] == [(True, 1.0), (True, 0.0), (True, 0.0)]
    slow = [F.NONE, F.POLICY_TIMEOUT, F.POLICY_TIMEOUT, F.AGENT_TIMEOUT]
    assert not group_masked(slow)
    out = group_decisions(slow, [1.0, None, None, 0.0])
    assert [(d.trained, d.reward) for d in out] == [
        (True, 1.0), (False, None), (False, None), (True, 0.0)
    ]  # fmt: skip


def test_any_error_masks_the_group() -> None:
    for err in (F.SANDBOX, F.MODEL, F.VERIFIER, F.VERIFIER_TIMEOUT, F.AGENT, F.TASK):
        out = group_decisions([F.NONE, err, F.CONTEXT_OVERFLOW], [1.0, None, None])
        assert not any(d.trained for d in out), err


def test_trained_zero_causes_do_not_mask_the_group() -> None:
    out = group_decisions([F.CONTEXT_OVERFLOW, F.MAX_TOKENS, F.NONE], [None, None, 0.5])
    assert [d.trained for d in out] == [True, True, True]
    assert [d.reward for d in out] == [0.0, 0.0, 0.5]


def test_infra_failures_are_retried_twice_then_count() -> None:
    assert should_retry(F.SANDBOX, 0) and should_retry(F.SANDBOX, 1)
    assert not should_retry(F.SANDBOX, 2)
    assert should_retry(F.POLICY_TIMEOUT, 0)
    for cause in (
        F.NONE, F.AGENT_TIMEOUT, F.CONTEXT_OVERFLOW, F.RESOURCE_LIMIT, F.VERIFIER_LIMIT, F.AGENT,
        F.TASK,
    ):  # fmt: skip
        assert not should_retry(cause, 0), cause


def test_mismatched_lengths_are_an_error() -> None:
    import pytest

    with pytest.raises(ValueError, match="2 causes but 1 rewards"):
        group_decisions([F.NONE, F.NONE], [1.0])
