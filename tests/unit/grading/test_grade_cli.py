"""`kwrl grade` on a trial the real verifier refused as over budget: said so, nothing written, exit 1.

The verifier runs as its own process on a real task and final state (tests/integration/
test_grader_budget.py does the same inside real harbor trials, and for harbor's cut-off).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kwrl.cli import app
from kwrl.errors import TaskFormatError
from kwrl.grading.cli import EXIT_NOT_REGRADABLE
from kwrl.sandbox.conformance.testing import make_task, make_world

runner = CliRunner(env={"COLUMNS": "250"})


def _graded_trial(tmp_path: Path, **env: str) -> Path:
    """A trial dir whose final state made 3 files, graded by `python -m kwrl.grading.verify`."""
    world = make_world(tmp_path)
    task = make_task(tmp_path, "t", world_id=world.name, grader="kwrl")
    final = tmp_path / "final"
    shutil.copytree(world, final)
    for i in range(3):
        (final / "filesystem" / f"out{i}.txt").write_text("42\n")
    trial = tmp_path / "trials" / "t__1"
    (trial / "agent").mkdir(parents=True)
    (trial / "agent" / "final_answer.txt").write_text("It is 42.")
    (trial / "config.json").write_text(json.dumps({"task": {"path": str(task)}}))
    proc = subprocess.run(
        [sys.executable, "-I", "-m", "kwrl.grading.verify", "--tests", str(task / "tests"),
         "--initial", str(world), "--final", str(final),
         "--answer", str(trial / "agent" / "final_answer.txt"), "--out", str(trial / "verifier")],
        env={**os.environ, "KWRL_GRADER_RECALC": "0", **env}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return trial


def _snapshot(d: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in d.rglob("*")}


def test_a_trial_refused_as_over_budget_is_reported_not_regraded(tmp_path: Path) -> None:
    trial = _graded_trial(tmp_path, KWRL_GRADER_MAX_FILES="2")
    verifier = trial / "verifier"
    assert not (verifier / "changes.tar.gz").exists()
    assert "over 2 files" in json.loads((verifier / "grades.json").read_text())["error"]
    before = _snapshot(trial)
    r = runner.invoke(app, ["grade", str(trial), "--write", "--out", str(tmp_path / "regrade")])
    assert r.exit_code == EXIT_NOT_REGRADABLE == 1, r.output
    assert isinstance(r.exception, SystemExit), r.exception  # typer.Exit, not an error
    out = r.output.replace("\n", "")
    assert (
        f"{trial}: cannot be regraded: the verifier refused the trial's outputs (OverBudget: "
        in out
    )
    assert "its final state was not archived (no verifier/changes.tar.gz)" in out
    assert "the recorded reward is 0 (verifier/reward.json)" in out
    assert _snapshot(trial) == before and not (tmp_path / "regrade").exists()


def test_a_graded_trial_regrades_and_a_lost_archive_is_still_an_input_error(
    tmp_path: Path,
) -> None:
    trial = _graded_trial(tmp_path)
    r = runner.invoke(app, ["grade", str(trial)])
    assert r.exit_code == 0, r.output
    recorded = json.loads((trial / "verifier" / "reward.json").read_text())["reward"]
    assert f"reward {recorded:.3f}" in r.output and "changed files 3" in r.output
    (trial / "verifier" / "changes.tar.gz").unlink()  # no verifier record explains it
    r = runner.invoke(app, ["grade", str(trial)])
    assert isinstance(r.exception, TaskFormatError), r.output
    assert "missing or not a regular file" in str(r.exception)


@pytest.mark.parametrize(
    "grades", ["[1, 2]", "{not json", '{"error": ""}', '{"error": "JudgeError: 503"}']
)
def test_a_verifier_record_that_explains_nothing_is_not_a_refusal(
    tmp_path: Path, grades: str
) -> None:
    trial = _graded_trial(tmp_path)
    (trial / "verifier" / "changes.tar.gz").unlink()
    (trial / "verifier" / "grades.json").write_text(grades)
    r = runner.invoke(app, ["grade", str(trial)])
    assert isinstance(r.exception, TaskFormatError), r.output
