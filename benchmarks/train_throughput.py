"""Learner and rollout throughput on a GPU, against TRL's GRPOTrainer on the same batches.

Run on the lent H200 (see docs/benchmarks.md for the exact command): a randomly initialised
Qwen2.5-0.5B-architecture model in bf16; synthetic TITO batches (prompt + response with
observation spans masked out, GRPO groups, random rewards). Prints one table:

- rollout tokens/s: kwrl's in-process engine (KV-cache batched sampling), batch of prompts
- learner tokens/s: kwrl's Learner.step (DPPO, prompt_mean) over the batch, micro-batched
- TRL tokens/s: TRL's GRPOTrainer.compute_loss + backward + AdamW step on the same micro-batches
- ratio kwrl/TRL and the learner's MFU (see below)

Usage: python benchmarks/train_throughput.py [--seqs 32] [--prompt-len 512] [--response-len 1536]
       [--trl-micro 8,32] [--steps 3] [--warmup 2] [--rounds 1] [--kwrl eager:8,eager:16,compile:16]
       [--distinct-prompts] [--skip-trl] [--skip-rollout]

MFU counts the FLOPs the step needs (`step_flops`: body and attention for every token, the LM
head only for scored tokens) over the datasheet's dense bf16 peak; the measured 8192^3 matmul
rate is printed beside it. The trials of a GRPO group share their prompt (as they do in training;
`--distinct-prompts`: each its own), and kwrl's learner runs a shared prompt once
(`LearnerConfig.share_prefix`; `+noshare` turns it off): its MFU counts the FLOPs it executes.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import statistics
import tempfile
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


def synthetic(
    n: int, p_len: int, r_len: int, group: int, seed: int = 0, shared_prompts: bool = True
) -> list[Trajectory]:
    """GRPO batches: `group` trials of a task share its prompt (`shared_prompts=False`: every
    trial draws its own, as sessions 3-7 measured)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    prompt: list[int] = []
    for i in range(n):
        if not shared_prompts or i % group == 0:
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


def step_flops(model: torch.nn.Module, batch: Any, body_tokens: float | None = None) -> float:
    """Model FLOPs one learner step needs (forward + backward, no recompute counted).

    Every token runs the decoder body (6 x its parameters, embeddings excluded) and causal
    attention (6 x layers x hidden x seq, half of 12 L H S); only the tokens a loss scores need
    the LM head (6 x vocab x hidden). `body_tokens`: the tokens the body actually runs on when
    that is fewer (kwrl's shared-prefix packing runs a group's prompt once), so that MFU counts
    the FLOPs executed, not the ones saved.
    """
    c = model.config
    head = c.vocab_size * c.hidden_size
    body = sum(p.numel() for p in model.parameters()) - head  # tied: the head is the embedding
    if not c.tie_word_embeddings:
        body -= head
    tokens = float(batch.attention_mask_B_L.sum())
    scored = float(batch.mask_B_L.sum())
    seq = batch.input_ids_B_L.shape[1]
    body_tokens = tokens if body_tokens is None else body_tokens
    attention = tokens * 6 * c.num_hidden_layers * c.hidden_size * seq
    return body_tokens * 6 * body + attention + scored * 6 * head


def packed_check(model: torch.nn.Module, batch: Any, rows: int = 16) -> float | None:
    """Max |logprob| difference between the packed and the unpacked forward (eager, bf16) over
    the first `rows` trials' scored tokens; None when nothing packs."""
    from kwrl.train.local import prefix
    from kwrl.train.local.learner import _on_device, token_logprobs

    dev = next(model.parameters()).device
    mb = batch.slice(0, rows)
    pp = prefix.plan(mb.input_ids_B_L, mb.attention_mask_B_L, mb.group_ids)
    if pp is None:
        return None
    mb = _on_device(mb, dev)
    prefix.register()
    cfg = model.config  # type: ignore[union-attr]
    with torch.no_grad():
        cfg._attn_implementation = "sdpa"
        want = token_logprobs(model, mb, only_mask=True)
        cfg._attn_implementation = prefix.ATTENTION
        got = token_logprobs(model, mb, only_mask=True, prefix=_on_device(pp, dev))
        cfg._attn_implementation = "sdpa"
    m = mb.mask_B_L.bool()
    return float((got[m] - want[m]).abs().max())


