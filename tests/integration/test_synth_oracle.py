"""Every generated task's gold solution, replayed through the real world gateway, scores 1.0 with
the machine checks; doing nothing scores below 0.2 on average.

One `kwrl world serve` subprocess per world serves a scratch root that is reset to the world seed
plus the task's overlay before each task; gold calls go through a real MCP client; grading is the
real grader (`kwrl.grading.verify.grade_states`) over the initial layers and the final root.
One task's solution/solve.sh is also run as a shell script through `kwrl world call`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kwrl.grading.diff import StateView
from kwrl.grading.verify import grade_states
from kwrl.synth.generate import SynthConfig, generate
from kwrl.tasks.taskdir import TaskDir, load_task, task_dirs
from kwrl.worlds.client import GatewayClient, result_text

KWRL = [sys.executable, "-m", "kwrl.cli"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "ds"
    generate(SynthConfig(out=out, worlds=3, tasks_per_world=20, seed=7, workers=2), progress=False)
    return out


def reset(root: Path, task: TaskDir) -> None:
    for sub in ("filesystem", ".apps_data"):
        shutil.rmtree(root / sub, ignore_errors=True)
        shutil.copytree(task.world_dir / sub, root / sub)
        if (task.overlay_dir / sub).is_dir():
            shutil.copytree(task.overlay_dir / sub, root / sub, dirs_exist_ok=True)


class Gateway:
    def __init__(self, root: Path, sock: Path) -> None:
        self.proc = subprocess.Popen(
            [*KWRL, "world", "serve", str(root), "--uds", str(sock)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # blocks until ready or exit
        if "kwrl-gateway ready" not in line:
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise RuntimeError(f"gateway did not start: {line!r} {err[-2000:]}")
        self.url = line.split()[-1]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


async def grade(task: TaskDir, root: Path | None, answer: str) -> tuple[float, list[str]]:
    initial = StateView.of([task.world_dir, task.overlay_dir])
    final = StateView.of([root]) if root is not None else initial
    grades = await grade_states(
        verifiers=task.verifiers, task=task.instruction, answer=answer,
        initial=initial, final=final, judge_config=None,
    )  # fmt: skip
    reward = grades.reward_json()["reward"]
    fails = [f"{g.criteria}: {g.rationale}" for g in grades.grades if g.score < 1.0]
    return reward, fails


async def test_gold_solutions_score_one_and_doing_nothing_scores_low(dataset: Path, tmp_path: Path) -> None:
    tasks = [load_task(p) for p in task_dirs(dataset / "tasks")]
    assert len(tasks) == 60
    by_world: dict[str, list[TaskDir]] = {}
    for t in tasks:
        by_world.setdefault(t.meta.world_id, []).append(t)
    failures: list[str] = []
    nothing: list[float] = []
    for wid, wtasks in sorted(by_world.items()):
        root = tmp_path / wid
        root.mkdir()
        reset(root, wtasks[0])
        gw = Gateway(root, tmp_path / f"{wid[:12]}.sock")
        try:
            async with GatewayClient(gw.url) as client:
                for t in wtasks:
                    reset(root, t)
                    calls = json.loads((t.path / "solution" / "gold_calls.json").read_text())
                    for c in calls:
                        res = await client.call_tool(c["tool"], c["arguments"])
                        if res.is_error:
                            failures.append(f"{t.slug}: {c['tool']} failed: {result_text(res)[:300]}")
                    answer = (t.golden or [{}])[0].get("golden_text_response", "")
                    reward, fails = await grade(t, root, answer)
                    if reward < 1.0:
                        failures.append(f"{t.slug}: reward {reward}: {fails}")
                    empty, _ = await grade(t, None, "")
                    nothing.append(empty)
        finally:
            gw.close()
    assert not failures, "\n".join(failures)
    assert sum(nothing) / len(nothing) < 0.2


async def test_solve_sh_replays_through_kwrl_world_call(dataset: Path, tmp_path: Path) -> None:
    task = next(load_task(p) for p in task_dirs(dataset / "tasks") if p.name.endswith("memo-doc"))
    root = tmp_path / "root"
    root.mkdir()
    reset(root, task)
    gw = Gateway(root, tmp_path / "gw.sock")
    try:
        answer_file = tmp_path / "agent" / "final_answer.txt"
        bindir = tmp_path / "bin"
        bindir.mkdir()
        (bindir / "kwrl").write_text(f"#!/bin/sh\nexec {sys.executable} -m kwrl.cli \"$@\"\n")
        (bindir / "kwrl").chmod(0o755)
        env = {**os.environ, "KWRL_GATEWAY": gw.url, "KWRL_ANSWER": str(answer_file),
               "PATH": f"{bindir}:{os.environ['PATH']}"}  # fmt: skip
        t0 = time.monotonic()
        proc = subprocess.run(["bash", str(task.path / "solution" / "solve.sh")], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert time.monotonic() - t0 < 300
    finally:
        gw.close()
    reward, fails = await grade(task, root, answer_file.read_text())
    assert reward == 1.0, fails
