"""`python -m kwrl.train.skyrl.main_fully_async OVERRIDES...`: SkyRL's fully-async trainer, kwrl's generator.

Generation workers pull one prompt group at a time and call `KwrlHarborGenerator.generate` on it
while the trainer trains on finished groups no more than `trainer.fully_async.max_staleness_steps`
old. SkyRL's fully-async trainer refuses colocation (`trainer.placement.colocate_all=false`), so
it needs separate GPUs for vLLM engines and the learner (the 35B / 397B launch scripts).
"""

from __future__ import annotations

import sys
from typing import Any

import ray
from skyrl.train.fully_async_trainer import FullyAsyncRayPPOTrainer

from kwrl.train.skyrl.compat import initialize_ray
from kwrl.train.skyrl.config import KwrlSkyRLConfig, check_fully_async
from kwrl.train.skyrl.main_train import KwrlExp, load


class KwrlFullyAsyncExp(KwrlExp):
    """KwrlExp with SkyRL's FullyAsyncRayPPOTrainer."""

    def get_trainer(
        self,
        cfg: Any,
        tracker: Any,
        tokenizer: Any,
        train_dataset: Any,
        eval_dataset: Any,
        inference_engine_client: Any,
        generator: Any,
        colocate_pg: Any,
    ) -> Any:
        return FullyAsyncRayPPOTrainer(
            cfg=cfg,
            tracker=tracker,
            tokenizer=tokenizer,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            inference_engine_client=inference_engine_client,
            generator=generator,
            colocate_pg=colocate_pg,
        )


@ray.remote(num_cpus=1)
def _entrypoint(cfg: KwrlSkyRLConfig) -> None:
    KwrlFullyAsyncExp(cfg).run()


def load_fully_async(args: list[str]) -> KwrlSkyRLConfig:
    """`load` plus the fully-async trainer's own constraints (checked before Ray starts)."""
    cfg = load(args)
    check_fully_async(cfg)
    return cfg


def main(args: list[str] | None = None) -> None:
    from kwrl.rollout.faults import refuse

    refuse("SkyRL training (kwrl.train.skyrl.main_fully_async)")
    cfg = load_fully_async(sys.argv[1:] if args is None else args)
    initialize_ray(cfg)
    ray.get(_entrypoint.remote(cfg))


if __name__ == "__main__":
    main()
