"""A finished trial's files read as typed records: KwrlAgent's metadata as `AgentMeta`, grades as
the grader's `CriterionGrade`s; older and foreign records read, a wrong type names file and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kwrl.agent.loop import AgentRun, StopReason
from kwrl.agent.meta import AgentMeta, CutOff, ToolStat, TurnStats
from kwrl.errors import TrialFormatError
from kwrl.grading.grade import CriterionGrade, TrialGrades
from kwrl.rollout.trial import read_trial


def _trial(root: Path, metadata: Any, grades: Any = None) -> Path:
    (root / "verifier").mkdir(parents=True)
    result = {"agent_result": {"metadata": metadata, "n_input_tokens": 7, "n_output_tokens": 3}}
    (root / "result.json").write_text(json.dumps(result))
    if grades is not None:
        (root / "verifier" / "grades.json").write_text(json.dumps(grades))
    return root


def test_what_the_agent_writes_reads_back_as_the_same_record(tmp_path: Path) -> None:
    turns = [
        TurnStats(0, 100, 20, 0.5, "stop", [ToolStat("filesystem_read", True, "ok", 0.1)]),
        TurnStats(1, 130, 5, 0.2, "length", malformed=True, weight_version=3),
    ]
    run = AgentRun(messages=[], tools=[], stop_reason=StopReason.LENGTH, turns=turns,
                   session_id="s", cut_off=CutOff("tools", 9.5))  # fmt: skip
    written = run.to_meta(12.0, None).to_metadata()
    assert "prompt_token_ids" not in written and written["cut_off"]["waiting_on"] == "tools"
    grade = CriterionGrade("c1", "holds 42", 1.0, "machine", "found 42")
    grades = TrialGrades([grade], "mean", 1.0, True).grades_json()
    files = read_trial(_trial(tmp_path / "t", written, grades))
    assert files.agent_meta.turn_stats == turns and files.agent_meta.cut_off == run.cut_off
    assert files.agent_meta.stop_reason == "length" and files.turn_versions == [3]
    assert files.grades == [grade] and files.grades[0].passed


def test_an_older_or_foreign_record_reads_with_defaults(tmp_path: Path) -> None:
    # fewer keys than today's record, a key nobody knows, a turn without its timings
    old = {"stop_reason": "stop", "turn_stats": [{"tool_calls": [{"name": "x", "ok": True}]}],
           "response_ids": [5, 6], "loss_mask": [1, 1], "from_another_agent": {"a": 1}}  # fmt: skip
    files = read_trial(_trial(tmp_path / "old", old, {"grades": []}))
    assert files.response_ids == [5, 6] and files.prompt_ids == [] and files.logprobs == []
    assert files.turn_stats == [TurnStats(tool_calls=[ToolStat("x", True)])]
    assert files.agent_meta.cut_off is None and files.grades == []
    oracle = read_trial(_trial(tmp_path / "oracle", None))  # harbor's own agents write none
    assert oracle.agent_meta == AgentMeta() and oracle.n_input_tokens == 7
    assert read_trial(tmp_path / "missing").agent_meta == AgentMeta()


def test_a_field_of_the_wrong_type_names_the_file_and_the_field(tmp_path: Path) -> None:
    bad = _trial(tmp_path / "a", {"turn_stats": [{"prompt_tokens": "many"}]})
    with pytest.raises(TrialFormatError, match=r"a/result\.json: .*turn_stats\.0\.prompt_tokens"):
        read_trial(bad)
    grades = {"grades": [{"verifier_id": "c1", "criteria": "x", "score": "high"}]}
    bad = _trial(tmp_path / "b", {}, grades)
    with pytest.raises(TrialFormatError, match=r"b/verifier/grades\.json: grades\.0\.score"):
        read_trial(bad)


def test_grades_another_grader_wrote_read_with_an_unknown_method(tmp_path: Path) -> None:
    """A harbor task's own grader (the sandbox tests' shell verifier) writes only ids and scores."""
    foreign = {"grades": [{"verifier_id": "c1", "score": 1}, {"verifier_id": "c2", "score": 0}]}
    files = read_trial(_trial(tmp_path, None, foreign))
    assert [(g.verifier_id, g.score, g.method, g.rationale) for g in files.grades] == [
        ("c1", 1.0, "unknown", ""),
        ("c2", 0.0, "unknown", ""),
    ]


def test_criteria_and_pass_come_from_grades_json_or_an_older_reward_json(tmp_path: Path) -> None:
    """reward.json keeps `reward` alone (what stock harbor's summaries read); each criterion's
    score and the pass are grades.json's. A trial dir written before (criterion/<id> and pass in
    reward.json, or a grader without grades.json) still reads the same."""
    from kwrl.rollout.trial import trial_scores

    grades = TrialGrades(
        grades=[
            CriterionGrade("c1", "a", 1.0, "machine", "met"),
            CriterionGrade("c2", "b", 0.0, "machine", "not met"),
        ],
        scoring="apex_v1",
        score=0.5,
        passed=False,
    )
    assert grades.reward_json() == {"reward": 0.5}
    (tmp_path / "new" / "verifier").mkdir(parents=True)
    (tmp_path / "new" / "verifier" / "grades.json").write_text(json.dumps(grades.grades_json()))
    assert trial_scores(tmp_path / "new", grades.reward_json()) == ({"c1": 1.0, "c2": 0.0}, False)
    old = {"reward": 1.0, "pass": 1.0, "criterion/c1": 1.0}
    assert trial_scores(tmp_path / "old", old) == ({"c1": 1.0}, True)
    assert trial_scores(tmp_path / "old", {"reward": 1.0}) == ({}, None)
