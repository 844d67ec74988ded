"""Grading a trial: machine checks, auto-fail on a missing file type, judge for the rest."""

from __future__ import annotations

import shutil
from pathlib import Path

import docx
import pytest
from grading_testkit import FakeJudge, agent_output, copy_state, verifier, write_files

from kwrl.errors import JudgeError
from kwrl.grading.diff import StateView
from kwrl.grading.evidence import Evidence
from kwrl.grading.grade import grade_trial
from kwrl.grading.judges import JudgeConfig, build_judge
from kwrl.grading.judges.prompt import WITHHELD, render_artifact

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
    assert memo.change == "modified" and "+Recommendation: approve the merger." in (memo.diff or "")
    assert memo.content.endswith("\nRecommendation: approve the merger.")
    shown = render_artifact(memo, 10_000)
    assert "<diff>\n--- before" in shown and "</diff>\n<updated_content>\nThis is" in shown
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
    assert grades.reward_json() == {"reward": 0.5}  # harbor's summaries show each key as a column
    scored = grades.grades_json()
    assert scored["pass"] is False
    assert [(g["verifier_id"], g["score"]) for g in scored["grades"]] == [
        ("v1", 1.0),
        ("v2", 0.0),
        ("v3", 1.0),
        ("v4", 0.0),
    ]
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


# ---------------------------------------------------------------- what the agent's output provokes

GOLD = "Q3-TOTAL-9182"
MARKER = "FORBIDDEN-WORD"


def limited(fake: FakeJudge, **kw: object) -> JudgeConfig:
    base: dict[str, object] = {"model": fake.spec, "backoff_s": 0.01, "max_retries": 1,
                               "requests_per_minute": None, "max_artifact_chars": 100_000}  # fmt: skip
    return JudgeConfig.model_validate({**base, **kw})


def evidence_of(tmp: Path, answer: str, files: dict[str, str | bytes]) -> Evidence:
    world = write_files(tmp / "world", {"filesystem/seed.txt": "seed"})
    final = write_files(copy_state(world, tmp / "final"), files)
    return Evidence.collect(task="Report the Q3 total and note it.", answer=answer,
                            initial=StateView.of([world]), final=StateView.of([final]))  # fmt: skip


async def test_an_overflowing_prompt_is_judged_on_cut_evidence(
    tmp_path: Path, fake_judge: FakeJudge
) -> None:
    fake_judge.context_chars = 20_000  # the prompt, system included
    trial = evidence_of(tmp_path, f"The total is {GOLD}.\n" + "padding " * 20_000,
                        {"filesystem/note.txt": f"total {GOLD}\n" + "x" * 200_000})  # fmt: skip
    verifiers = [verifier("a", f"The answer says '{GOLD}'", file_type="answer"),
                 verifier("f", f"The note says '{GOLD}'", file_type=".txt", index=1)]  # fmt: skip
    cfg = limited(fake_judge, cache_dir=tmp_path / "cache")
    async with build_judge(cfg) as judge:
        grades = await grade_trial(verifiers, trial, judge)
    a, f = grades.grades
    # 100,000 -> 50,000 -> 25,000 characters of evidence: the answer's half-share fits; the
    # note's whole share fits at 12,500
    assert (a.score, f.score) == (1.0, 1.0) and grades.judge_calls == 3 + 4
    assert (a.evidence_chars, f.evidence_chars) == (25_000, 12_500)
    cut = "[evidence cut to 25,000 characters to fit the judge's context]"
    assert a.rationale == f"{cut} scripted: met"
    prompts = [[m["content"] for m in r["body"]["messages"]] for r in fake_judge.requests]
    fitting = [(sys, user) for sys, user in prompts if len(sys + user) <= 20_000]
    # one judged prompt per criterion, and its grade names it
    assert {judge.cache_key(*p) for p in fitting} == {a.cache_key, f.cache_key}
    # a regrade finds the cut prompt's verdict in the cache (the overflows are asked again)
    async with build_judge(cfg) as judge:
        again = await grade_trial(verifiers, trial, judge)
    assert [g.cached for g in again.grades] == [True, True] and again.judge_calls == 2 + 3
    assert [g.cache_key for g in again.grades] == [a.cache_key, f.cache_key]
    # an answer that fits is not cut
    small = evidence_of(tmp_path / "small", f"The total is {GOLD}.", {"filesystem/n.txt": GOLD})
    async with build_judge(cfg) as judge:
        fit = await grade_trial(verifiers[:1], small, judge)
    assert fit.grades[0].evidence_chars is None and fit.grades[0].rationale == "scripted: met"


