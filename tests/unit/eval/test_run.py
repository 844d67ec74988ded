"""Eval runs: outcomes read from real trial files, the append-only log, resuming, config checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_testkit import agent_run, make_trial

from kwrl.errors import ConfigError
from kwrl.eval.run import (
    EvalConfig,
    append_outcome,
    lend_policy,
    outcome_from_record,
    plan,
    read_outcomes,
    record_from_dir,
    recover_or_clear,
    rollout_config,
    run_eval,
    task_labels,
    trial_seed,
)
from kwrl.llm.engines import live_engine, unregister_engine
from kwrl.llm.policy import PolicyConfig, build_policy
from kwrl.rollout.failures import FailureCause

TASK = "ib-w0000-002-compute"


def test_outcome_of_a_kwrl_agent_trial(tmp_path: Path, task_dir: Path) -> None:
    run = agent_run("The margin is 10.32%.", tool="filesystem_list_files", ok=False)
    d = make_trial(
        tmp_path / "trials", f"{TASK}__s0", reward=2 / 3, passed=[True, True, False], run=run
    )
    rec = record_from_dir(d, TASK, 0, 0)
    assert rec is not None and rec.cause is FailureCause.NONE
    assert rec.reward == pytest.approx(2 / 3)
    o = outcome_from_record(rec, task_labels(task_dir), tmp_path)
    assert (o.domain, o.expected_output, o.difficulty) == (
        "Investment Banking",
        "message_in_console",
        "medium",
    )
    assert o.task_name == "Project Golden Topaz: compute"
    assert o.trial_dir == f"trials/{TASK}__s0"
    assert (o.turns, o.input_tokens, o.output_tokens, o.stop_reason) == (2, 300, 42, "stop")
    assert o.tools["filesystem_list_files"].model_dump() == {"calls": 1, "ok": 0}
    assert [c.passed for c in o.criteria] == [True, True, False]
    assert o.criteria[0].method == "machine" and o.criteria[0].is_primary_objective
    assert not o.passed and o.final_answer == "The margin is 10.32%."
    assert o.seconds == pytest.approx(48.386093)


def test_a_trial_without_reward_is_an_error_that_fails(tmp_path: Path, task_dir: Path) -> None:
    d = make_trial(tmp_path / "trials", f"{TASK}__s0", reward=None)
    rec = record_from_dir(d, TASK, 0, 0)
    assert rec is not None and rec.cause is FailureCause.AGENT_TIMEOUT
    o = outcome_from_record(rec, task_labels(task_dir), tmp_path)
    assert o.reward is None and o.score == 0.0 and not o.passed and o.criteria == []
    assert o.error == "AgentTimeoutError: ran past 60 s"


def test_resume_adopts_finished_trials_and_clears_interrupted_ones(tmp_path: Path) -> None:
    trials = tmp_path / "trials"
    make_trial(trials, f"{TASK}__s0")
    make_trial(trials, f"{TASK}__s1", finished=False)  # killed mid-trial: no result.json
    make_trial(trials, f"{TASK}__s2", reward=None)
    make_trial(trials, f"{TASK}__s2__r1")  # the last attempt counts
    adopted = recover_or_clear(trials, TASK, 0, retries=2)
    assert adopted is not None and adopted.reward == 1.0 and adopted.attempt == 0
    assert recover_or_clear(trials, TASK, 1, retries=2) is None
    assert not (trials / f"{TASK}__s1").exists()
    retried = recover_or_clear(trials, TASK, 2, retries=2)
    assert retried is not None and retried.attempt == 1 and retried.trial_name == f"{TASK}__s2__r1"
    assert recover_or_clear(trials, TASK, 3, retries=2) is None


def test_outcome_log_skips_a_torn_line_and_keeps_the_last_of_a_sample(
    tmp_path: Path, task_dir: Path
) -> None:
    rec = record_from_dir(make_trial(tmp_path / "trials", f"{TASK}__s0"), TASK, 0, 0)
    assert rec is not None
    o = outcome_from_record(rec, task_labels(task_dir), tmp_path)
    append_outcome(tmp_path, o.model_copy(update={"reward": 0.0}))
    append_outcome(tmp_path, o)
    with (tmp_path / "trials.jsonl").open("a") as f:
        f.write(o.model_dump_json()[:40])  # SIGKILL mid-write
    (got,) = read_outcomes(tmp_path)
    assert got.reward == 1.0


def test_plan_runs_only_missing_samples(tmp_path: Path, task_dir: Path) -> None:
    out = tmp_path / "run"
    cfg = EvalConfig(dataset=task_dir.parents[1], model="nop", out=out, n_samples=3)
    out.mkdir()
    rec = record_from_dir(make_trial(out / "trials", f"{TASK}__s1"), TASK, 1, 0)
    assert rec is not None
    append_outcome(out, outcome_from_record(rec, {}, out))
    pending, kept = plan(cfg)
    assert [(t.name, s) for t, s in pending] == [(TASK, 0), (TASK, 2)]
    assert [(o.task, o.sample) for o in kept] == [(TASK, 1)]


def test_rollout_config_maps_models_to_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("KWRL_JUDGE_MAX_RETRIES", "1")
    nop = rollout_config(EvalConfig(dataset=Path("d"), model="nop", judge="http://j/v1#m"))
    assert (nop.agent, nop.model, nop.agent_kwargs) == ("nop", None, {})
    assert nop.verifier_env == {"KWRL_JUDGE": "http://j/v1#m", "KWRL_JUDGE_MAX_RETRIES": "1",
                                "OPENAI_API_KEY": "${OPENAI_API_KEY}"}  # fmt: skip
    spec = "http://127.0.0.1:8000/v1#smollm2-135m"
    kw = rollout_config(
        EvalConfig(dataset=Path("d"), model=spec, agent={"max_steps": 3, "max_tokens_per_turn": 32})
    )
    assert (kw.agent, kw.model) == ("kwrl.agent:KwrlAgent", spec)
    assert kw.agent_settings is not None and kw.agent_kwargs == {}
    assert kw.agent_settings.agent.model_dump(exclude_unset=True) == {
        "max_steps": 3, "max_tokens_per_turn": 32,
    }  # fmt: skip


def test_an_engine_spec_is_loaded_once_and_lent_to_the_trials_by_handle(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KWRL_TOKENIZER", raising=False)
    spec = f"engine:{tiny_model_dir}"
    policy = {"kind": "engine", "engine": {"threads": 1}}
    cfg = EvalConfig(dataset=Path("d"), model=spec, policy=policy, agent={"max_steps": 250})
    rcfg, handle = lend_policy(rollout_config(cfg), "test-eval-lend")
    try:
        assert (rcfg.model, handle) == ("live:test-eval-lend", "test-eval-lend")
        pcfg = PolicyConfig.model_validate({**policy, "model": spec})
        assert live_engine("test-eval-lend") is build_policy(pcfg).engine  # type: ignore[attr-defined]
        # the agents keep the spec's settings (`live:` names its own kind) and render with the
        # lent engine's own tokenizer: nothing re-reads the spec to load it again
        own = rcfg.agent_settings
        assert own is not None and own.tokenizer is None
        live = build_policy(PolicyConfig.model_validate({"model": rcfg.model}))
        assert live.tokenizer() is live_engine("test-eval-lend").tokenizer
        assert own.policy.model_dump(exclude_unset=True) == {"engine": {"threads": 1}}
        assert own.agent.max_steps == 250
    finally:
        unregister_engine("test-eval-lend")
    named = cfg.model_copy(update={"tokenizer": "tok"})
    rcfg, handle = lend_policy(rollout_config(named), "test-eval-lend")
    unregister_engine("test-eval-lend")
    assert rcfg.agent_settings is not None and rcfg.agent_settings.tokenizer == "tok"
    for model in ("oracle", "http://127.0.0.1:9/v1#m"):
        rc = rollout_config(EvalConfig(dataset=Path("d"), model=model))
        assert lend_policy(rc, "test-eval-none") == (rc, None)


async def test_run_eval_adopts_finished_dirs_writes_outputs_and_refuses_another_model(
    tmp_path: Path, task_dir: Path
) -> None:
    out = tmp_path / "run"
    cfg = EvalConfig(dataset=task_dir.parents[1], model="oracle", out=out, n_samples=2)
    make_trial(out / "trials", f"{TASK}__s0", run=agent_run("10.32%"))
    make_trial(out / "trials", f"{TASK}__s1", reward=0.5, passed=[True, False])
    seen: list[tuple[int, int]] = []
    outcomes = await run_eval(cfg, on_start=lambda total, done: seen.append((total, done)))
    assert seen == [(2, 0)] and [o.sample for o in outcomes] == [0, 1]
    data = json.loads((out / "eval.json").read_text())
    assert data["metrics"]["overall"]["mean_score"]["value"] == pytest.approx(0.75)
    assert data["metrics"]["overall"]["pass_at_1"]["value"] == pytest.approx(0.5)
    assert len(data["trials"]) == 2 and not (out / "report.html").exists()
    lines = (out / "trials.jsonl").read_text().splitlines()
    seen.clear()
    await run_eval(cfg, on_start=lambda total, done: seen.append((total, done)))
    assert seen == [(2, 2)] and (out / "trials.jsonl").read_text().splitlines() == lines
    with pytest.raises(ConfigError, match="model"):
        await run_eval(cfg.model_copy(update={"model": "nop"}))


def test_trial_seeds_are_stable_and_distinct_per_task_and_sample() -> None:
    seeds = {trial_seed(7, t, k) for t in ("a", "b") for k in range(3)}
    assert len(seeds) == 6 and all(0 <= s < 2**63 for s in seeds)
    assert trial_seed(7, "a", 0) == trial_seed(7, "a", 0) != trial_seed(8, "a", 0)
    # sha256 of "7/a/0", not Python's per-process hash(): the same on every machine
    assert trial_seed(7, "a", 0) == 0x4B0A84A861C05983


async def test_run_eval_refuses_to_resume_under_another_sample_seed(
    tmp_path: Path, task_dir: Path
) -> None:
    out = tmp_path / "run"
    cfg = EvalConfig(dataset=task_dir.parents[1], model="oracle", out=out, sample_seed=1)
    make_trial(out / "trials", f"{TASK}__s0", run=agent_run("10.32%"))
    await run_eval(cfg)
    with pytest.raises(ConfigError, match=r"eval\.toml: sample_seed: .* 1, not 2"):
        await run_eval(cfg.model_copy(update={"sample_seed": 2}))
    with pytest.raises(ConfigError, match="sample_seed"):
        await run_eval(cfg.model_copy(update={"sample_seed": None}))
