"""Why a trial failed, as an enum, read from what harbor and the sandbox leave in the trial dir.

`classify(...)` is pure: it takes harbor's `TrialResult` fields (exception type and message, the
verifier's rewards), the agent's stop reason (`agent_result.metadata["stop_reason"]`, written by
kwrl's agent; values of `kwrl.agent.loop.StopReason`) and the sandbox's `sandbox.json` limit
counters, and returns one `FailureCause`. The order of the checks is the precedence: a trial
whose sandbox hit its process limit and then timed out is `resource_limit`, not `agent_timeout`;
one that hit a limit, went on and was graded is graded (`none`).

The grader writes its phase to `verifier/grader_phase.txt` (`reading`, `judging`, `done`). A grader
that wrote no reward while `reading` was cut off by what the agent left behind, in spite of its
own deadline: `grader_budget`, trained with 0, because treating it as infrastructure (retried,
masking the group) would let a policy trade a 0 for a mask. Cut off while `judging`, or before it
started, it is `verifier_timeout` / `verifier` (infrastructure: the judge, the sandbox).

What each cause means for training (DESIGN §7) lives in `kwrl.rollout.masking`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

PHASE_FILE = "grader_phase.txt"
"""The grader's phase file in the verifier dir (`kwrl.grading.verify.PHASE_FILE`)."""


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
    """Agent code hit the sandbox's process, memory or disk limit and that ended the run (masked,
    counted like a timeout). A limit hit the run survived (a killed command, a failed write, even
    the gateway killed for memory, `tools_lost`) leaves the trial graded: as in a container, it is
    part of what the agent did, and masking it would let a policy trade a low reward for a mask."""
    AGENT = "agent"
    """The agent itself crashed (a bug, not the policy)."""
    MODEL = "model"
    """The policy endpoint failed (infrastructure)."""
    SANDBOX = "sandbox"
    """The sandbox could not start, run a command or stop (infrastructure)."""
    VERIFIER = "verifier"
    """The grader failed or wrote no reward (judge errors included)."""
    VERIFIER_TIMEOUT = "verifier_timeout"
    """The grader ran past its time limit while judging, or before it started reading."""
    GRADER_BUDGET = "grader_budget"
    """The grader wrote no reward while reading the agent's outputs (harbor's verifier timeout cut
    it off in spite of its own deadline, or it died): the agent's outputs did it (reward 0, still
    trained; docs/contracts.md "Grading budget")."""
    CONFIG = "config"
    """The task's config is invalid (e.g. task.toml limits): reported, never retried."""
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
_GRADER_CUT_OFF = {None, "VerifierTimeoutError", "RewardFileNotFoundError", "RewardFileEmptyError"}
"""How a grader that stopped while reading the agent's outputs shows in harbor's result."""
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
    grader_phase: str | None = None,
) -> FailureCause:
    """One cause for one trial (see the module docstring for the precedence). `grader_phase` is
    what the grader's `grader_phase.txt` held (`reading`, `judging`, `done`; None when absent)."""
    events = sandbox_events or {}
    no_reward = rewards is None or "reward" not in rewards
    limit_hit = (
        exception_type == "SandboxLimitError"
        or events.get("pids_max", 0)
        or events.get("oom_kill", 0)
        or events.get("disk_full", 0)
    )
    # A limit hit the trial survived (a command killed, the run went on and was graded) is part
    # of what the agent did, graded like any other failed command; only one that ended the run
    # is a resource limit.
    if limit_hit and (exception_type is not None or no_reward):
        return FailureCause.RESOURCE_LIMIT
    if exception_type in ("CancelledError", "KeyboardInterrupt"):
        return FailureCause.CANCELLED
    if exception_type in ("AgentTimeoutError", "AgentSetupTimeoutError"):
        return FailureCause.AGENT_TIMEOUT
    if exception_type == "ConfigError":
        return FailureCause.CONFIG
    if grader_phase == "reading" and no_reward and exception_type in _GRADER_CUT_OFF:
        return FailureCause.GRADER_BUDGET
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


def grader_phase(trial_dir: Path) -> str | None:
    """What the grader's phase file in the trial's verifier dir says (None when absent)."""
    path = trial_dir / "verifier" / PHASE_FILE
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_text(encoding="utf-8", errors="replace")[:32].strip() or None


def classify_result(
    result: Any, sandbox_report: Mapping[str, Any] | None = None, trial_dir: Path | None = None
) -> FailureCause:
    """`classify` applied to a harbor `TrialResult`, the trial's sandbox.json content and the
    grader's phase file in `trial_dir`."""
    info = result.exception_info
    meta = (result.agent_result.metadata or {}) if result.agent_result is not None else {}
    rewards = result.verifier_result.rewards if result.verifier_result is not None else None
    return classify(
        exception_type=info.exception_type if info else None,
        exception_message=info.exception_message if info else "",
        rewards=rewards,
        stop_reason=meta.get("stop_reason"),
        sandbox_events=(sandbox_report or {}).get("events"),
        grader_phase=grader_phase(trial_dir) if trial_dir is not None else None,
    )
