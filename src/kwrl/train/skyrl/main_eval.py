"""`python -m kwrl.train.skyrl.main_eval OVERRIDES...`: evaluation only (e.g. the 480-task APEX set).

SkyRL's `EvalOnlyEntrypoint` with kwrl's generator: every `data.val_data` prompt runs
`generator.eval_n_samples_per_prompt` harbor trials with the served checkpoint; SkyRL logs mean
reward and pass@n, kwrl's generator adds per-criterion pass rates, tool mix and failure causes.
In the eval phase nothing is masked (a failed trial scores 0 and is counted by cause).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import ray
from loguru import logger
from skyrl.train.entrypoints.main_generate import EvalOnlyEntrypoint
from skyrl.train.utils.utils import validate_generator_cfg

from kwrl.train.skyrl.compat import initialize_ray
from kwrl.train.skyrl.config import KwrlSkyRLConfig, parse_overrides


class KwrlEvalExp(EvalOnlyEntrypoint):
    """SkyRL's eval-only entry point whose rollouts are kwrl harbor trials."""

    def get_generator(self, cfg: Any, tokenizer: Any, inference_engine_client: Any) -> Any:
        from kwrl.train.skyrl.generator import KwrlHarborGenerator

        return KwrlHarborGenerator.from_skyrl(cfg, tokenizer, inference_engine_client)


def load(args: list[str]) -> KwrlSkyRLConfig:
    cfg = parse_overrides(args)
    validate_generator_cfg(cfg)
    return cfg


@ray.remote(num_cpus=1)
def _entrypoint(cfg: KwrlSkyRLConfig) -> dict[str, Any]:
    exp = KwrlEvalExp(cfg)
    client = exp.get_inference_client()
    return asyncio.run(exp.run(client))


def main(args: list[str] | None = None) -> None:
    cfg = load(sys.argv[1:] if args is None else args)
    initialize_ray(cfg)
    metrics = ray.get(_entrypoint.remote(cfg))
    logger.info(f"kwrl eval metrics: {metrics}")


if __name__ == "__main__":
    main()
