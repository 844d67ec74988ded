"""`kwrl smoke` reports each RL step from the trainer's metrics.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

from kwrl.train.smoke import _eval_line, _step_line, rl_steps


def test_rl_steps_keep_the_last_line_of_a_redone_step(tmp_path: Path) -> None:
    lines = [
        {"step": 1, "trials": 16, "trainable_trials": 4, "reward_mean": 0.6875, "loss": -0.0089,
         "grad_norm": 0.04},
        # a run killed during step 2 and resumed logs step 2 again; the redone step is the one
        {"step": 2, "trials": 16, "reward_mean": 1.0, "skipped": "no trainable trajectory"},
        {"step": 2, "trials": 16, "trainable_trials": 8, "reward_mean": 0.5, "loss": 0.0043},
    ]  # fmt: skip
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps(m) + "\n" for m in lines) + "\n")
    steps = rl_steps(metrics)
    assert steps == [
        {"step": 1, "trials": 16, "trainable_trials": 4, "reward_mean": 0.6875, "loss": -0.0089},
        {"step": 2, "trials": 16, "trainable_trials": 8, "reward_mean": 0.5, "loss": 0.0043},
    ]
    assert _step_line(steps[0]) == "step 1: reward 0.688, 4/16 trials trained, loss -0.0089"
    assert _step_line(lines[1]) == "step 2: reward 1.000, skipped (no trainable trajectory)"
    assert rl_steps(tmp_path / "missing.jsonl") == []


def test_a_step_with_nothing_trained_says_why_instead_of_failing() -> None:
    # every trial of the step failed on infrastructure: the trainer logs reward_mean null
    m = {"step": 1, "trials": 16, "trainable_trials": 0, "reward_mean": None,
         "causes": {"verifier": 15, "max_tokens": 1}, "skipped": "no trainable trajectory"}  # fmt: skip
    assert _step_line(m) == (
        "step 1: reward none (causes: max_tokens 1, verifier 15), skipped (no trainable trajectory)"
    )


def test_rl_steps_leave_out_stale_batch_lines(tmp_path: Path) -> None:
    # The async trainer logs a dropped stale batch under the last trained step's number.
    lines = [
        {"step": 1, "trials": 16, "trainable_trials": 4, "reward_mean": 0.75, "loss": 0.01},
        {"step": 1, "dropped_stale_batch": 0},
    ]
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps(m) + "\n" for m in lines))
    assert rl_steps(metrics) == [lines[0]]


def test_eval_line_rounds_the_headline() -> None:
    head = {"n_trials": 14, "mean_score": 0.5714285714285714, "pass_at_1": 0.5}
    assert _eval_line(head) == "mean score 0.571, pass@1 0.500 (14 trials)"
