"""`kwrl train CONFIG rl.mode=disaggregated` end to end on CPU: two generation worker processes
run real harbor trials (local sandbox, KwrlAgent, engine policy) while the learner trains in the
`kwrl train` process and broadcasts its weights to them over gloo after every step.

The policy is a randomly initialised 2-layer Llama with SmolLM2's tokenizer; turns are cut at 8
tokens, so every reward is 0 and (zero-variance groups kept) advantages are exactly 0: a step
changes the weights only through AdamW's weight decay, `w * (1 - lr * wd)`. So the weights of
version v are known exactly, and the first token of every policy turn, sampled in a worker, must
have the logprob a fresh forward of those weights gives: the broadcast weights are the ones that
sampled, in the engine the agent used.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from train_helpers import ENV, KWRL, save_tiny_llama, synth_dataset

LR, WD, STEPS, MAX_STALENESS = 0.1, 0.5, 3, 1

CONFIG = f"""\
seed = 0
concurrency = 2
tensorboard = false

[rl]
prompts_per_step = 2
samples_per_prompt = 2
steps = {STEPS}
epochs = 2
max_staleness = {MAX_STALENESS}
drop_zero_variance = false

[learner]
lr = {LR}
weight_decay = {WD}

[engine]
max_batch_size = 4

[disaggregated]
generation_devices = ["cpu", "cpu"]
worker_threads = 1

[agent]
max_steps = 1
max_tokens_per_turn = 8
context_window = 4096
tools = ["filesystem_list_files"]
"""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth_dataset(tmp_path_factory.mktemp("disagg-data") / "ds", tasks_per_world=4)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_llama(tmp_path_factory.mktemp("disagg-model") / "tiny-llama")


def _turns(run: Path, step: int) -> list[dict[str, Any]]:
    """(trial metadata, turn stats) of every trial of batch `step`, over all workers."""
    out = []
    for res in sorted((run / "rollouts" / f"batch-{step:06d}").glob("w*/trials/*/result.json")):
        meta = (json.loads(res.read_text()).get("agent_result") or {}).get("metadata") or {}
        out.append(meta)
    return out


@pytest.mark.slow
def test_disaggregated_training_runs_real_trials_in_workers_on_broadcast_weights(
    dataset: Path, tiny_model: Path, tmp_path: Path
) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    config = tmp_path / "train.toml"
    config.write_text(CONFIG)
    run = tmp_path / "run"
    argv = [
        *KWRL, "train", str(config), "rl.mode=disaggregated", f"dataset={dataset}",
        f"model={tiny_model}", f"out={run}",
    ]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout[-2000:]
    assert "2 generation worker(s)" in proc.stdout and "over gloo" in proc.stdout

    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in lines] == list(range(1, STEPS + 1))
    for m in lines:
        assert m["stale_dropped"] == 0
        assert 0 <= m["staleness"] <= MAX_STALENESS
        assert m["trials"] == 4 and set(m["worker_versions"]) == {"1", "2"}  # both workers
        assert m["weight_sync_s"] is not None

    # Every policy turn of batch s ran on weights no older than s - 1 - max_staleness, and the
    # later batches ran on broadcast weights (the agent's engine is the synced one).
    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32).eval()
    params = dict(model.named_parameters())  # tied embeddings once, not twice
    init = {k: v.detach().clone() for k, v in params.items()}
    seen: set[int] = set()
    for step in range(1, STEPS + 1):
        metas = _turns(run, step)
        assert len(metas) == 4
        for meta in metas:
            (turn,) = meta["turn_stats"]
            v = int(turn["weight_version"])
            assert step - 1 - MAX_STALENESS <= v <= step - 1
            seen.add(v)
            # Weights of version v: v weight-decay steps, as AdamW applies them in float32.
            with torch.no_grad():
                for k, p in params.items():
                    p.copy_(init[k])
                    for _ in range(v):
                        p.mul_(1 - LR * WD)
                prompt, resp = meta["prompt_token_ids"], meta["response_ids"]
                logits = model(torch.tensor([prompt + resp[:1]])).logits[0, len(prompt) - 1]
                fresh = float(torch.log_softmax(logits.float(), -1)[resp[0]])
            assert meta["rollout_logprobs"][0] == pytest.approx(fresh, abs=2e-3), (step, v)
    assert max(seen) >= 1