def packed_tokens(batch: Any, micro: int) -> float:
    """Tokens the decoder body runs on under shared-prefix packing, micro-batch by micro-batch."""
    from kwrl.train.local.prefix import plan

    total = 0.0
    for s in range(0, batch.input_ids_B_L.shape[0], micro):
        p = plan(
            batch.input_ids_B_L[s : s + micro], batch.attention_mask_B_L[s : s + micro],
            batch.group_ids[s : s + micro],
        )  # fmt: skip
        total += p.tokens if p is not None else float(batch.attention_mask_B_L[s : s + micro].sum())
    return total


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def bench_kwrl(
    model: torch.nn.Module,
    batch: Any,
    micro: int,
    steps: int,
    mode: str = "eager",
    warmup: int = 2,
) -> dict[str, float]:
    """mode: eager, compile (torch.compile's default) or autotune (max-autotune-no-cudagraphs),
    then optional `+` flags: `nohc` (head_checkpoint off), `cudnn` / `flash` (attention kernel),
    `chunkN` (head_chunk N: scored positions per LM-head chunk, e.g. chunk65536), `nokernels`
    (LearnerConfig.gpu_kernels off), `noshare` (LearnerConfig.share_prefix off)."""
    base, *flags = mode.split("+")
    chunks = [int(f[5:]) for f in flags if f.startswith("chunk") and f[5:].isdigit()]
    known = {"nohc", "cudnn", "flash", "nokernels", "noshare", *(f"chunk{c}" for c in chunks)}
    unknown = set(flags) - known
    if base not in ("eager", "compile", "autotune") or unknown:
        raise SystemExit(f"--kwrl: unknown mode {mode!r}")
    attention = "cudnn" if "cudnn" in flags else "flash" if "flash" in flags else "default"
    cfg = LearnerConfig(
        lr=1e-6, micro_batch_size=micro, dtype="bfloat16", compile=base != "eager",
        compile_mode="max-autotune-no-cudagraphs" if base == "autotune" else None,
        head_checkpoint="nohc" not in flags, attention=attention,
        head_chunk=chunks[-1] if chunks else 8192, gpu_kernels="nokernels" not in flags,
        share_prefix="noshare" not in flags,
    )  # fmt: skip
    if cfg.compile:
        # Graphs compiled for another config (attention kernel, head) must not be reused.
        torch._dynamo.reset()
    learner = Learner(model, cfg)
    if not cfg.share_prefix:  # an earlier config's learner switched the model's attention
        model.config._attn_implementation = "sdpa"  # type: ignore[union-attr]
    for _ in range(warmup):  # compiles; automatic dynamic shapes may compile again on step 2
        learner.step(batch)
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
    warmup: int = 2,
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
    # Outside `Trainer.train()` this attribute is unset; one optimizer step per batch, so 1 (the
    # dapo loss then divides each micro-batch's sum by the batch's scored-token count).
    trainer.current_gradient_accumulation_steps = 1
    model.train()
    dev = next(model.parameters()).device
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, betas=(0.9, 0.98), weight_decay=0.01)
    P = len(trajs[0].prompt_ids)
    prompt_ids = torch.tensor([t.prompt_ids for t in trajs], device=dev)
    completion_ids = torch.tensor([t.response_ids for t in trajs], device=dev)
    # TRL attends over completion_mask and scores completion_mask * tool_mask: tool outputs are
    # attended to but not trained, as in kwrl.
    tool_mask = torch.tensor([t.loss_mask for t in trajs], device=dev, dtype=torch.long)
    completion_mask = torch.ones_like(tool_mask)
    old = torch.tensor([t.logprobs for t in trajs], device=dev, dtype=torch.float32)
    tokens = prompt_ids.numel() + completion_ids.numel()
    del P

    def one_step() -> None:
        n_items = tool_mask.sum()
        for s in range(0, len(trajs), micro):
            inputs = {
                "prompt_ids": prompt_ids[s : s + micro],
                "prompt_mask": torch.ones_like(prompt_ids[s : s + micro]),
                "completion_ids": completion_ids[s : s + micro],
                "completion_mask": completion_mask[s : s + micro],
                "tool_mask": tool_mask[s : s + micro],
                "advantages": adv[s : s + micro].to(dev),
                "old_per_token_logps": old[s : s + micro],
                "num_items_in_batch": n_items,
            }
            loss = trainer.compute_loss(model, inputs)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(warmup):
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
        from kwrl.llm.engines import Engine

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


