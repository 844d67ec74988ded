"""`rollout_engine = "vllm"`: trials sample from the very engine the trainer pushes into."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kwrl.config import load_config
from kwrl.llm.policy import split_spec
from kwrl.train.local.config import TrainConfig


def test_trials_sample_from_the_trainers_own_engine_by_handle_whatever_its_kind() -> None:
    """The trainer registers its engine (kwrl's or vLLM) under a handle; the trials' agents reach
    it as `live:HANDLE` and are handed no engine or vLLM settings (they load nothing)."""
    for engine in ("engine", "vllm"):
        cfg = load_config(
            TrainConfig, None,
            ["dataset=/tmp/x", f"rollout_engine={engine}", "vllm.gpu_memory_utilization=0.25"],
        )  # fmt: skip
        rcfg = cfg.rollout_config(Path("/ckpt/v3"), "trainer-1")
        assert rcfg.model is not None and split_spec(rcfg.model) == ("live", "trainer-1")
        assert rcfg.agent_settings is not None
        assert rcfg.agent_settings.policy.model_fields_set == set()


def test_vllm_refuses_disaggregated_mode() -> None:
    with pytest.raises(ValidationError, match="rollout_engine = 'vllm' runs in the trainer"):
        TrainConfig(dataset=Path("d"), rollout_engine="vllm", rl={"mode": "disaggregated"})  # type: ignore[arg-type]
