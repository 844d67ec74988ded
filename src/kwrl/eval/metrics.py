"""Evaluation metrics: pure estimators over per-trial outcomes (no I/O).

What APEX-Agents and RECIPE report, computed here from `TrialOutcome`s:

- mean score: the mean fraction of criteria met; Pass@1: the fraction of trials meeting every
  criterion. Both are means over tasks of per-task means, so every task weighs the same whatever
  its number of samples.
- pass@k (at least one of k samples passes) and pass^k (all k pass, tau-bench's reliability), with
  the unbiased estimators over n samples of which c passed: pass@k = 1 - C(n-c,k)/C(n,k) and
  pass^k = C(c,k)/C(n,k) (Chen et al. 2021; Yao et al. 2024). pass@1 = pass^1 = c/n.
- 95% intervals: a percentile bootstrap that resamples *tasks* (a task's samples are not
  independent), seeded, so a report is reproducible to the digit.
- the same summary per domain, expected output type and difficulty tier; per criterion; trial
  stats (turns, tokens, tool-call success, tool mix) and failure causes.

Non-obvious choice: a trial without a reward scores 0 and fails, as on a leaderboard, when the
policy or its agent failed (an agent crash, a timeout of its own); one that failed outside the
policy's control (an infrastructure cause, `kwrl.rollout.failures.INFRA`: the sandbox, the judge,
the policy endpoint, after its retries) has no score: it counts in no mean, pass rate or
interval, and a task whose every trial failed so drops out of them. How many there were is
reported beside the scores (`n_errors`, of which `n_infra`, and `causes`). A group in which no
trial was graded has no score at all (`n_graded` 0, every interval None): "the oracle scored
0.0%" must never stand for "every trial failed to start".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from math import comb
from statistics import median
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from kwrl.eval.config import Bootstrap
from kwrl.rollout.failures import INFRA
from kwrl.rollout.manifest import RunManifest
from kwrl.tasks.taskdir import NO_FAMILY

INFRA_CAUSES = frozenset(str(c) for c in INFRA)
"""The failure causes (as written in trials.jsonl) outside the policy's control."""


class CriterionResult(BaseModel):
    """One criterion's verdict in one trial (from the trial's grades.json)."""

    verifier_id: str
    criteria: str = ""
    score: float = 0.0
    passed: bool = False
    method: str = ""
    rationale: str = ""
    is_primary_objective: bool = False
    undecided: bool = False
    """Its machine check could not decide it (grades.json `undecided`)."""


class ToolUse(BaseModel):
    calls: int = 0
    ok: int = 0


UNKNOWN_TOOL = "(unknown tools)"
"""The one name every call to a tool the agent did not have is counted under (a policy invents
names without end, and a name is the policy's text)."""


class TrialOutcome(BaseModel):
    """What the evaluation keeps of one finished trial (one line of trials.jsonl)."""

    task: str
    sample: int
    trial_name: str = ""
    trial_dir: str = ""
    task_name: str = ""
    domain: str | None = None
    expected_output: str | None = None
    difficulty: str | None = None
    family: str | None = None
    """The generated task's family (task.toml `[metadata] family`); None for other tasks."""
    cause: str = "none"
    reward: float | None = None
    passed: bool = False
    error: str | None = None
    criteria: list[CriterionResult] = Field(default_factory=list)
    turns: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    stop_reason: str | None = None
    tools: dict[str, ToolUse] = Field(default_factory=dict)
    final_answer: str = ""
    seconds: float = 0.0
    attempts: int = 1
    manifest: RunManifest | None = None
    """What reproduces this score (`kwrl.rollout.manifest`); None for a line an older kwrl wrote."""

    @property
    def score(self) -> float:
        """The reward, or 0 for a trial that was not graded."""
        return 0.0 if self.reward is None else self.reward


# ---------------------------------------------------------------- estimators


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased P(at least one of k samples passes) from n samples with c passes."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased P(all of k samples pass) from n samples with c passes (pass^k)."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")


class Interval(BaseModel):
    """A point estimate with its bootstrap interval."""

    value: float | None
    """None when there was nothing to estimate from."""
    lo: float | None
    hi: float | None


