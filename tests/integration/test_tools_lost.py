"""Agent code that kills or stops its own tools, or sabotages what kwrl writes and reads, gets its
world graded, not its trial masked (nor every criterion failed).

Everything in the sandbox's pid namespace but its init is agent code or the world gateway (agent
code's parent), so `code_exec("kill -9 -1")` ends the gateway, and before kwrl's init became the
namespace's pid 1 it ended the whole sandbox. Either way the trial was an infrastructure error
(`tool_error` -> `sandbox`, or the final answer's upload failing), retried and masking its group:
a policy could trade a low reward for a mask. Real harbor trials: kwrl's agent loop with a
scripted policy (`agent_helpers.ScriptedKwrlAgent`), the real gateway and sandbox, the real grader
(machine checks: answer.txt holds 42, the final answer states 42).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from kwrl.rollout.failures import FailureCause, classify_result
from kwrl.sandbox.conformance.testing import make_task, make_world

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)


def _exec(code: str) -> str:
    call = {"name": "code_execution_code_exec", "arguments": {"code": code}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


KILL_ALL = [_exec("echo 42 > /filesystem/answer.txt; kill -9 -1")]
SCRIPTS: dict[str, tuple[list[str], dict[str, Any], dict[str, Any]]] = {
    # writes the right answer, then kills every process it can signal (the gateway too); with the
    # gateway forked from kwrl's zygote (the default) and started cold through nsenter
    "kill-all": (KILL_ALL, {}, {}),
    "kill-all-exec": (KILL_ALL, {}, {"gateway_mode": "exec"}),
    # stops the gateway: the call never returns, the next would hang too
    "stop-gateway": ([_exec("kill -STOP $PPID")], {"tool_call_timeout_s": 5.0}, {}),
    # sabotages the path kwrl writes the final answer to (it was written through the sandbox,
    # and failing to was an infrastructure error); the answer in the world is still graded
    "answer-dir": (
        [
            _exec("echo 42 > /filesystem/answer.txt; mkdir /logs/agent/final_answer.txt"),
            "The answer is 42.",
        ],
        {},
        {},
    ),
    "answer-locked": (
        [_exec("echo 42 > /filesystem/answer.txt; chmod 0 /logs/agent"), "The answer is 42."],
        {},
        {},
    ),
    "answer-link": (
        [
            _exec(
                "echo 41 > /filesystem/answer.txt; ln -s /tmp/elsewhere /logs/agent/final_answer.txt"
            ),
            "The answer is 42.",
        ],
        {},
        {},
    ),
    # leaves its world unreadable to a grader without root's capabilities: the grader failed
    # every criterion (the final answer's too) on a directory it could not list
    "world-locked": (
        [
            _exec(
                "echo 42 > /filesystem/answer.txt; mkdir -p /filesystem/d; echo x > /filesystem/d/f; "
                "chmod 000 /filesystem/d /filesystem/answer.txt"
            ),
            "The answer is 42.",
        ],
        {},
        {},
    ),
    # runs the sandbox out of memory (the kernel kills the hog), then finishes the task
    "memory-hog": (
        [
            _exec("python -c 'x = bytearray(1500 * 2**20); x[::4096] = b\"x\" * len(x[::4096])'"),
            _exec("echo 42 > /filesystem/answer.txt"),
            "The answer is 42.",
        ],
        {},
        {},
    ),
    # the control: tools work, the answer is right
    "control": ([_exec("echo 42 > /filesystem/answer.txt"), "The answer is 42."], {}, {}),
}


async def _trial(
    task: Path, out: Path, turns: list[str], extra: dict[str, Any], env: dict[str, Any]
) -> Any:
    from harbor.models.trial.config import AgentConfig, TaskConfig, TrialConfig, VerifierConfig
    from harbor.trial.trial import Trial

    from kwrl.sandbox.presets import environment_config

    cfg = TrialConfig(
        task=TaskConfig(path=task.resolve()),
        trial_name=task.name,
        trials_dir=out,
        agent=AgentConfig(
            import_path="agent_helpers:ScriptedKwrlAgent",
            kwargs={"turns": turns, "max_steps": 4, "context_window": 16384, **extra},
        ),
        environment=environment_config("local", env),
        verifier=VerifierConfig(),
    )
    return await (await Trial.create(cfg)).run()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, Path]]:
    root = tmp_path_factory.mktemp("lost")
    world = make_world(root).name
    tasks = {n: make_task(root, n, world_id=world, grader="kwrl") for n in SCRIPTS}
    out = root / "trials"

    async def run_all() -> list[Any]:
        return await asyncio.gather(*(_trial(tasks[n], out, *SCRIPTS[n]) for n in SCRIPTS))

    done = asyncio.run(run_all())
    return {n: (r, out / n) for n, r in zip(SCRIPTS, done, strict=True)}


def _cause(result: Any, trial_dir: Path) -> FailureCause:
    sandbox = json.loads((trial_dir / "sandbox.json").read_text())
    return classify_result(result, sandbox, trial_dir)


@pytest.mark.parametrize(
    ("name", "reward", "stop"),
    [
        ("kill-all", 0.5, "tools_lost"),
        ("kill-all-exec", 0.5, "tools_lost"),
        ("stop-gateway", 0.0, "tools_lost"),
        ("answer-dir", 1.0, "stop"),
        ("answer-locked", 1.0, "stop"),
        ("answer-link", 0.5, "stop"),
        ("world-locked", 1.0, "stop"),
        ("memory-hog", 1.0, "stop"),
        ("control", 1.0, "stop"),
    ],
)
def test_a_trial_whose_agent_ends_its_tools_is_graded_as_it_stands(
    results: dict[str, tuple[Any, Path]], name: str, reward: float, stop: str
) -> None:
    result, trial_dir = results[name]
    assert result.exception_info is None, result.exception_info
    meta = result.agent_result.metadata
    assert meta["stop_reason"] == stop, meta.get("error")
    assert _cause(result, trial_dir) is FailureCause.NONE
    # graded by the real grader on the world the agent left: answer.txt, and the final answer
    assert result.verifier_result.rewards["reward"] == pytest.approx(reward)
    if stop == "tools_lost":
        assert "agent code" in meta["error"]
    if name == "memory-hog":  # the limit was hit, and survived: graded, not resource_limit
        assert json.loads((trial_dir / "sandbox.json").read_text())["events"]["oom_kill"] >= 1
