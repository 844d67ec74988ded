"""`python -m kwrl.train.skyrl.main_eval OVERRIDES...`: evaluation only (e.g. the 480-task APEX set).

SkyRL's `EvalOnlyEntrypoint` with kwrl's generator: every `data.val_data` prompt runs
`generator.eval_n_samples_per_prompt` harbor trials with the served checkpoint; SkyRL logs mean
reward and pass@n, kwrl's generator adds per-criterion pass rates, tool mix and failure causes.
SkyRL's `eval/all/avg_score` averages every row, so a trial the infrastructure failed (no score:
its sandbox, the judge, the gateway) counts there as 0; kwrl's `eval/all/kwrl/mean_reward` is the
mean over the trials with a score, and `scored` says which to read: the run ends with exit code 3
when no trial has a score (nothing was measured, e.g. a sandbox refusing to start).
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


NO_SCORE_EXIT = 3
"""Exit code of an evaluation in which no trial has a score."""


def scored(metrics: dict[str, Any], prefix: str = "eval/all/") -> tuple[str, int]:
    """What an evaluation measured, read from its metrics: kwrl's mean reward over the trials with
    a score, how many had none and why (their causes), beside SkyRL's `avg_score`, which counts
    those as 0; and the exit code (`NO_SCORE_EXIT` when trials ran and none has a score)."""
    trials = int(metrics.get(f"{prefix}kwrl/trials", 0))
    graded = int(metrics.get(f"{prefix}kwrl/graded", 0))
    avg = metrics.get(f"{prefix}avg_score")
    causes = ", ".join(
        f"{k.rsplit('/', 1)[1]} {int(v)}"
        for k, v in sorted(metrics.items())
        if k.startswith(f"{prefix}kwrl/cause/") and not k.endswith("/none") and v
    )
    if trials and not graded:
        return (
            f"no trial of {trials} has a score (causes: {causes or '-'}): nothing was measured; "
            f"SkyRL's avg_score {avg} counts them as 0",
            NO_SCORE_EXIT,
        )
    mean = metrics.get(f"{prefix}kwrl/mean_reward")
    text = f"mean reward {mean} over the {graded} of {trials} trials with a score"
    if graded < trials:
        text += (
            f"; {trials - graded} without one ({causes}), which SkyRL's avg_score {avg} counts as 0"
        )
    return text, 0


def main(args: list[str] | None = None) -> None:
    cfg = load(sys.argv[1:] if args is None else args)
    initialize_ray(cfg)
    metrics = ray.get(_entrypoint.remote(cfg))
    logger.info(f"kwrl eval metrics: {metrics}")
    text, rc = scored(metrics)
    (logger.error if rc else logger.info)(f"kwrl eval: {text}")
    if rc:
        raise SystemExit(rc)


if __name__ == "__main__":
    main()
