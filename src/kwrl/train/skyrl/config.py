"""SkyRL's config with a `kwrl` section: how the generator runs harbor trials.

`KwrlSkyRLConfig` is SkyRL 0.3.0's `SkyRLTrainConfig` plus one field, `kwrl`, so launch scripts
are plain SkyRL override lists (`trainer.algorithm.policy_loss_type=dppo ... kwrl.dataset=D
kwrl.sandbox.environment=modal kwrl.agent.max_steps=100`) parsed by SkyRL's own
`from_cli_overrides`. The section embeds `kwrl.rollout.settings.TrialSettings` (the trial settings
of every kwrl verb, same keys and defaults). It is kept a dict on the SkyRL side (SkyRL builds its
configs from dataclasses) and validated into the pydantic `KwrlSection` by `kwrl_section(cfg)`, so
a typo in a kwrl key is an error naming the key, like everywhere else in kwrl.

Non-obvious choice: judge credentials never go in the config, nor in any trial's files. `judge`
names the judge (`litellm:gemini/gemini-2.5-flash`) and `verifier_env` holds settings
(`KWRL_JUDGE_CONCURRENCY=8`); `judge_env_passthrough` names host
variables (the API keys) that reach every verifier's environment as harbor templates `${VAR}`,
which harbor fills in from the host environment when the verifier starts (as `kwrl eval` does:
`kwrl.grading.judges.judge_env`), so a key's value is never written into a trial's config.json.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError
from skyrl.train.config import SkyRLTrainConfig

from kwrl.errors import ConfigError
from kwrl.rollout.settings import TrialSettings

AGENT_IMPORT_PATH = "kwrl.train.skyrl.agent:SkyRLKwrlAgent"
ENV_CLASS = "kwrl"
"""`env_class` of kwrl prompts in SkyRL datasets (the generator runs harbor, not skyrl-gym)."""


class KwrlSection(TrialSettings):
    """The `kwrl.*` keys of a SkyRL run: where tasks are, and how their trials run, as in every
    kwrl verb (`TrialSettings`: `kwrl.concurrency`, `kwrl.agent.max_steps`, `kwrl.sandbox.*`,
    `kwrl.judge`, ...)."""

    dataset: str | None = None
    """kwrl dataset dir (`DATASET/tasks/<slug>/`); prompts parquet rows point into it."""
    prompt_workers: int = Field(default=1, ge=1)
    """Processes SkyRL's prompt datasets are tokenized and length-filtered with. SkyRL's own 8 spawn
    a pool per dataset (about 35 s each on a busy 16-core GPU host for 200 prompts, before vLLM
    starts); one process filters a few thousand prompts in seconds. Raise it for very large sets."""
    trials_dir: str = "~/kwrl-skyrl/trials"
    """Where harbor trial dirs go, one subdir per generate call (keep them: TITO arrays, grades)."""
    harbor_agent: str = AGENT_IMPORT_PATH
    """Agent import path; the default is KwrlAgent with SkyRL session ids and cache salts."""
    judge_env_passthrough: list[str] = Field(
        default_factory=lambda: ["GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY"]
    )
    """Host environment variables passed to the verifier when set (as `${VAR}` templates)."""
    policy_url: str | None = None
    """OpenAI-compatible base URL ending in /v1 of the policy; default: SkyRL's inference
    router (`inference_engine_client.get_endpoint_url()` + /v1)."""
    policy_model: str | None = None
    """Model name sent to the policy; default: the name SkyRL serves the policy by (its LoRA
    adapter's, `skyrl-lora`, when FSDP trains LoRA; else generator.inference_engine.served_model_name,
    else trainer.policy.model.path, vLLM's default served name)."""

    def verifier_environment(self) -> dict[str, str]:
        """The verifier environment of every trial: the passthrough variables that are set on
        this host as `${VAR}` templates (harbor resolves them at verifier start), then
        `verifier_env` (the judge's own settings come with `judge`, `build_rollout_config`)."""
        env = {k: "${" + k + "}" for k in self.judge_env_passthrough if os.environ.get(k)}
        return {**env, **self.verifier_env}

    def trials_path(self) -> Path:
        return Path(self.trials_dir).expanduser()


@dataclass
class KwrlSkyRLConfig(SkyRLTrainConfig):
    """SkyRLTrainConfig with kwrl's harbor-trial section (validated by `kwrl_section`)."""

    kwrl: dict[str, Any] = field(default_factory=dict)


def kwrl_section(cfg: Any) -> KwrlSection:
    """The validated `kwrl` section of a `KwrlSkyRLConfig` (or a plain dict)."""
    raw = cfg if isinstance(cfg, dict) else getattr(cfg, "kwrl", {})
    try:
        return KwrlSection.model_validate(dict(raw))
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"kwrl.{loc}: {first['msg']} (config section kwrl)") from e


def parse_overrides(args: list[str]) -> KwrlSkyRLConfig:
    """What the entry points do with argv: SkyRL's parser, then the kwrl section's validation."""
    cfg = KwrlSkyRLConfig.from_cli_overrides(args)
    assert isinstance(cfg, KwrlSkyRLConfig)
    kwrl_section(cfg)
    return cfg