def matmul_tflops(dev: str) -> float | None:
    """Measured bf16 8192^3 matmul rate: the practical ceiling beside the datasheet's."""
    if dev != "cuda":
        return None
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    sync()
    t0 = time.perf_counter()
    for _ in range(10):
        a @ b
    sync()
    return 2 * 8192**3 * 10 / (time.perf_counter() - t0) / 1e12


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqs", type=int, default=32)
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--response-len", type=int, default=1536)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--trl-micro", default="8,32", help="TRL micro-batch sizes to time (best kept)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument(
        "--warmup", type=int, default=2, help="untimed steps before timing, kwrl and TRL alike"
    )
    ap.add_argument("--rollout-n", type=int, default=64)
    ap.add_argument("--rollout-new", type=int, default=256)
    ap.add_argument(
        "--distinct-prompts", action="store_true",
        help="every trial its own prompt (default: a group's trials share one, as in GRPO)",
    )  # fmt: skip
    ap.add_argument("--skip-trl", action="store_true")
    ap.add_argument("--skip-rollout", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--rounds", type=int, default=1,
        help="repeat every kwrl config and TRL micro-batch this many times, alternating; "
        "reports the per-round ratio and each config's median",
    )  # fmt: skip
    ap.add_argument(
        "--kwrl",
        default="eager:8,eager:16,compile:16",
        help="kwrl learner configs, MODE:MICRO, MODE eager|compile|autotune with optional flags "
        "+nohc (keep the head's logits) +cudnn|+flash (attention kernel) +chunkN (head_chunk N, "
        "scored positions per LM-head chunk) +nokernels (gpu_kernels off) +noshare (share_prefix "
        "off), e.g. compile+cudnn:32 "
        "(eager first: compiling is in place)",
    )
    a = ap.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = qwen25_05b(dev)
    trajs = synthetic(
        a.seqs, a.prompt_len, a.response_len, a.group, shared_prompts=not a.distinct_prompts
    )
    rewards = torch.tensor([t.reward for t in trajs])
    adv = grpo_advantages(rewards, [t.group_id for t in trajs])
    # kwrl's learner gets the batch on the host, as the trainer hands it over (it reads its
    # control flow there and copies each micro-batch to the GPU itself); TRL gets device tensors.
    batch = collate(trajs, adv.tolist())
    flops = step_flops(model, batch)
    res: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
        "tokens_per_step": batch.num_tokens,
        "scored_tokens_per_step": int(batch.mask_B_L.sum()),
        "shared_prompts": not a.distinct_prompts,
        "model_tflop_per_step": flops / 1e12,
        "matmul_tflops_measured": matmul_tflops(dev),
        "packed_vs_unpacked_logprob_max_abs_diff": packed_check(model, batch),
    }
    print("shared-prefix packing vs unpacked, max |logprob diff| on scored tokens:",
          res["packed_vs_unpacked_logprob_max_abs_diff"], flush=True)  # fmt: skip
    if not a.skip_rollout:
        res["rollout"] = bench_rollout(model, a.rollout_n, 128, a.rollout_new)
    trl_model = copy.deepcopy(model) if not a.skip_trl else None
    trl_runs: dict[str, dict[str, float]] = {}
    runs: dict[str, dict[str, float]] = {}
    per_round: list[dict[str, dict[str, float]]] = []
    trl_micros = [int(x) for x in a.trl_micro.split(",") if x] if trl_model is not None else []

    for rnd in range(a.rounds):
        # Rounds alternate kwrl and TRL on the same GPU so that drift (clocks, heat, neighbours)
        # shows up as spread in both rather than as a gap between them.
        sfx = f"#{rnd + 1}" if a.rounds > 1 else ""
        this: dict[str, dict[str, float]] = {"kwrl": {}, "trl": {}}
        for spec in [x for x in a.kwrl.split(",") if x]:
            mode, micro = spec.split(":")
            if dev == "cuda":
                torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
            try:
                r = bench_kwrl(model, batch, int(micro), a.steps, mode, a.warmup)
            except Exception as e:  # one config failing (e.g. out of memory) still reports the rest
                res.setdefault("kwrl_errors", {})[spec] = f"{type(e).__name__}: {e}"[:500]
                print(f"kwrl {spec}: {res['kwrl_errors'][spec]}", flush=True)
                if dev == "cuda":
                    torch.cuda.empty_cache()
                continue
            r["wall_incl_warmup_s"] = time.perf_counter() - t0
            body = packed_tokens(batch, int(micro)) if "noshare" not in mode else None
            r["body_tokens"] = body if body is not None else float(batch.num_tokens)
            r["mfu"] = step_flops(model, batch, body) / r["step_s"] / PEAK_BF16
            r["peak_mem_gb"] = torch.cuda.max_memory_allocated() / 2**30 if dev == "cuda" else 0.0
            runs[spec + sfx] = r
            this["kwrl"][spec] = r["tokens_per_s"]
            print(
                f"kwrl {spec}{sfx}: {r['tokens_per_s']:,.0f} tok/s, MFU {r['mfu']:.1%}", flush=True
            )
        gc.collect()
        if dev == "cuda":
            torch.cuda.empty_cache()
        for micro in trl_micros:
            assert trl_model is not None
            if dev == "cuda":
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    r = bench_trl(trl_model, trajs, adv, micro, a.steps, tmp, a.warmup)
                except Exception as e:
                    res.setdefault("trl_errors", {})[str(micro)] = f"{type(e).__name__}: {e}"[:500]
                    print(f"TRL micro {micro}: {res['trl_errors'][str(micro)]}", flush=True)
                    continue
            r["mfu"] = flops / r["step_s"] / PEAK_BF16
            r["peak_mem_gb"] = torch.cuda.max_memory_allocated() / 2**30 if dev == "cuda" else 0.0
            trl_runs[f"{micro}{sfx}"] = r
            this["trl"][str(micro)] = r["tokens_per_s"]
            print(
                f"TRL micro {micro}{sfx}: {r['tokens_per_s']:,.0f} tok/s, MFU {r['mfu']:.1%}",
                flush=True,
            )
        gc.collect()
        if dev == "cuda":
            torch.cuda.empty_cache()
        per_round.append(this)
    res["kwrl_runs"] = runs
    if not runs:
        print(json.dumps(res, indent=2))
        raise SystemExit("every kwrl config failed")
    best = max(runs, key=lambda k: runs[k]["tokens_per_s"])
    res["kwrl_best"] = best
    res["kwrl"] = runs[best]
    if trl_model is not None:
        res["trl_runs"] = trl_runs
        if trl_runs:
            trl_best = max(trl_runs, key=lambda k: trl_runs[k]["tokens_per_s"])
            res["trl_best_micro"] = trl_best
            res["trl"] = trl_runs[trl_best]
            res["ratio_kwrl_over_trl"] = res["kwrl"]["tokens_per_s"] / res["trl"]["tokens_per_s"]
    if a.rounds > 1:
        # Per round: best kwrl config over best TRL micro-batch, both timed in that round.
        ratios = [
            max(d["kwrl"].values()) / max(d["trl"].values()) for d in per_round if all(d.values())
        ]
        res["per_round"] = per_round
        res["ratio_per_round"] = ratios
        res["median_tokens_per_s"] = {
            f"{who} {n}": statistics.median(d[who][n] for d in per_round if n in d[who])
            for who in ("kwrl", "trl")
            for n in sorted({n for d in per_round for n in d[who]})
        }
    print(json.dumps(res, indent=2))
    rows: list[tuple[str, Any]] = [
        ("rollout tokens/s", res.get("rollout", {}).get("tokens_per_s")),
        *((f"kwrl {k} tokens/s", v["tokens_per_s"]) for k, v in runs.items()),
        *((f"kwrl {k} MFU", v["mfu"]) for k, v in runs.items()),
        *((f"TRL GRPOTrainer micro {k} tokens/s", v["tokens_per_s"]) for k, v in trl_runs.items()),
        *((f"TRL micro {k} MFU", v["mfu"]) for k, v in trl_runs.items()),
        (f"kwrl best ({best}) / TRL best", res.get("ratio_kwrl_over_trl")),
        *((f"ratio round {i + 1}", x) for i, x in enumerate(res.get("ratio_per_round", []))),
        *((f"median {k} tok/s", v) for k, v in res.get("median_tokens_per_s", {}).items()),
        ("learner / rollout tokens/s", res["kwrl"]["tokens_per_s"] / r_tps)
        if (r_tps := res.get("rollout", {}).get("tokens_per_s"))
        else ("learner / rollout tokens/s", None),
    ]
    print(f"\n{'metric':<34}{'value':>14}")
    for k, v in rows:
        print(f"{k:<34}{(f'{v:,.3f}' if isinstance(v, float) else str(v)):>14}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
