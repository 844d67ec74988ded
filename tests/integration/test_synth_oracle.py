"""Every generated task's gold solution, replayed through the real world gateway, scores 1.0 with
the machine checks; doing nothing scores below 0.2 on average.

One `kwrl world serve` subprocess per world serves a scratch root that is reset to the world seed
plus the task's overlay before each task; gold calls go through a real MCP client; grading is the
real grader (`kwrl.grading.verify.grade_states`) over the initial layers and the final root.
One task's solution/solve.sh is run as a shell script through `kwrl world call` instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kwrl.eval.faithfulness import Gateway, reset_root
from kwrl.grading.diff import StateView, task_layers
from kwrl.grading.verify import grade_states
from kwrl.synth.generate import SynthConfig, generate
from kwrl.tasks.taskdir import TaskDir, load_task, task_dirs
from kwrl.worlds.client import GatewayClient, result_text

KWRL = [sys.executable, "-m", "kwrl.cli"]


def make(tmp: Path, worlds: int, tasks: int, domains: list[str] | None = None) -> Path:
    out = tmp / "ds"
    cfg = SynthConfig(out=out, worlds=worlds, tasks_per_world=tasks, seed=7, workers=2)
    if domains:
        cfg.domains = domains
    generate(cfg, progress=False)
    return out


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One Law world: every family applies there (clause review too)."""
    return make(tmp_path_factory.mktemp("synth"), 1, 10, ["Law"])


reset = reset_root
"""The scratch root back to the task's world seed plus its overlay."""


async def grade(task: TaskDir, root: Path | None, answer: str) -> tuple[float, list[str]]:
    initial = StateView.of(task_layers(task.world_dir, task.overlay_dir))
    final = StateView.of([root]) if root is not None else initial
    grades = await grade_states(
        verifiers=task.verifiers, task=task.instruction, answer=answer,
        initial=initial, final=final, judge_config=None,
    )  # fmt: skip
    reward = grades.reward_json()["reward"]
    fails = [f"{g.criteria}: {g.rationale}" for g in grades.grades if g.score < 1.0]
    return reward, fails


def run_solve_sh(task: TaskDir, url: str, tmp_path: Path) -> str:
    """Run the task's solution/solve.sh as harbor's oracle would (kwrl on PATH, KWRL_GATEWAY set)."""
    answer_file = tmp_path / "agent" / task.slug / "final_answer.txt"
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "kwrl").write_text(f'#!/bin/sh\nexec {sys.executable} -m kwrl.cli "$@"\n')
    (bindir / "kwrl").chmod(0o755)
    env = {**os.environ, "KWRL_GATEWAY": url, "KWRL_ANSWER": str(answer_file),
           "PATH": f"{bindir}:{os.environ['PATH']}"}  # fmt: skip
    proc = subprocess.run(
        ["bash", str(task.path / "solution" / "solve.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return answer_file.read_text()


async def replay(
    dataset: Path, tmp_path: Path, *, scripted: int = 0
) -> tuple[list[str], list[float], int]:
    """Replay every task's gold calls; return the failures, the do-nothing rewards, scripted runs.

    The first `scripted` tasks run their solve.sh through `kwrl world call` instead."""
    tasks = [load_task(p) for p in task_dirs(dataset / "tasks")]
    by_world: dict[str, list[TaskDir]] = {}
    for t in tasks:
        by_world.setdefault(t.meta.world_id, []).append(t)
    failures: list[str] = []
    nothing: list[float] = []
    solved_by_script = 0
    for wid, wtasks in sorted(by_world.items()):
        root = tmp_path / wid
        root.mkdir()
        reset(root, wtasks[0])
        gw = Gateway(root, tmp_path / f"{wid[:12]}.sock")
        try:
            async with GatewayClient(gw.url) as client:
                for t in wtasks:
                    reset(root, t)
                    if solved_by_script < scripted:
                        solved_by_script += 1
                        answer = run_solve_sh(t, gw.url, tmp_path)
                        reward, fails = await grade(t, root, answer)
                        if reward < 1.0:
                            failures.append(f"{t.slug} (solve.sh): reward {reward}: {fails}")
                        continue
                    calls = json.loads((t.path / "solution" / "gold_calls.json").read_text())
                    for c in calls:
                        res = await client.call_flat(c["tool"], c["arguments"])
                        if res.is_error:
                            failures.append(
                                f"{t.slug}: {c['tool']} failed: {result_text(res)[:300]}"
                            )
                    answer = (t.golden or [{}])[0].get("golden_text_response", "")
                    reward, fails = await grade(t, root, answer)
                    if reward < 1.0:
                        failures.append(f"{t.slug}: reward {reward}: {fails}")
                    empty, _ = await grade(t, None, "")
                    nothing.append(empty)
        finally:
            gw.close()
    return failures, nothing, solved_by_script


async def test_gold_solutions_score_one_and_doing_nothing_scores_low(
    dataset: Path, tmp_path: Path
) -> None:
    failures, nothing, scripted = await replay(dataset, tmp_path, scripted=1)
    assert scripted == 1
    assert len(nothing) == 9
    assert not failures, "\n".join(failures)
    assert sum(nothing) / len(nothing) < 0.2


@pytest.mark.slow
async def test_gold_solutions_of_three_full_worlds(tmp_path: Path) -> None:
    """3 worlds (one per domain) x 20 tasks: every gold solution scores 1.0."""
    failures, nothing, _ = await replay(make(tmp_path, 3, 20), tmp_path)
    assert len(nothing) == 60
    assert not failures, "\n".join(failures)
    assert sum(nothing) / len(nothing) < 0.2
