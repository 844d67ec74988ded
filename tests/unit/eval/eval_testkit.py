"""Builders of eval run dirs from real trial files (shared by unit and integration tests).

`fixtures/result.json`, `grades.json` and `archipelago.json` are what a real oracle trial of a
generated task left (harbor 0.21, kwrl's grader); builders edit copies of them. Trajectories are
made by kwrl's own ATIF writer from an `AgentRun`, as KwrlAgent writes them.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
TASK = "ib-w0000-002-compute"


def load_fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def agent_run(answer: str, *, tool: str = "filesystem_list_files", ok: bool = True) -> Any:
    """A two-turn KwrlAgent run: one tool call, then a final answer."""
    from kwrl.agent.loop import AgentRun, StopReason, ToolStat, TurnStats
    from kwrl.agent.parsers import ParsedToolCall

    call = ParsedToolCall(id="call-1", name=tool, arguments={"path": "/filesystem"})
    messages = [
        {"role": "system", "content": "You are an AI assistant."},
        {"role": "user", "content": "Compute the FY2025 margin."},
        {"role": "assistant", "content": 'Listing.\n<tool_call>{"name": "x"}</tool_call>'},
        {"role": "tool", "tool_call_id": "call-1", "content": "reports/\nfinance.xlsx"},
        {"role": "assistant", "content": answer},
    ]
    turns = [
        TurnStats(step=0, prompt_tokens=120, completion_tokens=30, latency_s=0.5,
                  finish_reason="stop", tool_calls=[ToolStat(tool, ok, "ok" if ok else "tool_error", 0.1)]),
        TurnStats(step=1, prompt_tokens=180, completion_tokens=12, latency_s=0.4, finish_reason="stop"),
    ]  # fmt: skip
    return AgentRun(
        messages=messages, tools=[], stop_reason=StopReason.FINAL, final_answer=answer,
        turns=turns, session_id="s-1", tool_calls=[[call], []],
    )  # fmt: skip


def make_trial(
    trials_dir: Path,
    name: str,
    *,
    reward: float | None = 1.0,
    passed: list[bool] | None = None,
    answer: str = "The margin is 10.32%.",
    run: Any = None,
    finished: bool = True,
) -> Path:
    """A trial dir as harbor + kwrl leave it; `passed` sets each criterion's verdict."""
    from kwrl.agent.atif import build_trajectory

    d = trials_dir / name
    (d / "agent").mkdir(parents=True)
    (d / "verifier").mkdir()
    (d / "agent" / "final_answer.txt").write_text(answer)
    if not finished:
        return d
    result = copy.deepcopy(load_fixture("result.json"))
    result["trial_name"] = name
    grades = copy.deepcopy(load_fixture("grades.json"))
    if passed is not None:
        grades["grades"] = grades["grades"][: len(passed)]
        for g, p in zip(grades["grades"], passed, strict=True):
            g["passed"], g["score"] = p, float(p)
            g["rationale"] = "found it" if p else "the answer never states <b>10.32</b>"
    if reward is None:
        result["verifier_result"] = None
        result["exception_info"] = {
            "exception_type": "AgentTimeoutError", "exception_message": "ran past 60 s",
            "exception_traceback": "", "occurred_at": result["finished_at"],
        }  # fmt: skip
    else:
        rewards = {"reward": reward}  # kwrl's grader: the pass and criteria are grades.json's
        grades["pass"] = reward >= 0.99
        result["verifier_result"] = {"rewards": rewards}
        (d / "verifier" / "reward.json").write_text(json.dumps(rewards))
        (d / "verifier" / "grades.json").write_text(json.dumps(grades))
    if run is not None:
        result["agent_result"]["n_input_tokens"] = run.n_input_tokens
        result["agent_result"]["n_output_tokens"] = run.n_output_tokens
        result["agent_result"]["metadata"] = {
            "stop_reason": str(run.stop_reason),
            "n_turns": len(run.turns),
            "turn_stats": [asdict(t) for t in run.turns],
        }
        traj = build_trajectory(run, agent_name="kwrl", agent_version="0", model_name="m")
        (d / "agent" / "trajectory.json").write_text(json.dumps(traj.to_json_dict()))
    (d / "result.json").write_text(json.dumps(result))
    return d


def make_task_dir(root: Path) -> Path:
    """A task dir with the fixture's archipelago.json (labels only; enough for outcomes)."""
    d = root / "data" / "tasks" / "ib-w0000-002-compute"
    d.mkdir(parents=True)
    (d / "archipelago.json").write_text((FIXTURES / "archipelago.json").read_text())
    (d / "instruction.md").write_text("Compute the FY2025 margin.\n")
    return d


def make_run(root: Path, task_dir: Path, model: str, rewards: list[float | None]) -> Path:
    """A finished run dir: eval.toml, trial dirs and trials.jsonl, one sample per reward."""
    from kwrl.config import save_config
    from kwrl.eval.run import (
        EvalConfig,
        append_outcome,
        outcome_from_record,
        record_from_dir,
        task_labels,
    )

    cfg = EvalConfig(dataset=task_dir.parents[1], model=model, out=root, n_samples=len(rewards))
    root.mkdir(parents=True)
    save_config(cfg, root / "eval.toml")
    for s, r in enumerate(rewards):
        passed = None if r is None else [r >= 1.0, r >= 1.0, r > 0]
        answer = "<script>alert(1)</script> The margin is 10.32%."
        d = make_trial(root / "trials", f"{TASK}__s{s}", reward=r, passed=passed, answer=answer,
                       run=agent_run(answer, ok=s % 2 == 0))  # fmt: skip
        rec = record_from_dir(d, TASK, s, 0)
        assert rec is not None
        append_outcome(root, outcome_from_record(rec, task_labels(task_dir), root))
    return root