def bootstrap_mean(
    values: Sequence[float], *, n_boot: int = 2000, seed: int = 0, confidence: float = 0.95
) -> Interval:
    """Mean of `values` with a seeded percentile-bootstrap interval (resampling the values)."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return Interval(value=None, lo=None, hi=None)
    rng = np.random.default_rng(seed)
    means_B = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(means_B, [alpha, 1.0 - alpha])
    return Interval(value=float(v.mean()), lo=float(lo), hi=float(hi))


# ---------------------------------------------------------------- summaries


def by_task(outcomes: Iterable[TrialOutcome]) -> dict[str, list[TrialOutcome]]:
    groups: dict[str, list[TrialOutcome]] = {}
    for o in outcomes:
        groups.setdefault(o.task, []).append(o)
    return groups


class ScoreSummary(BaseModel):
    n_tasks: int
    n_trials: int
    n_errors: int
    """Trials without a reward (those of `n_infra` have no score; the others score 0 and fail)."""
    n_graded: int = 0
    """Trials with a reward; 0 means the group has no score (every interval None)."""
    n_infra: int = 0
    """Of `n_errors`, the trials that failed outside the policy's control (infrastructure causes,
    `kwrl.rollout.failures.INFRA`): no score, in no mean."""
    mean_score: Interval
    pass_at_1: Interval
    pass_at_k: dict[int, Interval]
    pass_hat_k: dict[int, Interval]


def _ci(values: Sequence[float], boot: Bootstrap) -> Interval:
    return bootstrap_mean(values, n_boot=boot.n_boot, seed=boot.seed, confidence=boot.confidence)


def summarize_scores(outcomes: Sequence[TrialOutcome], boot: Bootstrap) -> ScoreSummary:
    """Mean score, Pass@1, pass@k and pass^k (k = 1 .. fewest samples of a task), task-bootstrapped."""
    tasks = by_task(outcomes)
    n_graded = sum(o.reward is not None for o in outcomes)
    # nothing graded: no score (every interval None), not a score of 0; an infrastructure
    # failure has no score either (it never counts as a 0)
    groups = list(by_task(scored(outcomes)).values()) if n_graded else []

    n_min = min((len(g) for g in groups), default=0)
    counts = [(len(g), sum(o.passed for o in g)) for g in groups]
    return ScoreSummary(
        n_tasks=len(tasks),
        n_trials=len(outcomes),
        n_errors=sum(o.reward is None for o in outcomes),
        n_graded=n_graded,
        n_infra=sum(o.reward is None and o.cause in INFRA_CAUSES for o in outcomes),
        mean_score=_ci([sum(o.score for o in g) / len(g) for g in groups], boot),
        pass_at_1=_ci([c / n for n, c in counts], boot),
        pass_at_k={
            k: _ci([pass_at_k(n, c, k) for n, c in counts], boot) for k in range(1, n_min + 1)
        },
        pass_hat_k={
            k: _ci([pass_hat_k(n, c, k) for n, c in counts], boot) for k in range(1, n_min + 1)
        },
    )


def scored(outcomes: Iterable[TrialOutcome]) -> list[TrialOutcome]:
    """The outcomes that have a score: all but the trials that failed outside the policy's
    control (module doc)."""
    return [o for o in outcomes if not (o.reward is None and o.cause in INFRA_CAUSES)]


def summarize_groups(
    outcomes: Sequence[TrialOutcome], key: Callable[[TrialOutcome], str | None], boot: Bootstrap
) -> dict[str, ScoreSummary]:
    """`summarize_scores` per value of `key` (None becomes "unknown"), sorted by label."""
    groups: dict[str, list[TrialOutcome]] = {}
    for o in outcomes:
        groups.setdefault(key(o) or "unknown", []).append(o)
    return {label: summarize_scores(groups[label], boot) for label in sorted(groups)}


class CriterionSummary(BaseModel):
    task: str
    verifier_id: str
    criteria: str
    is_primary_objective: bool
    n: int
    pass_rate: Interval


def summarize_criteria(outcomes: Sequence[TrialOutcome], boot: Bootstrap) -> list[CriterionSummary]:
    """Each criterion's pass rate over the trials that graded it (bootstrap over those trials)."""
    seen: dict[tuple[str, str], list[CriterionResult]] = {}
    for o in outcomes:
        for c in o.criteria:
            seen.setdefault((o.task, c.verifier_id), []).append(c)
    out: list[CriterionSummary] = []
    for (task, vid), verdicts in sorted(seen.items()):
        out.append(
            CriterionSummary(
                task=task,
                verifier_id=vid,
                criteria=verdicts[0].criteria,
                is_primary_objective=verdicts[0].is_primary_objective,
                n=len(verdicts),
                pass_rate=_ci([float(v.passed) for v in verdicts], boot),
            )
        )
    return out


class Distribution(BaseModel):
    n: int
    mean: float | None
    median: float | None
    min: float | None
    max: float | None


def distribution(values: Iterable[float | int | None]) -> Distribution:
    v = [float(x) for x in values if x is not None]
    if not v:
        return Distribution(n=0, mean=None, median=None, min=None, max=None)
    return Distribution(n=len(v), mean=sum(v) / len(v), median=median(v), min=min(v), max=max(v))


class TrialStats(BaseModel):
    turns: Distribution
    input_tokens: Distribution
    output_tokens: Distribution
    seconds: Distribution
    tool_calls: int
    tool_success_rate: float | None
    tool_mix: dict[str, ToolUse]
    """Calls and successful calls per tool name, most used first."""
    stop_reasons: dict[str, int]
    causes: dict[str, int]


