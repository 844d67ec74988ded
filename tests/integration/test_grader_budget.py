"""Hostile agents that try to break the grader: whatever they leave behind, a reward is written.

A grader that crashes or times out is an infrastructure failure to the trainer (retried, masking
the whole group), so a policy could prefer breaking it to taking a 0. Each attack here
(`kwrl.sandbox.conformance.testing.ATTACKS`) made the old grader crash or run for minutes; it runs as a real
harbor trial (oracle agent with a hostile solve.sh, local sandbox, the real grader) and must come
back graded: reward.json written, the attacked criteria 0, cause `none` (trained with its 0). One
trial lets harbor's own verifier timeout cut the grader off while it reads: `grader_budget`,
trained with 0 as well, never an infrastructure cause.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kwrl.rollout.failures import INFRA, FailureCause
from kwrl.rollout.runner import RolloutConfig, TrialRecord, run_rollout
from kwrl.sandbox.conformance.testing import make_task, make_world

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)


def _reading_everything(task: Path) -> Path:
    """`task` with c1 checked over the text of every file the trial produced (a regex), so its
    grade's evidence lists every file the grader rendered."""
    path = task / "tests" / "verifiers.json"
    verifiers = json.loads(path.read_text())
    check = {"kind": "regex", "pattern": "42", "source": "files"}
    verifiers[0]["verifier_values"]["kwrl_check"] = check
    path.write_text(json.dumps(verifiers))
    return task


@pytest.fixture(scope="module")
def trials(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TrialRecord]:
    root = tmp_path_factory.mktemp("budget")
    world = make_world(root).name
    tasks = [
        make_task(root, "flood", world_id=world, solution="file_flood", grader="kwrl"),
        make_task(root, "deep", world_id=world, solution="deep_tree", grader="kwrl"),
        _reading_everything(
            make_task(root, "zoo", world_id=world, solution="name_zoo", grader="kwrl")
        ),
        make_task(
            root,
            "deadline",
            world_id=world,
            solution="slow_files",
            grader="kwrl",
            verifier_env={"KWRL_GRADER_DEADLINE_S": "0.2"},
        ),
        # The grader's own bounds out of the way: harbor's verifier timeout cuts it off.
        make_task(
            root,
            "cut-off",
            world_id=world,
            solution="slow_files",
            grader="kwrl",
            verifier_timeout_sec=6.0,
            verifier_env={
                "KWRL_GRADER_DEADLINE_S": "600",
                "KWRL_GRADER_MAX_EVIDENCE_CHARS": "1000000000",
            },
        ),
    ]
    cfg = RolloutConfig(agent="oracle", concurrency=3, retries=0)
    return {r.task: r for r in asyncio.run(run_rollout(tasks, cfg, root / "out")).records}


def _verifier(rec: TrialRecord) -> tuple[dict[str, float], dict[str, Any], str]:
    d = Path(rec.trial_dir) / "verifier"
    grades = json.loads((d / "grades.json").read_text())
    return json.loads((d / "reward.json").read_text()), grades, (d / "grader_phase.txt").read_text()


@pytest.mark.parametrize(
    ("task", "why"),
    [
        ("flood", "over 20000 files and directories"),
        ("deep", "directories nest deeper than 64 levels"),
        ("deadline", "deadline of 0.2 s passed"),
    ],
)
def test_outputs_over_the_budget_are_graded_zero_not_masked(
    trials: dict[str, TrialRecord], task: str, why: str
) -> None:
    rec = trials[task]
    assert rec.cause is FailureCause.NONE and rec.cause not in INFRA, (rec.cause, rec.error)
    rewards, grades, phase = _verifier(rec)
    assert rewards == {"reward": 0.0} and (rec.criteria, rec.passed) == (
        {"c1": 0.0, "c2": 0.0},
        False,
    )
    assert phase.strip() == "done" and why in grades["error"]
    assert all(
        g["rationale"].startswith("evidence over budget: ") and why in g["rationale"]
        for g in grades["grades"]
    ), grades["grades"]
    assert rec.trained and rec.train_reward == 0.0


def test_a_zoo_of_names_and_broken_files_is_graded_as_usual(
    trials: dict[str, TrialRecord],
) -> None:
    """Names that are not UTF-8 or hold a newline, chat JSON nested past the recursion limit, a
    corrupt calendar, a mail in an unknown charset and a 230,000-paragraph docx: graded, no error."""
    rec = trials["zoo"]
    assert rec.cause is FailureCause.NONE, (rec.cause, rec.error)
    rewards, grades, _ = _verifier(rec)
    assert rewards["reward"] == 0.0 and "error" not in grades  # 41 is the wrong answer
    seen = grades["grades"][0]["evidence"]
    assert "/zoo/not-utf8-??.txt" in seen and "/zoo/new\nline.txt" in seen, seen
    assert "/zoo/paragraphs.docx" in seen
    assert "no number within tolerance of 42" in grades["grades"][1]["rationale"]


