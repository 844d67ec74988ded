"""What the agent's output provokes in the judge is graded, never masked: the real grader
(`python -I -m kwrl.grading.verify`) against a loopback judge with a small context and a content
filter (the one faked seam, `FakeJudge.context_chars` / `refuse_marker`).

An infrastructure error masks the trial's whole group in training, so a policy that could make
the judge fail (an answer too long for its context, text its content filter refuses) could trade
a 0 for a mask. Here: a note far over the judge's context is judged on cut evidence (reward
written, the cut recorded); an answer carrying the refused text fails its criterion with the
reason while a clean answer passes; a task whose own criterion the filter refuses is an
infrastructure error (exit 3, no reward.json).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fake_judge import FakeJudge
from kwrl.tasks.models import ArchipelagoMeta, Verifier
from kwrl.tasks.taskdir import TaskSpec, write_task_dir

WORLD_ID = "world_" + "6" * 32
GOLD = "Q3-TOTAL-9182"
MARKER = "FORBIDDEN-WORD"


def task(root: Path, name: str, criteria: list[tuple[str, str]]) -> Path:
    """A task dir with one criterion per (criteria, expected_file_type)."""
    spec = TaskSpec(
        meta=ArchipelagoMeta(task_id="task_" + "8" * 32, task_name=name, task_slug=name,
                             world_id=WORLD_ID),
        instruction="Report the Q3 total and save it in a note.",
        verifiers=[Verifier.model_validate(
            {"verifier_id": f"ver_{i}", "verifier_index": i,
             "verifier_values": {"criteria": c, "expected_file_type": t,
                                 "is_primary_objective": i == 0}})
            for i, (c, t) in enumerate(criteria)],
    )  # fmt: skip
    return write_task_dir(root / "tasks" / name, spec)


def verify(tmp: Path, task_dir: Path, answer: str, note: str, judge: FakeJudge) -> dict[str, Any]:
    """Run the verifier on a final state holding `note`; its exit code and outputs."""
    world = tmp / "world"
    (world / "filesystem").mkdir(parents=True, exist_ok=True)
    final = tmp / "final"
    (final / "filesystem").mkdir(parents=True)
    (final / "filesystem" / "note.txt").write_text(note)
    (tmp / "answer.txt").write_text(answer)
    out = tmp / "verifier"
    proc = subprocess.run(
        [sys.executable, "-I", "-m", "kwrl.grading.verify", "--tests", str(task_dir / "tests"),
         "--initial", str(world), "--final", str(final), "--answer", str(tmp / "answer.txt"),
         "--out", str(out)],
        env={**os.environ, "KWRL_JUDGE": judge.spec}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    grades = json.loads((out / "grades.json").read_text())
    reward = out / "reward.json"
    return {"rc": proc.returncode, "stderr": proc.stderr, "grades": grades,
            "reward": json.loads(reward.read_text()) if reward.exists() else None}  # fmt: skip


def scores(grades: dict[str, Any]) -> dict[str, float]:
    """grades.json's score per criterion (reward.json keeps `reward` alone)."""
    return {g["verifier_id"]: g["score"] for g in grades["grades"]}


def test_overflow_and_refusal_provoked_by_the_agent_are_graded(
    tmp_path: Path, judge: FakeJudge
) -> None:
    judge.context_chars, judge.refuse_marker = 20_000, MARKER
    t = task(tmp_path, "t", [(f"The answer says '{GOLD}'", "answer"),
                             (f"The note says '{GOLD}'", ".txt")])  # fmt: skip
    big_note = f"Q3 total: {GOLD}\n" + "figures " * 12_500  # 100,000 characters

    dirty = verify(tmp_path / "dirty", t, f"{GOLD}\n{MARKER}", big_note, judge)
    assert dirty["rc"] == 0, dirty["stderr"]
    ans, note = dirty["grades"]["grades"]
    assert "error" not in dirty["grades"]
    # the refused answer: 0, saying why (the probe without the agent's output was answered)
    assert (ans["method"], ans["score"], ans["evidence_chars"]) == ("judge", 0.0, None)
    assert ans["rationale"].startswith("the judge's content filter refused the agent's output")
    # the note, far over the judge's context: judged on the evidence cut to fit (default budget
    # 300,000 -> ... -> 9,375 characters), its verdict the grade
    assert (note["score"], note["evidence_chars"]) == (1.0, 9_375)
    assert note["rationale"] == (
        "[evidence cut to 9,375 characters to fit the judge's context] scripted: met"
    )
    assert dirty["reward"] == {"reward": 0.5}
    assert (
        scores(dirty["grades"]) == {"ver_0": 0.0, "ver_1": 1.0} and dirty["grades"]["pass"] is False
    )
    # the answer and its probe; the note at 300,000, 150,000, 75,000, 37,500, 18,750 and 9,375
    assert len(judge.requests) == 2 + 6

    clean = verify(tmp_path / "clean", t, f"The total is {GOLD}.", big_note, judge)
    assert clean["rc"] == 0, clean["stderr"]
    assert scores(clean["grades"])["ver_0"] == 1.0 and clean["reward"] == {"reward": 1.0}


def test_a_criterion_the_filter_refuses_is_an_infrastructure_error(
    tmp_path: Path, judge: FakeJudge
) -> None:
    judge.refuse_marker = MARKER
    t = task(tmp_path, "bad", [(f"The answer says '{GOLD}', not '{MARKER}'", "answer")])
    res = verify(tmp_path / "run", t, f"The total is {GOLD}.", "note", judge)
    assert res["rc"] == 3 and res["reward"] is None, res["stderr"]
    error = res["grades"]["error"]
    assert error.startswith("JudgeError:") and "task or criterion text trips it" in error
    assert len(judge.requests) == 2  # the prompt and the probe, no retries
