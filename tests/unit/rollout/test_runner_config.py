"""`build_rollout_config`: the one way a run's settings become a RolloutConfig (eval, train, smoke)."""

from __future__ import annotations

import pytest

from kwrl.rollout.runner import (
    KWRL_AGENT,
    JudgedTrials,
    TrialSettings,
    build_rollout_config,
)


def test_every_trial_setting_reaches_the_rollout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KWRL_JUDGE_TIMEOUT_S", "30")
    settings = JudgedTrials(
        concurrency=3, retries=0, environment="docker", environment_kwargs={"cpus": 2},
        agent_timeout_sec=90.0, judge="http://127.0.0.1:9/v1#j",
        verifier_env={"KWRL_JUDGE_TIMEOUT_S": "5", "EXTRA": "1"},
    )  # fmt: skip
    rcfg = build_rollout_config(
        settings, "http://127.0.0.1:8000/v1#m", agent_kwargs={"max_steps": 3}, n_samples=4
    )
    for name in set(TrialSettings.model_fields) - {"verifier_env"}:
        assert getattr(rcfg, name) == getattr(settings, name), name
    assert (rcfg.agent, rcfg.model, rcfg.n_samples) == (KWRL_AGENT, "http://127.0.0.1:8000/v1#m", 4)
    assert rcfg.agent_kwargs == {"max_steps": 3}
    # the judge's environment, with the config's own verifier_env over it
    assert rcfg.verifier_env == {
        "KWRL_JUDGE": "http://127.0.0.1:9/v1#j", "KWRL_JUDGE_TIMEOUT_S": "5", "EXTRA": "1",
    }  # fmt: skip


def test_harbor_agents_take_no_policy_and_no_kwargs() -> None:
    for name in ("oracle", "nop"):
        rcfg = build_rollout_config(JudgedTrials(), name, agent_kwargs={"max_steps": 3})
        assert (rcfg.agent, rcfg.model, rcfg.agent_kwargs) == (name, None, {})
    assert build_rollout_config(JudgedTrials(), "oracle").verifier_env == {}


def test_a_named_agent_runs_the_policy() -> None:
    rcfg = build_rollout_config(JudgedTrials(), "live:h", agent="pkg.mod:Agent")
    assert (rcfg.agent, rcfg.model) == ("pkg.mod:Agent", "live:h")
