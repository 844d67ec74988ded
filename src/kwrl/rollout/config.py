"""`kwrl rollout`'s and `kwrl trial run`'s configs: `RolloutRun` and `TrialRunConfig` (their flags).

A module of its own, importing neither harbor nor the agent loop, so that the `kwrl` command
builds their flags from it (`kwrl.cli_config`) without loading what the trials run with.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from kwrl.config import OutputConfig
from kwrl.rollout.settings import HARBOR_AGENTS, KWRL_AGENT, TrialSettings

if TYPE_CHECKING:
    from kwrl.rollout.runner import RolloutConfig


class RolloutRun(TrialSettings, OutputConfig):
    """`kwrl rollout`'s config (its flags): which agent and model, how many trials per task, where
    they go; how each trial runs comes from `TrialSettings`."""

    dataset: Path
    """A dataset dir (tasks/*), a dir of task dirs, or one task dir."""
    model: str | None = None
    """oracle, nop (harbor's agents), or a policy spec that KwrlAgent samples
    (http://HOST:PORT/v1#NAME, litellm:..., engine:...); with `harbor_agent`, the model name
    handed to that agent. None: oracle, or `harbor_agent` without a model name."""
    harbor_agent: str | None = None
    """Another harbor agent, module:Class, run instead of KwrlAgent (with `agent_kwargs`, and the
    agent.* settings this config sets)."""
    agent_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Further keyword arguments of `harbor_agent`; for KwrlAgent only its own kwargs
    (`kwrl.agent.config.KWRL_AGENT_KWARGS`)."""
    n_samples: int = Field(default=1, ge=1)
    """Trials per task (the group size)."""
    out: Path = Path("runs/rollout")
    """Output dir: trials/ and summary.json."""

    def rollout_config(self) -> RolloutConfig:
        """The RolloutConfig of this run (`build_rollout_config`); KwrlAgent's kwargs are
        checked before any trial starts (ConfigError naming each key)."""
        from kwrl.agent.config import check_agent_kwargs
        from kwrl.rollout.runner import build_rollout_config

        agent = self.harbor_agent or KWRL_AGENT
        model = self.model if self.model or self.harbor_agent else HARBOR_AGENTS[0]
        if agent == KWRL_AGENT and model not in HARBOR_AGENTS:
            check_agent_kwargs(self.agent_kwargs, "agent_kwargs")
        return build_rollout_config(
            self, model, agent=agent, agent_kwargs=self.agent_kwargs, n_samples=self.n_samples
        )


class TrialRunConfig(RolloutRun):
    """`kwrl trial run`'s config (its flags): `RolloutRun` for one trial of one task, which adds
    its trial dir to `out` (the verb leaves out `n_samples`, `concurrency` and `retries`)."""

    out: Path = Path("runs/trials")
    """Dir of trial dirs: each run adds a new one (task__agent[-N]), nothing there is replaced."""
