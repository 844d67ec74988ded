from __future__ import annotations

import pytest

from kwrl.errors import ConfigError
from kwrl.grading.scoring import SCORERS, all_pass, apex_v1_grade_score, mean, score


def test_apex_v1_is_the_fraction_passed_and_passes_only_at_099() -> None:
    assert apex_v1_grade_score([1, 1, 0, 1]) == (0.75, False)
    assert apex_v1_grade_score([1.0] * 4) == (1.0, True)
    assert apex_v1_grade_score([1.0] * 99 + [0.0]) == (0.99, True)
    assert apex_v1_grade_score([1.0] * 98 + [0.0]) == (pytest.approx(98 / 99), False)


def test_a_task_without_criteria_scores_zero() -> None:
    for fn in SCORERS.values():
        assert fn([]) == (0.0, False)


def test_mean_and_all_pass() -> None:
    assert mean([1, 0, 0.5]) == (0.5, False)
    assert mean([1, 1]) == (1.0, True)
    assert all_pass([1, 1, 0]) == (0.0, False)
    assert all_pass([1, 1]) == (1.0, True)


def test_unknown_method_names_the_choices() -> None:
    with pytest.raises(ConfigError, match="apex_v1_grade_score"):
        score("median", [1.0])
