"""Evaluation metrics agree with hand computations: estimators, bootstrap, grouping, pairing."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kwrl.eval.metrics import (
    Bootstrap,
    CriterionResult,
    ToolUse,
    TrialOutcome,
    bootstrap_mean,
    compute_metrics,
    paired_diff,
    pass_at_k,
    pass_hat_k,
    summarize_scores,
)


def outcome(
    task: str,
    sample: int,
    reward: float | None,
    passed: bool,
    *,
    domain: str | None = "Law",
    **kw: object,
) -> TrialOutcome:
    return TrialOutcome(task=task, sample=sample, reward=reward, passed=passed, domain=domain, **kw)  # type: ignore[arg-type]


def test_pass_at_k_and_pass_hat_k_match_hand_values() -> None:
    # n=5 samples, c=2 passed: pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass^2 = C(2,2)/C(5,2) = 1/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)
    assert pass_at_k(5, 2, 1) == pass_hat_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 4) == 1.0  # any 4 of 5 include a pass when only 3 fail
    assert pass_hat_k(5, 2, 3) == 0.0
    assert pass_at_k(3, 0, 3) == 0.0 and pass_hat_k(3, 3, 3) == 1.0
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(2, 1, 3)


@given(st.lists(st.booleans(), min_size=1, max_size=8), st.data())
def test_estimators_equal_the_exact_average_over_k_subsets(
    samples: list[bool], data: st.DataObject
) -> None:
    n, c = len(samples), sum(samples)
    k = data.draw(st.integers(1, n))
    subsets = list(combinations(samples, k))
    assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))
    assert pass_hat_k(n, c, k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets))


def test_bootstrap_is_seeded_and_matches_the_resampling_distribution() -> None:
    a = bootstrap_mean([0.0, 1.0, 1.0, 0.5], n_boot=500, seed=7)
    assert a == bootstrap_mean([0.0, 1.0, 1.0, 0.5], n_boot=500, seed=7)
    assert a.value == pytest.approx(0.625) and a.lo is not None and a.hi is not None
    assert a.lo <= a.value <= a.hi
    # Means of 2 draws from {0, 1}: 0 (1/4), 0.5 (1/2), 1 (1/4): the 95% interval is [0, 1].
    two = bootstrap_mean([0.0, 1.0], n_boot=4000, seed=0)
    assert (two.lo, two.value, two.hi) == (0.0, 0.5, 1.0)
    # 80%: quantiles 0.1 and 0.9 still fall in the atoms at 0 and 1 (each holds 1/4).
    assert bootstrap_mean([0.0, 1.0], n_boot=4000, seed=0, confidence=0.4).lo == 0.5
    const = bootstrap_mean([0.3] * 5, seed=1)
    assert (const.lo, const.hi) == pytest.approx((0.3, 0.3))
    assert bootstrap_mean([]).value is None


def test_summary_weighs_tasks_equally_and_scores_errors_as_zero() -> None:
    outcomes = [
        outcome("a", 0, 1.0, True),
        outcome("a", 1, 0.5, False),
        outcome("b", 0, 0.0, False),
        outcome("b", 1, None, False, cause="agent_timeout"),
        outcome("c", 0, 1.0, True),
        outcome("c", 1, 1.0, True),
        outcome("c", 2, 0.0, False),  # a third sample: k stops at the fewest samples (2)
    ]
    s = summarize_scores(outcomes, Bootstrap(n_boot=200))
    assert (s.n_tasks, s.n_trials, s.n_errors) == (3, 7, 1)
    # per task: a 0.75, b 0.0, c 2/3
    assert s.mean_score.value == pytest.approx((0.75 + 0.0 + 2 / 3) / 3)
    assert s.pass_at_1.value == pytest.approx((0.5 + 0.0 + 2 / 3) / 3)
    assert list(s.pass_at_k) == [1, 2]
    # pass@2: a 1 - C(1,2)/C(2,2) = 1, b 0, c 1 - C(1,2)/C(3,2) = 1
    assert s.pass_at_k[2].value == pytest.approx(2 / 3)
    # pass^2: a 0, b 0, c C(2,2)/C(3,2) = 1/3
    assert s.pass_hat_k[2].value == pytest.approx(1 / 9)
    assert s.pass_at_k[1].value == pytest.approx(s.pass_at_1.value)
    assert s.pass_hat_k[1].value == pytest.approx(s.pass_at_1.value)


def test_a_group_with_no_graded_trial_has_no_score_and_counts_its_infrastructure_failures() -> None:
    failed = [
        outcome("a", 0, None, False, cause="sandbox"),
        outcome("b", 0, None, False, cause="sandbox"),
        outcome("b", 1, None, False, cause="agent_timeout"),
    ]
    s = summarize_scores(failed, Bootstrap(n_boot=50))
    assert (s.n_tasks, s.n_trials, s.n_errors, s.n_graded, s.n_infra) == (2, 3, 3, 0, 2)
    assert s.mean_score.value is None and s.pass_at_1.value is None
    assert s.pass_at_k == {} and s.pass_hat_k == {}
    # one graded trial makes it a score again: the policy's own failure (b's agent timeout)
    # scores 0 beside it, the infrastructure failures have none (task a drops out, b keeps one
    # trial): never a 0 in the mean (before, 1/3)
    s = summarize_scores([*failed, outcome("c", 0, 1.0, True)], Bootstrap(n_boot=50))
    assert (s.n_tasks, s.n_trials, s.n_graded, s.n_infra) == (3, 4, 1, 2)
    assert s.mean_score.value == pytest.approx(1 / 2) and s.pass_at_1.value == pytest.approx(1 / 2)


def test_groups_criteria_and_trial_stats() -> None:
    crit = [
        CriterionResult(
            verifier_id="v1", criteria="states X", passed=True, is_primary_objective=True
        ),
        CriterionResult(verifier_id="v2", criteria="names Y", passed=False),
    ]
    outcomes = [
        outcome("a", 0, 0.5, False, domain="Law", difficulty="easy", criteria=crit, turns=3,
                input_tokens=100, output_tokens=20,
                tools={"mail_send_mail": ToolUse(calls=2, ok=1), "filesystem_list_files": ToolUse(calls=1, ok=1)}),
        outcome("a", 1, 1.0, True, domain="Law", difficulty="easy",
                criteria=[crit[0], crit[1].model_copy(update={"passed": True})], turns=5,
                input_tokens=300, output_tokens=40, tools={"mail_send_mail": ToolUse(calls=1, ok=1)}),
        outcome("b", 0, 0.0, False, domain=None, expected_output="make_new_doc", cause="max_tokens"),
    ]  # fmt: skip
    m = compute_metrics(outcomes, Bootstrap(n_boot=100, seed=3))
    assert list(m.by_domain) == ["Law", "unknown"]
    assert m.by_domain["Law"].mean_score.value == pytest.approx(0.75)
    assert m.by_domain["unknown"].n_trials == 1
    assert list(m.by_expected_output) == ["make_new_doc", "unknown"]
    assert m.by_difficulty["easy"].pass_at_1.value == pytest.approx(0.5)
    assert [(c.verifier_id, c.n, c.pass_rate.value) for c in m.criteria] == [
        ("v1", 2, 1.0),
        ("v2", 2, 0.5),
    ]
    t = m.trials
    assert (t.turns.n, t.turns.mean, t.turns.median) == (2, 4.0, 4.0)
    assert t.input_tokens.mean == 200 and t.output_tokens.max == 40
    assert t.tool_calls == 4 and t.tool_success_rate == pytest.approx(3 / 4)
    assert list(t.tool_mix) == ["mail_send_mail", "filesystem_list_files"]
    assert t.tool_mix["mail_send_mail"] == ToolUse(calls=3, ok=2)
    assert t.causes == {"none": 2, "max_tokens": 1}
    # the whole thing is JSON-serialisable (eval.json)
    assert (
        compute_metrics(outcomes, Bootstrap(n_boot=100, seed=3)).model_dump_json()
        == m.model_dump_json()
    )


def test_paired_difference_on_shared_tasks() -> None:
    run = [
        outcome("a", 0, 1.0, True), outcome("a", 1, 0.5, False),
        outcome("b", 0, 1.0, True, domain="IB"), outcome("only-run", 0, 1.0, True),
    ]  # fmt: skip
    other = [outcome("a", 0, 0.0, False), outcome("b", 0, 0.5, False, domain="IB"),
             outcome("only-other", 0, 0.0, False)]  # fmt: skip
    d = paired_diff(run, other, Bootstrap(n_boot=300))
    assert d.n_shared_tasks == 2
    assert (d.only_in_run, d.only_in_other) == (["only-run"], ["only-other"])
    assert d.per_task["a"] == {"run": 0.75, "other": 0.0, "diff": 0.75}
    assert d.mean_score.value == pytest.approx((0.75 + 0.5) / 2)
    assert d.pass_at_1.value == pytest.approx((0.5 + 1.0) / 2)
    assert d.mean_score.lo == pytest.approx(0.5) and d.mean_score.hi == pytest.approx(0.75)
    # a trial that failed on infrastructure has no score in the comparison either (was a 0)
    faulted = [*run, outcome("a", 2, None, False, cause="verifier")]
    assert paired_diff(faulted, other, Bootstrap(n_boot=50)).per_task["a"]["run"] == 0.75
    assert d.by_domain["IB"].value == pytest.approx(0.5)
    assert (d.up, d.down, d.same) == (2, 0, 0)
    flat = paired_diff(other[:2], run[:3], Bootstrap(n_boot=50))  # the reverse: both fell
    assert (flat.up, flat.down, flat.same) == (0, 2, 0)
    assert paired_diff(run, run).same == 3


def test_undecided_criteria_are_counted_per_family_over_graded_trials() -> None:
    def crits(*undecided: bool) -> list[CriterionResult]:
        return [CriterionResult(verifier_id=f"c{i}", undecided=u) for i, u in enumerate(undecided)]

    outcomes = [
        outcome("a", 0, 1.0, True, family="table_lookup", criteria=crits(False, False)),
        outcome("a", 1, 0.5, False, family="table_lookup", criteria=crits(True, False)),
        outcome("b", 0, 0.0, False, family="chat_post", criteria=crits(True)),
        outcome("c", 0, 1.0, True, criteria=crits(False)),  # an imported task: no family
        outcome("d", 0, None, False, family="chat_post", cause="sandbox", criteria=crits(True)),
    ]
    got = compute_metrics(outcomes).undecided_by_family
    assert {k: (v.criteria, v.undecided) for k, v in got.items()} == {
        "(no family)": (1, 0), "chat_post": (1, 1), "table_lookup": (4, 1),
    }  # fmt: skip
