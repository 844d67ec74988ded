"""The trainer's held-out evaluations: when they run, under which policy spec, with what settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kwrl.train.local.config import HeldoutConfig, RLConfig, TrainConfig
from kwrl.train.local.heldout import eval_config, handle_of, is_due


def _cfg(tmp_path: Path, **heldout: object) -> TrainConfig:
    return TrainConfig(
        dataset=tmp_path / "train", out=tmp_path / "run", rl=RLConfig(steps=6),
        heldout=HeldoutConfig(dataset=tmp_path / "heldout", **heldout),  # type: ignore[arg-type]
        concurrency=7, sandbox={"allow_missing_limits": True},
    )  # fmt: skip


def test_evaluations_run_at_the_start_every_n_steps_and_at_the_end(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, every=4)
    due = [s for s in range(7) if is_due(cfg, s, last=s == 6)]
    assert due == [0, 4, 6]
    only_ends = _cfg(tmp_path, every=0)
    assert [s for s in range(7) if is_due(only_ends, s, last=s == 6)] == [0, 6]


def test_no_held_out_dataset_means_no_evaluation(tmp_path: Path) -> None:
    cfg = TrainConfig(dataset=tmp_path / "train")
    assert not is_due(cfg, 0, last=True)


def test_the_policy_handle_is_the_same_for_every_process_of_a_run(tmp_path: Path) -> None:
    assert handle_of(tmp_path / "a") == handle_of(tmp_path / "a" / ".." / "a")
    assert handle_of(tmp_path / "a") != handle_of(tmp_path / "b")


def test_an_evaluation_runs_trials_as_the_trainer_does(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, every=2, temperature=0.0, concurrency=32, sample_seed=5)
    ecfg = eval_config(cfg, 4, tmp_path / "policy")
    assert ecfg.model == f"live:{handle_of(cfg.out)}"
    assert ecfg.out == cfg.out / "heldout" / "step-000004"
    assert ecfg.dataset == tmp_path / "heldout" and ecfg.sample_seed == 5
    assert ecfg.concurrency == 32 and ecfg.sandbox.allow_missing_limits
    assert ecfg.agent.temperature == 0.0 and ecfg.agent.max_steps == cfg.agent.max_steps
    assert ecfg.tokenizer == str(tmp_path / "policy")


def test_held_out_evaluations_run_in_sync_and_async_mode_not_disaggregated(tmp_path: Path) -> None:
    for mode in ("sync", "async"):
        TrainConfig(
            dataset=tmp_path, rl=RLConfig(mode=mode),
            heldout=HeldoutConfig(dataset=tmp_path / "heldout"),
        )  # fmt: skip
    with pytest.raises(ValidationError, match=r"heldout\.dataset"):
        TrainConfig(
            dataset=tmp_path, rl=RLConfig(mode="disaggregated"), lora={"rank": 0},
            heldout=HeldoutConfig(dataset=tmp_path / "heldout"),
        )  # fmt: skip