def test_harbors_verifier_timeout_while_reading_trains_as_zero(
    trials: dict[str, TrialRecord],
) -> None:
    rec = trials["cut-off"]
    assert rec.cause is FailureCause.GRADER_BUDGET, (rec.cause, rec.error)
    assert "VerifierTimeoutError" in (rec.error or "")
    assert rec.cause not in INFRA and rec.trained and rec.train_reward == 0.0
    phase = Path(rec.trial_dir) / "verifier" / "grader_phase.txt"
    assert phase.read_text().strip() == "reading"


def test_kwrl_grade_says_a_trial_refused_as_over_budget_cannot_be_regraded(
    trials: dict[str, TrialRecord],
) -> None:
    """The verifier archived no final state for the flood: `kwrl grade` says why, with the
    recorded reward, and exits 1 (2 is bad input), writing nothing even with --write."""
    trial = Path(trials["flood"].trial_dir)
    assert not (trial / "verifier" / "changes.tar.gz").exists()
    before = {p: p.stat().st_mtime_ns for p in (trial / "verifier").iterdir()}
    kwrl = Path(sys.executable).with_name("kwrl")
    r = subprocess.run([str(kwrl), "grade", str(trial), "--write"],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    out = (r.stdout + r.stderr).replace("\n", "")
    assert r.returncode == 1 and "Traceback" not in out, out
    assert (
        f"{trial}: cannot be regraded: the verifier refused the trial's outputs (OverBudget: "
        in out
    )
    assert "over 20000 files and directories" in out
    assert "its final state was not archived (no verifier/changes.tar.gz)" in out
    assert "the recorded reward is 0 (verifier/reward.json)" in out
    assert {p: p.stat().st_mtime_ns for p in (trial / "verifier").iterdir()} == before


def test_bad_task_limits_are_a_config_error_reported_once(tmp_path: Path) -> None:
    """task.toml limits no sandbox can apply: `kwrl trial run` and `kwrl rollout` exit 2 naming
    the file and field before any trial; a rollout that meets one records `config`, no retry."""
    world = make_world(tmp_path).name
    bad = make_task(tmp_path, "bad-limits", world_id=world)
    toml = bad / "task.toml"
    toml.write_text(toml.read_text().replace("memory_mb = 1024", "memory_mb = -5"))
    kwrl = Path(sys.executable).with_name("kwrl")
    for args in (["trial", "run", str(bad)], ["rollout", str(bad.parent)]):
        r = subprocess.run([str(kwrl), *args, "--out", str(tmp_path / "o")],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
        out = (r.stdout + r.stderr).replace("\n", "")
        assert r.returncode == 2, out
        assert f"{toml}: environment.memory_mb = -5: must be a positive number" in out
    assert not (tmp_path / "o").exists()
    missing = tmp_path / "no-such-task"  # no task.toml at all: the same clear exit 2
    r = subprocess.run([str(kwrl), "trial", "run", str(missing), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert f"{missing}: no such task dir" in r.stdout + r.stderr
    recs = asyncio.run(run_rollout([bad], RolloutConfig(agent="oracle"), tmp_path / "r")).records
    assert [(r.cause, r.attempt) for r in recs] == [(FailureCause.CONFIG, 0)]
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["attempts"] == 1 and "environment.memory_mb" in recs[0].error


def test_libreoffice_recalculating_a_flood_of_workbooks_is_cut_at_the_deadline(
    tmp_path: Path,
) -> None:
    """40 workbooks whose formulas LibreOffice must compute inside the sandbox (~2 min): the
    grader's deadline ends it, LibreOffice's process group with it, and the trial is graded 0.
    (Where LibreOffice cannot start inside, as before /etc/libreoffice was bound, each workbook
    fails in a fraction of a second and the grader ends well before the deadline.)"""
    if shutil.which("soffice") is None:
        pytest.skip("needs LibreOffice")
    world = make_world(tmp_path).name
    task = make_task(tmp_path, "formulas", world_id=world, solution="formula_flood", grader="kwrl",
                     verifier_env={"KWRL_GRADER_DEADLINE_S": "15"})  # fmt: skip
    (rec,) = asyncio.run(
        run_rollout([task], RolloutConfig(agent="oracle", retries=0), tmp_path / "o")
    ).records
    assert rec.cause is FailureCause.NONE, (rec.cause, rec.error)
    rewards, grades, phase = _verifier(rec)
    assert rewards["reward"] == 0.0 and phase.strip() == "done"
    assert "deadline of 15 s passed" in grades["error"]
    assert rec.seconds < 120
