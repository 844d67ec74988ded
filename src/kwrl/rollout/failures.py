"""Why a trial failed, as an enum, read from what harbor and the sandbox leave in the trial dir.

`classify(...)` is pure: it takes harbor's `TrialResult` fields (exception type and message, the
verifier's rewards), the agent's stop reason (`agent_result.metadata["stop_reason"]`, written by
kwrl's agent; values of `kwrl.agent.loop.StopReason`), whether the policy endpoint ran the agent
out of time (`policy_was_slow` over the agent's turn statistics) and the sandbox's `sandbox.json`
limit counters of each phase, and returns one `FailureCause`. The order of the checks is the
precedence: a trial whose sandbox hit its process limit and then timed out is `resource_limit`, not
`agent_timeout`; one that hit a limit, went on and was graded is graded (`none`).

Failures the policy causes are the policy's, scored 0 and trained (`kwrl.rollout.masking`), never
infrastructure: were they masked, a policy about to score 0 could buy a mask instead (fill the
memory so the grader dies, sleep past the clock). So:
- an agent timeout is `agent_timeout` (its tools, its sleeps, its many or long turns) unless the
  turn statistics show the policy endpoint, not the tools, took the time at a rate no honest
  generation explains (`policy_was_slow`): then `policy_timeout`, infrastructure; or unless kwrl's
  agent recorded nothing at all: its clock ran out in its own start-up (a short timeout on a busy
  host: loading the tokenizer took 9 s of an 8 s clock), before the policy was asked anything:
  `sandbox`, as harbor's `AgentSetupTimeoutError` (was a trained 0 on an empty trajectory);
- a limit hit in the verifier phase (sandbox.json `verifier_events`; the verifier has memory of its
  own, `kwrl.sandbox.local`, so only what the agent left can exhaust it) that left no reward is
  `verifier_limit`.

The grader writes its phase to `verifier/grader_phase.txt` (`reading`, `judging`, `done`). A grader
that wrote no reward while `reading` was cut off by what the agent left behind, in spite of its
own deadline: `grader_budget`, trained with 0, because treating it as infrastructure (retried,
masking the group) would let a policy trade a 0 for a mask. Cut off while `judging`, or before it
started, it is `verifier_timeout` / `verifier` (infrastructure: the judge, the sandbox).

A fault the host played on the trial's sandbox (the fault injector, `kwrl.rollout.faults`: its
init or gateway killed, the gateway stopped, its disk filled from outside) is `sandbox` whatever
else the trial shows: the host knows it did it (`fault.json`), and from inside it looks like agent
code doing the same to its own gateway or disk.

What each cause means for training lives in `kwrl.rollout.masking`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from kwrl.agent.meta import AgentMeta
from kwrl.errors import TrialFormatError

FAULT_FILE = "fault.json"
"""A fault the injector played in the trial (`kwrl.rollout.faults.FAULT_FILE`)."""
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
    """The agent ran past its time limit by its own doing: its tools (a `sleep`, heavy code), its
    many or long turns (reward 0, trained on the trajectory so far)."""
    POLICY_TIMEOUT = "policy_timeout"
    """The agent ran past its time limit while the policy endpoint, not the tools, was slow
    (`policy_was_slow`): infrastructure, retried; that trial alone is masked."""
    RESOURCE_LIMIT = "resource_limit"
    """Agent code hit the sandbox's process, memory or disk limit in the agent phase and that ended
    the run (reward 0, trained). A limit hit the run survived (a killed command, a failed write,
    even the gateway killed for memory, `tools_lost`) leaves the trial graded: as in a container,
    it is part of what the agent did, and masking it would let a policy trade a low reward for a
    mask."""
    VERIFIER_LIMIT = "verifier_limit"
    """The grader, or what it ran (LibreOffice recalculating a workbook), hit the trial's memory or
    process limit in the verifier phase and no reward was written: the verifier has memory of its
    own that the agent's writes cannot eat, so what the agent left did it (reward 0, trained)."""
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
    TASK = "task"
    """The task or its dataset cannot be read (not a task dir, a malformed file, its world seed
    not found): the input's fault, reported, never retried, never infrastructure."""
    CANCELLED = "cancelled"
    """The run was interrupted."""


INFRA: frozenset[FailureCause] = frozenset(
    {
        FailureCause.MODEL,
        FailureCause.SANDBOX,
        FailureCause.VERIFIER,
        FailureCause.VERIFIER_TIMEOUT,
        FailureCause.POLICY_TIMEOUT,
    }
)
"""Causes outside the policy's control: retried, and masked (`kwrl.rollout.masking` says whether
the trial alone or its group)."""

