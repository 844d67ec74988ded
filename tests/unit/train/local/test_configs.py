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


def test_train_trials_run_kwrl_agent_on_the_engine_graded_by_the_judge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("KWRL_JUDGE_TIMEOUT_S", "30")
    cfg = load_config(TrainConfig, CONFIGS / "train_smollm2.toml",
                      ["dataset=/tmp/x", "judge=http://127.0.0.1:9/v1#judge"])  # fmt: skip
    rcfg = cfg.rollout_config(Path("/ckpt/v3"), cfg.engine)
    assert (rcfg.agent, rcfg.model) == ("kwrl.agent:KwrlAgent", "engine:/ckpt/v3")
    assert rcfg.agent_kwargs["tokenizer"] == "/ckpt/v3"
    assert rcfg.verifier_env == {
        "KWRL_JUDGE": "http://127.0.0.1:9/v1#judge",
        "KWRL_JUDGE_TIMEOUT_S": "30",
    }
    assert TrainConfig(dataset=Path("d")).rollout_config(Path("p"), cfg.engine).verifier_env == {}
