"""Learner and rollout throughput on a GPU, against TRL's GRPOTrainer on the same batches.

Run on the lent H200 (see docs/benchmarks.md for the exact command): a randomly initialised
Qwen2.5-0.5B-architecture model in bf16; synthetic TITO batches (prompt + response with
observation spans masked out, GRPO groups, random rewards). Prints one table:

- rollout tokens/s: kwrl's in-process engine (KV-cache batched sampling), batch of prompts
- learner tokens/s: kwrl's Learner.step (DPPO, prompt_mean) over the batch, micro-batched
- TRL tokens/s: TRL's GRPOTrainer.compute_loss + backward + AdamW step on the same micro-batches
- ratio kwrl/TRL and the learner's MFU (model FLOPs: 6 N + causal attention, over peak bf16)

Usage: python benchmarks/train_throughput.py [--seqs 32] [--prompt-len 512] [--response-len 1536]
       [--micro 8] [--steps 3] [--skip-trl] [--skip-rollout]
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import time
from typing import Any

import torch

from kwrl.train.algorithms import grpo_advantages
from kwrl.train.batch import Trajectory, collate
from kwrl.train.local.learner import Learner, LearnerConfig

PEAK_BF16 = 989e12  # H100/H200 SXM dense bf16 (datasheet)


def qwen25_05b(device: str) -> torch.nn.Module:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        rope_theta=1_000_000.0,
        tie_word_embeddings=True,
        attn_implementation="sdpa",
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg).to(device=device, dtype=torch.bfloat16)
    return model


def synthetic(n: int, p_len: int, r_len: int, group: int, seed: int = 0) -> list[Trajectory]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        prompt = torch.randint(10, 150000, (p_len,), generator=g).tolist()
        resp = torch.randint(10, 150000, (r_len,), generator=g).tolist()
        mask = [1] * r_len
        for s in range(r_len // 4, r_len, r_len // 3):  # observation spans: not trained
            for j in range(s, min(s + r_len // 10, r_len)):
                mask[j] = 0
        lps = [(-float(torch.rand(1, generator=g)) * 2 if m else 0.0) for m in mask]
        reward = float(torch.rand(1, generator=g))
        out.append(Trajectory(prompt, resp, mask, lps, reward=reward, group_id=i // group))
    return out


def flops_per_token(model: torch.nn.Module, seq: int) -> float:
    n = sum(p.numel() for p in model.parameters())
    c = model.config
    attn = 6 * c.num_hidden_layers * c.hidden_size * seq  # causal: half of 12 L H S
    return 6 * n + attn


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def bench_kwrl(
    model: torch.nn.Module, batch: Any, micro: int, steps: int, compile: bool = False
) -> dict[str, float]:
    cfg = LearnerConfig(lr=1e-6, micro_batch_size=micro, dtype="bfloat16", compile=compile)
    learner = Learner(model, cfg)
    learner.step(batch)  # warm-up
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        learner.step(batch)
    sync()
    dt = (time.perf_counter() - t0) / steps
    return {"step_s": dt, "tokens_per_s": batch.num_tokens / dt}


def _tiny_tokenizer() -> Any:
    """A word-level tokenizer built in memory: TRL wants a processing class, the hub is unreachable."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, "x": 3}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )


def bench_trl(
    model: torch.nn.Module,
    trajs: list[Trajectory],
    adv: torch.Tensor,
    micro: int,
    steps: int,
    tmp: str,
) -> dict[str, float]:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(
        output_dir=tmp,
        per_device_train_batch_size=micro,
        num_generations=2,
        bf16=True,
        beta=0.0,
        loss_type="dapo",
        learning_rate=1e-6,
        report_to=[],
        logging_steps=1000,
    )
    ds = Dataset.from_dict({"prompt": ["x"] * 8})
    model.config._name_or_path = "qwen2.5-0.5b-random-init"
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[lambda completions, **kw: [0.0] * len(completions)],
        args=args,
        train_dataset=ds,
        processing_class=_tiny_tokenizer(),
    )
    dev = next(model.parameters()).device
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, betas=(0.9, 0.98), weight_decay=0.01)
    P = len(trajs[0].prompt_ids)
    prompt_ids = torch.tensor([t.prompt_ids for t in trajs], device=dev)
    completion_ids = torch.tensor([t.response_ids for t in trajs], device=dev)
    completion_mask = torch.tensor([t.loss_mask for t in trajs], device=dev, dtype=torch.long)
    old = torch.tensor([t.logprobs for t in trajs], device=dev, dtype=torch.float32)
    tokens = prompt_ids.numel() + completion_ids.numel()
    del P

    def one_step() -> None:
        n_items = completion_mask.sum()
        for s in range(0, len(trajs), micro):
            inputs = {
                "prompt_ids": prompt_ids[s : s + micro],
                "prompt_mask": torch.ones_like(prompt_ids[s : s + micro]),
                "completion_ids": completion_ids[s : s + micro],
                "completion_mask": completion_mask[s : s + micro],
                "advantages": adv[s : s + micro].to(dev),
                "old_per_token_logps": old[s : s + micro],
                "num_items_in_batch": n_items,
            }
            loss = trainer.compute_loss(model, inputs)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    one_step()
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        one_step()
    sync()
    dt = (time.perf_counter() - t0) / steps
    return {"step_s": dt, "tokens_per_s": tokens / dt}


