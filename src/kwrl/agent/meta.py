"""`AgentMeta`: KwrlAgent's record of one run, as it travels in harbor's `agent_result.metadata`.

The agent writes it (`AgentMeta.from_run`, in `kwrl.agent.harbor_agent`) and every stage that reads
a finished trial validates it back (`AgentMeta.read`: `kwrl.rollout.trial.read_trial` for the
trial's files, `kwrl.rollout.failures.classify_result` for harbor's in-memory result), so a
consumer reads attributes, never `.get(...)` chains. The per-turn statistics and the cut-off are
the loop's own types (`kwrl.agent.loop.TurnStats`, `ToolStat`, `CutOff`), not copies of them.

Non-obvious choice: every field has a default and unknown keys are ignored, so a trial dir written
by an older kwrl, or by another agent (harbor's oracle writes no metadata), still reads; the keys
(docs/contracts.md, "Agent metadata") are what the JSON always held.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kwrl.agent.loop import AgentRun, CutOff, TurnStats
from kwrl.errors import TrialFormatError

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

    @classmethod
    def from_run(
        cls, run: AgentRun, elapsed_s: float, tito_drift: dict[str, DriftValue] | None
    ) -> AgentMeta:
        """The record of `run`; the TITO arrays only where the run kept token ids."""
        fields: dict[str, Any] = {
            "session_id": run.session_id,
            "stop_reason": str(run.stop_reason),
            "error": run.error,
            "final_answer": run.final_answer,
            "n_turns": len(run.turns),
            "elapsed_s": elapsed_s,
            "turn_stats": run.turns,
            "tool_prompt": run.tool_prompt,
            "tool_prompt_reason": run.tool_prompt_reason,
            "context_window": run.context_window,
            "cut_off": run.cut_off,
        }
        if run.tito is not None:
            fields.update(run.tito.arrays(), tito_drift=tito_drift)
        return cls(**fields)

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
