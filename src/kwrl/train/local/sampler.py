"""Which prompts (tasks) each step trains on, with exact resume.

The order is a seeded permutation per epoch; the state is (epoch, cursor) plus the list of task
ids consumed so far, saved in every checkpoint. Resuming from a state yields exactly the prompts
that would have come next, so no prompt is lost or repeated across a crash.

Pass-rate steering (`Steering`, `rl.steer` in a `kwrl train` config): the state also keeps each
task's recent rewards (the last `window` trials' training rewards, `SamplerState.record`). A task
whose recent trials all scored alike (all solved, all failed, or all the same partial score: its
next group would most likely train nothing) is *saturated*; when the permutation reaches it, it
is drawn only with probability `keep`, else passed over for this epoch. It is never dropped for
good: it comes up again in every later epoch's permutation, and one varied group clears it. The
draw is seeded by (seed, epoch, position), so resume stays exact.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import BaseModel, Field

from kwrl.config import KwrlConfig


class Steering(KwrlConfig):
    """Pass-rate steering of the draws (module doc); off unless `on`."""

    on: bool = False
    """Draw tasks whose recent trials all scored alike less often."""
    window: int = Field(default=16, ge=1)
    """Recent training rewards kept per task."""
    min_samples: int = Field(default=4, ge=1)
    """A task is judged saturated only once it has this many recent rewards."""
    keep: float = Field(default=0.25, gt=0.0, le=1.0)
    """Probability that a saturated task is drawn when its turn comes (never 0: never dropped)."""


class SamplerState(BaseModel):
    epoch: int = 0
    cursor: int = 0
    consumed: list[str] = Field(default_factory=list)
    history: dict[str, list[float]] = Field(default_factory=dict)
    """Each task's recent training rewards, oldest first (pass-rate steering)."""
    passed_over: int = 0
    """Saturated tasks passed over so far (pass-rate steering)."""

    def record(self, task_id: str, rewards: Sequence[float], window: int) -> None:
        """Add a group's rewards to `task_id`'s history, keeping the last `window`."""
        h = [*self.history.get(task_id, []), *(float(r) for r in rewards)]
        self.history[task_id] = h[-window:]


def saturated(history: Sequence[float], min_samples: int) -> bool:
    """Whether recent rewards say a new group of this task would score alike (module doc)."""
    return len(history) >= min_samples and max(history) == min(history)


class PromptSampler:
    def __init__(
        self,
        task_ids: Sequence[str],
        *,
        seed: int,
        epochs: int = 1,
        steering: Steering | None = None,
    ) -> None:
        if not task_ids:
            raise ValueError("no tasks to sample from")
        self.task_ids = sorted(task_ids)
        self.seed = seed
        self.epochs = epochs
        self.steering = steering or Steering()
        self.state = SamplerState()

    def _order(self, epoch: int) -> list[str]:
        order = list(self.task_ids)
        random.Random(f"{self.seed}:{epoch}").shuffle(order)
        return order

    @property
    def exhausted(self) -> bool:
        return self.state.epoch >= self.epochs

    def _passes_over(self, task_id: str) -> bool:
        s = self.steering
        if not s.on or not saturated(self.state.history.get(task_id, []), s.min_samples):
            return False
        draw = random.Random(f"{self.seed}:{self.state.epoch}:{self.state.cursor}:steer").random()
        return draw >= s.keep

    def next(self, n: int) -> list[str]:
        """The next `n` task ids (fewer at the very end of the last epoch)."""
        out: list[str] = []
        while len(out) < n and not self.exhausted:
            order = self._order(self.state.epoch)
            tid = order[self.state.cursor]
            skip = self._passes_over(tid)
            self.state.cursor += 1
            if self.state.cursor >= len(order):
                self.state.epoch += 1
                self.state.cursor = 0
            if skip:
                self.state.passed_over += 1
            else:
                out.append(tid)
        self.state.consumed.extend(out)
        return out

    def record(self, task_id: str, rewards: Sequence[float]) -> None:
        """A group's training rewards for `task_id` (pass-rate steering's history; kept only
        while steering is on, so a run without it has the state it always had)."""
        if self.steering.on:
            self.state.record(task_id, rewards, self.steering.window)

    def load_state(self, state: SamplerState) -> None:
        self.state = state.model_copy(deep=True)
