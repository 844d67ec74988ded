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
from kwrl.sandbox.conformance.testing import make_task, make_world

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


@pytest.mark.slow  # 10 trials of kwrl's grader; the judge's no-verdict fix is also checked by
# test_judge_trial.py in the default run
async def test_judge_faults_are_infrastructure_and_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kinds = sorted(faults.JUDGE_KINDS, key=list(FaultKind).index)
    with LoopbackJudge() as judge:
        runs = await _faulted_then_clean(kinds, tmp_path, monkeypatch, grader="kwrl",
                                         judged=True, judge=judge)  # fmt: skip
    _check(runs, FailureCause.VERIFIER)


async def test_the_skyrl_generator_masks_a_faulted_trial_as_a_placeholder_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KwrlHarborGenerator over real trials (KwrlAgent, a scripted policy over HTTP that writes
    the answer through the gateway): a group of two whose gateway the host kills as the agent
    starts. The agent could not connect, which was an agent crash (`agent`: never retried, 0 in
    an eval); now `tool_error` (`sandbox`), and the host's record says so too: 1-token
    placeholder rows, loss mask [0], never a trained 0."""
    from skyrl.train.generators.base import BatchMetadata, TrajectoryID

    from kwrl.agent.tokenizer import load_tokenizer
    from kwrl.llm.loopback import LoopbackPolicy
    from kwrl.train.skyrl.config import KwrlSection
    from kwrl.train.skyrl.generator import KwrlHarborGenerator

    call = '{"name": "code_execution_code_exec", "arguments": {"code": "echo 42 > /filesystem/answer.txt"}}'
    script = [f"<tool_call>\n{call}\n</tool_call>", "The answer is 42."]
    task = make_task(tmp_path, "gw", world_id=make_world(tmp_path).name, agent_timeout_sec=300.0)
    settings = FaultSettings(rates={FaultKind.GATEWAY_KILL: 1.0}, max_delay_s=0.0)
    monkeypatch.setenv(faults.ENV, settings.to_env()[faults.ENV])
    section = KwrlSection.model_validate({
        "trials_dir": str(tmp_path / "trials"), "concurrency": 2, "retries": 0,
        "agent": {"tools": ["code_execution_*"], "context_window": 16384},
    })  # fmt: skip
    with LoopbackPolicy(load_tokenizer("qwen2.5-coder-0.5b"), script) as policy:
        gen = KwrlHarborGenerator(section, policy_url=policy.url, policy_model=policy.name,
                                  tokenizer="qwen2.5-coder-0.5b", pad_token_id=7)  # fmt: skip
        out = await gen.generate(
            {  # type: ignore[arg-type]
                "prompts": [[{"role": "user", "content": "t"}]] * 2,
                "env_classes": ["kwrl"] * 2,
                "env_extras": [{"task_path": str(task)}] * 2,
                "sampling_params": {"temperature": 1.0, "top_p": 1.0, "max_tokens": 256},
                "trajectory_ids": [TrajectoryID(instance_id="gw", repetition_id=i) for i in (0, 1)],
                "batch_metadata": BatchMetadata(global_step=1, training_phase="train"),  # type: ignore[arg-type]
            }
        )
    assert out["env_metrics"] is not None
    assert [m["cause"] for m in out["env_metrics"]] == ["sandbox", "sandbox"], out["env_metrics"]
    assert out["loss_masks"] == [[0], [0]] and out["response_ids"] == [[7], [7]]
    assert out["stop_reasons"] == ["error", "error"]
    for trial in (tmp_path / "trials").glob("*/*"):
        assert "the world gateway could not be reached" in (trial / "exception.txt").read_text()
        assert faults.read(trial)["kind"] == "gateway_kill"  # type: ignore[index]