async def test_output_that_overflows_even_cut_to_the_floor_fails_the_criterion(
    tmp_path: Path, fake_judge: FakeJudge
) -> None:
    # 60 files with 200-character names: their headers alone overflow at the smallest budget
    fake_judge.context_chars = 8_000
    files: dict[str, str | bytes] = {f"filesystem/{i:02d}{'n' * 200}.txt": GOLD for i in range(60)}
    trial = evidence_of(tmp_path, GOLD, files)
    async with build_judge(limited(fake_judge, max_artifact_chars=16_000)) as judge:
        grades = await grade_trial([verifier("f", f"A file says '{GOLD}'")], trial, judge)
    [g] = grades.grades
    assert g.score == 0.0 and g.evidence_chars == 4_000
    assert "does not fit the judge's context even cut to 4,000 characters" in g.rationale
    # 16,000 -> 8,000 -> 4,000, then the probe without the agent's output, which fits
    assert grades.judge_calls == 4
    assert agent_output(fake_judge.user_prompts()[-1]) == WITHHELD


async def test_a_task_that_does_not_fit_the_judge_is_infrastructure(
    tmp_path: Path, fake_judge: FakeJudge
) -> None:
    fake_judge.context_chars = 3_000  # shorter than the judge's own instructions
    trial = evidence_of(tmp_path, GOLD, {})
    async with build_judge(limited(fake_judge, max_artifact_chars=8_000)) as judge:
        with pytest.raises(JudgeError, match="task and criterion alone do not fit") as info:
            await grade_trial([verifier("a", f"Says '{GOLD}'", file_type="answer")], trial, judge)
    assert "maximum context length is 32768" in str(info.value)
    assert "KWRL_JUDGE_MAX_ARTIFACT_CHARS (8,000)" in str(info.value)
    assert type(info.value) is JudgeError


async def test_a_refused_agent_output_fails_its_criterion_and_a_clean_one_is_judged(
    tmp_path: Path, fake_judge: FakeJudge
) -> None:
    fake_judge.refuse_marker = MARKER
    trial = evidence_of(tmp_path, f"{GOLD} {MARKER}", {"filesystem/note.txt": f"total {GOLD}"})
    verifiers = [verifier("a", f"The answer says '{GOLD}'", file_type="answer"),
                 verifier("f", f"The note says '{GOLD}'", file_type=".txt", index=1)]  # fmt: skip
    async with build_judge(limited(fake_judge)) as judge:
        grades = await grade_trial(verifiers, trial, judge)
    a, f = grades.grades
    assert (a.score, a.method, f.score, f.rationale) == (0.0, "judge", 1.0, "scripted: met")
    assert a.rationale.startswith("the judge's content filter refused the agent's output")
    assert "content management policy" in a.rationale and a.evidence_chars is None
    # the refused prompt, the probe without the agent's output (answered, not the grade), the note
    assert grades.judge_calls == 3 and grades.score == 0.5
    # a 200 that the filter ended (finish_reason content_filter) is a refusal too, at once
    fake_judge.refuse_marker = None
    fake_judge.faults.append("filtered")
    async with build_judge(limited(fake_judge)) as judge:
        grades = await grade_trial(verifiers[:1], trial, judge)
    assert grades.grades[0].score == 0.0 and grades.judge_calls == 2
    assert "finish_reason content_filter" in grades.grades[0].rationale


async def test_a_criterion_the_filter_refuses_is_infrastructure(
    tmp_path: Path, fake_judge: FakeJudge
) -> None:
    fake_judge.refuse_marker = MARKER
    trial = evidence_of(tmp_path, GOLD, {})
    v = verifier("a", f"The answer says '{GOLD}' and never '{MARKER}'", file_type="answer")
    async with build_judge(limited(fake_judge)) as judge:
        with pytest.raises(JudgeError, match="task or criterion text trips it") as info:
            await grade_trial([v], trial, judge)
    assert type(info.value) is JudgeError and "criterion a's prompt" in str(info.value)
    assert len(fake_judge.requests) == 2  # the prompt, then the probe: no retries


async def test_a_check_that_cannot_decide_goes_to_the_judge_or_fails(
    tmp_path: Path, fake_judge: FakeJudge
) -> None:
    """'possibly $283.0m': the check leaves it to a reader; the judge decides when configured."""
    ev = evidence_of(tmp_path, "Q3 total: possibly $283.0m ('283').", {})
    v = verifier("v1", "States the Q3 total '283'", primary=True,
                 check={"kind": "number", "value": 283, "scale": 1e6})  # fmt: skip
    alone = await grade_trial([v], ev, None)
    g = alone.grades[0]
    assert (g.method, g.score) == ("machine", 0.0) and "no judge to read it" in g.rationale
    async with build_judge(limited(fake_judge)) as judge:
        judged = await grade_trial([v], ev, judge)
    g = judged.grades[0]
    assert (g.method, g.score, judged.judge_calls) == ("judge", 1.0, 1)
    assert g.rationale.startswith("[the machine check could not decide: ")
    fake_judge.decide = lambda body: False
    async with build_judge(limited(fake_judge)) as judge:
        assert (await grade_trial([v], ev, judge)).grades[0].score == 0.0
    decided = evidence_of(tmp_path / "b", "Q3 total: $283.0m.", {})
    async with build_judge(limited(fake_judge)) as judge:
        sure = await grade_trial([v], decided, judge)
    assert (sure.grades[0].method, sure.score, sure.judge_calls) == ("machine", 1.0, 0)
