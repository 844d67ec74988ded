"""Every checked-in config parses into its class."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from kwrl.config import load_config
from kwrl.errors import ConfigError
from kwrl.train.local.config import TrainConfig
from kwrl.train.local.sft import SFTConfig
from kwrl.train.losses import DPPOLoss

CONFIGS = Path(__file__).resolve().parents[4] / "configs"


@pytest.mark.parametrize(
    ("name", "cls"), [("train_smollm2.toml", TrainConfig), ("sft_smollm2.toml", SFTConfig)]
)
def test_checked_in_config_parses(name: str, cls: type) -> None:
    cfg = load_config(cls, CONFIGS / name, ["dataset=/tmp/x"])
    assert cfg.dataset == Path("/tmp/x")


def test_train_defaults_are_the_recipes_algorithm() -> None:
    cfg = TrainConfig(dataset=Path("d"))
    assert cfg.learner.loss == DPPOLoss(delta_low=0.15, delta_high=0.15, divergence="binary_tv")
    assert cfg.learner.reduction == "prompt_mean"
    assert cfg.learner.kl_coef == 0.0 and cfg.rl.norm_adv_by_std is False


def test_train_trials_run_kwrl_agent_on_the_engine_graded_by_the_judge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("KWRL_JUDGE_TIMEOUT_S", "30")
    cfg = load_config(TrainConfig, CONFIGS / "train_smollm2.toml",
                      ["dataset=/tmp/x", "judge=http://127.0.0.1:9/v1#judge"])  # fmt: skip
    rcfg = cfg.rollout_config(Path("/ckpt/v3"), "trainer-1")
    # the trainer hands its own engine to the agents by handle, not by a config to load again
    assert (rcfg.agent, rcfg.model) == ("kwrl.agent:KwrlAgent", "live:trainer-1")
    assert rcfg.agent_settings is not None and rcfg.agent_settings.tokenizer == "/ckpt/v3"
    # no engine or vLLM settings ride along: the agents load nothing
    assert rcfg.agent_settings.policy.model_fields_set == set() and rcfg.agent_kwargs == {}
    assert rcfg.verifier_env == {
        "KWRL_JUDGE": "http://127.0.0.1:9/v1#judge",
        "KWRL_JUDGE_TIMEOUT_S": "30",
    }
    assert TrainConfig(dataset=Path("d")).rollout_config(Path("p"), "h").verifier_env == {}


def _kwrl(*args: str) -> subprocess.CompletedProcess[str]:
    kwrl = Path(sys.executable).with_name("kwrl")
    return subprocess.run([str(kwrl), *args], capture_output=True, text=True, timeout=120)


def test_a_misspelt_agent_field_fails_at_load_naming_the_file_and_field(tmp_path: Path) -> None:
    cfg = tmp_path / "train.toml"
    cfg.write_text('dataset = "/nonexistent"\n\n[agent]\nmax_step = 3\n')
    from_file = _kwrl("train", str(cfg))
    assert from_file.returncode == 2, from_file.stderr
    assert f"{cfg}: invalid config" in from_file.stderr + from_file.stdout
    assert "agent.max_step: Extra inputs are not permitted" in from_file.stderr + from_file.stdout

    override = _kwrl("train", str(CONFIGS / "train_smollm2.toml"), "agent.max_step=3")
    assert override.returncode == 2, override.stderr
    out = override.stderr + override.stdout
    assert "train_smollm2.toml: invalid config" in out and "agent.max_step:" in out

    sft = _kwrl("train", "sft", str(CONFIGS / "sft_smollm2.toml"), "agent.max_step=3")
    assert sft.returncode == 2 and "agent.max_step:" in sft.stderr + sft.stdout


def test_the_train_config_imports_no_torch() -> None:
    code = "import sys, kwrl.train.local.config; assert 'torch' not in sys.modules, 'torch'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_learner_reductions_are_the_algorithms() -> None:
    from kwrl.train.algorithms import Reduction
    from kwrl.train.local.config import LearnerConfig

    assert get_args(LearnerConfig.model_fields["reduction"].annotation) == get_args(Reduction)


def test_trials_get_only_the_agent_fields_the_config_sets() -> None:
    cfg = load_config(TrainConfig, None, ["dataset=d", "agent.tools=['filesystem_*']"])
    own = cfg.rollout_config(Path("p"), "h").agent_settings
    assert own is not None
    assert own.agent.model_dump(exclude_unset=True) == {"tools": ["filesystem_*"]}
    default = TrainConfig(dataset=Path("d")).rollout_config(Path("p"), "h").agent_settings
    assert default is not None
    assert (default.agent.max_steps, default.agent.max_tokens_per_turn) == (6, 256)


def _refused_agent(tmp_path: Path, agent: str) -> tuple[Path, str]:
    """(the config, `kwrl train`'s output) of a train.toml whose `[agent]` holds `agent`, which
    `kwrl train` refuses (exit 2, the file named)."""
    cfg = tmp_path / "train.toml"
    cfg.write_text(f'dataset = "/nonexistent"\n\n[agent]\n{agent}\n')
    refused = _kwrl("train", str(cfg))
    out = refused.stderr + refused.stdout
    assert refused.returncode == 2, out
    assert f"{cfg}: invalid config" in out
    return cfg, out


def test_an_agent_sampling_at_another_temperature_than_the_learner_scores_is_refused(
    tmp_path: Path,
) -> None:
    cfg, out = _refused_agent(tmp_path, "temperature = 0.7")
    assert "agent.temperature = 0.7 but learner.temperature = 1.0" in out
    with pytest.raises(ConfigError, match=r"agent\.temperature = 0\.7 but learner\.temperature"):
        load_config(TrainConfig, CONFIGS / "train_smollm2.toml", ["agent.temperature=0.7"])
    both = load_config(TrainConfig, cfg, ["learner.temperature=0.7"])
    assert both.agent.temperature == both.learner.temperature == 0.7
    # greedy rollouts (temperature 0) have no logprobs a learner could score them by
    with pytest.raises(ConfigError, match=r"learner\.temperature"):
        load_config(TrainConfig, cfg, ["agent.temperature=0", "learner.temperature=0"])


def test_an_agent_sampling_a_top_p_nucleus_the_learner_never_scores_is_refused(
    tmp_path: Path,
) -> None:
    _, out = _refused_agent(tmp_path, "top_p = 0.9")
    assert "agent.top_p = 0.9 but the learner scores the whole distribution at" in out
    assert "learner.temperature" in out
    with pytest.raises(ConfigError, match=r"agent\.top_p = 0\.95 .* learner\.temperature"):
        load_config(TrainConfig, CONFIGS / "train_smollm2.toml", ["agent.top_p=0.95"])
    whole = load_config(TrainConfig, CONFIGS / "train_smollm2.toml", ["agent.top_p=1.0"])
    assert whole.agent.top_p == 1.0
