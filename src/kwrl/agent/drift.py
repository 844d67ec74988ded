"""TITO drift: how far the recorded token list is from a fresh rendering of the same conversation.

The trainer learns from the recorded tokens, while a later chat-template rendering of the same
messages (what an eval or SFT pipeline would feed) re-tokenizes the sampled text. They differ when
the policy sampled a non-canonical tokenization, or when the template renders a past turn
differently than it did live (e.g. templates that drop old reasoning). Drift is measured per
rollout as the share of recorded tokens not matched in the re-rendering (difflib matching blocks),
plus the first index where the two diverge.

`measure_drift(state, messages)` runs at the end of a trial (the agent stores the report in its
metadata under `tito_drift`); `summarize_drift(reports)` aggregates a rollout batch.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from kwrl.agent.tito import TitoState


@dataclass(frozen=True)
class DriftReport:
    n_recorded: int
    n_rerendered: int
    n_mismatched: int
    """Recorded or re-rendered tokens outside the longest matching blocks (the larger count)."""
    first_divergence: int | None
    """First index where the lists differ; None when they are equal."""

    @property
    def rate(self) -> float:
        return self.n_mismatched / self.n_recorded if self.n_recorded else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rate": self.rate}


def compare_tokens(recorded: list[int], rerendered: list[int]) -> DriftReport:
    first = next(
        (i for i, (a, b) in enumerate(zip(recorded, rerendered, strict=False)) if a != b), None
    )
    if first is None and len(recorded) != len(rerendered):
        first = min(len(recorded), len(rerendered))
    if first is None:
        return DriftReport(len(recorded), len(rerendered), 0, None)
    # Match only the tails after the common prefix: cheaper, and the prefix is matched anyway.
    a, b = recorded[first:], rerendered[first:]
    matched = sum(
        m.size for m in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    )
    return DriftReport(len(recorded), len(rerendered), max(len(a), len(b)) - matched, first)


def measure_drift(state: TitoState, messages: list[dict[str, Any]]) -> DriftReport:
    """Compare `state.tokens` with the template rendering of `messages` (the loop's history)."""
    ends_on_turn = (
        bool(state.turns)
        and state.turns[-1].observation_len == 0
        and (state.turns[-1].closing_len == 0)
    )
    recorded = list(state.tokens)
    if ends_on_turn:
        # The template closes the final turn; the trajectory stops where sampling did.
        recorded += state.closing_remainder()
    text = state.template.render(messages, add_generation_prompt=not ends_on_turn)
    return compare_tokens(recorded, state.template.encode(text))


def summarize_drift(reports: Iterable[DriftReport | Mapping[str, Any]]) -> dict[str, float]:
    """Batch figures for a rollout summary: mean and max rate, share of rollouts with any drift."""
    rates: list[float] = []
    for r in reports:
        rates.append(r.rate if isinstance(r, DriftReport) else float(r["rate"]))
    if not rates:
        return {"n": 0, "mean_rate": 0.0, "max_rate": 0.0, "frac_drifted": 0.0}
    return {
        "n": len(rates),
        "mean_rate": sum(rates) / len(rates),
        "max_rate": max(rates),
        "frac_drifted": sum(1 for x in rates if x > 0) / len(rates),
    }
