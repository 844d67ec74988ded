"""The grader on a hostile trial: links planted by the agent are never followed, in the verifier
process inside the sandbox layout and in `kwrl grade` on the host; the judge never sees their
targets (the golden responses, a host file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import typer
from typer.testing import CliRunner

from fake_judge import FakeJudge
from kwrl.grading.cli import grade
from kwrl.tasks.models import ArchipelagoMeta, GoldenResponse, Verifier
from kwrl.tasks.taskdir import TaskSpec, write_task_dir

WORLD_ID = "world_" + "5" * 32
GOLD = "SECRET-GOLD-4711"
HOST = "HOST-SECRET-0815"


def test_planted_links_are_no_evidence(tmp_path: Path, judge: FakeJudge) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_text(HOST)
    world = tmp_path / "ds" / "worlds" / WORLD_ID
    (world / "filesystem").mkdir(parents=True)
    (world / "filesystem" / "readme.txt").write_text("hello")
    spec = TaskSpec(
        meta=ArchipelagoMeta(
            task_id="task_" + "6" * 32, task_name="t", task_slug="t", world_id=WORLD_ID
        ),
        instruction="Say the code.",
        verifiers=[
            Verifier.model_validate(
                {
                    "verifier_id": "ver_0",
                    "verifier_values": {
                        "criteria": f"The answer says '{GOLD}'",
                        "is_primary_objective": True,
                    },
                }
            ),
            Verifier.model_validate(
                {
                    "verifier_id": "ver_1",
                    "verifier_values": {"criteria": f"A file says '{HOST}'"},
                    "verifier_index": 1,
                }
            ),
        ],
        golden=[GoldenResponse(golden_text_response=GOLD)],
    )
    task_dir = write_task_dir(tmp_path / "ds" / "tasks" / "t", spec)
    final = tmp_path / "root"
    (final / "filesystem").mkdir(parents=True)
    (final / "filesystem" / "readme.txt").write_text("hello")
    (final / "filesystem" / "leak.txt").symlink_to(host / "secret.txt")
    (final / "filesystem" / "hostdir").symlink_to(host)
    (final / "filesystem" / "note.txt").write_text("nothing to see")
    trial_dir = tmp_path / "trials" / "t__1"
    (trial_dir / "agent").mkdir(parents=True)
    (trial_dir / "agent" / "final_answer.txt").symlink_to(
        task_dir / "tests" / "golden_responses.json"
    )
    (trial_dir / "config.json").write_text(json.dumps({"task": {"path": str(task_dir)}}))

    proc = subprocess.run(
        [sys.executable, "-m", "kwrl.grading.verify", "--tests", str(task_dir / "tests"),
         "--initial", str(world), "--final", str(final),
         "--answer", str(trial_dir / "agent" / "final_answer.txt"), "--out", str(trial_dir / "verifier")],
        env={**os.environ, "KWRL_JUDGE": judge.spec}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads((trial_dir / "verifier" / "reward.json").read_text())["reward"] == 0.0
    # On the host: the answer now points at a host file; kwrl grade must not read it either.
    (trial_dir / "agent" / "final_answer.txt").unlink()
    (trial_dir / "agent" / "final_answer.txt").symlink_to(host / "secret.txt")
    app = typer.Typer()
    app.command()(grade)
    res = CliRunner().invoke(app, [str(trial_dir), "--judge", judge.spec])
    assert res.exit_code == 0, res.output
    assert "reward 0.000" in res.output
    prompts = "\n".join(judge.user_prompts())
    assert len(judge.requests) == 4 and "nothing to see" in prompts
    assert GOLD not in prompts.replace(f"'{GOLD}'", "") and HOST not in prompts.replace(
        f"'{HOST}'", ""
    )
