"""Where a GPU learner step's time goes, and which learner variants move it (H200, device tool).

    PYTHONPATH=src python3 benchmarks/learner_profile.py [--variants base,chunk64k,...]
        [--rounds 2] [--steps 5] [--json OUT]

Same model and batch as `train_throughput.py` (random Qwen2.5-0.5B architecture, bf16, 32 x 2048
tokens). First a torch.profiler pass over one step of the base config (compile + head logits
kept, micro-batch 32): kernel time by kind (GEMM, attention, Triton-fused, optimizer, embedding,
copies, other), the top kernels and how much of the step's wall time the GPU sat idle. Then each
variant is timed `--steps` steps per round, rounds alternating, with CUDA events; a table of
median step time and tokens/s comes last.

Variants (each is `compile+nohc:32` plus one change):
  base        as is
  dyn         the head's compiled functions with all dimensions symbolic (dynamic=True)
  oldhead     session 4's head: compiled chunk function under activation checkpointing, autograd
              backward (gather's scatter, float32 intermediates)
  oldauto     `oldhead` with automatic dynamic shapes (the vocabulary stays static)
  gpubatch    the batch handed over already on the GPU
  chunk64k    one head chunk of 65536 scored tokens instead of 8192-token chunks
  static      decoder layers compiled for static shapes (dynamic=False)
  coord       Inductor coordinate-descent tuning of the Triton kernels
  whole       the whole decoder (model.model) compiled as one graph instead of layer by layer
  nosync      Learner.step without reading the metrics back at the end (no host sync)
  nokernels   LearnerConfig.gpu_kernels off: the head's torch.compile'd reduction and gradient
              (sessions 4-6) instead of the Triton kernels

--profile names the variants to profile (default: base).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))

from train_throughput import PEAK_BF16, qwen25_05b, step_flops, synthetic

import kwrl.train.local.learner as learner_mod
from kwrl.train.algorithms import grpo_advantages
from kwrl.train.batch import collate
from kwrl.train.local.learner import Learner, LearnerConfig

KINDS = [  # first match wins: Inductor's kernels are "triton" whatever ops they fuse (gather...)
    ("gemm", ("gemm", "cutlass", "nvjet", "xmma", "cublas", "matmul", "splitk")),
    ("attention", ("flash", "fmha", "attention", "cudnn", "sdpa")),
    ("optimizer", ("multi_tensor", "adam", "foreach", "norm_kernel")),
    ("triton", ("triton", "_lse_kernel", "_dlogits_kernel")),
    ("embedding", ("embedding", "index", "scatter", "sort", "radix", "gather")),
    ("copy/fill", ("copy", "memcpy", "memset", "fill", "cat")),
]


def kind(name: str) -> str:
    low = name.lower()
    for k, keys in KINDS:
        if any(x in low for x in keys):
            return k
    return "other"


def _old_chunk(hidden_N_H, weight_V_H, targets_N, temperature):  # type: ignore[no-untyped-def]
    logits = (hidden_N_H @ weight_V_H.T).float()
    if temperature != 1.0:
        logits = logits / temperature
    picked = torch.gather(logits, -1, targets_N.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def old_token_logprobs(
    model,
    batch,
    temperature=1.0,
    *,
    chunk=8192,
    only_mask=False,  # type: ignore[no-untyped-def]
    compiled_head=False,
    head_checkpoint=True,
    scored=None,
    right_padded=None,
):
    """Session 4's head (for the `oldhead` variant): autograd through a compiled chunk function."""
    from torch.utils.checkpoint import checkpoint

    attn = None if right_padded else batch.attention_mask_B_L
    hidden = model.model(input_ids=batch.input_ids_B_L, attention_mask=attn, use_cache=False)[0]
    B, L, H = hidden.shape
    h, t = hidden.reshape(B * L, H), batch.targets_B_L.reshape(B * L)
    h, t = h.index_select(0, scored), t.index_select(0, scored)
    if "old" not in _OLD:
        _OLD["old"] = torch.compile(_old_chunk, dynamic=_OLD.get("dynamic"))  # type: ignore[arg-type]
    fn, w = _OLD["old"], model.get_output_embeddings().weight
    parts = []
    for s in range(0, h.shape[0], chunk):
        if head_checkpoint:
            parts.append(
                checkpoint(
                    fn, h[s : s + chunk], w, t[s : s + chunk], temperature, use_reentrant=False
                )
            )
        else:
            parts.append(fn(h[s : s + chunk], w, t[s : s + chunk], temperature))
    full = torch.zeros(B * L, dtype=torch.float32, device=h.device)
    return full.index_put((scored,), torch.cat(parts)).view(B, L)


