"""The verifier process and `kwrl grade` on a trial that edited a workbook, wrote a memo and sent mail.

Real processes, real office files, a real loopback judge: the verifier writes reward.json,
grades.json and changes.tar.gz; a judge that keeps failing leaves no reward.json and exits 3;
`kwrl grade TRIAL_DIR` rebuilds the final state from changes.tar.gz and grades it the same, and a
second regrade with a verdict cache makes no judge call.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import docx
import openpyxl
import pytest
import typer
from typer.testing import CliRunner

from fake_judge import FakeJudge

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "grading"))
from grading_testkit import add_mail

from kwrl.grading.cli import grade
from kwrl.tasks.models import ArchipelagoMeta, Verifier
from kwrl.tasks.taskdir import TaskSpec, write_task_dir

WORLD_ID = "world_" + "7" * 32
SHEETS = "Spreadsheets (.xlsx, .xls, .xlsm, .ods)"


def v(i: int, criteria: str, **values: object) -> Verifier:
    return Verifier.model_validate({"verifier_id": f"ver_{i}", "verifier_index": i,
                                    "verifier_values": {"criteria": criteria, "is_primary_objective": i == 0, **values}})  # fmt: skip


@pytest.fixture(autouse=True)
def _no_libreoffice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checked cells are plain values; formula recalculation has its own test (test_recalc)."""
    monkeypatch.setenv("KWRL_GRADER_RECALC", "0")


@pytest.fixture
def trial(tmp_path: Path, office_fixtures: Path) -> tuple[Path, Path, Path]:
    """(task_dir, final_root, trial_dir) of a finished trial, before grading."""
    world = tmp_path / "ds" / "worlds" / WORLD_ID
    (world / "filesystem" / "models").mkdir(parents=True)
    shutil.copy2(
        office_fixtures / "xlsx/openpyxl__formulae.xlsx", world / "filesystem/models/q3.xlsx"
    )
    shutil.copy2(office_fixtures / "docx/redlines__original.docx", world / "filesystem/old.docx")
    add_mail(world / ".apps_data/mail/inbox.mbox", to="agent@corp.example", subject="Q3", body="Please update.",
             msg_id="<seed@corp>")  # fmt: skip
    spec = TaskSpec(
        meta=ArchipelagoMeta(
            task_id="task_" + "8" * 32,
            task_name="Q3 update",
            task_slug="q3-update",
            world_id=WORLD_ID,
        ),
        instruction="Set the Q3 total in models/q3.xlsx, write a memo, mail the CFO.",
        verifiers=[
            v(
                0,
                "D2 of q3.xlsx holds 500",
                kwrl_check={
                    "kind": "xlsx_cell",
                    "path": "/models/q3.xlsx",
                    "cell": "D2",
                    "value": 500,
                },
            ),
            v(1, "The CFO was mailed", kwrl_check={"kind": "mail_sent", "to": "cfo@corp.example"}),
            v(
                2,
                "The memo says 'total is 500'",
                expected_file_type="Word Documents (.docx, .doc, .odt)",
            ),
            v(
                3,
                "A slide deck was produced",
                expected_file_type="Presentations (.pptx, .ppt, .odp)",
            ),
            v(4, "The answer says 'done'"),
        ],
    )
    task_dir = write_task_dir(tmp_path / "ds" / "tasks" / "q3-update", spec)
    final = tmp_path / "root"
    shutil.copytree(world, final)
    wb = openpyxl.load_workbook(final / "filesystem/models/q3.xlsx")
    wb["Sheet1"]["D2"] = 500
    wb.save(final / "filesystem/models/q3.xlsx")
    d = docx.Document()
    d.add_paragraph("Memo: the Q3 total is 500.")
    d.save(str(final / "filesystem/memo.docx"))
    (final / "filesystem/old.docx").unlink()
    add_mail(
        final / ".apps_data/mail/inbox.mbox",
        to="cfo@corp.example",
        subject="Q3 total",
        body="It is 500.",
    )
    trial_dir = tmp_path / "trials" / "q3-update__abc"
    (trial_dir / "agent").mkdir(parents=True)
    (trial_dir / "agent/final_answer.txt").write_text("All done: the total is 500.")
    (trial_dir / "config.json").write_text(json.dumps({"task": {"path": str(task_dir)}}))
    return task_dir, final, trial_dir


