"""Grading a trial: machine checks, auto-fail on a missing file type, judge for the rest."""

from __future__ import annotations

import shutil
from pathlib import Path

import docx
import pytest
from grading_testkit import FakeJudge, copy_state, verifier, write_files

from kwrl.errors import JudgeError
from kwrl.grading.diff import StateView
from kwrl.grading.evidence import Evidence
from kwrl.grading.grade import grade_trial
from kwrl.grading.judges import JudgeConfig, build_judge

WORD = "Word Documents (.docx, .doc, .odt)"
SHEETS = "Spreadsheets (.xlsx, .xls, .xlsm, .ods)"


@pytest.fixture
def trial(tmp_path: Path, office_fixtures: Path) -> Evidence:
    world = write_files(tmp_path / "world", {"filesystem/notes.txt": "old notes"})
    shutil.copy(office_fixtures / "docx/redlines__original.docx", world / "filesystem/memo.docx")
    final = copy_state(world, tmp_path / "final")
    d = docx.Document(str(final / "filesystem/memo.docx"))
    d.add_paragraph("Recommendation: approve the merger.")
    d.save(str(final / "filesystem/memo.docx"))
    write_files(final, {"filesystem/summary.txt": "Merger summary: approve."})
    (final / "filesystem/notes.txt").unlink()
    return Evidence.collect(
        task="Review the memo and recommend.", answer="I recommend we approve the merger.",
        initial=StateView.of([world]), final=StateView.of([final]),
    )  # fmt: skip


def test_artifacts_show_created_modified_and_deleted_files(trial: Evidence) -> None:
    arts = {a.path: a for a in trial.artifacts}
    assert set(arts) == {"/memo.docx", "/summary.txt", "/notes.txt"}
    memo = arts["/memo.docx"]
    assert memo.change == "modified" and "+Recommendation: approve the merger." in memo.content
    assert "<updated_content>" in memo.content
    assert arts["/notes.txt"].change == "deleted" and arts["/notes.txt"].content == "old notes"


def test_file_type_selection_follows_archipelago(trial: Evidence) -> None:
    assert trial.select_artifacts("Final Answer Only (No Files)") == ("answer", [])
    scope, arts = trial.select_artifacts(WORD) or ("", [])
    assert scope == "files" and [a.path for a in arts] == ["/memo.docx"]
    assert trial.select_artifacts(SHEETS) is None
    assert trial.select_artifacts("pptx") is None
    scope, arts = trial.select_artifacts(None) or ("", [])
    assert scope == "both" and len(arts) == 3
    scope, arts = trial.select_artifacts(
        "All output (modified files and final message in console)"
    ) or ("", [])
    assert scope == "both" and len(arts) == 3
    _, arts = trial.select_artifacts(None, ["summary.txt"]) or ("", [])
    assert [a.path for a in arts] == ["/summary.txt"]


async def test_machine_checks_auto_fail_and_judge_are_combined(
    trial: Evidence, fake_judge: FakeJudge
) -> None:
    verifiers = [
        verifier("v1", "Memo recommends approval", index=0, primary=True,
                 check={"kind": "doc_contains", "path": "/memo.docx", "all_of": ["approve the merger"]}),
        verifier("v2", "A spreadsheet of the deal terms exists", index=1, file_type=SHEETS),
        verifier("v3", "The memo says 'approve the merger'", index=2, file_type=WORD),
        verifier("v4", "The answer says 'reject'", index=3),
    ]  # fmt: skip
    cfg = JudgeConfig(model=fake_judge.spec, backoff_s=0.01, requests_per_minute=None)
    async with build_judge(cfg) as judge:
        grades = await grade_trial(verifiers, trial, judge)
    by_id = {g.verifier_id: g for g in grades.grades}
    assert [g.verifier_id for g in grades.grades] == ["v1", "v2", "v3", "v4"]
    assert (by_id["v1"].method, by_id["v1"].score) == ("machine", 1.0)
    assert (by_id["v2"].method, by_id["v2"].score) == ("auto_fail", 0.0)
    assert (by_id["v3"].method, by_id["v3"].score) == ("judge", 1.0)
    assert (by_id["v4"].method, by_id["v4"].score) == ("judge", 0.0)
    assert grades.judge_calls == 2 == len(fake_judge.requests)
    # a files-only criterion does not show the final answer to the judge
    v3_prompt = next(p for p in fake_judge.user_prompts() if "approve the merger'" in p)
    assert (
        "<FINAL_ANSWER>" not in v3_prompt
        and "/memo.docx" in v3_prompt
        and "/summary.txt" not in v3_prompt
    )
    assert by_id["v3"].evidence == ["ARTIFACT 1 (file modified: /memo.docx)"]
    assert grades.reward_json() == {"reward": 0.5, "pass": 0.0, "criterion/v1": 1.0, "criterion/v2": 0.0,
                                    "criterion/v3": 1.0, "criterion/v4": 0.0}  # fmt: skip
    assert grades.grades_json()["grades"][1]["rationale"].startswith(
        "no artifact of the expected type"
    )


async def test_machine_only_trials_need_no_judge(trial: Evidence) -> None:
    v = verifier("v1", "x", check={"kind": "contains", "all_of": ["approve"]}, primary=True)
    grades = await grade_trial([v], trial, None)
    assert grades.score == 1.0 and grades.passed and grades.judge_calls == 0


async def test_a_failing_judge_fails_the_whole_trial(
    trial: Evidence, fake_judge: FakeJudge
) -> None:
    fake_judge.faults.extend([500] * 20)
    verifiers = [verifier(f"v{i}", f"The answer says 'approve' {i}", index=i) for i in range(3)]
    cfg = JudgeConfig(
        model=fake_judge.spec, backoff_s=0.01, max_retries=1, requests_per_minute=None
    )
    async with build_judge(cfg) as judge:
        with pytest.raises(JudgeError):
            await grade_trial(verifiers, trial, judge)
    with pytest.raises(JudgeError, match="KWRL_JUDGE"):
        await grade_trial(verifiers, trial, None)
