"""Rollout throughput of vLLM vs kwrl's in-process engine on one GPU, plus vLLM's TITO and weight checks.

    python benchmarks/vllm_rollout.py [--model smollm2-135m] [--prompts 64] [--prompt-len 128]
        [--new 256] [--batches 64,256] [--json docs/results/vllm_rollout-h200.json]

Both engines sample the same random token-id prompts (`--prompts` x `--prompt-len`, seeded) at
temperature 1 with up to `--new` new tokens, from the same model folder in bf16 on cuda:0: kwrl's
`Engine` (max_batch_size = the batch) and `VLLMEngine` (`kwrl.llm.engines.vllm`, vLLM in this
process). Throughput is sampled tokens over wall time of the whole batch (submitted at once, after
a warm-up batch), so EOS before `--new` counts as it would in a rollout. `--batches` times vLLM at
more batch sizes (the in-process engine only at `--prompts`).

Then, on vLLM only:
- TITO: a fresh Hugging Face forward (fp32) over prompt + completion of 8 sampled rows gives each
  sampled token's logprob at temperature 1; the table reports the mean and max absolute gap to
  vLLM's (bf16 sampling vs fp32 recompute: a few 1e-2 is rounding, not a bug);
- weights: greedy completions of 4 prompts; push the folder's own weights (`update_weights`,
  timed), a copy with every parameter scaled by 0.5 (completions must change), then the originals
  (completions must come back exactly).

Needs a CUDA GPU and vLLM (docs/gpu.md); prints a table and writes every figure to --json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

from kwrl.llm.base import SamplingParams


def prompts(n: int, length: int, vocab: int, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(10, vocab - 10, (n, length), generator=g).tolist()


def timed_batch(engine: Any, batch: list[list[int]], new: int) -> dict[str, float]:
    params = SamplingParams(max_tokens=new, temperature=1.0)
    engine.generate_many(batch[:2], SamplingParams(max_tokens=8, temperature=1.0))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    outs = engine.generate_many(batch, params)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    toks = sum(len(o.token_ids) for o in outs)
    return {"prompts": len(batch), "tokens": toks, "seconds": dt, "tokens_per_s": toks / dt}


def tito_gap(path: str, engine: Any, batch: list[list[int]], new: int) -> dict[str, float]:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to("cuda").eval()
    outs = engine.generate_many(batch, SamplingParams(max_tokens=new, temperature=1.0))
    gaps: list[float] = []
    with torch.no_grad():
        for p, o in zip(batch, outs, strict=True):
            if not o.token_ids:
                continue
            ids = torch.tensor([p + o.token_ids], device="cuda")
            logp = torch.log_softmax(model(ids).logits[0, len(p) - 1 : -1].float(), -1)
            ref = logp.gather(1, torch.tensor(o.token_ids, device="cuda")[:, None])[:, 0]
            gaps += (ref - torch.tensor(o.logprobs, device="cuda")).abs().tolist()
    del model
    torch.cuda.empty_cache()
    return {"tokens": len(gaps), "mean_abs": sum(gaps) / len(gaps), "max_abs": max(gaps)}


def weight_check(path: str, engine: Any, batch: list[list[int]]) -> dict[str, Any]:
    from safetensors.torch import load_file

    greedy = SamplingParams(max_tokens=32, temperature=0.0)

    def run() -> list[list[int]]:
        return [o.token_ids for o in engine.generate_many(batch, greedy)]

    state = {k: v.to("cuda") for k, v in load_file(str(Path(path) / "model.safetensors")).items()}
    before = run()
    t0 = time.perf_counter()
    v1 = engine.update_weights(state)
    same_s = time.perf_counter() - t0
    after_same = run()
    engine.update_weights({k: v * 0.5 for k, v in state.items()})
    scaled = run()
    t0 = time.perf_counter()
    v3 = engine.update_weights(state)
    back_s = time.perf_counter() - t0
    restored = run()
    nbytes = sum(v.numel() * v.element_size() for v in state.values())
    return {
        "versions": [v1, v3],
        "update_s": [same_s, back_s],
        "state_mb": nbytes / 2**20,
        "same_weights_same_greedy": after_same == before,
        "scaled_weights_changed": scaled != before,
        "restored_greedy": restored == before,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--batches", default="64,256", help="vLLM batch sizes to time")
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.35)
    ap.add_argument("--skip-engine", action="store_true", help="time vLLM only")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()

    from kwrl.llm.engines import EngineConfig, VLLMConfig, VLLMEngine, shared_engine
    from kwrl.llm.packaged import resolve_model

    path = resolve_model(a.model)
    res: dict[str, Any] = {"model": a.model, "prompt_len": a.prompt_len, "new": a.new}
    res["gpu"] = torch.cuda.get_device_name(0)
    t0 = time.perf_counter()
    vllm = VLLMEngine(path, VLLMConfig(gpu_memory_utilization=a.gpu_memory_utilization))
    res["vllm_start_s"] = time.perf_counter() - t0
    vocab = vllm.vocab_size
    sizes = sorted({a.prompts, *(int(x) for x in a.batches.split(",") if x)})
    res["vllm"] = [timed_batch(vllm, prompts(n, a.prompt_len, vocab, seed=n), a.new) for n in sizes]
    res["tito"] = tito_gap(path, vllm, prompts(8, a.prompt_len, vocab, seed=99), 64)
    res["weights"] = weight_check(path, vllm, prompts(4, 32, vocab, seed=7))
    vllm.close()
    if not a.skip_engine:
        eng = shared_engine(
            EngineConfig(model=path, dtype="bfloat16", device="cuda:0", max_batch_size=a.prompts)
        )
        res["engine"] = timed_batch(
            eng, prompts(a.prompts, a.prompt_len, vocab, seed=a.prompts), a.new
        )
        eng.close()

    t = Table(
        title=f"rollout on {res['gpu']}: {a.model}, {a.prompt_len}-token prompts, {a.new} new"
    )
    for c in ("engine", "prompts", "tokens", "seconds", "tokens/s", "vs kwrl Engine"):
        t.add_column(c)
    base = res.get("engine", {}).get("tokens_per_s")
    rows = [("kwrl Engine", res["engine"])] if "engine" in res else []
    rows += [("vLLM 0.23 (in-process)", r) for r in res["vllm"]]
    for name, r in rows:
        ratio = f"{r['tokens_per_s'] / base:.1f}x" if base else "-"
        t.add_row(name, str(r["prompts"]), str(r["tokens"]), f"{r['seconds']:.2f}",
                  f"{r['tokens_per_s']:,.0f}", ratio)  # fmt: skip
    Console().print(t)
    w = res["weights"]
    print(f"vLLM start {res['vllm_start_s']:.1f} s; TITO |dlogprob| mean {res['tito']['mean_abs']:.4f} "
          f"max {res['tito']['max_abs']:.4f} over {res['tito']['tokens']} tokens; weight push "
          f"{w['state_mb']:.0f} MiB in {w['update_s'][0]:.2f}/{w['update_s'][1]:.2f} s; same "
          f"weights same greedy {w['same_weights_same_greedy']}, scaled changed "
          f"{w['scaled_weights_changed']}, restored {w['restored_greedy']}")  # fmt: skip
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
