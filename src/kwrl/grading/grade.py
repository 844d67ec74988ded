"""Grading one trial: every criterion of the task against the trial's `Evidence`.

`grade_trial(verifiers, evidence, judge)` decides each criterion by the first rule that applies:
1. `machine`: the criterion carries a `kwrl_check` -> `checks.run_check`, no judge call; a check
   that cannot decide (`CheckResult.decided` False: a hedge or negation only a reader can weigh)
   sends the criterion to the judge when one is configured, and fails it when none is;
2. `auto_fail`: the criterion expects a file type and no artifact of that type exists -> 0, no judge
   call (Archipelago's rule);
3. `judge`: the LLM judge, all such criteria submitted together (the judge paces and bounds them).

`prepare` applies rules 1 and 2 and builds the judge's prompts (everything that reads the agent's
outputs, which the verifier bounds with its grading budget); `judge_prepared` sends the prompts.
`failed_trial` fails every criterion for one reason (the outputs exceeded the budget).

Any `JudgeError` aborts the whole trial's grading (a TaskGroup cancels the other calls): a trial
whose criteria cannot all be graded is an error, never a partial or silent 0. Except what the
agent's own output provokes, since an error masks the trial's group in training and a policy
could trade a 0 for a mask (`_judge_one`):
- the judge answers, never with a verdict (`NoVerdictError`): the judge is asked once more (with
  its retries) with the agent's output withheld: a verdict then, the agent's output derailed it
  and the criterion fails; none again, the judge gives no verdicts at all (a broken deployment
  answering malformed or off-schema JSON to every prompt: `JudgeError`, infrastructure; before,
  every criterion failed and the trial trained as 0);
- the prompt overflows the judge's context (`ContextOverflowError`): the prompt is rebuilt with
  half the evidence budget (`max_artifact_chars`), again on each overflow, down to
  `MIN_EVIDENCE_CHARS`; the verdict on the cut evidence is the grade, and the grade records the
  cut (`evidence_chars`, a rationale prefix). Still over at the floor, the judge is asked once
  with the agent's output withheld: answered, the agent's output is what does not fit and the
  criterion fails; over again, the task and criterion alone do not fit (the judge's
  configuration: `JudgeError`);
- the content filter refuses the prompt (`RefusedError`): the judge is asked once with the
  agent's output withheld: answered, the agent's text tripped the filter and the criterion fails
  (the probe's verdict, on no evidence, is never the grade); refused again, the task or criterion
  text trips it (`JudgeError`);
- every attempt times out (`JudgeTimeoutError`): the judge is asked once (one attempt) with the
  agent's output withheld: answered in time, the agent's output is what the judge could not read
  in time and the criterion fails; timed out again, the judge is slow (`JudgeError`). The agent's
  share of any prompt is bounded by what the judge reads in half its timeout
  (`JudgeConfig.agent_chars`), so only a judge slower than its configured reading rate, or an
  output built to slow it, gets here.

`TrialGrades.reward_json()` is harbor's `reward.json`, `{"reward": score}` alone (what stock
harbor's summaries read; each key would be a column); `grades_json()` is the audit trail (each verdict, its rationale, and the
evidence shown to the judge or check).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from kwrl.errors import JudgeError
from kwrl.grading.checks import rubric_figures, run_check
from kwrl.grading.evidence import Evidence
from kwrl.grading.judges import (
    ContextOverflowError,
    Judge,
    JudgeConfig,
    JudgeInputs,
    JudgeTimeoutError,
    NoVerdictError,
    RefusedError,
)
from kwrl.grading.scoring import score
from kwrl.tasks.models import Verifier

Method = Literal["machine", "auto_fail", "judge", "unknown"]
"""How a criterion was graded; `unknown`: a grades.json another grader wrote names none."""


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
    evidence_chars: int | None = None
    """The evidence budget of the judged prompt when the judge's context made the grader cut it
    below `max_artifact_chars` (`MIN_EVIDENCE_CHARS` at least); None when nothing was cut."""
    undecided: bool = False
    """The criterion's machine check could not decide it (`CheckResult.decided` False): the judge
    graded it, or with no judge it failed. Runs count these per task family."""

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
        """harbor's reward.json: the score alone (harbor's progress line and summary show every
        key as a column; the criteria and the pass live in `grades_json`)."""
        return {"reward": self.score}

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
MIN_EVIDENCE_CHARS = 4_000
"""The smallest evidence budget a prompt that overflows the judge's context is cut to."""


