"""Failure classification from what harbor and the sandbox leave behind."""

from __future__ import annotations

import pytest

from kwrl.rollout.failures import FailureCause as F
from kwrl.rollout.failures import classify


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        ("AgentTimeoutError", F.AGENT_TIMEOUT),
        ("VerifierTimeoutError", F.VERIFIER_TIMEOUT),
        ("SandboxError", F.SANDBOX),
        ("EnvironmentStartTimeoutError", F.SANDBOX),
        ("AgentSetupTimeoutError", F.SANDBOX),
        ("SandboxLimitError", F.RESOURCE_LIMIT),
        ("RewardFileNotFoundError", F.VERIFIER),
        ("PolicyError", F.MODEL),
        ("CancelledError", F.CANCELLED),
        ("ZeroDivisionError", F.AGENT),
        ("TaskFormatError", F.TASK),  # a task that cannot be read: the input's fault
        ("UnsafeArchiveError", F.TASK),
    ],
)
def test_exception_types_map_to_causes(exc: str, expected: F) -> None:
    assert classify(exception_type=exc, rewards=None) is expected


def test_a_graded_trial_without_exception_is_none() -> None:
    assert classify(exception_type=None, rewards={"reward": 0.0}) is F.NONE


def test_no_reward_and_no_exception_is_a_verifier_failure() -> None:
    assert classify(exception_type=None, rewards=None) is F.VERIFIER
    assert classify(exception_type=None, rewards={"criterion/a": 1.0}) is F.VERIFIER


def test_agent_stop_reasons_are_read() -> None:
    r = {"reward": 0.0}
    assert (
        classify(exception_type=None, rewards=r, stop_reason="context_overflow")
        is F.CONTEXT_OVERFLOW
    )
    assert classify(exception_type=None, rewards=r, stop_reason="length") is F.MAX_TOKENS
    assert classify(exception_type=None, rewards=r, stop_reason="policy_error") is F.MODEL
    assert classify(exception_type=None, rewards=r, stop_reason="stop") is F.NONE


def test_a_limit_hit_wins_over_the_timeout_it_caused() -> None:
    events = {"pids_max": 3, "oom_kill": 0}
    assert (
        classify(exception_type="AgentTimeoutError", rewards=None, sandbox_events=events)
        is F.RESOURCE_LIMIT
    )
    assert (
        classify(exception_type=None, rewards=None, sandbox_events={"oom_kill": 1})
        is F.RESOURCE_LIMIT
    )


def test_a_limit_hit_the_run_survived_leaves_the_trial_graded() -> None:
    """A command killed for memory, a failed write on a full disk: the run went on and the grader
    scored the world; masking it would let a policy buy a mask with a memory hog."""
    for events in ({"oom_kill": 1}, {"pids_max": 2}, {"disk_full": 1}):
        for stop in ("stop", "tools_lost"):
            got = classify(
                exception_type=None,
                rewards={"reward": 0.0},
                stop_reason=stop,
                sandbox_events=events,
            )
            assert got is F.NONE, (events, stop)
    cut = classify(
        exception_type=None,
        rewards={"reward": 0.0},
        stop_reason="length",
        sandbox_events={"oom_kill": 1},
    )
    assert cut is F.MAX_TOKENS


def test_kwrl_agent_errors_carry_their_stop_reason() -> None:
    msg = "agent stopped on policy_error: ConnectError: refused"
    assert classify(exception_type="AgentError", exception_message=msg, rewards=None) is F.MODEL
    msg = "agent stopped on tool_error: session closed"
    assert classify(exception_type="AgentError", exception_message=msg, rewards=None) is F.SANDBOX
    assert classify(exception_type="AgentError", exception_message="bug", rewards=None) is F.AGENT


def test_a_grader_cut_off_while_reading_the_agents_outputs_trains_as_zero() -> None:
    """Harbor's verifier timeout, or no reward, while the grader read what the agent left: the
    agent's doing (trained with 0); while judging or before reading: infrastructure."""
    for exc in ("VerifierTimeoutError", "RewardFileNotFoundError", None):
        assert classify(exception_type=exc, rewards=None, grader_phase="reading") is F.GRADER_BUDGET
    assert (
        classify(exception_type="VerifierTimeoutError", rewards=None, grader_phase="judging")
        is F.VERIFIER_TIMEOUT
    )
    assert classify(exception_type="VerifierTimeoutError", rewards=None) is F.VERIFIER_TIMEOUT
    assert classify(exception_type="JudgeError", rewards=None, grader_phase="judging") is F.VERIFIER
    assert classify(exception_type=None, rewards={"reward": 0.0}, grader_phase="done") is F.NONE
    assert (
        classify(exception_type="SandboxError", rewards=None, grader_phase="reading") is F.SANDBOX
    )


