"""A generation worker that cannot start fails a disaggregated run at once, naming the worker,
instead of leaving the trainer waiting in a rendezvous or a collective (real spawned processes)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from rich.console import Console

from kwrl.errors import TrainError
from kwrl.train.local.config import DisaggregatedConfig, RLConfig, TrainConfig


def test_a_worker_that_cannot_load_its_engine_fails_the_run(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    from kwrl.train.local.disaggregated import DisaggregatedTrainer

    task = tmp_path / "ds" / "tasks" / "t1"
    task.mkdir(parents=True)
    (task / "instruction.md").write_text("Say hi.\n")
    cfg = TrainConfig(
        dataset=tmp_path / "ds",
        out=tmp_path / "run",
        model=str(tiny_model_dir),
        tensorboard=False,
        rl=RLConfig(mode="disaggregated"),
        disaggregated=DisaggregatedConfig(
            generation_devices=["no-such-device"], worker_threads=1, start_timeout_s=240
        ),
    )
    trainer = DisaggregatedTrainer(cfg, console=Console(quiet=True))
    assert trainer.backend == "gloo"
    with pytest.raises(TrainError, match="kwrl-gen-1"):
        asyncio.run(trainer._loop())
    assert trainer._procs and not any(p.is_alive() for p in trainer._procs)
    assert not (tmp_path / "run" / "metrics.jsonl").exists()
