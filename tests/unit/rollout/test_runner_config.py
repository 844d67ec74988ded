"""`build_rollout_config`: the one way a run's settings become a RolloutConfig (eval, train, smoke)."""

from __future__ import annotations

import pytest

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
    assert rcfg.agent_kwargs == {
        "max_steps": 3, "tokenizer": "tok", "policy_config": {"timeout_s": 5.0}, "seed": 7,
    }  # fmt: skip
    # the judge's environment, with the config's own verifier_env over it
    assert rcfg.verifier_env == {
        "KWRL_JUDGE": "http://127.0.0.1:9/v1#j", "KWRL_JUDGE_TIMEOUT_S": "5", "EXTRA": "1",
    }  # fmt: skip


def test_harbor_agents_take_no_policy_and_no_kwargs() -> None:
    for name in ("oracle", "nop"):
        rcfg = build_rollout_config(TrialSettings(), name, agent_kwargs={"max_steps": 3})
        assert (rcfg.agent, rcfg.model, rcfg.agent_kwargs) == (name, None, {})
    assert build_rollout_config(TrialSettings(), "oracle").verifier_env == {}


def test_a_named_agent_runs_the_policy() -> None:
    rcfg = build_rollout_config(TrialSettings(), "live:h", agent="pkg.mod:Agent")
    assert (rcfg.agent, rcfg.model) == ("pkg.mod:Agent", "live:h")
