"""Faults the injector plays (`kwrl.rollout.faults`) into real harbor trials in the local sandbox
are infrastructure: never scored, masked, retried until a clean attempt scores.

Each fault class the fault soak (benchmarks/fault_soak.py) found mis-scored, through a real trial:
- host-side: the sandbox's init or its gateway killed, the gateway stopped (its tools hang past
  their timeout), the trial's disk filled from outside, each while an oracle replays its gold
  call through the gateway. From inside they read as agent code's doing (a failed command, a
  `tools_lost`, a full disk: `resource_limit`, or the agent's own timeout), reward 0, trained;
- the judge answering every request with 429, 500, a hang, malformed JSON or the wrong schema
  (the last two failed every criterion: a trained 0; now `JudgeError`, infrastructure).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from kwrl.grading.judges import judge_env
from kwrl.grading.judges.loopback import LoopbackJudge
from kwrl.rollout import faults
from kwrl.rollout.failures import FailureCause
from kwrl.rollout.faults import FaultKind, FaultSettings
from kwrl.rollout.masking import trial_decision
from kwrl.rollout.runner import RolloutConfig, TrialRecord, run_with_retries
from kwrl.sandbox.testing import make_task, make_world

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)

GATEWAY_ORACLE = (
    "#!/usr/bin/env bash\nset -euo pipefail\n"
    """"${KWRL:-kwrl}" world call --timeout 15 code_execution_code_exec """
    """'{"code": "echo 42 > /filesystem/answer.txt"}' >/dev/null\n"""
    "echo 'The answer is 42.' > /logs/agent/final_answer.txt\n"
)
"""The oracle's answer, written through the world gateway (as generated tasks' gold calls); a
call the gateway does not answer in 15 s fails it (a stopped gateway: `tool_hang`)."""
JUDGE_SETTINGS = {"KWRL_JUDGE_TIMEOUT_S": "1", "KWRL_JUDGE_MAX_RETRIES": "1",
                  "KWRL_JUDGE_BACKOFF_S": "0"}  # fmt: skip


def _slug(settings: FaultSettings, kind: FaultKind, kinds: list[FaultKind]) -> str:
    """A task name whose first attempt draws `kind` and whose retry draws nothing."""
    for i in range(10000):
        slug = f"{kind}-{i}"
        first, retry = f"{slug}__s0", f"{slug}__s0__r1"
        if settings.draw(first, kinds) is kind and settings.draw(retry, kinds) is None:
            return slug
    raise AssertionError(f"no name draws {kind}")


async def _faulted_then_clean(
    kinds: list[FaultKind], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **task: object
) -> dict[FaultKind, list[TrialRecord]]:
    world = make_world(tmp_path).name
    judge = task.pop("judge", None)
    settings = FaultSettings(seed=7, rates={k: 0.15 for k in kinds}, max_delay_s=0.0,
                             judge=judge.spec if isinstance(judge, LoopbackJudge) else None)  # fmt: skip
    monkeypatch.setenv(faults.ENV, settings.to_env()[faults.ENV])
    verifier_env = judge_env(judge.spec, JUDGE_SETTINGS) if isinstance(judge, LoopbackJudge) else {}
    cfg = RolloutConfig(agent="oracle", retries=1, verifier_env=verifier_env)

    async def one(kind: FaultKind) -> list[TrialRecord]:
        slug = _slug(settings, kind, kinds)  # the kinds that apply but these have rate 0
        task_dir = make_task(tmp_path, slug, world_id=world, **task)  # type: ignore[arg-type]
        return await run_with_retries(task_dir, cfg, tmp_path / "trials", 0)

    return dict(zip(kinds, await asyncio.gather(*map(one, kinds)), strict=True))


def _check(runs: dict[FaultKind, list[TrialRecord]], cause: FailureCause) -> None:
    for kind, (faulted, clean) in runs.items():
        assert faults.read(Path(faulted.trial_dir))["kind"] == kind, kind  # type: ignore[index]
        assert faulted.cause is cause, (kind, faulted)
        assert not trial_decision(faulted.cause, faulted.reward).trained, kind
        assert faults.read(Path(clean.trial_dir)) is None
        assert clean.cause is FailureCause.NONE and clean.reward == 1.0, (kind, clean)


async def test_host_faults_are_infrastructure_and_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kinds = sorted(faults.HOST_KINDS, key=list(FaultKind).index)
    runs = await _faulted_then_clean(kinds, tmp_path, monkeypatch, solve=GATEWAY_ORACLE,
                                     storage_mb=64, agent_timeout_sec=300.0)  # fmt: skip
    _check(runs, FailureCause.SANDBOX)


async def test_judge_faults_are_infrastructure_and_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kinds = sorted(faults.JUDGE_KINDS, key=list(FaultKind).index)
    with LoopbackJudge() as judge:
        runs = await _faulted_then_clean(kinds, tmp_path, monkeypatch, grader="kwrl",
                                         judged=True, judge=judge)  # fmt: skip
    _check(runs, FailureCause.VERIFIER)