def _ordered(verifiers: list[Verifier]) -> list[Verifier]:
    return sorted(verifiers, key=lambda v: v.verifier_index)


def needs_judge(v: Verifier) -> bool:
    return v.verifier_values.kwrl_check is None


@dataclass
class JudgeRequest:
    """One criterion's prompt for the judge, built while the evidence is read (under the budget),
    and what rebuilds it (string work on the evidence already rendered)."""

    verifier: Verifier
    system: str
    user: str
    seen: list[str]
    inputs: JudgeInputs
    max_artifact_chars: int
    fallback: str | None = None
    """Why the criterion's machine check could not decide (rule 1), when that sent it here: with
    no judge configured, its grade in `Prepared.grades` (a fail) stands."""

    def prompt(self, chars: int, *, withheld: bool = False) -> tuple[str, str]:
        """(system, user) with an evidence budget of `chars`, or the agent's output withheld."""
        if chars == self.max_artifact_chars and not withheld:
            return self.system, self.user
        system, user = self.inputs.prompt(chars, withheld=withheld)
        return clean(system), clean(user)

    def grade(
        self, score: float, rationale: str, judge: Judge, key: str, *, chars: int,
        cached: bool = False,
    ) -> CriterionGrade:  # fmt: skip
        """The criterion's judged grade; a prompt cut below the budget says so first."""
        vals = self.verifier.verifier_values
        cut = chars if chars < self.max_artifact_chars else None
        if cut is not None:
            rationale = (
                f"[evidence cut to {cut:,} characters to fit the judge's context] {rationale}"
            )
        if self.fallback is not None:
            rationale = f"[the machine check could not decide: {self.fallback}] {rationale}"
        return CriterionGrade(
            self.verifier.verifier_id, vals.criteria, score, "judge", rationale, self.seen,
            vals.is_primary_objective, judge.spec, cached, key, cut, self.fallback is not None,
        )  # fmt: skip


@dataclass
class Prepared:
    """Every criterion decided without the judge, and the prompts of the rest (a criterion whose
    check could not decide has both: its fail, and the prompt that replaces it with a judge)."""

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
    figures = rubric_figures(v.verifier_values.kwrl_check for v in verifiers)
    for v in _ordered(verifiers):
        vals = v.verifier_values
        fallback = None
        if vals.kwrl_check is not None:
            r = run_check(vals.kwrl_check, evidence, vals.expected_file_type, figures)
            rationale = r.rationale if r.decided else f"{r.rationale}; no judge to read it"
            grades[v.verifier_id] = CriterionGrade(
                v.verifier_id, vals.criteria, 1.0 if r.passed else 0.0, "machine", rationale,
                r.evidence, vals.is_primary_objective, undecided=not r.decided,
            )  # fmt: skip
            if r.decided:
                continue
            fallback = r.rationale
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
        inputs = JudgeInputs(evidence.task, evidence.answer, vals.criteria, scope, artifacts)
        system, user = inputs.prompt(max_artifact_chars)
        seen = (["final answer"] if scope != "files" else []) + [a.label for a in artifacts]
        requests.append(JudgeRequest(
            v, clean(system), clean(user), clean(seen), inputs, max_artifact_chars, fallback
        ))  # fmt: skip
    return Prepared(grades, requests)


def failed_trial(
    verifiers: list[Verifier], reason: str, *, scoring: str = "apex_v1_grade_score"
) -> TrialGrades:
    """Every criterion failed for one reason (the agent's outputs exceeded the grading budget)."""
    ordered = [_fail(v, reason) for v in _ordered(verifiers)]
    value, passed = score(scoring, [g.score for g in ordered])
    return TrialGrades(ordered, scoring, value, passed)