SLOW_DECODE_TOKENS_PER_S = 2.0
"""A policy endpoint writing fewer tokens a second than this was slow (`policy_was_slow`)."""
SLOW_PREFILL_TOKENS_PER_S = 50.0
"""...or reading fewer new prompt tokens (those a prefix-caching endpoint reads) a second than this."""
SLOW_EXCESS_S = 30.0
"""...and by at least this many seconds beyond what those rates explain: a short agent timeout on a
busy host leaves the endpoint's turns a few seconds of noise (event-loop stalls, a cold client)
that must never turn the policy's own timeout into a mask."""

_SANDBOX_TYPES = {
    "SandboxError",
    "AgentSetupTimeoutError",  # installing an agent, before the policy acts
    "SandboxTimeoutError",
    "EnvironmentStartTimeoutError",
    "HealthcheckError",
    "SandboxBuildFailedError",
    "AddTestsDirError",
    "DownloadVerifierDirError",
}
_TASK_TYPES = {"TaskFormatError", "UnsafeArchiveError"}
"""kwrl's errors for a task or dataset that cannot be read (`kwrl.errors`)."""
_GRADER_CUT_OFF = {None, "VerifierTimeoutError", "RewardFileNotFoundError", "RewardFileEmptyError"}
"""How a grader that stopped while reading the agent's outputs shows in harbor's result."""
_VERIFIER_TYPES = {
    "RewardFileNotFoundError",
    "RewardFileEmptyError",
    "VerifierOutputParseError",
    "JudgeError",
}
_VERIFIER_SIDE = _VERIFIER_TYPES | {"VerifierTimeoutError"}
"""Exceptions of the verifier phase: an agent-phase limit hit the run survived did not cause them."""
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


def _limit_hit(events: Mapping[str, int]) -> bool:
    return bool(
        events.get("pids_max", 0) or events.get("oom_kill", 0) or events.get("disk_full", 0)
    )


def classify(
    *,
    exception_type: str | None,
    exception_message: str = "",
    rewards: Mapping[str, Any] | None,
    stop_reason: str | None = None,
    sandbox_events: Mapping[str, int] | None = None,
    verifier_events: Mapping[str, int] | None = None,
    grader_phase: str | None = None,
    policy_slow: bool = False,
    host_fault: bool = False,
    before_policy: bool = False,
) -> FailureCause:
    """One cause for one trial (see the module docstring for the precedence). `sandbox_events` are
    the agent phase's limit hits, `verifier_events` the verifier phase's (sandbox.json);
    `grader_phase` is what the grader's `grader_phase.txt` held (`reading`, `judging`, `done`;
    None when absent); `policy_slow`: `policy_was_slow` of the agent's metadata; `host_fault`:
    the host played a fault on the trial's sandbox (`kwrl.rollout.faults`, fault.json);
    `before_policy`: kwrl's agent recorded nothing, its clock ran out before its loop could ask
    the policy anything (its own start-up: loading the tokenizer, reaching the gateway)."""
    if host_fault:  # the host did it, whatever it looks like from inside: never the policy's
        return FailureCause.SANDBOX
    no_reward = rewards is None or "reward" not in rewards
    limit_hit = exception_type == "SandboxLimitError" or _limit_hit(sandbox_events or {})
    # A limit hit the trial survived (a command killed, the run went on and was graded) is part
    # of what the agent did, graded like any other failed command; only one that ended the run
    # is a resource limit.
    ended_run = exception_type is not None or no_reward
    if limit_hit and ended_run and exception_type not in _VERIFIER_SIDE:
        return FailureCause.RESOURCE_LIMIT
    if exception_type in ("CancelledError", "KeyboardInterrupt"):
        return FailureCause.CANCELLED
    if exception_type == "AgentTimeoutError":
        if before_policy:  # as harbor's AgentSetupTimeoutError: nothing the policy did
            return FailureCause.SANDBOX
        return FailureCause.POLICY_TIMEOUT if policy_slow else FailureCause.AGENT_TIMEOUT
    if exception_type == "ConfigError":
        return FailureCause.CONFIG
    if exception_type in _TASK_TYPES:
        return FailureCause.TASK
    if no_reward and _limit_hit(verifier_events or {}):
        return FailureCause.VERIFIER_LIMIT
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
    if no_reward:
        return FailureCause.VERIFIER
    return FailureCause.NONE


