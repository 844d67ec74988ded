"""Every launch script's arguments parse and validate with SkyRL's own config code.

Each script runs for real under `KWRL_DRY_RUN=1` (it prints the argv it would hand to its entry
point); the test feeds that argv to the entry point's own loader: SkyRL's `from_cli_overrides`,
`validate_cfg` (or `validate_generator_cfg` for eval), the fully-async trainer's constraints and
kwrl's section. Then the hero hyperparameters of DESIGN §7 are checked value by value.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kwrl.errors import ConfigError

SCRIPTS = Path(__file__).resolve().parents[4] / "scripts" / "skyrl"


def script_args(name: str, tmp_path: Path, **extra: str) -> list[str]:
    env = {**os.environ, "KWRL_DRY_RUN": "1", "KWRL_SKYRL_ROOT": str(tmp_path), **extra}
    out = subprocess.run(
        ["bash", str(SCRIPTS / name)], env=env, check=True, capture_output=True, text=True
    )
    return out.stdout.splitlines()


@pytest.fixture(autouse=True)
def _wandb_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_API_KEY", "test")  # SkyRL's validation only checks it is set


def assert_hero(cfg: Any) -> None:
    a = cfg.trainer.algorithm
    opt = cfg.trainer.policy.optimizer_config
    assert a.advantage_estimator == "grpo" and a.grpo_norm_by_std is False
    assert a.zero_variance_filter is True
    assert a.policy_loss_type == "dppo" and (a.dppo.delta_low, a.dppo.delta_high) == (0.15, 0.15)
    assert a.loss_reduction == "prompt_mean"
    assert a.use_kl_loss is False and a.use_kl_in_reward is False
    assert opt.lr == 1e-6 and list(opt.adam_betas) == [0.9, 0.98]
    assert opt.weight_decay == 0.01 and opt.max_grad_norm == 1.0
    assert cfg.generator.sampling_params.temperature == 1.0 and a.temperature == 1.0
    assert cfg.trainer.epochs == 3 and cfg.trainer.ckpt_interval == 5


def test_smoke_script_is_the_1gpu_sync_colocated_run(tmp_path: Path) -> None:
    from kwrl.train.skyrl.config import kwrl_section
    from kwrl.train.skyrl.main_train import load

    cfg = load(script_args("smoke_1gpu.sh", tmp_path))
    assert_hero(cfg)
    t = cfg.trainer
    assert t.policy.model.path == "Qwen/Qwen3.5-0.8B"
    assert t.placement.colocate_all and not t.fully_async.enabled
    assert (
        t.placement.policy_num_gpus_per_node == 1
        and cfg.generator.inference_engine.num_engines == 1
    )
    assert (t.train_batch_size, cfg.generator.n_samples_per_prompt, t.max_training_steps) == (
        2,
        2,
        2,
    )
    k = kwrl_section(cfg)
    assert k.sandbox.environment == "local" and k.trials_dir.startswith(str(tmp_path))


def test_the_generator_asks_for_the_lora_adapter_when_fsdp_trains_lora(tmp_path: Path) -> None:
    # SkyRL's FSDP worker registers the trained adapter on vLLM as `skyrl-lora`; a request for the
    # served base name samples the weights before training, so every step would be on-policy for
    # a model that never changes.
    from kwrl.train.skyrl.generator import served_policy_name
    from kwrl.train.skyrl.main_train import load

    argv = script_args("smoke_1gpu.sh", tmp_path)
    assert served_policy_name(load(argv)) == "policy"
    lora = load([*argv, "trainer.policy.model.lora.rank=32", "trainer.policy.model.lora.alpha=64"])
    assert lora.trainer.policy.model.lora.rank == 32
    assert served_policy_name(lora) == "skyrl-lora"


@pytest.mark.parametrize(
    ("script", "model"),
    [
        ("fully_async_35b.sh", "Qwen/Qwen3.6-35B-A3B"),
        ("fully_async_397b.sh", "Qwen/Qwen3.5-397B-A17B"),
    ],
)
def test_hero_scripts_are_fully_async_16x16_with_staleness_3(
    script: str, model: str, tmp_path: Path
) -> None:
    from kwrl.train.skyrl.config import kwrl_section
    from kwrl.train.skyrl.main_fully_async import load_fully_async

    cfg = load_fully_async(script_args(script, tmp_path))
    assert_hero(cfg)
    t = cfg.trainer
    assert t.policy.model.path == model
    assert t.fully_async.enabled and t.fully_async.max_staleness_steps == 3
    assert not t.placement.colocate_all
    assert (t.train_batch_size, t.policy_mini_batch_size, cfg.generator.n_samples_per_prompt) == (
        16,
        16,
        16,
    )
    k = kwrl_section(cfg)
    assert k.sandbox.environment == "modal" and k.retries == 2
    assert k.agent.max_steps == 100 and k.judge == "litellm:gemini/gemini-2.5-flash"


def test_eval_script_runs_the_apex_set_with_250_steps(tmp_path: Path) -> None:
    from kwrl.train.skyrl.config import kwrl_section
    from kwrl.train.skyrl.main_eval import load

    cfg = load(script_args("eval_apex.sh", tmp_path))
    assert cfg.data.val_data == [str(tmp_path / "apex-eval" / "apex480.parquet")]
    assert cfg.generator.eval_n_samples_per_prompt == 1 and cfg.trainer.eval_batch_size == 480
    assert kwrl_section(cfg).agent.max_steps == 250
    assert kwrl_section(cfg).judge == "litellm:gemini/gemini-2.5-flash"


def test_eval_script_without_a_judge_for_machine_checked_tasks(tmp_path: Path) -> None:
    from kwrl.train.skyrl.config import kwrl_section
    from kwrl.train.skyrl.main_eval import load

    cfg = load(script_args("eval_apex.sh", tmp_path, KWRL_JUDGE=""))
    assert kwrl_section(cfg).judge is None


def test_a_misspelt_kwrl_key_is_an_error_naming_it() -> None:
    from kwrl.train.skyrl.config import parse_overrides

    with pytest.raises(ConfigError, match=r"kwrl\.concurency"):
        parse_overrides(["kwrl.concurency=4"])


def test_fully_async_constraints_are_checked_before_ray(tmp_path: Path) -> None:
    from kwrl.train.skyrl.main_fully_async import load_fully_async

    args = script_args("fully_async_35b.sh", tmp_path)
    with pytest.raises(ConfigError, match="colocate_all"):
        load_fully_async(
            [
                *args,
                "trainer.placement.colocate_all=true",
                "trainer.placement.policy_num_gpus_per_node=8",
                "generator.inference_engine.tensor_parallel_size=2",
            ]
        )
    with pytest.raises(ConfigError, match="policy_loss_type"):
        load_fully_async([*args, "trainer.algorithm.policy_loss_type=regular"])
    with pytest.raises(ConfigError, match="num_parallel_generation_workers"):
        load_fully_async([*args, "trainer.fully_async.num_parallel_generation_workers=65"])


def test_packed_micro_batches_without_flash_attention_are_refused_before_ray(
    tmp_path: Path,
) -> None:
    """The lent H200's first smoke ended at step 0 on SkyRL's model-wrapper assertion: SDPA
    (`trainer.flash_attn=false`) with `trainer.remove_microbatch_padding` on (its default)."""
    from kwrl.train.skyrl.main_train import load

    cfg = load(script_args("smoke_1gpu.sh", tmp_path))  # the `gpu` extra has no flash-attn
    assert not cfg.trainer.flash_attn and not cfg.trainer.remove_microbatch_padding
    args = script_args("smoke_1gpu.sh", tmp_path, FLASH_ATTN="true")
    cfg = load(args)
    assert cfg.trainer.flash_attn and cfg.trainer.remove_microbatch_padding
    with pytest.raises(ConfigError, match=r"trainer\.remove_microbatch_padding=false"):
        load([*args, "trainer.flash_attn=false"])


def test_a_temperature_unlike_the_generators_is_refused_before_ray(tmp_path: Path) -> None:
    """The generator sets the agent's temperature from generator.sampling_params and the trainer
    scores at trainer.algorithm.temperature: either unlike the generator's is an error naming both
    keys, not an off-policy run (or a kwrl.agent.temperature silently overridden)."""
    from kwrl.train.skyrl.main_train import load

    args = script_args("smoke_1gpu.sh", tmp_path)
    assert load([*args, "kwrl.agent.temperature=1.0"]).trainer.algorithm.temperature == 1.0
    for key in ("kwrl.agent.temperature", "trainer.algorithm.temperature"):
        want = f"{key} = 0.7 but generator.sampling_params.temperature = 1.0"
        with pytest.raises(ConfigError, match=re.escape(want)):
            load([*args, f"{key}=0.7"])
    both = [*args, "generator.sampling_params.temperature=0.7", "kwrl.agent.temperature=0.7"]
    assert load(both).trainer.algorithm.temperature == 0.7


def test_a_truncated_sampling_distribution_is_refused_before_ray(tmp_path: Path) -> None:
    """SkyRL's trainer scores the whole softmax: a top_p below 1 (the agent samples with it) is
    off-policy, and a top_k or min_p (the agent has none) would be ignored; each is an error
    naming its key and the trainer's temperature key."""
    from kwrl.train.skyrl.main_train import load

    args = script_args("smoke_1gpu.sh", tmp_path)
    for setting in ("generator.sampling_params.top_p=0.9", "generator.sampling_params.top_k=20",
                    "generator.sampling_params.min_p=0.05", "kwrl.agent.top_p=0.9"):  # fmt: skip
        key = setting.split("=")[0]
        with pytest.raises(ConfigError, match=rf"{re.escape(key)} = .* but trainer\.algorithm\."):
            load([*args, setting])
    assert load([*args, "kwrl.agent.top_p=1.0"]).generator.sampling_params.top_p == 1.0


