"""The disaggregated mode's checked-in config parses, and its backend follows the device layout."""

from __future__ import annotations

from pathlib import Path

import torch.distributed

from kwrl.config import load_config
from kwrl.train.local.config import TrainConfig
from kwrl.train.local.weight_sync import choose_backend

CONFIGS = Path(__file__).resolve().parents[4] / "configs"


def test_the_disaggregated_config_parses_with_cpu_overrides() -> None:
    cfg = load_config(TrainConfig, CONFIGS / "train_disaggregated.toml", ["dataset=/tmp/x"])
    assert cfg.rl.mode == "disaggregated"
    assert cfg.learner.device == "cuda:1" and cfg.disaggregated.generation_devices == ["cuda:0"]
    nccl = "nccl" if torch.distributed.is_nccl_available() else "gloo"  # CPU-only torch: gloo
    assert choose_backend(cfg.learner.device, cfg.disaggregated.generation_devices) == nccl
    cpu = load_config(
        TrainConfig,
        CONFIGS / "train_disaggregated.toml",
        ["dataset=/tmp/x", "learner.device=cpu", 'disaggregated.generation_devices=["cpu", "cpu"]'],
    )
    assert choose_backend(cpu.learner.device, cpu.disaggregated.generation_devices) == "gloo"