def trial_stats(outcomes: Sequence[TrialOutcome]) -> TrialStats:
    mix: dict[str, ToolUse] = {}
    for o in outcomes:
        for name, use in o.tools.items():
            m = mix.setdefault(name, ToolUse())
            m.calls += use.calls
            m.ok += use.ok
    calls = sum(m.calls for m in mix.values())
    return TrialStats(
        turns=distribution(o.turns for o in outcomes),
        input_tokens=distribution(o.input_tokens for o in outcomes),
        output_tokens=distribution(o.output_tokens for o in outcomes),
        seconds=distribution(o.seconds for o in outcomes),
        tool_calls=calls,
        tool_success_rate=sum(m.ok for m in mix.values()) / calls if calls else None,
        tool_mix=dict(sorted(mix.items(), key=lambda kv: (-kv[1].calls, kv[0]))),
        stop_reasons=dict(Counter(o.stop_reason for o in outcomes if o.stop_reason).most_common()),
        causes=dict(Counter(o.cause for o in outcomes).most_common()),
    )


class Undecided(BaseModel):
    """How many criteria a group's graded trials held, and how many no machine check decided."""

    criteria: int = 0
    undecided: int = 0


def undecided_by_family(outcomes: Iterable[TrialOutcome]) -> dict[str, Undecided]:
    """Per family, the graded trials' criteria and how many were undecided (a task set whose
    checks are mostly undecided shows it)."""
    out: dict[str, Undecided] = {}
    for o in scored(outcomes):
        if o.reward is None:
            continue
        u = out.setdefault(o.family or NO_FAMILY, Undecided())
        u.criteria += len(o.criteria)
        u.undecided += sum(c.undecided for c in o.criteria)
    return dict(sorted(out.items()))


class EvalMetrics(BaseModel):
    """Every number of an evaluation (eval.json's `metrics`)."""

    bootstrap: Bootstrap
    overall: ScoreSummary
    by_domain: dict[str, ScoreSummary]
    by_expected_output: dict[str, ScoreSummary]
    by_difficulty: dict[str, ScoreSummary]
    criteria: list[CriterionSummary]
    trials: TrialStats
    undecided_by_family: dict[str, Undecided] = Field(default_factory=dict)
    """Criteria graded and those their machine check could not decide, per task family."""


def compute_metrics(outcomes: Sequence[TrialOutcome], boot: Bootstrap | None = None) -> EvalMetrics:
    boot = boot or Bootstrap()
    return EvalMetrics(
        bootstrap=boot,
        overall=summarize_scores(outcomes, boot),
        by_domain=summarize_groups(outcomes, lambda o: o.domain, boot),
        by_expected_output=summarize_groups(outcomes, lambda o: o.expected_output, boot),
        by_difficulty=summarize_groups(outcomes, lambda o: o.difficulty, boot),
        criteria=summarize_criteria(outcomes, boot),
        trials=trial_stats(outcomes),
        undecided_by_family=undecided_by_family(outcomes),
    )


# ---------------------------------------------------------------- paired comparison


class PairedDiff(BaseModel):
    """run - other on the tasks both ran: per-task mean differences, task-bootstrapped."""

    n_shared_tasks: int
    only_in_run: list[str]
    only_in_other: list[str]
    mean_score: Interval
    pass_at_1: Interval
    per_task: dict[str, dict[str, float]]
    """task -> {run, other, diff} of mean score."""
    by_domain: dict[str, Interval]
    """Mean-score difference per domain of the shared tasks."""
    up: int = 0
    """Shared tasks whose mean score is higher in run than in other."""
    down: int = 0
    """Shared tasks whose mean score is lower in run."""
    same: int = 0
    """Shared tasks whose mean score is the same in both."""


def paired_diff(
    run: Sequence[TrialOutcome], other: Sequence[TrialOutcome], boot: Bootstrap | None = None
) -> PairedDiff:
    boot = boot or Bootstrap()
    a, b = by_task(scored(run)), by_task(scored(other))  # infrastructure failures: no score
    shared = sorted(set(a) & set(b))

    def mean_of(group: list[TrialOutcome], fn: Callable[[TrialOutcome], float]) -> float:
        return sum(fn(o) for o in group) / len(group)

    score_d = [mean_of(a[t], lambda o: o.score) - mean_of(b[t], lambda o: o.score) for t in shared]
    pass_d = [
        mean_of(a[t], lambda o: float(o.passed)) - mean_of(b[t], lambda o: float(o.passed))
        for t in shared
    ]
    domains: dict[str, list[float]] = {}
    for t, d in zip(shared, score_d, strict=True):
        domains.setdefault(a[t][0].domain or "unknown", []).append(d)
    per_task: dict[str, dict[str, Any]] = {
        t: {
            "run": mean_of(a[t], lambda o: o.score),
            "other": mean_of(b[t], lambda o: o.score),
            "diff": d,
        }
        for t, d in zip(shared, score_d, strict=True)
    }
    return PairedDiff(
        n_shared_tasks=len(shared),
        only_in_run=sorted(set(a) - set(b)),
        only_in_other=sorted(set(b) - set(a)),
        mean_score=_ci(score_d, boot),
        pass_at_1=_ci(pass_d, boot),
        per_task=per_task,
        by_domain={k: _ci(v, boot) for k, v in sorted(domains.items())},
        up=sum(d > 0 for d in score_d),
        down=sum(d < 0 for d in score_d),
        same=sum(d == 0 for d in score_d),
    )
