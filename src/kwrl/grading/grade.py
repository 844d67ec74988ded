"""Grading one trial: every criterion of the task against the trial's `Evidence`.

`grade_trial(verifiers, evidence, judge)` decides each criterion by the first rule that applies:
1. `machine`: the criterion carries a `kwrl_check` -> `checks.run_check`, no judge call;
2. `auto_fail`: the criterion expects a file type and no artifact of that type exists -> 0, no judge
   call (Archipelago's rule);
3. `judge`: the LLM judge, all such criteria submitted together (the judge paces and bounds them).

Any `JudgeError` aborts the whole trial's grading (a TaskGroup cancels the other calls): a trial
whose criteria cannot all be graded is an error, never a partial or silent 0.

`TrialGrades.reward_json()` is harbor's flat `reward.json` (`reward`, `pass`,
`criterion/<verifier_id>`); `grades_json()` is the audit trail (each verdict, its rationale, and the
evidence shown to the judge or check).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from kwrl.errors import JudgeError
from kwrl.grading.checks import run_check
from kwrl.grading.evidence import Evidence
from kwrl.grading.judges import Judge, build_prompt
from kwrl.grading.scoring import score
from kwrl.tasks.models import Verifier

Method = Literal["machine", "auto_fail", "judge"]


@dataclass
class CriterionGrade:
    verifier_id: str
    criteria: str
    score: float
    method: Method
    rationale: str
    evidence: list[str] = field(default_factory=list)
    is_primary_objective: bool = False
    judge_model: str | None = None
    cached: bool = False
    cache_key: str | None = None
    """sha256 of (model, prompt): names the verdict's cache file and identifies the exact prompt."""

    @property
    def passed(self) -> bool:
        return self.score >= 1.0


@dataclass
class TrialGrades:
    grades: list[CriterionGrade]
    scoring: str
    score: float
    passed: bool
    judge_calls: int = 0
    """Requests sent to the judge for this trial (retries included)."""
    cache_hits: int = 0

    def reward_json(self) -> dict[str, float]:
        out: dict[str, float] = {"reward": self.score, "pass": 1.0 if self.passed else 0.0}
        for g in self.grades:
            out[f"criterion/{g.verifier_id}"] = g.score
        return out

    def grades_json(self) -> dict[str, Any]:
        return {
            "scoring": self.scoring,
            "score": self.score,
            "pass": self.passed,
            "judge_calls": self.judge_calls,
            "cache_hits": self.cache_hits,
            "grades": [{**asdict(g), "passed": g.passed} for g in self.grades],
        }


def _ordered(verifiers: list[Verifier]) -> list[Verifier]:
    return sorted(verifiers, key=lambda v: v.verifier_index)


def needs_judge(v: Verifier) -> bool:
    return v.verifier_values.kwrl_check is None


async def _judge_one(v: Verifier, evidence: Evidence, judge: Judge) -> CriterionGrade:
    vals = v.verifier_values
    selected = evidence.select_artifacts(vals.expected_file_type, vals.expected_output_files)
    assert selected is not None
    scope, artifacts = selected
    system, user = build_prompt(
        task=evidence.task,
        answer=evidence.answer,
        criterion=vals.criteria,
        scope=scope,
        artifacts=artifacts,
        max_artifact_chars=judge.config.max_artifact_chars,
    )
    verdict, cached = await judge.verdict(system, user)
    seen = (["final answer"] if scope != "files" else []) + [a.label for a in artifacts]
    return CriterionGrade(
        v.verifier_id,
        vals.criteria,
        1.0 if verdict.is_criteria_true else 0.0,
        "judge",
        verdict.rationale,
        seen,
        vals.is_primary_objective,
        judge.spec,
        cached,
        judge.cache_key(system, user),
    )


async def grade_trial(
    verifiers: list[Verifier],
    evidence: Evidence,
    judge: Judge | None,
    *,
    scoring: str = "apex_v1_grade_score",
) -> TrialGrades:
    """Grade every criterion (see module docstring). Raises JudgeError; never returns a partial grade."""
    grades: dict[str, CriterionGrade] = {}
    to_judge: list[Verifier] = []
    for v in _ordered(verifiers):
        vals = v.verifier_values
        if vals.kwrl_check is not None:
            r = run_check(vals.kwrl_check, evidence, vals.expected_file_type)
            grades[v.verifier_id] = CriterionGrade(
                v.verifier_id, vals.criteria, 1.0 if r.passed else 0.0, "machine", r.rationale,
                r.evidence, vals.is_primary_objective,
            )  # fmt: skip
        elif evidence.select_artifacts(vals.expected_file_type, vals.expected_output_files) is None:
            grades[v.verifier_id] = CriterionGrade(
                v.verifier_id, vals.criteria, 0.0, "auto_fail",
                f"no artifact of the expected type ({vals.expected_file_type}) was produced; failed without a judge call",
                [], vals.is_primary_objective,
            )  # fmt: skip
        else:
            to_judge.append(v)
    calls0 = judge.calls if judge else 0
    hits0 = judge.cache_hits if judge else 0
    if to_judge:
        if judge is None:
            raise JudgeError(
                f"{len(to_judge)} criteria need an LLM judge and none is configured: "
                "pass --judge or set KWRL_JUDGE (http(s)://HOST:PORT/v1#NAME or litellm:PROVIDER/MODEL)"
            )
        try:
            async with asyncio.TaskGroup() as tg:
                tasks = [tg.create_task(_judge_one(v, evidence, judge)) for v in to_judge]
        except* JudgeError as eg:
            raise eg.exceptions[0] from None
        for t in tasks:
            g = t.result()
            grades[g.verifier_id] = g
    ordered = [grades[v.verifier_id] for v in _ordered(verifiers)]
    value, passed = score(scoring, [g.score for g in ordered])
    return TrialGrades(
        ordered,
        scoring,
        value,
        passed,
        judge_calls=(judge.calls - calls0) if judge else 0,
        cache_hits=(judge.cache_hits - hits0) if judge else 0,
    )
