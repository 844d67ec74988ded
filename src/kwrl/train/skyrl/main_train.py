"""`python -m kwrl.train.skyrl.main_train OVERRIDES...`: SkyRL's synchronous PPO loop, kwrl's generator.

`KwrlExp` is SkyRL's `BasePPOExp` with one change: `get_generator` returns `KwrlHarborGenerator`
(harbor trials over kwrl's sandbox presets). Datasets are SkyRL prompt parquets written by
`python -m kwrl.train.skyrl.data`. The sync trainer supports colocation, so this is the 1-GPU
smoke's entry point (scripts/skyrl/smoke_1gpu.sh). Needs Ray, vLLM and a GPU at run time.
"""

from __future__ import annotations

import sys
from typing import Any

import ray
from skyrl.train.entrypoints.main_base import BasePPOExp
from skyrl.train.utils import validate_cfg

from kwrl.train.skyrl.compat import initialize_ray
from kwrl.train.skyrl.config import (
    KwrlSkyRLConfig,
    check_policy_model,
    check_temperature,
    check_truncation,
    kwrl_section,
    parse_overrides,
)


class KwrlExp(BasePPOExp):
    """SkyRL experiment whose rollouts are kwrl harbor trials; its prompt datasets are filtered
    with `kwrl.prompt_workers` processes (SkyRL's base class spawns 8 for each)."""

    def get_generator(self, cfg: Any, tokenizer: Any, inference_engine_client: Any) -> Any:
        from kwrl.train.skyrl.generator import KwrlHarborGenerator

        return KwrlHarborGenerator.from_skyrl(cfg, tokenizer, inference_engine_client)

    def _prompts(self, files: list[str]) -> Any:
        from skyrl.train.dataset import PromptDataset

        tokenizer: Any = self.tokenizer  # typed AutoTokenizer by SkyRL; an instance of one
        return PromptDataset(
            datasets=files,
            tokenizer=tokenizer,
            max_prompt_length=self.cfg.trainer.max_prompt_length,
            num_workers=kwrl_section(self.cfg).prompt_workers,
        )

    def get_train_dataset(self) -> Any:
        got = self._prompts(list(self.cfg.data.train_data))
        if len(got) < self.cfg.trainer.train_batch_size:
            raise ValueError(
                f"data.train_data: {len(got)} prompts, fewer than trainer.train_batch_size "
                f"({self.cfg.trainer.train_batch_size})"
            )
        return got

    def get_eval_dataset(self) -> Any:
        if self.cfg.trainer.eval_interval > 0 and self.cfg.data.val_data:
            return self._prompts(list(self.cfg.data.val_data))
        return None


def load(args: list[str]) -> KwrlSkyRLConfig:
    """Parse and validate argv the way every kwrl SkyRL entry point does."""
    cfg = parse_overrides(args)
    check_policy_model(cfg)
    check_temperature(cfg)
    check_truncation(cfg)
    validate_cfg(cfg)
    return cfg


@ray.remote(num_cpus=1)
def _entrypoint(cfg: KwrlSkyRLConfig) -> None:
    KwrlExp(cfg).run()


def main(args: list[str] | None = None) -> None:
    from kwrl.rollout.faults import refuse

    refuse("SkyRL training (kwrl.train.skyrl.main_train)")
    cfg = load(sys.argv[1:] if args is None else args)
    initialize_ray(cfg)
    ray.get(_entrypoint.remote(cfg))


if __name__ == "__main__":
    main()
