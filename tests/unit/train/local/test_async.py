"""The async loop's staleness bound, with the rollout seam replaced by batches stamped with the
engine's weight version (everything else real: the loop, the bounded queue, the version counter)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kwrl.train.local.sampler import SamplerState
from kwrl.train.local.steptime import GpuBusy
from kwrl.train.local.trainer import RLTrainer, SampledBatch


class _Engine:
    weight_version = 0


class _Learner:
    version = 0


class FakeRolloutTrainer(RLTrainer):
    """RLTrainer whose sample() returns empty batches after a delay, and learn() only bumps versions."""

    def __init__(self, steps: int, max_staleness: int, sample_s: float, learn_s: float) -> None:
        from kwrl.train.local.checkpoint import TrainerState
        from kwrl.train.local.config import RLConfig, TrainConfig

        self.cfg = TrainConfig.model_validate(
            {"dataset": ".", "rl": RLConfig(steps=steps, mode="async", max_staleness=max_staleness)}
        )
        self.state = TrainerState()
        self.learner = _Learner()  # type: ignore[assignment]
        self._engine = _Engine()
        self.stale_dropped = 0
        self.sample_s, self.learn_s = sample_s, learn_s
        self.trained_staleness: list[int] = []
        self.logged: list[dict[str, Any]] = []
        self.gpu = GpuBusy("cpu")
        self._last_s = {"step": 0.0, "heldout": 0.0, "checkpoint": 0.0}
        self.started_at_step: list[int] = []

    async def sample(self, step_hint: int) -> SampledBatch | None:
        version = self._engine.weight_version
        self.started_at_step.append(self.state.step)
        await asyncio.sleep(self.sample_s)
        return SampledBatch(step_hint, version, [], [], SamplerState(), {})

    def learn(self, sb: SampledBatch) -> dict[str, Any]:
        self.trained_staleness.append(self.learner.version - sb.version)
        import time

        time.sleep(self.learn_s)
        self.learner.version += 1
        self.state.step += 1
        self._engine.weight_version = self.learner.version
        return {"step": self.state.step}

    def log(self, metrics: dict[str, Any]) -> None:
        self.logged.append(metrics)

    def checkpoint(self, force: bool = False) -> None:
        pass

    def _progress(self) -> Any:
        from rich.console import Console
        from rich.progress import Progress

        return Progress(console=Console(quiet=True))


@pytest.mark.parametrize("max_staleness", [0, 1, 2])
def test_no_trained_batch_is_older_than_max_staleness(max_staleness: int) -> None:
    t = FakeRolloutTrainer(steps=6, max_staleness=max_staleness, sample_s=0.001, learn_s=0.01)
    asyncio.run(t._run_async())
    assert t.state.step == 6
    assert max(t.trained_staleness) <= max_staleness


def test_generation_overlaps_learning() -> None:
    # Sampling is as slow as learning: with overlap some batch is sampled while an older
    # version is still training, so a trained batch is 1 version stale at least once.
    t = FakeRolloutTrainer(steps=5, max_staleness=1, sample_s=0.02, learn_s=0.02)
    asyncio.run(t._run_async())
    assert 1 in t.trained_staleness


def test_the_producer_runs_at_most_max_staleness_batches_ahead() -> None:
    # Sampling is much faster than learning: without the gate the producer would run ahead and
    # every later batch would be dropped as stale; with it batch j starts only after step
    # j - 1 - max_staleness, so nothing is dropped and every trained batch is exactly 1 stale.
    t = FakeRolloutTrainer(steps=6, max_staleness=1, sample_s=0.001, learn_s=0.02)
    asyncio.run(t._run_async())
    assert t.state.step == 6
    assert t.stale_dropped == 0
    assert t.trained_staleness[1:] == [1] * 5
    assert all(at >= j - 1 - 1 for j, at in enumerate(t.started_at_step, start=1))
