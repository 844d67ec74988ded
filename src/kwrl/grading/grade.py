"""Grading one trial: every criterion of the task against the trial's `Evidence`.

`grade_trial(verifiers, evidence, judge)` decides each criterion by the first rule that applies:
1. `machine`: the criterion carries a `kwrl_check` -> `checks.run_check`, no judge call;
2. `auto_fail`: the criterion expects a file type and no artifact of that type exists -> 0, no judge
   call (Archipelago's rule);
3. `judge`: the LLM judge, all such criteria submitted together (the judge paces and bounds them).

`prepare` applies rules 1 and 2 and builds the judge's prompts (everything that reads the agent's
outputs, which the verifier bounds with its grading budget); `judge_prepared` sends the prompts.
`failed_trial` fails every criterion for one reason (the outputs exceeded the budget).

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
from kwrl.grading.judges import Judge, JudgeConfig, NoVerdictError, build_prompt
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
    error: str | None = None
    """Why the agent's outputs could not be graded (over budget, unreadable): every criterion
    failed for it."""

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
            **({"error": clean(self.error)} if self.error else {}),
            "grades": [clean({**asdict(g), "passed": g.passed}) for g in self.grades],
        }


def clean(obj: Any) -> Any:
    """`obj` with every string made encodable as UTF-8: a file name that is not UTF-8 reaches
    Python as lone surrogates (`os.fsdecode`), which would fail the grader's JSON writes and the
    judge's request; each becomes '?'."""
    if isinstance(obj, str):
        return obj.encode("utf-8", "replace").decode("utf-8")
    if isinstance(obj, list):
        return [clean(x) for x in obj]
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    return obj


DEFAULT_MAX_ARTIFACT_CHARS = JudgeConfig.model_fields["max_artifact_chars"].default


def _ordered(verifiers: list[Verifier]) -> list[Verifier]:
    return sorted(verifiers, key=lambda v: v.verifier_index)


def needs_judge(v: Verifier) -> bool:
    return v.verifier_values.kwrl_check is None


@dataclass
class JudgeRequest:
    """One criterion's prompt for the judge, built while the evidence is read (under the budget)."""

    verifier: Verifier
    system: str
    user: str
    seen: list[str]


@dataclass
class Prepared:
    """Every criterion decided without the judge, and the prompts of the rest."""

    grades: dict[str, CriterionGrade]
    requests: list[JudgeRequest]


def _fail(v: Verifier, rationale: str) -> CriterionGrade:
    vals = v.verifier_values
    return CriterionGrade(
        v.verifier_id, vals.criteria, 0.0, "auto_fail", rationale, [], vals.is_primary_objective
    )


def prepare(
    verifiers: list[Verifier],
    evidence: Evidence,
    *,
    max_artifact_chars: int = DEFAULT_MAX_ARTIFACT_CHARS,
    max_judge_artifacts: int | None = None,
) -> Prepared:
    """Rules 1 and 2 for every criterion, and the judge's prompt for the rest: everything that reads
    the agent's outputs (the verifier runs it under the grading budget). A criterion that would
    show the judge more than `max_judge_artifacts` artifacts fails here (over budget)."""
    grades: dict[str, CriterionGrade] = {}
    requests: list[JudgeRequest] = []
    for v in _ordered(verifiers):
        vals = v.verifier_values
        if vals.kwrl_check is not None:
            r = run_check(vals.kwrl_check, evidence, vals.expected_file_type)
            grades[v.verifier_id] = CriterionGrade(
                v.verifier_id, vals.criteria, 1.0 if r.passed else 0.0, "machine", r.rationale,
                r.evidence, vals.is_primary_objective,
            )  # fmt: skip
            continue
        selected = evidence.select_artifacts(vals.expected_file_type, vals.expected_output_files)
        if selected is None:
            grades[v.verifier_id] = _fail(
                v,
                f"no artifact of the expected type ({vals.expected_file_type}) was produced; "
                "failed without a judge call",
            )
            continue
        scope, artifacts = selected
        if max_judge_artifacts is not None and len(artifacts) > max_judge_artifacts:
            grades[v.verifier_id] = _fail(
                v,
                f"evidence over budget: {len(artifacts)} artifacts to show the judge "
                f"(cap {max_judge_artifacts}); failed without a judge call",
            )
            continue
        system, user = build_prompt(
            task=evidence.task,
            answer=evidence.answer,
            criterion=vals.criteria,
            scope=scope,
            artifacts=artifacts,
            max_artifact_chars=max_artifact_chars,
        )
        seen = (["final answer"] if scope != "files" else []) + [a.label for a in artifacts]
        requests.append(JudgeRequest(v, clean(system), clean(user), clean(seen)))
    return Prepared(grades, requests)


def failed_trial(
    verifiers: list[Verifier], reason: str, *, scoring: str = "apex_v1_grade_score"
) -> TrialGrades:
    """Every criterion failed for one reason (the agent's outputs exceeded the grading budget)."""
    ordered = [_fail(v, reason) for v in _ordered(verifiers)]
    value, passed = score(scoring, [g.score for g in ordered])
    return TrialGrades(ordered, scoring, value, passed)


async def _judge_one(req: JudgeRequest, judge: Judge) -> CriterionGrade:
    vals = req.verifier.verifier_values
    try:
        verdict, cached = await judge.verdict(req.system, req.user)
    except NoVerdictError as e:  # the judge answered, never with a verdict: the evidence's doing
        return CriterionGrade(
            req.verifier.verifier_id, vals.criteria, 0.0, "judge",
            f"no valid verdict from the judge, so the criterion fails: {e}", req.seen,
            vals.is_primary_objective, judge.spec, False, judge.cache_key(req.system, req.user),
        )  # fmt: skip
    return CriterionGrade(
        req.verifier.verifier_id,
        vals.criteria,
        1.0 if verdict.is_criteria_true else 0.0,
        "judge",
        verdict.rationale,
        req.seen,
        vals.is_primary_objective,
        judge.spec,
        cached,
        judge.cache_key(req.system, req.user),
    )


async def judge_prepared(
    verifiers: list[Verifier],
    prepared: Prepared,
    judge: Judge | None,
    *,
    scoring: str = "apex_v1_grade_score",
) -> TrialGrades:
    """Rule 3: the judge's verdicts on the prepared prompts, then the trial's score. Raises
    JudgeError (no judge configured, or one that fails); never returns a partial grade."""
    grades = dict(prepared.grades)
    to_judge = prepared.requests
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
                tasks = [tg.create_task(_judge_one(r, judge)) for r in to_judge]
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


async def grade_trial(
    verifiers: list[Verifier],
    evidence: Evidence,
    judge: Judge | None,
    *,
    scoring: str = "apex_v1_grade_score",
) -> TrialGrades:
    """Grade every criterion (see module docstring): `prepare`, then `judge_prepared`. Raises
    JudgeError; never returns a partial grade."""
    chars = judge.config.max_artifact_chars if judge else DEFAULT_MAX_ARTIFACT_CHARS
    prepared = prepare(verifiers, evidence, max_artifact_chars=chars)
    return await judge_prepared(verifiers, prepared, judge, scoring=scoring)
