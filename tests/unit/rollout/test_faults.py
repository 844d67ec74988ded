"""The fault injector's settings, draws and routes (`kwrl.rollout.faults`); real trials in
tests/integration/test_fault_injection.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kwrl.errors import ConfigError
from kwrl.rollout import faults
from kwrl.rollout.failures import FailureCause, classify
from kwrl.rollout.faults import FaultKind, FaultSettings
from kwrl.rollout.runner import RolloutConfig
from kwrl.sandbox.conformance.testing import make_task, make_world


def test_off_unless_the_environment_turns_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(faults.ENV, raising=False)
    assert faults.active() is None
    faults.refuse("kwrl train")  # nothing to refuse
    on = FaultSettings(seed=3, rates={FaultKind.GATEWAY_KILL: 0.5})
    monkeypatch.setenv(faults.ENV, on.to_env()[faults.ENV])
    assert faults.active() == on
    with pytest.raises(ConfigError, match="kwrl train refuses to run with it"):
        faults.refuse("kwrl train")
    monkeypatch.setenv(faults.ENV, json.dumps({"rates": {"gateway_kill": 2}}))
    with pytest.raises(ConfigError, match=r"env KWRL_FAULTS: .*rates must lie in \[0, 1\]"):
        faults.active()
    monkeypatch.setenv(faults.ENV, json.dumps({"rate": 0.1}))
    with pytest.raises(ConfigError, match=r"env KWRL_FAULTS: .*rate: Extra inputs"):
        faults.active()
    with pytest.raises(ValueError, match=r"sum to 1\.2 > 1"):
        FaultSettings(rates={FaultKind.INIT_KILL: 0.6, FaultKind.DISK_FILL: 0.6})


def test_draws_are_seeded_and_hold_their_rates() -> None:
    s = FaultSettings(seed=1, rates={k: 0.05 for k in FaultKind})
    kinds = [FaultKind.INIT_KILL, FaultKind.JUDGE_429, FaultKind.POLICY_DELAY]
    drawn = Counter(s.draw(f"task__s{i}", kinds) for i in range(20000))
    assert drawn == Counter(s.draw(f"task__s{i}", kinds) for i in range(20000))  # seeded
    assert set(drawn) == {None, *kinds}  # only the kinds that apply
    for kind in kinds:
        assert drawn[kind] / 20000 == pytest.approx(0.05, abs=0.006), drawn
    other = FaultSettings(seed=2, rates=s.rates)
    assert [other.draw(f"t{i}", kinds) for i in range(50)] != [
        s.draw(f"t{i}", kinds) for i in range(50)
    ]


def test_which_kinds_apply_and_where_the_judge_and_policy_faults_go(tmp_path: Path) -> None:
    world = make_world(tmp_path).name
    machine = make_task(tmp_path, "machine", world_id=world)
    judged = make_task(tmp_path, "judged", world_id=world, grader="kwrl", judged=True)
    judge, policy = "http://127.0.0.1:9/v1#j", "http://127.0.0.1:8/v1#p"
    s = FaultSettings(judge=judge, policy=policy)
    oracle = RolloutConfig(verifier_env={"KWRL_JUDGE": judge})
    assert s.applicable(oracle, machine) == [FaultKind.INIT_KILL, FaultKind.GATEWAY_KILL,
                                             FaultKind.TOOL_HANG, FaultKind.DISK_FILL]  # fmt: skip
    assert s.applicable(oracle, judged)[4:] == sorted(faults.JUDGE_KINDS, key=list(FaultKind).index)
    agent = RolloutConfig(agent="m:A", model=policy, environment="docker")
    assert s.applicable(agent, machine) == [FaultKind.POLICY_DELAY]
    moved = faults.adjust(oracle, FaultKind.JUDGE_500, s)
    assert moved.verifier_env["KWRL_JUDGE"] == "http://127.0.0.1:9/fault/judge_500/v1#j"
    assert faults.adjust(agent, FaultKind.POLICY_DELAY, s).model == (
        "http://127.0.0.1:8/fault/policy_delay/v1#p"
    )
    assert faults.adjust(oracle, FaultKind.INIT_KILL, s) is oracle


def test_a_fault_the_host_played_is_infrastructure_whatever_the_trial_shows(
    tmp_path: Path,
) -> None:
    # from inside, a gateway killed or a disk filled from outside look like agent code's doing
    lost = classify(exception_type=None, rewards={"reward": 0.0}, stop_reason="tools_lost")
    full = classify(
        exception_type="SandboxLimitError", rewards=None, sandbox_events={"disk_full": 1}
    )
    assert (lost, full) == (FailureCause.NONE, FailureCause.RESOURCE_LIMIT)
    for kwargs in ({"exception_type": None, "rewards": {"reward": 0.0}},
                   {"exception_type": "SandboxLimitError", "rewards": None},
                   {"exception_type": "AgentTimeoutError", "rewards": {"reward": 0.0}}):  # fmt: skip
        assert classify(**kwargs, host_fault=True) is FailureCause.SANDBOX  # type: ignore[arg-type]
    from kwrl.rollout.failures import host_fault

    faults.record(tmp_path, FaultKind.GATEWAY_KILL, 0.2)
    assert host_fault(tmp_path)
    faults.record(tmp_path, FaultKind.GATEWAY_KILL, None)  # armed, never played
    assert not host_fault(tmp_path)
    faults.record(tmp_path, FaultKind.JUDGE_500)  # the judge's: read from what the trial shows
    assert not host_fault(tmp_path) and faults.read(tmp_path) == {
        "kind": "judge_500", "host": False, "at_s": None}  # fmt: skip
