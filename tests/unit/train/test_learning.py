"""The held-out learning benchmarks' building blocks (kwrl.train.learning)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwrl.train.learning import (
    answer_checks,
    breakdown,
    family_curves,
    family_of,
    make_splits,
    paired_subset,
)


def _trial(task: str, tier: str, reward: float, **kw: Any) -> dict[str, Any]:
    return {"task": task, "difficulty": tier, "reward": reward, "criteria": [], **kw}


def _eval(trials: list[dict[str, Any]]) -> dict[str, Any]:
    return {"trials": trials, "metrics": {"trials": {"causes": {"none": len(trials)}}}}


def test_a_generated_tasks_family_is_its_name_after_the_world_and_index() -> None:
    assert family_of("ib-w0000-001-reconcile-deck") == "reconcile-deck"
    assert family_of("law-w0001-014-chat-fact-lookup") == "chat-fact-lookup"
    assert family_of("handmade") == "handmade"


def test_scores_break_down_by_tier_and_family_ungraded_trials_scoring_zero() -> None:
    ev = _eval([
        _trial("ib-w0000-000-compute", "medium", 1.0),
        _trial("ib-w0000-001-compute", "medium", 0.5),
        _trial("ib-w0000-002-new-deck", "hard", None),  # type: ignore[arg-type]
    ])  # fmt: skip
    b = breakdown(ev)
    assert b["tier"] == {"hard": {"mean": 0.0, "n": 1}, "medium": {"mean": 0.75, "n": 2}}
    assert b["family"]["compute"] == {"mean": 0.75, "n": 2}


def test_answer_checks_count_candidate_lists_limits_and_sample_passed_answers() -> None:
    hedged = {"rationale": "hedges between the answer and 'Larsen'"}
    listed = {"rationale": "names 4 other candidates (['A', 'B']; at most 1 allowed)"}
    fine = {"rationale": "states '$283.0m', within tolerance of 283"}
    ev = _eval([
        _trial("a-w0-000-x", "easy", 0.0, criteria=[hedged], cause="none", stop_reason="stop"),
        _trial("a-w0-001-x", "easy", 0.0, criteria=[listed, fine], cause="agent_timeout"),
        _trial("a-w0-002-x", "easy", 1.0, criteria=[fine], passed=True, stop_reason="max_steps",
               final_answer="The fee is $283.0m."),
        _trial("a-w0-003-x", "easy", 1.0, criteria=[fine], passed=True, stop_reason="stop"),
    ])  # fmt: skip
    c = answer_checks(ev, sample=1)
    assert c["multi_candidate_share"] == 0.5
    assert c["timeout_or_limit_share"] == 0.5  # the agent timeout and the turn limit
    assert c["passed_sample"] == [{"task": "a-w0-002-x", "answer": "The fee is $283.0m."}]


def test_splits_that_share_a_world_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="share worlds"):
        make_splits(tmp_path, {"train": (1, 3), "heldout": (1, 3)}, tasks_per_world=2)


def test_family_curves_hold_each_familys_mean_at_each_evaluated_step() -> None:
    evals = {
        0: _eval([_trial("ib-w0000-000-compute", "medium", 0.0),
                  _trial("ib-w0000-001-chat-post", "easy", 0.5)]),
        9: _eval([_trial("ib-w0000-000-compute", "medium", 0.25),
                  _trial("ib-w0000-001-chat-post", "easy", 1.0)]),
    }  # fmt: skip
    assert family_curves(evals) == {
        "chat-post": [[0, 0.5], [9, 1.0]],
        "compute": [[0, 0.0], [9, 0.25]],
    }


def test_paired_subset_compares_one_family_only() -> None:
    per_task = {
        "ib-w0000-000-chat-post": {"run": 1.0, "other": 0.5, "diff": 0.5},
        "ib-w0000-001-chat-post": {"run": 0.5, "other": 0.5, "diff": 0.0},
        "ib-w0000-002-compute": {"run": 0.0, "other": 1.0, "diff": -1.0},
    }
    got = paired_subset(per_task, "chat-post")
    assert got["tasks"] == 2 and got["run"] == 0.75 and got["other"] == 0.5
    assert got["diff"]["value"] == 0.25 and got["up_down_same"] == [1, 0, 1]
    assert 0.0 <= got["diff"]["lo"] <= 0.25 <= got["diff"]["hi"] <= 0.5
    assert paired_subset(per_task, "new-deck")["tasks"] == 0