def check_policy_model(cfg: Any) -> None:
    """What SkyRL 0.3.0's policy model wrapper asserts once its FSDP worker builds the model,
    checked before Ray starts. Raises ConfigError.

    Packed micro-batches (`trainer.remove_microbatch_padding`, on by default) need FlashAttention-2:
    with `trainer.flash_attn=false` (SDPA; where flash-attn does not import, kwrl.train.skyrl.compat)
    the wrapper's `AssertionError` otherwise ends the run at step 0 (seen on the lent H200).
    """
    t = cfg.trainer
    if t.remove_microbatch_padding and not t.flash_attn:
        raise ConfigError(
            "trainer.remove_microbatch_padding=true needs trainer.flash_attn=true (SkyRL packs "
            "micro-batches only with FlashAttention-2); with trainer.flash_attn=false pass "
            "trainer.remove_microbatch_padding=false"
        )


def check_temperature(cfg: Any) -> None:
    """The agent samples at the temperature SkyRL's trainer scores at. Raises ConfigError.

    The generator sets each trial's agent temperature from `generator.sampling_params`
    (`KwrlHarborGenerator.agent_sampling`), so a different `kwrl.agent.temperature` would be
    ignored without a word; and a `trainer.algorithm.temperature` unlike the generator's scores
    the rollouts at another temperature than they were sampled at (SkyRL copies the generator's
    only when it is unset): training goes off-policy. Checked before Ray starts.
    """
    sampled = cfg.generator.sampling_params.temperature
    agent = kwrl_section(cfg).agent
    pairs = [
        ("trainer.algorithm.temperature", cfg.trainer.algorithm.temperature),
        (
            "kwrl.agent.temperature",
            agent.temperature if "temperature" in agent.model_fields_set else None,
        ),
    ]
    for key, value in pairs:
        if value is not None and value != sampled:
            raise ConfigError(
                f"{key} = {value} but generator.sampling_params.temperature = {sampled}: the "
                "rollouts would be scored at another temperature than they were sampled at "
                "(off-policy); set both to the same value"
            )


UNTRUNCATED = {"top_p": 1.0, "top_k": -1, "min_p": 0.0}
"""`generator.sampling_params` values that leave the distribution whole (SkyRL's defaults)."""


def check_truncation(cfg: Any) -> None:
    """The rollouts sample the whole distribution, as SkyRL's trainer scores them. Raises ConfigError.

    The trainer scores each token under the full softmax at `trainer.algorithm.temperature`; a
    `top_p` below 1 (the generator hands it to every trial's agent) samples from a nucleus the
    trainer never scores (off-policy), and kwrl's agent samples with no `top_k` or `min_p`, so
    either set would be ignored without a word. Checked before Ray starts.
    """
    sp = cfg.generator.sampling_params
    agent = kwrl_section(cfg).agent
    pairs = [
        (f"generator.sampling_params.{k}", getattr(sp, k, v), v) for k, v in UNTRUNCATED.items()
    ]
    if "top_p" in agent.model_fields_set:
        pairs.append(("kwrl.agent.top_p", agent.top_p, 1.0))
    for key, value, whole in pairs:
        if value is not None and value != whole:
            raise ConfigError(
                f"{key} = {value} but trainer.algorithm.temperature scores the whole distribution "
                f"(kwrl's agent and SkyRL's trainer model no truncation): training would go "
                f"off-policy or the setting be ignored; set {key} = {whole}"
            )


def check_fully_async(cfg: Any) -> None:
    """SkyRL's FullyAsyncRayPPOTrainer constructor checks, run before Ray starts.

    The trainer asserts these only once its workers are placed (minutes into a cluster job);
    checking them at parse time makes a bad launch script fail at once. Raises ConfigError.
    """
    from skyrl.backends.skyrl_train.utils.ppo_utils import LOSSES_WITH_OLD_LOGPROBS

    old_logprob_losses = {str(getattr(x, "value", x)) for x in LOSSES_WITH_OLD_LOGPROBS}
    t = cfg.trainer
    fa = t.fully_async
    checks = [
        (fa.enabled, "trainer.fully_async.enabled must be true"),
        (
            not t.placement.colocate_all,
            "trainer.placement.colocate_all must be false (no colocation)",
        ),
        (
            t.policy_mini_batch_size
            <= fa.num_parallel_generation_workers
            <= t.policy_mini_batch_size * (fa.max_staleness_steps + 1),
            "trainer.fully_async.num_parallel_generation_workers must lie in "
            "[policy_mini_batch_size, policy_mini_batch_size * (max_staleness_steps + 1)]",
        ),
        (
            t.train_batch_size == t.policy_mini_batch_size,
            "trainer.train_batch_size must equal trainer.policy_mini_batch_size",
        ),
        (
            t.algorithm.dynamic_sampling.type is None,
            "trainer.algorithm.dynamic_sampling.type must be null",
        ),
        (not cfg.generator.batched, "generator.batched must be false"),
        (
            t.algorithm.policy_loss_type not in old_logprob_losses,
            "trainer.algorithm.policy_loss_type must use rollout logprobs (dppo or rollout_is)",
        ),
        (
            not fa.sample_full_batch or t.algorithm.zero_variance_filter,
            "trainer.fully_async.sample_full_batch needs trainer.algorithm.zero_variance_filter",
        ),
    ]
    for ok, msg in checks:
        if not ok:
            raise ConfigError(f"fully async config: {msg}")