def bench_rollout(model: torch.nn.Module, n: int, p_len: int, new: int) -> dict[str, float]:
    """Sampling throughput of kwrl's engine (falls back to HF generate if the engine is absent)."""
    prompts = [torch.randint(10, 150000, (p_len,)).tolist() for _ in range(n)]
    try:
        from kwrl.llm.base import SamplingParams
        from kwrl.llm.engine import Engine

        engine = Engine(model, _tiny_tokenizer(), max_batch_size=n)  # type: ignore[arg-type]
        params = SamplingParams(max_tokens=new, temperature=1.0)
        engine.generate_many(prompts[:2], SamplingParams(max_tokens=4))
        sync()
        t0 = time.perf_counter()
        outs = engine.generate_many(prompts, params)
        sync()
        dt = time.perf_counter() - t0
        toks = sum(len(o.token_ids) for o in outs)
        engine.close()
        return {"tokens_per_s": toks / dt, "via": "kwrl.Engine"}  # type: ignore[dict-item]
    except Exception as e:
        print(f"engine unavailable ({type(e).__name__}: {e}); timing HF generate instead")
    ids = torch.tensor(prompts, device=next(model.parameters()).device)
    model.generate(ids[:2], max_new_tokens=4, do_sample=True)
    sync()
    t0 = time.perf_counter()
    out = model.generate(
        ids, max_new_tokens=new, min_new_tokens=new, do_sample=True, temperature=1.0
    )
    sync()
    dt = time.perf_counter() - t0
    return {"tokens_per_s": (out.shape[1] - p_len) * n / dt, "via": "hf.generate"}  # type: ignore[dict-item]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqs", type=int, default=32)
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--response-len", type=int, default=1536)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--micro", type=int, default=8)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--rollout-n", type=int, default=64)
    ap.add_argument("--rollout-new", type=int, default=256)
    ap.add_argument("--skip-trl", action="store_true")
    ap.add_argument("--skip-rollout", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--compile", action="store_true", help="torch.compile kwrl's decoder layers")
    ap.add_argument(
        "--micro-sweep", default="", help="also time kwrl at these micro sizes, e.g. 16,32"
    )
    a = ap.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = qwen25_05b(dev)
    trajs = synthetic(a.seqs, a.prompt_len, a.response_len, a.group)
    rewards = torch.tensor([t.reward for t in trajs])
    adv = grpo_advantages(rewards, [t.group_id for t in trajs])
    batch = collate(trajs, adv.tolist())
    batch = type(batch)(
        *(x.to(dev) if isinstance(x, torch.Tensor) else x for x in vars(batch).values())
    )
    seq = a.prompt_len + a.response_len
    fpt = flops_per_token(model, seq)
    res: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
        "tokens_per_step": batch.num_tokens,
    }
    if not a.skip_rollout:
        res["rollout"] = bench_rollout(model, a.rollout_n, 128, a.rollout_new)
    trl_model = copy.deepcopy(model) if not a.skip_trl else None
    res["kwrl"] = bench_kwrl(model, batch, a.micro, a.steps, a.compile)
    for m in [int(x) for x in a.micro_sweep.split(",") if x]:
        r = bench_kwrl(model, batch, m, a.steps, a.compile)
        r["mfu"] = r["tokens_per_s"] * fpt / PEAK_BF16
        res[f"kwrl_micro{m}"] = r
    res["kwrl"]["mfu"] = res["kwrl"]["tokens_per_s"] * fpt / PEAK_BF16
    res["kwrl"]["peak_mem_gb"] = torch.cuda.max_memory_allocated() / 2**30 if dev == "cuda" else 0.0
    if trl_model is not None:
        del model
        gc.collect()
        if dev == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            try:
                res["trl"] = bench_trl(trl_model, trajs, adv, a.micro, a.steps, tmp)
                res["trl"]["mfu"] = res["trl"]["tokens_per_s"] * fpt / PEAK_BF16
                res["trl"]["peak_mem_gb"] = (
                    torch.cuda.max_memory_allocated() / 2**30 if dev == "cuda" else 0.0
                )
                res["ratio_kwrl_over_trl"] = (
                    res["kwrl"]["tokens_per_s"] / res["trl"]["tokens_per_s"]
                )
            except Exception as e:
                res["trl_error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(res, indent=2))
    rows = [
        ("rollout tokens/s", res.get("rollout", {}).get("tokens_per_s")),
        ("kwrl learner tokens/s", res["kwrl"]["tokens_per_s"]),
        ("kwrl learner MFU", res["kwrl"]["mfu"]),
        ("TRL GRPOTrainer tokens/s", res.get("trl", {}).get("tokens_per_s")),
        ("TRL MFU", res.get("trl", {}).get("mfu")),
        ("kwrl / TRL", res.get("ratio_kwrl_over_trl")),
    ]
    print(f"\n{'metric':<28}{'value':>14}")
    for k, v in rows:
        print(f"{k:<28}{(f'{v:,.3f}' if isinstance(v, float) else str(v)):>14}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
