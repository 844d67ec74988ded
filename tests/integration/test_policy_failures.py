"""Failures the policy causes are scored 0 and trained, never masked, and never mask its group.

Issue 35's attacks that turned a 0 into a masked trial, each through the real CLI (`kwrl rollout
-n N`, `kwrl trial run`) over real harbor trials in the local sandbox, graded by the real grader:
- `memory_fill` (`kwrl.sandbox.conformance.testing.ATTACKS`): a wrong workbook of formulas, then the world's
  tmpfs filled to just under memory_mb; the grader or LibreOffice was OOM-killed in the verifier
  phase -> `resource_limit` -> masked. The verifier now has memory of its own: graded 0.
- `clock`: the wrong answer, then `sleep` past the agent timeout -> `agent_timeout` -> masked, two
  of them masking the group. Now 0, trained, on the trajectory so far.
- the same clock through kwrl's agent loop (a scripted policy), in a group with a member that
  scores 1.0 and one whose policy endpoint hangs: the endpoint's timeout alone is masked.
- issue 44: a policy over HTTP that answers at once (`kwrl.llm.loopback.LoopbackPolicy`, a litellm
  chat policy), a 10 s agent timeout and a tool call that runs it out: the first turn carried
  litellm's import (~5 s) and outlasted the cut tool call, so the timeout was masked as the
  endpoint's (`policy_timeout`). Now it is the policy's (`agent_timeout`, trained 0). The test
  gives it 60 s (the agent's own start-up, litellm's import included, took over 20 s at load 23;
  a clock that runs out there is `sandbox`, the policy never asked) and checks the first turn's
  recorded latency, which held that import.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import HANG
from typer.testing import CliRunner

from kwrl.cli import app
from kwrl.llm.loopback import LoopbackPolicy
from kwrl.rollout.trial import read_trial
from kwrl.sandbox.conformance.testing import ATTACK_TASKS, make_task, make_world

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)


def _exec(code: str) -> str:
    call = {"name": "code_execution_code_exec", "arguments": {"code": code}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


def _rollout(dataset: Path, out: Path, *args: str) -> dict[str, Any]:
    r = CliRunner().invoke(
        app, ["rollout", str(dataset), "--out", str(out), "--retries", "0", *args]
    )
    assert r.exit_code == 0, r.output
    assert "train rewards" in r.output  # the group decisions, in the printed table
    return json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="module")
def oracle_attacks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`kwrl rollout -n 2` over the memory fill, the clock, and a grader that outgrows even the
    verifier's own memory (the plumbing of `verifier_limit`)."""
    root = tmp_path_factory.mktemp("oracle")
    world = make_world(root).name
    for name in ("memory_fill", "clock"):
        make_task(root, name, world_id=world, solution=name, grader="kwrl", **ATTACK_TASKS[name])
    hog = make_task(root, "grader-hog", world_id=world, memory_mb=128)
    (hog / "tests" / "test.sh").write_text(
        '#!/usr/bin/env bash\nexec "$KWRL_PYTHON" -c "x = bytearray(600 << 20); x[::4096] = b\'1\' '
        '* len(x[::4096])"\n'
    )
    return _rollout(root, tmp_path_factory.mktemp("oracle-out"), "-n", "2")  # beside its input


def test_a_memory_fill_before_grading_is_graded_zero_and_trained(
    oracle_attacks: dict[str, Any],
) -> None:
    task = oracle_attacks["tasks"]["memory_fill"]
    assert task["causes"] == ["none", "none"], task
    assert task["rewards"] == [0.0, 0.0] and task["train_rewards"] == [0.0, 0.0]
    for rec in oracle_attacks["records"]:
        if rec["task"] != "memory_fill":
            continue
        report = json.loads((Path(rec["trial_dir"]) / "sandbox.json").read_text())
        assert report["events"]["oom_kill"] == 0 and report["verifier_events"]["oom_kill"] == 0
        # what the agent left charged (448 MiB of tmpfs) plus memory_mb of the verifier's own
        assert report["verifier_memory_mb"] >= 512 + 448, report
        grades = read_trial(rec["trial_dir"]).grades
        assert [g.score for g in grades] == [0.0, 0.0]


