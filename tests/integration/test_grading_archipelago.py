"""Archipelago's simple_task grades through kwrl: its verifiers.json, its world snapshot, a fake answer.

The world is `original_snapshot.zip` unpacked as a world seed; the task dir is written with
kwrl.tasks; the grader runs as the real `python -m kwrl.grading.verify` process a trial's test.sh
runs; the judge is a real OpenAI-compatible HTTP server on loopback that passes the criterion only
when the agent output holds the gorilla's path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from fake_judge import FakeJudge, agent_output
from kwrl.tasks.models import ArchipelagoMeta, Verifier
from kwrl.tasks.taskdir import TaskSpec, write_task_dir

WORLD_ID = "world_" + "5" * 32
GORILLA = "/animals/xk92m/qz7fw.png"


@pytest.fixture
def judge(judge: FakeJudge) -> FakeJudge:
    """tests/conftest.py's judge, passing a criterion when the agent output names the gorilla."""

    def decide(body: dict[str, Any]) -> bool:
        return GORILLA in agent_output(body["messages"][-1]["content"])

    judge.decide = decide
    return judge


@pytest.fixture
def task_dir(tmp_path: Path, archipelago_fixtures: Path) -> Path:
    simple = archipelago_fixtures / "simple_task"
    world = tmp_path / "ds" / "worlds" / WORLD_ID
    with zipfile.ZipFile(simple / "original_snapshot.zip") as zf:
        zf.extractall(world)
    messages = json.loads((simple / "initial_messages.json").read_text())
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    verifiers = [
        Verifier.model_validate(v) for v in json.loads((simple / "verifiers.json").read_text())
    ]
    spec = TaskSpec(
        meta=ArchipelagoMeta(
            task_id="task_" + "6" * 32,
            task_name="Find the gorilla",
            task_slug="simple-task",
            world_id=WORLD_ID,
        ),
        instruction=prompt,
        verifiers=verifiers,
    )
    return write_task_dir(tmp_path / "ds" / "tasks" / "simple-task", spec)


def run_trial(
    tmp_path: Path, task_dir: Path, judge: FakeJudge, answer: str, name: str
) -> tuple[Path, int]:
    """What a trial leaves behind: the final state (the agent only read files), its answer, the grade."""
    world = tmp_path / "ds" / "worlds" / WORLD_ID
    final = tmp_path / name / "root"
    shutil.copytree(world, final)
    trial = tmp_path / name / "trial"
    (trial / "agent").mkdir(parents=True)
    (trial / "agent" / "final_answer.txt").write_text(answer)
    proc = subprocess.run(
        [sys.executable, "-m", "kwrl.grading.verify", "--tests", str(task_dir / "tests"),
         "--initial", str(world), *_overlay(task_dir), "--final", str(final),
         "--answer", str(trial / "agent/final_answer.txt"), "--out", str(trial / "verifier")],
        env={**os.environ, "KWRL_JUDGE": judge.spec}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return trial, proc.returncode


def test_the_right_path_passes_and_a_wrong_one_fails(
    tmp_path: Path, task_dir: Path, judge: FakeJudge
) -> None:
    good, _ = run_trial(tmp_path, task_dir, judge, f"The gorilla image is at {GORILLA}.", "good")
    bad, _ = run_trial(
        tmp_path, task_dir, judge, "The gorilla is at /animals/ab47z/rt3ky.png.", "bad"
    )
    assert json.loads((good / "verifier/reward.json").read_text()) == {"reward": 1.0}
    grades = json.loads((good / "verifier/grades.json").read_text())
    assert grades["pass"] is True and [
        (g["verifier_id"], g["score"]) for g in grades["grades"]
    ] == [("ver_001", 1.0)]
    assert json.loads((bad / "verifier/reward.json").read_text())["reward"] == 0.0

    grades = json.loads((good / "verifier/grades.json").read_text())
    [g] = grades["grades"]
    assert g["method"] == "judge" and g["evidence"] == ["final answer"] and g["rationale"]
    # the judge saw the task, the answer and the criterion; the agent changed no file
    user = judge.user_prompts()[0]
    assert "find the gorilla, and tell me its full path" in user
    assert f"The gorilla image is at {GORILLA}." in user
    assert "correct path to the gorilla image" in user
    assert "<ARTIFACT" not in user
    assert json.loads(_listing(good / "verifier/changes.tar.gz")) == {
        "created": [],
        "modified": [],
        "deleted": [],
    }


def _listing(archive: Path) -> str:
    import tarfile

    with tarfile.open(archive) as tar:
        f = tar.extractfile("changes.json")
        assert f is not None
        return f.read().decode()


def _overlay(task_dir: Path) -> list[str]:
    """The overlay's --initial, where the task has one (a missing layer is an error to verify)."""
    overlay = task_dir / "environment" / "overlay"
    return ["--initial", str(overlay)] if overlay.is_dir() else []
