"""KwrlHarborGenerator on real harbor trials: generated tasks, the local sandbox, `kwrl serve`.

The path SkyRL takes, minus the GPU: `kwrl data synth` tasks -> prompts parquet
(`kwrl.train.skyrl.data`) -> SkyRL's `PromptDataset` and `prepare_generator_input` -> our
`generate` (KwrlAgent over SmolLM2-135M served by a `kwrl serve` subprocess, trials in bubblewrap,
the real grader) -> SkyRL's output validation, zero-variance filter, tensor conversion and GRPO
advantages. The model is tiny and untrained, so rewards are whatever the grader says (mostly 0).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from agent_helpers import policy_server, synth_prompts

pytestmark = pytest.mark.slow

if shutil.which("bwrap") is None:
    pytest.skip("bubblewrap not installed", allow_module_level=True)


async def test_generator_runs_real_trials_and_its_output_feeds_skyrls_trainer_code(
    tmp_path: Path,
) -> None:
    from skyrl.backends.skyrl_train.utils import ppo_utils
    from skyrl.train.config import AlgorithmConfig
    from skyrl.train.dataset import PromptDataset
    from skyrl.train.dataset.preprocess import convert_prompts_responses_to_batch_tensors
    from skyrl.train.generators.utils import prepare_generator_input
    from skyrl.train.utils.trainer_utils import validate_generator_output, zero_variance_filter
    from transformers import AutoTokenizer

    from kwrl.llm.packaged import ensure_model
    from kwrl.train.skyrl.config import KwrlSection
    from kwrl.train.skyrl.generator import KwrlHarborGenerator

    data, parquet = synth_prompts(tmp_path)

    model = ensure_model("smollm2-135m")
    tokenizer = AutoTokenizer.from_pretrained(model)
    dataset = PromptDataset([str(parquet)], tokenizer, max_prompt_length=4096, num_workers=1)
    rows = dataset.collate_fn([dataset[i] for i in range(len(dataset))])
    sampling = {"temperature": 1.0, "top_p": 1.0, "max_tokens": 12}
    batch, uids = prepare_generator_input(rows, 2, sampling, "kwrl", "train", 1)
    assert all(ex["task_path"].startswith(str(data)) for ex in batch["env_extras"] or [])

    with policy_server(str(model), served_name="policy") as base_url:
        section = KwrlSection(
            trials_dir=str(tmp_path / "trials"),
            concurrency=4,
            retries=1,
            agent={
                "max_steps": 2,
                "context_window": 8192,
                "tools": ["filesystem_list_files"],
            },
            judge_env_passthrough=[],
        )
        client = type("Client", (), {"weight_version": 3})()
        generator = KwrlHarborGenerator(
            section,
            policy_url=base_url,
            policy_model="policy",
            tokenizer=str(model),
            pad_token_id=int(tokenizer.pad_token_id or 0),
            inference_engine_client=client,
        )
        out = await generator.generate(batch)

    metrics = out.pop("rollout_metrics") or {}
    assert metrics["kwrl/trials"] == 4
    validate_generator_output(len(batch["prompts"]), out)
    trial_dirs = sorted((tmp_path / "trials").glob("train-s000001-*/*"))
    assert len(trial_dirs) >= 4
    by_name = {p.name: p for p in trial_dirs}
    records = out["env_metrics"] or []
    # the untrained 135M model rambles: turns are cut at 12 tokens (reward 0, still trained)
    assert all(r["cause"] in ("none", "max_tokens", "context_overflow") for r in records), records
    assert all(r["reward"] is not None for r in records), "every trial was graded"
    for i, rec in enumerate(records):
        result = json.loads((by_name[rec["trial"]] / "result.json").read_text())
        meta = result["agent_result"]["metadata"]
        assert meta["session_id"].startswith("train-s000001-")  # per-trial session for the router
        # a trained row is exactly the trial's TITO arrays
        assert sum(out["loss_masks"][i]) > 0
        assert out["prompt_token_ids"][i] == meta["prompt_token_ids"]
        assert out["response_ids"][i] == meta["response_ids"]
        assert out["loss_masks"][i] == meta["loss_mask"]
        assert out["rollout_logprobs"][i] == meta["rollout_logprobs"]  # type: ignore[index]
        assert out["rewards"][i] == rec["reward"]
    assert "kwrl/criterion_pass_rate" in metrics and "kwrl/tool_calls" in metrics

    kept = zero_variance_filter(out["rewards"], uids, loss_masks=out["loss_masks"], tol=1e-6)  # type: ignore[arg-type]
    assert set(kept) <= set(range(4))
    per_token = []
    for r, resp in zip(out["rewards"], out["response_ids"], strict=True):
        row = [0.0] * len(resp)
        row[-1] = float(r)  # type: ignore[arg-type]
        per_token.append(row)
    seqs, _, resp_mask, rewards_t, loss_mask_t, logprobs_t, _ = convert_prompts_responses_to_batch_tensors(
        tokenizer, out["prompt_token_ids"], out["response_ids"], per_token, out["loss_masks"],
        out["rollout_logprobs"], None,
    )  # fmt: skip
    assert seqs.shape[0] == 4 and logprobs_t is not None
    assert loss_mask_t.shape == resp_mask.shape == logprobs_t.shape
    adv, _ = ppo_utils.compute_advantages_and_returns(
        token_level_rewards=rewards_t, response_mask=resp_mask, index=np.array(uids),
        adv_estimator="grpo", config=AlgorithmConfig(), values=None, grpo_norm_by_std=False,
    )  # fmt: skip
    assert bool(adv.isfinite().all())
