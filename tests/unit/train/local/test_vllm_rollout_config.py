"""`rollout_engine = "vllm"`: trials sample from the same shared vLLM engine the trainer pushes into."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kwrl.config import load_config
from kwrl.llm.policy import PolicyConfig, split_spec
from kwrl.train.local.config import TrainConfig


def test_trials_name_the_vllm_policy_with_the_trainers_vllm_settings() -> None:
    cfg = load_config(
        TrainConfig, None,
        ["dataset=/tmp/x", "rollout_engine=vllm", "vllm.gpu_memory_utilization=0.25"],
    )  # fmt: skip
    rcfg = cfg.rollout_config(Path("/ckpt/v3"), cfg.engine)
    assert split_spec(rcfg.model) == ("vllm", "/ckpt/v3")
    # The agent validates its policy_config into a PolicyConfig; the shared engine's key is the
    # model plus this config's JSON, so it must come out equal to the trainer's own.
    pcfg = PolicyConfig.model_validate({**rcfg.agent_kwargs["policy_config"], "model": rcfg.model})
    assert pcfg.vllm.model_dump_json() == cfg.vllm.model_dump_json()
    assert pcfg.vllm.gpu_memory_utilization == 0.25


def test_default_rollout_engine_is_kwrls() -> None:
    cfg = TrainConfig(dataset=Path("d"))
    assert cfg.rollout_config(Path("p"), cfg.engine).model == "engine:p"


def test_vllm_refuses_disaggregated_mode() -> None:
    with pytest.raises(ValidationError, match="rollout_engine = 'vllm' runs in the trainer"):
        TrainConfig(dataset=Path("d"), rollout_engine="vllm", rl={"mode": "disaggregated"})  # type: ignore[arg-type]
