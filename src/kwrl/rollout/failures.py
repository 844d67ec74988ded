"""Why a trial failed, as an enum, read from what harbor and the sandbox leave in the trial dir.

`classify(...)` is pure: it takes harbor's `TrialResult` fields (exception type and message, the
verifier's rewards), the agent's stop reason (`agent_result.metadata["stop_reason"]`, written by
kwrl's agent; values of `kwrl.agent.loop.StopReason`) and the sandbox's `sandbox.json` limit
counters, and returns one `FailureCause`. The order of the checks is the precedence: a trial
whose sandbox hit its process limit and then timed out is `resource_limit`, not `agent_timeout`.

What each cause means for training (DESIGN §7) lives in `kwrl.rollout.masking`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any


class FailureCause(StrEnum):
    NONE = "none"
    """The trial ran and was graded."""
    CONTEXT_OVERFLOW = "context_overflow"
    """The agent's context filled up (reward 0, still trained)."""
    MAX_TOKENS = "max_tokens"
    """The last turn was cut at max tokens (reward 0, still trained)."""
    AGENT_TIMEOUT = "agent_timeout"
    """The agent ran past its time limit (masked)."""
    RESOURCE_LIMIT = "resource_limit"
    """Agent code hit the sandbox's process, memory or disk limit (masked, counted like a timeout)."""
    AGENT = "agent"
    """The agent itself crashed (a bug, not the policy)."""
    MODEL = "model"
    """The policy endpoint failed (infrastructure)."""
    SANDBOX = "sandbox"
    """The sandbox could not start, run a command or stop (infrastructure)."""
    VERIFIER = "verifier"
    """The grader failed or wrote no reward (judge errors included)."""
    VERIFIER_TIMEOUT = "verifier_timeout"
    """The grader ran past its time limit."""
    CANCELLED = "cancelled"
    """The run was interrupted."""


INFRA: frozenset[FailureCause] = frozenset(
    {FailureCause.MODEL, FailureCause.SANDBOX, FailureCause.VERIFIER, FailureCause.VERIFIER_TIMEOUT}
)
"""Causes outside the policy's control: retried, and they mask their group."""

_SANDBOX_TYPES = {
    "SandboxError",
    "SandboxTimeoutError",
    "EnvironmentStartTimeoutError",
    "HealthcheckError",
    "SandboxBuildFailedError",
    "AddTestsDirError",
    "DownloadVerifierDirError",
}
_VERIFIER_TYPES = {
    "RewardFileNotFoundError",
    "RewardFileEmptyError",
    "VerifierOutputParseError",
    "JudgeError",
}
_MODEL_TYPES = {
    "PolicyError",
    "APIError",
    "APIConnectionError",
    "RateLimitError",
    "ServiceUnavailableError",
}
_STOP_REASONS = {
    "context_overflow": FailureCause.CONTEXT_OVERFLOW,
    "length": FailureCause.MAX_TOKENS,
    "policy_error": FailureCause.MODEL,
    "tool_error": FailureCause.SANDBOX,
}


def classify(
    *,
    exception_type: str | None,
    exception_message: str = "",
    rewards: Mapping[str, Any] | None,
    stop_reason: str | None = None,
    sandbox_events: Mapping[str, int] | None = None,
) -> FailureCause:
    """One cause for one trial (see the module docstring for the precedence)."""
    events = sandbox_events or {}
    if (
        exception_type == "SandboxLimitError"
        or events.get("pids_max", 0)
        or events.get("oom_kill", 0)
        or events.get("disk_full", 0)
    ):
        return FailureCause.RESOURCE_LIMIT
    if exception_type in ("CancelledError", "KeyboardInterrupt"):
        return FailureCause.CANCELLED
    if exception_type in ("AgentTimeoutError", "AgentSetupTimeoutError"):
        return FailureCause.AGENT_TIMEOUT
    if exception_type == "VerifierTimeoutError":
        return FailureCause.VERIFIER_TIMEOUT
    if exception_type in _SANDBOX_TYPES:
        return FailureCause.SANDBOX
    if exception_type in _MODEL_TYPES:
        return FailureCause.MODEL
    if exception_type == "AgentError":  # kwrl's agent raises it on an infrastructure stop reason
        for reason, cause in _STOP_REASONS.items():
            if f"stopped on {reason}" in exception_message:
                return cause
    if stop_reason in _STOP_REASONS:
        return _STOP_REASONS[stop_reason]
    if exception_type in _VERIFIER_TYPES:
        return FailureCause.VERIFIER
    if exception_type is not None:
        if "verif" in exception_type.lower() or "reward" in exception_type.lower():
            return FailureCause.VERIFIER
        return FailureCause.AGENT
    if rewards is None or "reward" not in rewards:
        return FailureCause.VERIFIER
    return FailureCause.NONE


def classify_result(result: Any, sandbox_report: Mapping[str, Any] | None = None) -> FailureCause:
    """`classify` applied to a harbor `TrialResult` and the trial's sandbox.json content."""
    info = result.exception_info
    meta = (result.agent_result.metadata or {}) if result.agent_result is not None else {}
    rewards = result.verifier_result.rewards if result.verifier_result is not None else None
    return classify(
        exception_type=info.exception_type if info else None,
        exception_message=info.exception_message if info else "",
        rewards=rewards,
        stop_reason=meta.get("stop_reason"),
        sandbox_events=(sandbox_report or {}).get("events"),
    )
