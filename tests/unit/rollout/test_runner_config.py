"""`build_rollout_config`: the one way a run's settings become a RolloutConfig (eval, train, smoke)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kwrl.agent.config import SETTINGS_KWARG
from kwrl.errors import ConfigError
from kwrl.rollout.runner import (
    KWRL_AGENT,
    TrialRun,
    TrialSettings,
    build_rollout_config,
)


def test_every_trial_setting_reaches_the_rollout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KWRL_JUDGE_TIMEOUT_S", "30")
    settings = TrialSettings(
        concurrency=3, retries=0, sandbox={"environment": "docker", "kwargs": {"cpus": 2}},
        agent_timeout_sec=90.0, judge="http://127.0.0.1:9/v1#j",
        verifier_env={"KWRL_JUDGE_TIMEOUT_S": "5", "EXTRA": "1"}, agent={"max_steps": 3},
        tokenizer="tok", policy={"timeout_s": 5.0},
    )  # fmt: skip
    rcfg = build_rollout_config(
        settings, "http://127.0.0.1:8000/v1#m", agent_kwargs={"seed": 7}, n_samples=4
    )
    for name in TrialRun.model_fields:
        assert getattr(rcfg, name) == getattr(settings, name), name
    assert (rcfg.environment, rcfg.environment_kwargs) == ("docker", {"cpus": 2})
    assert (rcfg.agent, rcfg.model, rcfg.n_samples) == (KWRL_AGENT, "http://127.0.0.1:8000/v1#m", 4)
    # KwrlAgent's settings as one typed object, the AgentConfig fields of agent_kwargs over them
    own = rcfg.agent_settings
    assert own is not None and rcfg.agent_kwargs == {}
    assert own.agent.model_dump(exclude_unset=True) == {"max_steps": 3, "seed": 7}
    assert (own.tokenizer, own.policy.timeout_s) == ("tok", 5.0)
    # the judge's environment, with the config's own verifier_env over it
    assert rcfg.verifier_env == {
        "KWRL_JUDGE": "http://127.0.0.1:9/v1#j", "KWRL_JUDGE_TIMEOUT_S": "5", "EXTRA": "1",
    }  # fmt: skip


def test_harbor_agents_take_no_policy_and_no_kwargs() -> None:
    for name in ("oracle", "nop"):
        rcfg = build_rollout_config(TrialSettings(), name, agent_kwargs={"max_steps": 3})
        assert (rcfg.agent, rcfg.model, rcfg.agent_kwargs) == (name, None, {})
        assert rcfg.agent_settings is None
    assert build_rollout_config(TrialSettings(), "oracle").verifier_env == {}


def test_a_named_agent_runs_the_policy() -> None:
    rcfg = build_rollout_config(TrialSettings(), "live:h", agent="pkg.mod:Agent")
    assert (rcfg.agent, rcfg.model) == ("pkg.mod:Agent", "live:h")


def test_kwrl_agent_settings_cross_harbor_as_one_kwarg_validated_once(tmp_path: Path) -> None:
    """Out: the agent, policy and tokenizer settings are one model, dumped under `settings` in
    harbor's agent kwargs; KwrlAgent validates them back into the same model."""
    from kwrl.agent.harbor_agent import KwrlAgent
    from kwrl.rollout.runner import trial_config

    settings = TrialSettings(agent={"max_steps": 3}, tokenizer="tok", policy={"timeout_s": 5.0})
    rcfg = build_rollout_config(
        settings, "live:h", agent_kwargs={"temperature": 0.5, "session_id": "s"}
    )
    kwargs = trial_config(tmp_path / "task", rcfg, tmp_path / "trials", "t").agent.kwargs
    assert set(kwargs) == {SETTINGS_KWARG, "session_id"}
    agent = KwrlAgent(tmp_path, rcfg.model, settings=kwargs[SETTINGS_KWARG])
    assert agent.settings == rcfg.agent_settings
    assert (agent.config.max_steps, agent.config.temperature, agent.tokenizer_spec) == (
        3,
        0.5,
        "tok",
    )
    # a harbor command line's flat kwargs go over it, through the same one validation
    flat = KwrlAgent(tmp_path, "live:h", settings=kwargs[SETTINGS_KWARG], max_steps=9)
    assert (flat.config.max_steps, flat.config.temperature) == (9, 0.5)
    with pytest.raises(ConfigError, match=r"agent\.max_steps"):
        KwrlAgent(tmp_path, "live:h", settings={"agent": {"max_steps": 0}})


def test_an_agent_setting_no_agent_takes_fails_when_the_config_is_built() -> None:
    with pytest.raises(ConfigError, match=r"agent settings.*\n.*agent\.temperature"):
        build_rollout_config(TrialSettings(), "live:h", agent_kwargs={"temperature": -1})