async def _judge_one(req: JudgeRequest, judge: Judge) -> CriterionGrade:
    """One criterion's grade from the judge; what the agent's output provokes ends as a grade,
    what the task's own text or the judge does is a `JudgeError` (module doc)."""
    chars = req.max_artifact_chars
    floor = min(MIN_EVIDENCE_CHARS, chars)
    while True:
        system, user = req.prompt(chars)
        key = judge.cache_key(system, user)
        try:
            verdict, cached = await judge.verdict(system, user)
        except NoVerdictError as e:  # it answered, never with a verdict
            await _probe_withheld(req, judge, chars, e)  # with a verdict: the evidence's doing
            why = f"no valid verdict from the judge, so the criterion fails: {e}"
            return req.grade(0.0, why, judge, key, chars=chars)
        except JudgeTimeoutError as e:
            await _probe_withheld(req, judge, chars, e)
            why = (
                "the judge timed out on the agent's output on every attempt and answered in time "
                f"without it, so the criterion fails: {e}"
            )
            return req.grade(0.0, why, judge, key, chars=chars)
        except RefusedError as e:
            await _probe_withheld(req, judge, chars, e)
            why = f"the judge's content filter refused the agent's output, so the criterion fails: {e}"
            return req.grade(0.0, why, judge, key, chars=chars)
        except ContextOverflowError as e:
            if chars > floor:
                chars = max(chars // 2, floor)
                continue
            await _probe_withheld(req, judge, chars, e)
            why = (
                f"the agent's output does not fit the judge's context even cut to {chars:,} "
                f"characters, so the criterion fails: {e}"
            )
            return req.grade(0.0, why, judge, key, chars=chars)
        score = 1.0 if verdict.is_criteria_true else 0.0
        return req.grade(score, verdict.rationale, judge, key, chars=chars, cached=cached)


async def _probe_withheld(req: JudgeRequest, judge: Judge, chars: int, cause: JudgeError) -> None:
    """Ask once more with the agent's output withheld after `cause` (no verdict, a refusal, an
    overflow at the smallest evidence budget, or a timeout on every attempt: then one attempt,
    within the verifier's time). Returns when the judge takes that prompt (the agent's output was the
    trouble; the probe's verdict is not used); raises `JudgeError` (infrastructure) when it fails
    the same way without any agent output: the task, the criterion or the judge is the trouble."""
    system, user = req.prompt(chars, withheld=True)
    vid = req.verifier.verifier_id
    try:
        await judge.verdict(system, user, retries=not isinstance(cause, JudgeTimeoutError))
    except NoVerdictError as e:
        if isinstance(cause, NoVerdictError):
            raise JudgeError(
                f"judge {judge.spec}: no valid verdict on criterion {vid} even with the agent's "
                f"output withheld, so the judge gives none (a broken deployment, a wrong "
                f"model): {cause}; then {e}"
            ) from e
        return  # it took the prompt and answered
    except JudgeTimeoutError as e:
        raise JudgeError(
            f"judge {judge.spec}: criterion {vid}'s prompt times out even with the agent's output "
            f"withheld, so the judge is too slow for KWRL_JUDGE_TIMEOUT_S: {cause}; then {e}"
        ) from e
    except RefusedError as e:
        raise JudgeError(
            f"judge {judge.spec}: its content filter refuses criterion {vid}'s prompt even with "
            f"the agent's output withheld, so the task or criterion text trips it: {e}"
        ) from e
    except ContextOverflowError as e:
        refused = isinstance(cause, RefusedError)
        raise JudgeError(
            f"judge {judge.spec}: criterion {vid}'s prompt overflows the judge's context even with "
            "the agent's output withheld, so the task and criterion alone do not fit"
            f"{' (after a content-filter refusal)' if refused else ''}: {e}. Use a judge with a "
            "longer context, or a smaller KWRL_JUDGE_MAX_TOKENS; KWRL_JUDGE_MAX_ARTIFACT_CHARS "
            f"({req.max_artifact_chars:,}) bounds only the agent's output"
        ) from e


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
    to_judge = [r for r in prepared.requests if judge is not None or r.fallback is None]
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
    chars = judge.config.agent_chars if judge else DEFAULT_MAX_ARTIFACT_CHARS
    prepared = prepare(verifiers, evidence, max_artifact_chars=chars)
    return await judge_prepared(verifiers, prepared, judge, scoring=scoring)