_OLD: dict[str, object] = {}


def profile_step(learner: Learner, batch: Any, cpu: bool = True) -> dict[str, Any]:
    """One step under torch.profiler. `cpu=False` records device activity only: the host then
    runs at nearly its unprofiled pace, so the gaps are the step's own."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if cpu else [ProfilerActivity.CUDA]
    with profile(activities=acts) as prof:
        t0 = time.perf_counter()
        learner.step(batch)
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    by_kind: dict[str, float] = {}
    kernels: list[tuple[str, float, int]] = []
    for e in prof.key_averages():
        if e.device_type != DeviceType.CUDA:
            continue
        t = e.self_device_time_total / 1e6  # us -> s
        by_kind[kind(e.key)] = by_kind.get(kind(e.key), 0.0) + t
        kernels.append((e.key, t, e.count))
    kernels.sort(key=lambda x: -x[1])
    busy = sum(by_kind.values())
    return {
        "wall_s": wall,
        "gpu_busy_s": busy,
        "idle_frac": max(0.0, 1 - busy / wall),
        "by_kind_s": dict(sorted(by_kind.items(), key=lambda x: -x[1])),
        "top": [{"kernel": k[:120], "s": t, "n": n} for k, t, n in kernels[:40]],
        "gaps": gaps(prof),
    }


def gaps(prof: Any, min_us: float = 20.0, top: int = 25) -> dict[str, Any]:
    """Where the GPU sat idle inside the step: gaps between consecutive kernels on the device
    timeline, the largest with the kernels either side, and their sum by the kind of the kernel
    after the gap (which part of the step the host was late for)."""
    from torch.autograd import DeviceType

    ev = sorted(
        (e for e in prof.events() if e.device_type == DeviceType.CUDA),
        key=lambda e: e.time_range.start,
    )
    out: list[tuple[float, float, str, str]] = []
    end = ev[0].time_range.end if ev else 0.0
    prev = ev[0].name if ev else ""
    for e in ev[1:]:
        g = e.time_range.start - end
        if g >= min_us:
            out.append((g, e.time_range.start - ev[0].time_range.start, prev, e.name))
        if e.time_range.end > end:
            end, prev = e.time_range.end, e.name
    by_next: dict[str, float] = {}
    for g, _, _, nxt in out:
        by_next[kind(nxt)] = by_next.get(kind(nxt), 0.0) + g / 1e6
    span = (end - ev[0].time_range.start) / 1e6 if ev else 0.0
    return {
        "device_span_s": span,
        "gap_total_s": sum(g for g, *_ in out) / 1e6,
        "n_gaps": len(out),
        "by_next_kind_s": by_next,
        "largest": [
            {"us": round(g, 1), "at_ms": round(at / 1e3, 2), "after": p[:80], "before": n[:80]}
            for g, at, p, n in sorted(out, reverse=True)[:top]
        ],
    }


@contextlib.contextmanager
def variant(name: str, model: torch.nn.Module):
    """Apply one variant's change for the life of a learner; undo it after."""
    import torch._dynamo as dynamo
    import torch._inductor.config as ind

    orig = learner_mod.token_logprobs
    saved_coord = ind.coordinate_descent_tuning
    torch._dynamo.reset()
    cfg = LearnerConfig(
        lr=1e-6, micro_batch_size=32, dtype="bfloat16", compile=True, head_checkpoint=False
    )
    learner_mod._COMPILED.clear()
    _OLD.clear()
    if name == "dyn":
        learner_mod._COMPILED["fwd"] = torch.compile(learner_mod._logprob_lse, dynamic=True)
        learner_mod._COMPILED["bwd"] = torch.compile(learner_mod._dlogits_fused, dynamic=True)
    elif name in ("oldhead", "oldauto"):
        _OLD["dynamic"] = True if name == "oldhead" else None
        learner_mod.token_logprobs = old_token_logprobs  # type: ignore[assignment]
    elif name == "chunk64k":
        learner_mod.token_logprobs = lambda *a, **k: orig(*a, **{**k, "chunk": 65536})  # type: ignore[assignment]
    elif name == "coord":
        ind.coordinate_descent_tuning = True
    elif name == "nokernels":
        cfg = cfg.model_copy(update={"gpu_kernels": False})
    try:
        if name == "nosync":
            learner = Learner(model, cfg)
            learner.step = types.MethodType(_step_unread, learner)  # type: ignore[method-assign]
            yield learner
            return
        if name in ("static", "whole"):
            cfg = cfg.model_copy(update={"compile": False})
            learner_mod.token_logprobs = lambda *a, **k: orig(*a, **{**k, "compiled_head": True})  # type: ignore[assignment]
            layers = list(model.model.layers)  # type: ignore[union-attr]
            dynamo.config.recompile_limit = max(dynamo.config.recompile_limit, 2 * len(layers) + 8)
            if name == "static":
                for layer in layers:
                    layer.compile(dynamic=False)
            else:
                model.model.compile(dynamic=True)  # type: ignore[union-attr]
        yield Learner(model, cfg)
    finally:
        learner_mod.token_logprobs = orig
        ind.coordinate_descent_tuning = saved_coord
        # Drop compiled wrappers so the next variant starts from the plain modules.
        for m in [model.model, *model.model.layers]:  # type: ignore[union-attr]
            if getattr(m, "_compiled_call_impl", None) is not None:
                m._compiled_call_impl = None
        torch._dynamo.reset()


