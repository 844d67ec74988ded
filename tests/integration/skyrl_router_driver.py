"""Driver of test_skyrl_router.py, run in its own process (Ray and SkyRL set process-wide state).

`python skyrl_router_driver.py DATA MODEL SERVER_URL OUT_JSON TRIALS_DIR LOG_DIR`: SkyRL's config
through kwrl's parser, Ray through kwrl's entry-point helper, SkyRL's own inference client with
`external_server_urls=[SERVER_URL]` (SkyRL starts its vllm-router over it), one weight-version
bump, then `KwrlHarborGenerator.from_skyrl` + `generate` in a Ray task on SkyRL's prepared
generator input (2 tasks x 2 samples); SkyRL's output validation runs there too. Writes what the
test checks to OUT_JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import ray


@ray.remote(num_cpus=1)
def generate(cfg: Any, client: Any) -> dict[str, Any]:
    from skyrl.train.dataset import PromptDataset
    from skyrl.train.generators.utils import prepare_generator_input
    from skyrl.train.utils.trainer_utils import validate_generator_output
    from skyrl.utils.tok import get_tokenizer

    from kwrl.train.skyrl.generator import KwrlHarborGenerator

    tokenizer = get_tokenizer(cfg.trainer.policy.model.path)
    files = cfg.data.train_data
    dataset = PromptDataset(files, tokenizer, max_prompt_length=4096, num_workers=1)  # pyright: ignore[reportArgumentType]
    rows = dataset.collate_fn([dataset[i] for i in range(len(dataset))])
    sampling = {"temperature": 1.0, "top_p": 1.0, "max_tokens": 16}
    batch, _ = prepare_generator_input(rows, 2, sampling, "kwrl", "train", 1)
    generator = KwrlHarborGenerator.from_skyrl(cfg, tokenizer, client)
    out = asyncio.run(generator.generate(batch))
    metrics = out.pop("rollout_metrics") or {}
    validate_generator_output(len(batch["prompts"]), out)
    return {
        "policy_spec": generator.policy_spec,
        "metrics": metrics,
        "env_metrics": out["env_metrics"],
        "response_lengths": [len(r) for r in out["response_ids"]],
        "loss_mask_sums": [sum(m) for m in out["loss_masks"]],
    }


def main(data: str, model: str, server: str, out_json: str, trials: str, logs: str) -> None:
    from skyrl.backends.skyrl_train.inference_servers.setup import build_new_inference_client
    from skyrl.utils.tok import get_tokenizer

    from kwrl.train.skyrl.compat import initialize_ray
    from kwrl.train.skyrl.config import parse_overrides

    cfg = parse_overrides(
        [
            f"data.train_data=['{data}']",
            f"trainer.policy.model.path={model}",
            "generator.inference_engine.served_model_name=policy",
            f"generator.inference_engine.external_server_urls=['{server}']",
            f"trainer.log_path={logs}",
            "trainer.logger=console",
            f"kwrl.trials_dir={trials}",
            "kwrl.sandbox.environment=local",
            "kwrl.concurrency=4",
            "kwrl.retries=1",
            "kwrl.agent.max_steps=2",
            "kwrl.agent.context_window=8192",
            "kwrl.agent.tool_call_parser=hermes",
            "kwrl.agent.tools=[filesystem_list_files]",
        ]
    )
    initialize_ray(cfg)
    client, setup = build_new_inference_client(cfg, get_tokenizer(model))
    try:
        client.increment_weight_version()  # what SkyRL does after each weight sync
        result = ray.get(generate.remote(cfg, client))
    finally:
        if setup.router is not None:
            setup.router.shutdown()
        ray.shutdown()
    result |= {
        "proxy_url": client.get_endpoint_url(),
        "server_urls": list(setup.server_urls),
        "router": type(setup.router).__name__,
        "weight_version": client.weight_version,
    }
    Path(out_json).write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main(*sys.argv[1:7])
