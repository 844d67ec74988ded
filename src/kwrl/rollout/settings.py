"""How each trial runs: one typed model, `TrialSettings`, shared by every verb that runs trials.

The configs of `kwrl eval`, `kwrl rollout`, `kwrl train` and `kwrl smoke` derive from
`TrialSettings`, flat in their TOML (`concurrency = 4`, `judge = "..."`, `[agent]`, `[sandbox]`),
and their flags are generated from its fields (`kwrl.cli_config`: `--concurrency 4`,
`--agent.max_steps 20`, `--sandbox.allow_missing_limits true`), so a setting has one name, one
default and one docstring everywhere. SkyRL's `kwrl` section embeds it too.

It owns the agent (`agent`: `kwrl.agent.config.AgentConfig`), the policy client (`tokenizer`,
`policy`), the judge and the sandbox (`sandbox`: the local sandbox's settings, typed, or another
environment's kwargs). `kwrl.rollout.runner.build_rollout_config` turns it into the
`RolloutConfig` harbor runs: the one place these become harbor's agent, environment and verifier
kwargs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from kwrl.agent.config import AgentConfig
from kwrl.config import KwrlConfig, format_validation_error
from kwrl.sandbox.base import LOCAL as LOCAL  # the preset TrialSettings defaults to
from kwrl.sandbox.base import SandboxSettings

KWRL_AGENT = "kwrl.agent:KwrlAgent"
"""Import path of KwrlAgent, the agent of every policy spec."""
HARBOR_AGENTS = ("oracle", "nop")
"""harbor's own agents: named where a model goes, they run without a policy."""


def table_of(value: Any) -> dict[str, Any]:
    """A nested setting as a dict: a model's set fields, a dict's items, {} for None."""
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_unset=True)
    return dict(value or {})


class TrialRun(KwrlConfig):
    """How a batch schedules its trials: shared by `TrialSettings` (what a user sets) and
    `RolloutConfig` (what harbor runs), so each default lives once."""

    concurrency: int = Field(default=4, ge=1)
    """Trials running at once."""
    retries: int = Field(default=2, ge=0)
    """Retries of a trial that failed for an infrastructure reason (never a failure of the policy)."""
    agent_timeout_sec: float | None = Field(default=None, gt=0)
    """Override of task.toml's agent timeout (seconds); None: the task's."""


class TrialSettings(TrialRun):
    """How each trial of a run goes, whatever the verb: schedule, agent, policy client, judge and
    sandbox (see the module doc)."""

    judge: str | None = None
    """Judge of criteria without a machine check: http(s)://HOST:PORT/v1#NAME or
    litellm:PROVIDER/MODEL. It reaches each trial's verifier as KWRL_JUDGE, with the host's
    KWRL_JUDGE_* settings and the judge's key variable (`kwrl.grading.judges.judge_env`).
    None: machine-checked criteria only."""
    verifier_env: dict[str, str] = Field(default_factory=dict)
    """More environment of the verifier (e.g. KWRL_JUDGE_* settings), over the judge's."""
    agent: AgentConfig = Field(default_factory=AgentConfig)
    """KwrlAgent's settings; a trial gets those the config sets (the rest are AgentConfig's)."""
    tokenizer: str | None = None
    """Tokenizer KwrlAgent renders with (packaged name, folder or hub id); None: the policy's
    (KWRL_TOKENIZER, or an engine: spec's model)."""
    policy: dict[str, Any] = Field(default_factory=dict)
    """KwrlAgent's policy client settings: `kwrl.llm.policy.PolicySettings` fields (`PolicyConfig`'s
    but `model`; e.g. timeout_s, engine.device, vllm.gpu_memory_utilization); checked here, typed
    where they cross to the agent (`kwrl.agent.config.KwrlAgentSettings.policy`)."""
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    """Where each trial runs (`sandbox.environment`) and the sandbox's settings."""

    @field_validator("policy")
    @classmethod
    def _policy_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        from kwrl.llm.policy import PolicyConfig

        if "model" in value:
            raise ValueError("the policy's model is the run's model, not a policy setting")
        try:
            PolicyConfig.model_validate(value)
        except ValidationError as e:
            raise ValueError(format_validation_error("policy", e).replace("\n", ";")) from None
        return value


def trial_panel(key: str) -> str | None:
    """The `--help` section of a flag: trial settings together, the verb's own under Options."""
    return TRIAL_PANEL if key.split(".")[0] in TrialSettings.model_fields else None


TRIAL_PANEL = "Trial settings (kwrl.rollout.settings.TrialSettings)"
