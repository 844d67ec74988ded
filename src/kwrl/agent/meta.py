"""`AgentMeta`: KwrlAgent's record of one run, as it travels in harbor's `agent_result.metadata`.

The agent writes it (`kwrl.agent.loop.AgentRun.to_meta`, in `kwrl.agent.harbor_agent`) and every
stage that reads a finished trial validates it back (`AgentMeta.read`: `kwrl.rollout.trial.read_trial`
for the trial's files, `kwrl.rollout.failures.classify_result` for harbor's in-memory result), so
a consumer reads attributes, never `.get(...)` chains. The per-turn statistics and the cut-off are the records the
agent loop itself keeps (`TurnStats`, `ToolStat`, `CutOff`, defined here), not copies of them.

Non-obvious choices: every field has a default and unknown keys are ignored, so a trial dir
written by an older kwrl, or by another agent (harbor's oracle writes no metadata), still reads;
the keys (docs/contracts.md) are what the JSON always held. This module imports no MCP and no
harbor, so the rollout runner reads records without loading the agent loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kwrl.errors import TrialFormatError


@dataclass
class ToolStat:
    name: str = ""
    ok: bool = False
    outcome: str = ""
    """ok, tool_error, timeout, unknown_tool."""
    latency_s: float = 0.0


@dataclass
class TurnStats:
    step: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    """Seconds the policy endpoint took for this turn, on the wire where the client times it
    (`kwrl.llm.base.Completion.latency_s`)."""
    finish_reason: str = ""
    tool_calls: list[ToolStat] = field(default_factory=list)
    malformed: bool = False
    tool_latency_s: float = 0.0
    weight_version: int | None = None
    """Version of the weights that sampled this turn, when the policy reports it."""


@dataclass
class CutOff:
    """What a cancelled run was waiting on (harbor's agent timeout cancels it mid-await)."""

    waiting_on: str = ""
    """`policy` (a sample in flight) or `tools` (a turn's tool calls in flight)."""
    seconds: float = 0.0
    """How long it had been waiting."""
    prompt_tokens: int = 0
    """The policy request's prompt tokens (0 for tools)."""
    max_tokens: int = 0
    """The most tokens the policy request could have written (0 for tools)."""


DriftValue = int | float | str | None
"""A value of the TITO drift report (`kwrl.agent.drift.DriftReport.to_dict`, or `error`)."""


class AgentMeta(BaseModel):
    """One KwrlAgent run: how it ended, its turns, and the token arrays a trainer reads."""

    model_config = ConfigDict(extra="ignore")

    session_id: str = ""
    stop_reason: str | None = None
    """`kwrl.agent.loop.StopReason`'s value; None for an agent that records none."""
    error: str | None = None
    final_answer: str = ""
    n_turns: int | None = None
    elapsed_s: float | None = None
    turn_stats: list[TurnStats] = Field(default_factory=list)
    tool_prompt: str | None = None
    tool_prompt_reason: str | None = None
    context_window: int | None = None
    cut_off: CutOff | None = None
    """What the run waited on when harbor's timeout cut it (`kwrl.rollout.failures`)."""
    prompt_token_ids: list[int] = Field(default_factory=list)
    response_ids: list[int] = Field(default_factory=list)
    loss_mask: list[int] = Field(default_factory=list)
    rollout_logprobs: list[float] = Field(default_factory=list)
    tito_drift: dict[str, DriftValue] | None = None

    def to_metadata(self) -> dict[str, Any]:
        """harbor's `context.metadata`: the fields the run set, as JSON."""
        return self.model_dump(mode="json", exclude_unset=True)

    @classmethod
    def read(cls, metadata: Any, source: str) -> AgentMeta:
        """`metadata` (harbor's `agent_result.metadata`) validated; None or empty is an empty record.
        A value of the wrong type is a TrialFormatError naming `source` and the field."""
        try:
            return cls.model_validate(metadata or {})
        except ValidationError as e:
            where = "; ".join(
                f"{'.'.join(str(p) for p in x['loc']) or '<root>'}: {x['msg']}" for x in e.errors()
            )
            raise TrialFormatError(f"{source}: agent metadata: {where}") from e
