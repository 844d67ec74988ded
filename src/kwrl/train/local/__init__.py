"""The single-machine trainer: learner (torch), prompt sampler, checkpoints, the RL loop.

`train(cfg)` runs the mode `cfg.rl.mode` names: `RLTrainer` (sync, async; `trainer.py`) or
`DisaggregatedTrainer` (`disaggregated.py`, which builds on `trainer.py`). It lives here, above
both, so the two files import one way.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kwrl.train.local.config import TrainConfig
    from kwrl.train.local.trainer import TrainerState


def train(cfg: TrainConfig, *, deadline: float | None = None) -> TrainerState:
    """Run `cfg`'s training to its last step (resuming from `cfg.out`'s newest checkpoint); with a
    `deadline` (a `time.time()` instant, sync and async modes), stop at the last step that should
    end by then (`RLTrainer`'s module doc)."""
    if cfg.rl.mode == "disaggregated":
        from kwrl.train.local.disaggregated import DisaggregatedTrainer

        return asyncio.run(DisaggregatedTrainer(cfg).run())
    from kwrl.train.local.trainer import RLTrainer

    return asyncio.run(RLTrainer(cfg, deadline=deadline).run())