def test_the_refused_pair_is_the_one_skyrls_model_wrapper_asserts_on() -> None:
    """SkyRL's own wrapper (with kwrl's flash-attn stand-in where flash-attn is missing): SDPA with
    packing fails its assertion; SDPA without packing builds (around no model: None)."""
    code = """
        from kwrl.train.skyrl import compat
        compat.setup_worker()
        from skyrl.backends.skyrl_train.workers.model_wrapper import HFModelWrapper
        for padding in (True, False):
            try:
                HFModelWrapper(None, use_flash_attention_2=False, remove_microbatch_padding=padding)
            except AssertionError as e:
                print(padding, "assert", e)
            else:
                print(padding, "built")
    """
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300,
        env={**os.environ}, check=False,
    )  # fmt: skip
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) == 2, out.stderr[-3000:]
    assert lines[0].startswith("True assert") and "remove_microbatch_padding" in lines[0]
    assert lines[1] == "False built"


def test_the_kwrl_section_is_the_trial_settings_of_every_verb() -> None:
    """Same keys and defaults as `kwrl eval`'s; 0.1.0's keys are refused, naming the key."""
    from kwrl.rollout.settings import TrialSettings
    from kwrl.train.skyrl.config import KwrlSection, kwrl_section

    section, settings = KwrlSection(), TrialSettings()
    for name in TrialSettings.model_fields:
        assert getattr(section, name) == getattr(settings, name), name
    for old in ({"agent": "pkg.mod:Agent"}, {"agent_kwargs": {"max_steps": 6}},
                {"environment_kwargs": {}}, {"judge_env": {"KWRL_X": "1"}}):  # fmt: skip
        with pytest.raises(ConfigError, match=f"kwrl.{next(iter(old))}"):
            kwrl_section(old)
