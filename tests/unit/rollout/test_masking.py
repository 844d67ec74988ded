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


def test_context_overflow_and_max_tokens_train_with_reward_zero() -> None:
    for cause in (F.CONTEXT_OVERFLOW, F.MAX_TOKENS):
        assert trial_decision(cause, None) == Decision(reward=0.0, trained=True)
        assert trial_decision(cause, 1.0) == Decision(reward=0.0, trained=True)


def test_agent_timeout_and_infra_errors_mask_the_trial() -> None:
    for cause in (F.AGENT_TIMEOUT, F.SANDBOX, F.MODEL, F.VERIFIER, F.RESOURCE_LIMIT):
        assert trial_decision(cause, 1.0) == Decision(reward=None, trained=False)


def test_one_timeout_masks_only_that_trial() -> None:
    out = group_decisions([F.NONE, F.AGENT_TIMEOUT, F.NONE], [1.0, None, 0.0])
    assert [d.trained for d in out] == [True, False, True]
    assert out[0].reward == 1.0 and out[2].reward == 0.0


def test_two_timeouts_mask_the_group() -> None:
    assert group_masked([F.NONE, F.AGENT_TIMEOUT, F.AGENT_TIMEOUT, F.NONE])
    out = group_decisions([F.NONE, F.AGENT_TIMEOUT, F.AGENT_TIMEOUT], [1.0, None, None])
    assert not any(d.trained for d in out)


def test_any_error_masks_the_group() -> None:
    for err in (F.SANDBOX, F.MODEL, F.VERIFIER, F.VERIFIER_TIMEOUT, F.AGENT):
        out = group_decisions([F.NONE, err, F.CONTEXT_OVERFLOW], [1.0, None, None])
        assert not any(d.trained for d in out), err


def test_trained_zero_causes_do_not_mask_the_group() -> None:
    out = group_decisions([F.CONTEXT_OVERFLOW, F.MAX_TOKENS, F.NONE], [None, None, 0.5])
    assert [d.trained for d in out] == [True, True, True]
    assert [d.reward for d in out] == [0.0, 0.0, 0.5]


def test_infra_failures_are_retried_twice_then_count() -> None:
    assert should_retry(F.SANDBOX, 0) and should_retry(F.SANDBOX, 1)
    assert not should_retry(F.SANDBOX, 2)
    for cause in (F.NONE, F.AGENT_TIMEOUT, F.CONTEXT_OVERFLOW, F.RESOURCE_LIMIT, F.AGENT):
        assert not should_retry(cause, 0), cause


def test_mismatched_lengths_are_an_error() -> None:
    import pytest

    with pytest.raises(ValueError, match="2 causes but 1 rewards"):
        group_decisions([F.NONE, F.NONE], [1.0])
