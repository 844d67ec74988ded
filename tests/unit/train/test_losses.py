"""Policy losses as configs (kwrl.train.losses): each member of the union loads from its TOML table
and computes its function with its settings; the release before's flat spelling still loads."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from kwrl.config import load_config, save_config
from kwrl.errors import ConfigError
from kwrl.train.algorithms import LossOutput, dppo_loss, ppo_clip_loss
from kwrl.train.local.config import LearnerConfig, TrainConfig
from kwrl.train.losses import POLICY_LOSSES, DPPOLoss, PPOLoss


def _inputs() -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    old = -torch.rand(2, 5, generator=g) * 3
    lp = old + torch.randn(2, 5, generator=g) * 0.5
    adv = torch.tensor([[1.0] * 5, [-1.0] * 5])
    return lp, old, adv, torch.ones(2, 5)


def test_the_registry_is_the_union() -> None:
    assert dict(POLICY_LOSSES) == {"dppo": DPPOLoss, "ppo": PPOLoss}


@pytest.mark.parametrize(
    ("table", "reference"),
    [
        ('{kind = "ppo", eps_low = 0.1, eps_high = 0.28}',
         lambda *a: ppo_clip_loss(*a, eps_low=0.1, eps_high=0.28)),
        ('{kind = "dppo", delta_low = 0.05, delta_high = 0.3, divergence = "binary_kl"}',
         lambda *a: dppo_loss(*a, delta_low=0.05, delta_high=0.3, kind="binary_kl")),
    ],
)  # fmt: skip
def test_a_loss_table_computes_its_function_with_its_settings(
    table: str, reference: Callable[..., LossOutput]
) -> None:
    cfg = load_config(LearnerConfig, None, [f"loss={table}"])
    ours, theirs = cfg.loss.compute(*_inputs()), reference(*_inputs())
    assert torch.equal(ours.loss_B_T, theirs.loss_B_T)
    assert torch.equal(ours.clipped_B_T, theirs.clipped_B_T)


def test_a_saved_config_loads_back_with_its_loss(tmp_path: Path) -> None:
    cfg = TrainConfig(dataset=Path("d"), learner=LearnerConfig(loss=PPOLoss(eps_high=0.28)))
    save_config(cfg, tmp_path / "config.toml")
    assert load_config(TrainConfig, tmp_path / "config.toml") == cfg


def test_the_flat_spelling_of_0_1_0_is_refused_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "train.toml"
    path.write_text('dataset = "d"\n[learner]\nloss = "ppo"\n')
    with pytest.raises(ConfigError, match=r"(?s)train.toml: invalid config.*learner.loss: Input"):
        load_config(TrainConfig, path)
    with pytest.raises(ConfigError, match=r"learner.delta_high: Extra inputs"):
        load_config(TrainConfig, None, ["dataset=d", "learner.delta_high=0.3"])


def test_an_unknown_loss_or_setting_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"learner.loss: Input tag 'grpo' found using 'kind'"):
        load_config(TrainConfig, None, ["dataset=d", 'learner.loss={kind = "grpo"}'])
    with pytest.raises(ConfigError, match=r"learner.loss.ppo.delta_low: Extra inputs"):
        load_config(TrainConfig, None, ["dataset=d", 'learner.loss={kind = "ppo", delta_low = 1}'])