def test_sleeping_past_the_clock_trains_as_zero_and_masks_no_one(
    oracle_attacks: dict[str, Any],
) -> None:
    task = oracle_attacks["tasks"]["clock"]
    assert task["causes"] == ["agent_timeout", "agent_timeout"], task
    assert task["trained"] == 2 and task["train_rewards"] == [0.0, 0.0]


def test_a_grader_killed_for_memory_in_the_verifier_phase_is_the_agents(
    oracle_attacks: dict[str, Any],
) -> None:
    task = oracle_attacks["tasks"]["grader-hog"]
    assert task["causes"] == ["verifier_limit", "verifier_limit"], task
    assert task["trained"] == 2 and task["train_rewards"] == [0.0, 0.0]
    rec = next(r for r in oracle_attacks["records"] if r["task"] == "grader-hog")
    report = json.loads((Path(rec["trial_dir"]) / "sandbox.json").read_text())
    assert report["events"]["oom_kill"] == 0 and report["verifier_events"]["oom_kill"] >= 1


def test_kwrl_trial_run_scores_the_memory_fill(tmp_path: Path) -> None:
    task = make_task(
        tmp_path, "memory_fill", world_id=make_world(tmp_path).name, solution="memory_fill",
        grader="kwrl", **ATTACK_TASKS["memory_fill"],
    )  # fmt: skip
    r = CliRunner().invoke(app, ["trial", "run", str(task), "--out", str(tmp_path / "o")])
    text = " ".join(r.output.split())
    assert r.exit_code == 0, r.output
    assert "reward 0 cause none trained with 0" in text, r.output


CONTROL = [_exec("echo 42 > /filesystem/answer.txt"), "The answer is 42."]
CLOCK = [_exec("echo 41 > /filesystem/answer.txt; sleep 300")]
SCRIPTS = [CONTROL, CLOCK, CLOCK]