def verify(
    task_dir: Path, final: Path, trial_dir: Path, judge_spec: str, **env: str
) -> subprocess.CompletedProcess[str]:
    world = task_dir.parent.parent / "worlds" / WORLD_ID
    return subprocess.run(
        [sys.executable, "-m", "kwrl.grading.verify", "--tests", str(task_dir / "tests"),
         "--initial", str(world), *_overlay(task_dir), "--final", str(final),
         "--answer", str(trial_dir / "agent/final_answer.txt"), "--out", str(trial_dir / "verifier")],
        env={**os.environ, "KWRL_JUDGE": judge_spec, **env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


EXPECTED = {"reward": 0.8}
"""reward.json: the score alone (each criterion's is in grades.json)."""


def test_verify_then_regrade(
    trial: tuple[Path, Path, Path], judge: FakeJudge, tmp_path: Path
) -> None:
    task_dir, final, trial_dir = trial
    proc = verify(task_dir, final, trial_dir, judge.spec)
    assert proc.returncode == 0, proc.stderr
    assert "reward 0.800" in proc.stdout and "2 judge calls" in proc.stdout
    assert json.loads((trial_dir / "verifier/reward.json").read_text()) == EXPECTED
    grades = {
        g["verifier_id"]: g
        for g in json.loads((trial_dir / "verifier/grades.json").read_text())["grades"]
    }
    assert [grades[f"ver_{i}"]["method"] for i in range(5)] == [
        "machine",
        "machine",
        "judge",
        "auto_fail",
        "judge",
    ]
    assert grades["ver_2"]["evidence"] == [
        "ARTIFACT 1 (file created: /memo.docx)",
        "ARTIFACT 3 (file deleted: /old.docx)",
    ]
    assert len(judge.requests) == 2

    app = typer.Typer()
    app.command()(grade)
    cache = tmp_path / "cache"
    for run in range(2):
        out = tmp_path / f"regrade{run}"
        res = CliRunner().invoke(
            app,
            [
                str(trial_dir),
                "--judge",
                judge.spec,
                "--cache",
                str(cache),
                "--write",
                "--out",
                str(out),
            ],
        )
        assert res.exit_code == 0, res.output
        assert json.loads((out / "reward.json").read_text()) == EXPECTED
        assert "changed files 4" in res.output
        assert f"judge calls {2 if run == 0 else 0}" in res.output
    assert len(judge.requests) == 4


def test_a_failing_judge_leaves_no_reward(trial: tuple[Path, Path, Path], judge: FakeJudge) -> None:
    task_dir, final, trial_dir = trial
    judge.faults.extend([503] * 50)
    proc = verify(
        task_dir,
        final,
        trial_dir,
        judge.spec,
        KWRL_JUDGE_MAX_RETRIES="2",
        KWRL_JUDGE_BACKOFF_S="0.01",
    )
    assert proc.returncode == 3, proc.stderr
    assert (
        3 <= len(judge.requests) <= 6
    )  # 3 attempts for the first to give up; the other is cancelled
    assert "judge failed" in proc.stderr
    assert not (trial_dir / "verifier/reward.json").exists()
    assert "JudgeError" in json.loads((trial_dir / "verifier/grades.json").read_text())["error"]
    assert (trial_dir / "verifier/changes.tar.gz").is_file()  # still regradable


def _overlay(task_dir: Path) -> list[str]:
    """The overlay's --initial, where the task has one (a missing layer is an error to verify)."""
    overlay = task_dir / "environment" / "overlay"
    return ["--initial", str(overlay)] if overlay.is_dir() else []
