"""Which prompts (tasks) each step trains on, with exact resume.

The order is a seeded permutation per epoch; the state is (epoch, cursor) plus the list of task
ids consumed so far, saved in every checkpoint. Resuming from a state yields exactly the prompts
that would have come next, so no prompt is lost or repeated across a crash.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import BaseModel, Field


class SamplerState(BaseModel):
    epoch: int = 0
    cursor: int = 0
    consumed: list[str] = Field(default_factory=list)


class PromptSampler:
    def __init__(self, task_ids: Sequence[str], *, seed: int, epochs: int = 1) -> None:
        if not task_ids:
            raise ValueError("no tasks to sample from")
        self.task_ids = sorted(task_ids)
        self.seed = seed
        self.epochs = epochs
        self.state = SamplerState()

    def _order(self, epoch: int) -> list[str]:
        order = list(self.task_ids)
        random.Random(f"{self.seed}:{epoch}").shuffle(order)
        return order

    @property
    def exhausted(self) -> bool:
        return self.state.epoch >= self.epochs

    def next(self, n: int) -> list[str]:
        """The next `n` task ids (fewer at the very end of the last epoch)."""
        out: list[str] = []
        while len(out) < n and not self.exhausted:
            order = self._order(self.state.epoch)
            take = order[self.state.cursor : self.state.cursor + n - len(out)]
            out.extend(take)
            self.state.cursor += len(take)
            if self.state.cursor >= len(order):
                self.state.epoch += 1
                self.state.cursor = 0
        self.state.consumed.extend(out)
        return out

    def load_state(self, state: SamplerState) -> None:
        self.state = state.model_copy(deep=True)