@pytest.fixture(scope="module")
def agent_group(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`kwrl rollout -n 3` of kwrl's agent loop, one sample per script (`RotatingKwrlAgent`)."""
    root = tmp_path_factory.mktemp("group")
    task = make_task(root, "clock-group", world_id=make_world(root).name, grader="kwrl",
                     agent_timeout_sec=20.0)  # fmt: skip
    scripts = "scripts=" + json.dumps(SCRIPTS)  # JSON strings and arrays are TOML
    return _rollout(
        task, root / "out", "-n", str(len(SCRIPTS)), "--harbor_agent", "agent_helpers:RotatingKwrlAgent",
        "--agent_kwargs", scripts, "--agent.context_window", "16384",
    )  # fmt: skip


def test_two_clock_attacks_never_mask_a_member_that_scored(agent_group: dict[str, Any]) -> None:
    """The member that scored 1.0 trains on its 1.0; the two that slept past the clock train on 0
    with their trajectories so far (before, both were masked, and with them the whole group)."""
    by_cause: dict[str, list[dict[str, Any]]] = {}
    for rec in agent_group["records"]:
        by_cause.setdefault(rec["cause"], []).append(rec)
    assert sorted(by_cause) == ["agent_timeout", "none"], by_cause
    [control] = by_cause["none"]
    assert control["reward"] == 1.0 and control["trained"] and control["train_reward"] == 1.0
    assert len(by_cause["agent_timeout"]) == 2
    for rec in by_cause["agent_timeout"]:
        assert rec["trained"] and rec["train_reward"] == 0.0
        files = read_trial(rec["trial_dir"])
        cut = files.agent_meta.cut_off
        assert cut is not None and cut.waiting_on == "tools"
        assert files.response_ids and 1 in files.loss_mask  # the call it sampled is trained
    assert agent_group["tasks"]["clock-group"]["trained"] == 3


@pytest.mark.slow  # a 50 s clock; tests/unit/rollout/test_failures.py checks, in the default run,
# the 30 s excess that blames the endpoint
def test_a_hung_policy_endpoint_masks_its_trial_as_infrastructure(tmp_path: Path) -> None:
    """The endpoint never answers a request of at most 2 tokens: no honest generation explains
    the wait, 30 s past the request's due time (`SLOW_EXCESS_S`), so the timeout is the
    endpoint's (`policy_timeout`, masked), not the policy's."""
    task = make_task(tmp_path, "hang", world_id=make_world(tmp_path).name, grader="kwrl",
                     agent_timeout_sec=50.0)  # fmt: skip
    args = ["trial", "run", str(task), "--out", str(tmp_path / "o"), "--harbor_agent",
            "agent_helpers:ScriptedKwrlAgent", "--agent_kwargs", "turns=" + json.dumps([HANG]),
            "--agent.max_tokens_per_turn", "2", "--agent.tools", '["code_execution_*"]',
            "--agent.context_window", "16384", "--agent.system_prompt", "Use the tools."]  # fmt: skip
    r = CliRunner().invoke(app, args)
    text = " ".join(r.output.split())
    assert r.exit_code == 1 and "cause policy_timeout masked" in text, r.output
    [trial] = (tmp_path / "o").iterdir()
    cut = read_trial(trial).agent_meta.cut_off
    assert cut is not None and cut.waiting_on == "policy" and cut.max_tokens == 2, cut


@pytest.mark.slow  # a 60 s clock; tests/unit/llm/test_loopback_policy.py and test_failures.py
# check the wire timing, the warm-up and the 30 s excess in the default run
def test_a_tool_call_cut_by_a_short_clock_is_the_policys_not_a_cold_endpoints(
    tmp_path: Path,
) -> None:
    """The real CLI in a fresh process (litellm not yet imported), the real KwrlAgent, a chat
    policy over HTTP that answers at once: the first turn's latency is the endpoint's own (the
    client warmed before it), so the tool call the clock cut is the policy's timeout."""
    task = make_task(tmp_path, "clock", world_id=make_world(tmp_path).name, grader="kwrl")
    with LoopbackPolicy(None, CLOCK) as policy:
        argv = [sys.executable, "-m", "kwrl.cli", "trial", "run", str(task), "--out", "o",
                "--model", f"litellm:openai/{policy.name}", "--policy", f"api_base={policy.url}",
                "--policy", "api_key_env=KWRL_TEST_POLICY_KEY", "--agent_timeout_sec", "60",
                "--agent.tools", '["code_execution_*"]']  # fmt: skip
        env = {**os.environ, "KWRL_TEST_POLICY_KEY": "none"}
        r = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    text = " ".join(r.stdout.split())
    assert "cause agent_timeout trained with 0" in text, r.stdout + r.stderr
    [trial] = (tmp_path / "o").iterdir()
    meta = read_trial(trial).agent_meta
    assert meta.cut_off is not None and meta.cut_off.waiting_on == "tools", meta.cut_off
    [turn] = meta.turn_stats
    # the first turn's latency is the endpoint's: less than litellm's import alone (~5 s on a
    # busy 2-core host), which it held before
    probe = "import time; t = time.perf_counter(); import litellm; print(time.perf_counter() - t)"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    imported = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                              text=True, check=True)  # fmt: skip
    assert turn.latency_s < float(imported.stdout), (turn, imported.stdout)


def test_a_clock_run_out_in_the_agents_own_start_up_is_not_the_policys(tmp_path: Path) -> None:
    """A 1 s agent timeout: kwrl's agent is still loading its tokenizer (a fresh process) when
    the clock runs out, the policy never asked. It was `agent_timeout`, a trained 0 on an empty
    trajectory; now `sandbox`, as harbor's agent-setup timeout."""
    from kwrl.agent.tokenizer import load_tokenizer

    task = make_task(tmp_path, "cold", world_id=make_world(tmp_path).name, grader="kwrl")
    with LoopbackPolicy(load_tokenizer("qwen2.5-coder-0.5b"), CONTROL) as policy:
        argv = [sys.executable, "-m", "kwrl.cli", "trial", "run", str(task), "--out", "o",
                "--model", policy.spec, "--tokenizer", "qwen2.5-coder-0.5b",
                "--agent_timeout_sec", "1"]  # fmt: skip
        r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert policy.requests == []
    text = " ".join(r.stdout.split())
    assert "cause sandbox masked" in text, r.stdout + r.stderr
