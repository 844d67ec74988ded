"""An `AgentRun` as an ATIF trajectory (harbor's Agent Trajectory Interchange Format).

Steps: the system prompt, the task (user), then one agent step per policy turn carrying its
visible message, reasoning, tool calls, the tool results as the observation, and metrics (tokens,
the sampled token ids and their logprobs for token policies). Harness messages between turns
that answer no tool call (the corrective message after an unparsable call) are user steps.
Per-prompt token ids are left out: the prompt of turn k is the trajectory's token list up to that
turn, already in the agent's metadata, and repeating it per step would be quadratic.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from harbor.models.trajectories import (
    Agent,
    FinalMetrics,
    Metrics,
    Observation,
    ObservationResult,
    Step,
    ToolCall,
    Trajectory,
)

from kwrl.agent.loop import AgentRun
from kwrl.agent.parsers import split_reasoning


def _visible(text: str) -> tuple[str | None, str]:
    reasoning, rest = split_reasoning(text)
    return reasoning, rest.strip()


def build_trajectory(
    run: AgentRun, *, agent_name: str, agent_version: str, model_name: str | None
) -> Trajectory:
    now = datetime.now(UTC).isoformat()
    steps: list[Step] = []

    def add(**kw: Any) -> Step:
        step = Step(step_id=len(steps) + 1, timestamp=now, **kw)
        steps.append(step)
        return step

    msgs = run.messages
    add(source="system", message=str(msgs[0]["content"]) if msgs else "")
    if len(msgs) > 1:
        add(source="user", message=str(msgs[1]["content"]))
    turn = -1
    current: Step | None = None
    for msg in msgs[2:]:
        role = msg.get("role")
        if role == "assistant":
            turn += 1
            stats = run.turns[turn] if turn < len(run.turns) else None
            calls = run.tool_calls[turn] if turn < len(run.tool_calls) else []
            reasoning, visible = _visible(str(msg.get("content") or ""))
            metrics = None
            if stats is not None:
                ids: list[int] | None = None
                lps: list[float] | None = None
                if run.tito is not None and turn < len(run.tito.turns):
                    t = run.tito.turns[turn]
                    ids = run.tito.tokens[t.prompt_len : t.prompt_len + t.completion_len]
                    lps = run.tito.logprobs[t.prompt_len : t.prompt_len + t.completion_len]
                metrics = Metrics(
                    prompt_tokens=stats.prompt_tokens,
                    completion_tokens=stats.completion_tokens,
                    completion_token_ids=ids,
                    logprobs=lps,
                    extra={
                        "finish_reason": stats.finish_reason,
                        "latency_s": stats.latency_s,
                        "tool_latency_s": stats.tool_latency_s,
                        "malformed_tool_call": stats.malformed,
                        "tools": [asdict(s) for s in stats.tool_calls],
                    },
                )
            current = add(
                source="agent",
                message=visible,
                reasoning_content=reasoning or None,
                model_name=model_name,
                tool_calls=[
                    ToolCall(tool_call_id=c.id, function_name=c.name, arguments=c.arguments)
                    for c in calls
                ]
                or None,
                metrics=metrics,
                llm_call_count=1,
            )
        elif role == "tool" and current is not None:
            result = ObservationResult(
                source_call_id=msg.get("tool_call_id"), content=str(msg.get("content") or "")
            )
            if current.observation is None:
                current.observation = Observation(results=[result])
            else:
                current.observation.results.append(result)
        else:
            current = None
            add(source="user", message=str(msg.get("content") or ""))
    extra: dict[str, Any] = {"stop_reason": str(run.stop_reason)}
    if run.error:
        extra["error"] = run.error
    return Trajectory(
        session_id=run.session_id or None,
        agent=Agent(
            name=agent_name,
            version=agent_version,
            model_name=model_name,
            tool_definitions=run.tools or None,
        ),
        steps=steps,
        final_metrics=FinalMetrics(
            total_prompt_tokens=run.n_input_tokens,
            total_completion_tokens=run.n_output_tokens,
            total_steps=len(steps),
            extra=extra,
        ),
    )