def _step_unread(self: Learner, batch: Any) -> dict[str, Any]:
    """Learner.step without reading anything back (no grad-norm or loss sync at the end): the
    host may queue the next step while the GPU still runs this one. An upper bound on what
    reading the metrics later would gain."""
    _, sums = self._accumulate(batch)
    params = [p for p in self.model.parameters() if p.requires_grad]
    norm = torch.nn.utils.clip_grad_norm_(params, self.cfg.grad_clip)
    self.optimizer.found_inf = (~torch.isfinite(norm)).float()  # type: ignore[attr-defined]
    self.optimizer.step()
    del self.optimizer.found_inf  # type: ignore[attr-defined]
    self.optimizer.zero_grad(set_to_none=True)
    self.version += 1
    return {"sums": sums, "grad_norm": norm}


def check_head(n: int = 4096, temperature: float = 0.7) -> dict[str, float]:
    """The compiled head (bf16 logits, written-out backward) against float32 autograd, per mode."""
    from kwrl.train.local.learner import _HeadLogprobs

    g = torch.Generator(device="cuda").manual_seed(0)
    V, H = 151936, 896
    h = (torch.randn(n, H, device="cuda", generator=g) / 4).bfloat16().requires_grad_()
    w = (torch.randn(V, H, device="cuda", generator=g) / 30).bfloat16().requires_grad_()
    t = torch.randint(0, V, (n,), device="cuda", generator=g)
    up = torch.randn(n, device="cuda", generator=g)
    hf, wf = h.detach().float().requires_grad_(), w.detach().float().requires_grad_()
    ref = torch.log_softmax(hf @ wf.T / temperature, -1).gather(-1, t[:, None]).squeeze(-1)
    ref_dh, ref_dw = torch.autograd.grad((ref * up).sum(), (hf, wf))
    ref = ref.detach()
    out: dict[str, float] = {}
    for kernels in (False, True):
        for keep in (False, True):
            lp = _HeadLogprobs.apply(h, w, t, temperature, keep, True, kernels)
            dh, dw = torch.autograd.grad((lp * up).sum(), (h, w))
            for name, x, r in (("lp", lp, ref), ("dh", dh, ref_dh), ("dw", dw, ref_dw)):
                impl = "triton" if kernels else "compiled"
                out[f"{impl} {name} keep={keep}"] = float((x.float() - r).norm() / r.norm())
    return out