def test_a_config_error_is_its_own_cause_not_an_infra_failure() -> None:
    from kwrl.rollout.failures import INFRA
    from kwrl.rollout.masking import should_retry, trial_decision

    assert classify(exception_type="ConfigError", rewards=None) is F.CONFIG
    assert F.CONFIG not in INFRA and not should_retry(F.CONFIG, 0)
    assert F.GRADER_BUDGET not in INFRA and not should_retry(F.GRADER_BUDGET, 0)
    d = trial_decision(F.GRADER_BUDGET, None)
    assert d.trained and d.reward == 0.0


def test_a_limit_hit_in_the_verifier_phase_that_left_no_reward_is_the_agents() -> None:
    """The world filled to just under memory_mb, the grader or LibreOffice OOM-killed: before, the
    trial was `resource_limit`, masked; now `verifier_limit` (0, trained). A reward written in
    spite of it (LibreOffice killed, the grader went on) is graded."""
    hit = {"pids_max": 0, "oom_kill": 1}
    for exc in ("RewardFileNotFoundError", "RewardFileEmptyError", "VerifierTimeoutError", None):
        got = classify(
            exception_type=exc, rewards=None, verifier_events=hit, grader_phase="reading"
        )
        assert got is F.VERIFIER_LIMIT, exc
    graded = classify(exception_type=None, rewards={"reward": 0.0}, verifier_events=hit)
    assert graded is F.NONE
    # an agent-phase hit the run survived does not make a later judge failure the agent's
    survived = {"oom_kill": 1}
    assert (
        classify(exception_type="JudgeError", rewards=None, sandbox_events=survived) is F.VERIFIER
    )


def _turn(latency: float, tools: float, prompt: int = 1000, completion: int = 100) -> dict:
    return {
        "step": 0, "finish_reason": "stop", "latency_s": latency, "tool_latency_s": tools,
        "prompt_tokens": prompt, "completion_tokens": completion,
    }  # fmt: skip


def test_a_timeout_is_the_policys_unless_the_endpoint_was_slow() -> None:
    from kwrl.agent.meta import AgentMeta
    from kwrl.rollout.failures import policy_was_slow as slow

    def policy_was_slow(metadata: dict) -> bool:  # as result.json holds it
        return slow(AgentMeta.read(metadata, "result.json"))

    # sleeping in a tool until the clock ran out
    sleeper = {"turn_stats": [_turn(2, 0.5)], "cut_off": {"waiting_on": "tools", "seconds": 300}}
    assert not policy_was_slow(sleeper)
    # many long turns at an honest rate (100 tok/s): the policy's own time
    verbose = {"turn_stats": [_turn(40, 0.1, completion=4000)] * 80}
    assert not policy_was_slow(verbose)
    # a long generation cut by the clock: it could have written max_tokens
    cut = {"waiting_on": "policy", "seconds": 100, "prompt_tokens": 2000, "max_tokens": 4096}
    assert not policy_was_slow({"turn_stats": [_turn(1, 0.1)], "cut_off": cut})
    # an endpoint that answers 20 tokens a minute, or hangs on a short request
    assert policy_was_slow({"turn_stats": [_turn(60, 0.1, completion=20)] * 10})
    hang = {"waiting_on": "policy", "seconds": 600, "prompt_tokens": 2000, "max_tokens": 256}
    assert policy_was_slow({"turn_stats": [_turn(1, 0.1)], "cut_off": hang})
    # harbor's own agents record nothing: their timeouts are theirs
    assert not policy_was_slow({})
    # a short clock on a busy host: a first turn of a few seconds (a cold client, a stalled event
    # loop) that outlasted the tool call the clock cut is no endpoint's fault (issue 44)
    cold = {"waiting_on": "tools", "seconds": 4.8}
    assert not policy_was_slow({"turn_stats": [_turn(5.0, 0.0, prompt=0, completion=0)],
                                "cut_off": cold})  # fmt: skip
    # the endpoint is blamed once its excess over the honest rates is large in absolute terms
    hung = {"waiting_on": "policy", "seconds": 29.0, "prompt_tokens": 0, "max_tokens": 0}
    assert not policy_was_slow({"turn_stats": [_turn(0.1, 0.1)], "cut_off": hung})
    hung["seconds"] = 45.0 + 1000 / 50 + 100 / 2  # 45 s beyond the first turn's due time
    assert policy_was_slow({"turn_stats": [_turn(0.1, 0.1)], "cut_off": hung})
    assert classify(exception_type="AgentTimeoutError", rewards={"reward": 0.0}) is F.AGENT_TIMEOUT
    # kwrl's agent cut in its own start-up, before the policy was asked anything
    assert (
        classify(exception_type="AgentTimeoutError", rewards={"reward": 0.0}, before_policy=True)
        is F.SANDBOX
    )
    assert (
        classify(exception_type="AgentTimeoutError", rewards={"reward": 0.0}, policy_slow=True)
        is F.POLICY_TIMEOUT
    )