def policy_was_slow(agent_meta: AgentMeta) -> bool:
    """Whether the policy endpoint, not the policy, ran the agent out of time, from KwrlAgent's turn
    statistics (`turn_stats`, and `cut_off`: what the run waited on when harbor's timeout cut it).

    Slow means: the endpoint took longer than the tools did, and longer than reading each turn's
    new prompt tokens and writing its tokens at `SLOW_PREFILL_TOKENS_PER_S` /
    `SLOW_DECODE_TOKENS_PER_S` would take, a request the clock cut counted as writing the most it
    could (`max_tokens`), by at least `SLOW_EXCESS_S`. Time is
    measured against tokens, never alone: a policy that writes long turns until the clock runs
    out produced those tokens at the endpoint's honest rate, and its timeout stays its own
    (`agent_timeout`, trained 0), as does one that sleeps in a tool. The turns' latencies are the
    endpoint's own, timed on the wire after the client was warmed (`kwrl.agent.loop`): before,
    the first turn carried litellm's import (~5 s), and a tool call cut by a 10 s clock after it
    was masked as the endpoint's. No statistics (harbor's own agents) is never slow.
    """
    turns = agent_meta.turn_stats
    requests = [(t.prompt_tokens, t.completion_tokens) for t in turns]
    policy_s = sum(t.latency_s for t in turns)
    tools_s = sum(t.tool_latency_s for t in turns)
    cut = agent_meta.cut_off
    if cut is not None and cut.waiting_on == "policy":
        policy_s += cut.seconds
        requests.append((cut.prompt_tokens, cut.max_tokens))
    elif cut is not None and cut.waiting_on == "tools":
        tools_s += cut.seconds
    due_s, cached = 0.0, 0
    for prompt, written in requests:
        new = prompt - cached if prompt >= cached else prompt
        due_s += new / SLOW_PREFILL_TOKENS_PER_S + written / SLOW_DECODE_TOKENS_PER_S
        cached = prompt + written
    return policy_s > tools_s and policy_s - due_s >= SLOW_EXCESS_S


def grader_phase(trial_dir: Path) -> str | None:
    """What the grader's phase file in the trial's verifier dir says (None when absent)."""
    path = trial_dir / "verifier" / PHASE_FILE
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_text(encoding="utf-8", errors="replace")[:32].strip() or None


def classify_result(
    result: Any,
    sandbox_report: Mapping[str, Any] | None = None,
    trial_dir: Path | None = None,
    *,
    host_faults: bool = True,
) -> FailureCause:
    """`classify` applied to a harbor `TrialResult` (its agent metadata's turn statistics too), the
    trial's sandbox.json content and the grader's phase file and fault record in `trial_dir`
    (`host_faults=False` leaves the record out: how the trial reads without it, for the soak)."""
    info = result.exception_info
    raw = result.agent_result.metadata if result.agent_result is not None else None
    try:
        meta = AgentMeta.read(raw, f"{trial_dir or 'trial'}/result.json")
    except TrialFormatError:  # another agent's metadata (an import path): no kwrl statistics
        meta = AgentMeta()
    rewards = result.verifier_result.rewards if result.verifier_result is not None else None
    report = sandbox_report or {}
    return classify(
        exception_type=info.exception_type if info else None,
        exception_message=info.exception_message if info else "",
        rewards=rewards,
        stop_reason=meta.stop_reason,
        sandbox_events=report.get("events"),
        verifier_events=report.get("verifier_events"),
        grader_phase=grader_phase(trial_dir) if trial_dir is not None else None,
        policy_slow=policy_was_slow(meta),
        host_fault=host_faults and trial_dir is not None and host_fault(trial_dir),
        before_policy=_kwrl_agent(result) and not raw,
    )


def _kwrl_agent(result: Any) -> bool:
    """Whether kwrl's agent (`KwrlAgent.name()`, its subclasses' too) ran the trial."""
    info = getattr(result, "agent_info", None)
    return getattr(info, "name", None) == "kwrl"


def host_fault(trial_dir: Path) -> bool:
    """Whether the host played a fault on the trial's sandbox (fault.json of `kwrl.rollout.faults`
    with `host` true and a time it was played at)."""
    path = trial_dir / FAULT_FILE
    if path.is_symlink() or not path.is_file():
        return False
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("host") is True and data.get("at_s") is not None
