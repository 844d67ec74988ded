"""Score aggregation: per-criterion scores in, one trial score and a pass flag out. Pure functions.

- `apex_v1_grade_score` (Archipelago / APEX-Agents): the fraction of criteria passed; the trial
  passes when that fraction is >= 0.99. This is kwrl's RL reward.
- `mean`: the mean criterion score (equal to the fraction passed for 0/1 scores); passes at 1.0.
- `all_pass`: 1.0 only when every criterion passed (Pass@1's per-run rule), else 0.0.

`SCORERS` is the name -> function registry; `score(name, scores)` looks one up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kwrl.errors import ConfigError

PASS_THRESHOLD = 0.99

Scorer = Callable[[Sequence[float]], tuple[float, bool]]


def apex_v1_grade_score(scores: Sequence[float]) -> tuple[float, bool]:
    """(passed / total, passed / total >= 0.99); a task without criteria scores 0 and fails."""
    if not scores:
        return 0.0, False
    value = sum(1 for s in scores if s >= 1.0) / len(scores)
    return value, value >= PASS_THRESHOLD


def mean(scores: Sequence[float]) -> tuple[float, bool]:
    if not scores:
        return 0.0, False
    value = sum(scores) / len(scores)
    return value, value >= 1.0


def all_pass(scores: Sequence[float]) -> tuple[float, bool]:
    ok = bool(scores) and all(s >= 1.0 for s in scores)
    return (1.0 if ok else 0.0), ok


SCORERS: dict[str, Scorer] = {
    "apex_v1_grade_score": apex_v1_grade_score,
    "mean": mean,
    "all_pass": all_pass,
}


def score(method: str, scores: Sequence[float]) -> tuple[float, bool]:
    try:
        fn = SCORERS[method]
    except KeyError:
        raise ConfigError(f"scoring method {method!r}: expected one of {sorted(SCORERS)}") from None
    return fn(scores)
