"""Every checked-in config parses into its class."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwrl.config import load_config
from kwrl.train.local.config import TrainConfig
from kwrl.train.local.sft import SFTConfig

CONFIGS = Path(__file__).resolve().parents[4] / "configs"


@pytest.mark.parametrize(
    ("name", "cls"), [("train_smollm2.toml", TrainConfig), ("sft_smollm2.toml", SFTConfig)]
)
def test_checked_in_config_parses(name: str, cls: type) -> None:
    cfg = load_config(cls, CONFIGS / name, ["dataset=/tmp/x"])
    assert cfg.dataset == Path("/tmp/x")


def test_train_defaults_are_the_recipes_algorithm() -> None:
    cfg = TrainConfig(dataset=Path("d"))
    assert cfg.learner.loss == "dppo" and cfg.learner.reduction == "prompt_mean"
    assert cfg.learner.kl_coef == 0.0 and cfg.rl.norm_adv_by_std is False
    assert (cfg.learner.delta_low, cfg.learner.delta_high) == (0.15, 0.15)