def time_steps(learner: Learner, batch: Any, steps: int) -> float:
    learner.step(batch)  # warm-up (compiles)
    learner.step(batch)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        learner.step(batch)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--variants", default="base,chunk64k,static,coord,whole")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--seqs", type=int, default=32)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--profile", default="base", help="variants to profile, comma-separated")
    ap.add_argument(
        "--cuda-only", action="store_true",
        help="profile device activity only (host ops unrecorded: gaps at the unprofiled pace)",
    )  # fmt: skip
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("learner_profile.py needs a CUDA GPU")
    model = qwen25_05b("cuda")
    trajs = synthetic(a.seqs, 512, 1536, 8)
    adv = grpo_advantages(torch.tensor([t.reward for t in trajs]), [t.group_id for t in trajs])
    batch = collate(trajs, adv.tolist())  # on the host, as the trainer hands it over
    gpu_batch = type(batch)(
        *(x.to("cuda") if isinstance(x, torch.Tensor) else x for x in vars(batch).values())
    )
    flops = step_flops(model, batch)
    res: dict[str, Any] = {"device": torch.cuda.get_device_name(), "step_tflop": flops / 1e12}
    res["head_rel_err"] = errs = check_head()
    print("head vs float32 autograd, relative error:", {k: f"{v:.1e}" for k, v in errs.items()})
    if not all(v < 2e-2 for v in errs.values()):  # NaN fails too
        raise SystemExit("the compiled head does not match float32 autograd")

    if not a.no_profile:
        for pname in [x for x in a.profile.split(",") if x]:
            with variant(pname, model) as learner:
                learner.step(batch)
                learner.step(batch)
                prof = profile_step(learner, batch, cpu=not a.cuda_only)
            res[f"profile_{pname}"] = prof
            print(f"\nprofiled step ({pname}): wall {prof['wall_s'] * 1e3:.1f} ms, GPU busy "
                  f"{prof['gpu_busy_s'] * 1e3:.1f} ms, idle {prof['idle_frac']:.1%}")  # fmt: skip
            for k, t in prof["by_kind_s"].items():
                print(f"  {k:<10} {t * 1e3:8.1f} ms  {t / prof['gpu_busy_s']:6.1%}")
            for row in prof["top"]:
                print(f"  {row['s'] * 1e3:8.2f} ms x{row['n']:<4} {row['kernel']}")
            gp = prof["gaps"]
            print(f"  device span {gp['device_span_s'] * 1e3:.1f} ms, {gp['n_gaps']} gaps >= 20 us "
                  f"= {gp['gap_total_s'] * 1e3:.1f} ms; by the kind after: "
                  + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in gp["by_next_kind_s"].items()))  # fmt: skip
            for row in gp["largest"]:
                print(
                    f"  gap {row['us']:8.1f} us at {row['at_ms']:7.2f} ms: {row['after']} -> {row['before']}"
                )

    names = [x for x in a.variants.split(",") if x]
    times: dict[str, list[float]] = {n: [] for n in names}
    for rnd in range(a.rounds):
        for n in names:
            try:
                with variant(n, model) as learner:
                    dt = time_steps(learner, gpu_batch if n == "gpubatch" else batch, a.steps)
            except Exception as e:  # one variant failing still reports the rest
                print(f"{n}: {type(e).__name__}: {e}"[:400], flush=True)
                continue
            times[n].append(dt)
            print(f"round {rnd + 1} {n}: {dt * 1e3:.1f} ms/step", flush=True)
    res["step_s"] = times
    print(f"\n{'variant':<10}{'median ms':>10}{'tok/s':>10}{'MFU':>7}{'vs base':>9}")
    base = statistics.median(times["base"]) if times.get("base") else None
    for n, ts in times.items():
        if not ts:
            continue
        m = statistics.median(ts)
        rel = f"{base / m - 1:+.1%}" if base else "-"
        print(f"{n:<10}{m * 1e3:>10.1f}{batch.num_tokens / m:>10,.0f}"
              f"{flops / m / PEAK_BF16:>7.1%}{rel:>9}")  # fmt: skip
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
