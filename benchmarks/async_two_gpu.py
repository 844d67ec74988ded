"""Disaggregated (generation and learner in separate processes / GPUs) vs the 1-GPU sync mode.

Both modes run kwrl's own pieces on the same model and the same synthetic batches: the in-process
`Engine` samples fixed token prompts (no sandbox, no agent), GRPO advantages over random rewards,
the `Learner` takes a DPPO step, and new weights reach the engine:

- sync (1 GPU, one process): generate -> learn -> `engine.update_weights` (the in-process copy the
  sync trainer does), all serial on cuda:0;
- disaggregated: the learner in this process, each generation worker a spawned process with its
  own engine; weights go out with `kwrl.train.local.weight_sync` after every step (NCCL between
  distinct GPUs, gloo through host memory otherwise) and land between two decode steps
  (`Engine.stage_weights`); the batch for step s is dispatched once the learner pushed version
  s - 1 - max_staleness, exactly as `DisaggregatedTrainer` does, so generation of the next batch
  overlaps learning on this one.

Figures per mode (the first step is warm-up, not counted): step time, generation time, learner
time, weight-sync time (learner side: pack + broadcast; sync mode: update_weights), busy fraction
of each role (its GPU work, bracketed by synchronize, over the wall time) and, when nvidia-smi is
there, the mean GPU utilisation it samples every 100 ms. Then the speed-up, sync step time over
disaggregated step time.

Model: a randomly initialised Qwen2.5-0.5B architecture (Qwen2Config with its published sizes:
hidden 896, 24 layers, 14 heads, 2 KV heads, intermediate 4864, vocab 151936, tied embeddings),
bf16; `--cpu` uses a tiny Qwen2 instead. Token ids stand in for text: the engine gets a stub
tokenizer (no EOS, so every completion is exactly --response-len tokens, as fair a comparison
as fixed batches allow).

    python benchmarks/async_two_gpu.py               # N >= 2 GPUs: learner on the last, workers on the rest
    python benchmarks/async_two_gpu.py --single-gpu  # both processes on cuda:0 (gloo host staging)
    python benchmarks/async_two_gpu.py --cpu         # gloo, tiny model: the code path on a laptop

Needs torch, transformers and src/kwrl (put on sys.path here); pydantic, if missing, is installed
from the repo's .whl/ folder into a temp dir when that folder has it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def _ensure_pydantic() -> None:
    """kwrl's configs need pydantic; a bare GPU box may only have the wheels in .whl/."""
    try:
        import pydantic  # noqa: F401

        return
    except ImportError:
        pass
    wheels = sorted((REPO / ".whl").glob("*.whl"))
    if not wheels:
        raise SystemExit("pydantic is not installed and no .whl/ folder holds it")
    site = Path(tempfile.gettempdir()) / "kwrl-bench-site"
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    subprocess.run([*cmd, "--target", str(site), *map(str, wheels)], check=True)
    sys.path.insert(0, str(site))


_ensure_pydantic()

import torch  # noqa: E402

from kwrl.llm.base import SamplingParams  # noqa: E402
from kwrl.llm.engines import Engine  # noqa: E402
from kwrl.train.algorithms import grpo_advantages  # noqa: E402
from kwrl.train.batch import Trajectory, collate  # noqa: E402
from kwrl.train.local.learner import Learner, LearnerConfig  # noqa: E402
from kwrl.train.local.weight_sync import (  # noqa: E402
    WeightReceiver,
    WeightSender,
    choose_backend,
    close_groups,
    free_port,
    init_groups,
)


class IdTokenizer:
    """Just what `Engine` asks of a tokenizer, for token-id-only prompts: pad id, no EOS."""

    pad_token_id = 0
    eos_token_id = None

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return ""


def build_model(args: argparse.Namespace, device: str) -> Any:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    if args.cpu:
        sizes = dict(vocab_size=2048, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2)  # fmt: skip
    else:
        sizes = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                     num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2)  # fmt: skip
    common: dict[str, Any] = dict(
        max_position_embeddings=32768, tie_word_embeddings=True, bos_token_id=None,
        eos_token_id=None, pad_token_id=0, attn_implementation="sdpa",
    )  # fmt: skip
    cfg = Qwen2Config(**sizes, **common)
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2ForCausalLM(cfg)
    dtype = torch.float32 if args.cpu else torch.bfloat16
    return model.to(dtype)  # pyright: ignore[reportArgumentType]


def prompts_for(args: argparse.Namespace, vocab: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(1)
    base = [
        torch.randint(10, vocab - 10, (args.prompt_len,), generator=g).tolist()
        for _ in range(args.prompts)
    ]
    return [p for p in base for _ in range(args.samples)]  # GRPO groups of `samples`


def sync_device(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(torch.device(device))


def generate(engine: Engine, prompts: list[list[int]], args: argparse.Namespace, step: int) -> Any:
    params = [
        SamplingParams(max_tokens=args.response_len, temperature=1.0, seed=step * 100_000 + i)
        for i in range(len(prompts))
    ]
    futs = [engine.submit(p, sp) for p, sp in zip(prompts, params, strict=True)]
    return [(f.result().token_ids, f.result().logprobs) for f in futs]


def learn(
    learner: Learner, prompts: list[list[int]], outs: list[Any], args: argparse.Namespace, step: int
) -> dict[str, Any]:
    g = torch.Generator().manual_seed(step)
    rewards = torch.rand(len(outs), generator=g)
    groups = [i // args.samples for i in range(len(outs))]
    adv = grpo_advantages(rewards, groups, norm_by_std=False)
    trajs = [
        Trajectory(p, ids, [1] * len(ids), lps, reward=float(r), group_id=gid)
        for p, (ids, lps), r, gid in zip(prompts, outs, rewards.tolist(), groups, strict=True)
    ]
    return learner.step(collate(trajs, adv.tolist()))


@dataclass
class Timings:
    step: list[float] = field(default_factory=list)
    gen: list[float] = field(default_factory=list)
    learn: list[float] = field(default_factory=list)
    sync: list[float] = field(default_factory=list)
    wall: float = 0.0
    gen_busy: float = 0.0
    learn_busy: float = 0.0
    util: dict[int, float] = field(default_factory=dict)


class SmiSampler:
    """nvidia-smi's utilisation.gpu every 100 ms, when nvidia-smi is on PATH."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        if shutil.which("nvidia-smi") and torch.cuda.is_available():
            self.proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits",
                 "-lms", "100"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )  # fmt: skip

    def stop(self) -> dict[int, float]:
        if self.proc is None:
            return {}
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=10)
        samples: dict[int, list[float]] = {}
        for line in out.splitlines():
            parts = [x.strip() for x in line.split(",")]
            if len(parts) == 2 and parts[0].isdigit():
                samples.setdefault(int(parts[0]), []).append(float(parts[1]))
        return {k: sum(v) / len(v) for k, v in samples.items() if v}


def run_sync(args: argparse.Namespace, device: str) -> Timings:
    """kwrl's sync mode on one device: generate, learn, push weights in process, serially."""
    import copy

    model = build_model(args, device)
    engine = Engine(copy.deepcopy(model).eval(), IdTokenizer(), max_batch_size=args.batch)
    learner = Learner(model, LearnerConfig(lr=1e-6, micro_batch_size=args.micro, device=device))
    prompts = prompts_for(args, model.config.vocab_size)
    t = Timings()
    smi: SmiSampler | None = None
    t0 = 0.0
    try:
        for step in range(args.steps + 1):
            if step == 1:  # step 0 is warm-up
                smi, t0 = SmiSampler(), time.perf_counter()
            s0 = time.perf_counter()
            outs = generate(engine, prompts, args, step)
            sync_device(device)
            s1 = time.perf_counter()
            learn(learner, prompts, outs, args, step)
            sync_device(device)
            s2 = time.perf_counter()
            engine.update_weights({k: v.detach() for k, v in model.state_dict().items()})
            sync_device(device)
            s3 = time.perf_counter()
            if step:
                t.gen.append(s1 - s0)
                t.learn.append(s2 - s1)
                t.sync.append(s3 - s2)
                t.step.append(s3 - s0)
                if time.perf_counter() > args.sync_deadline:
                    print(f"sync mode: time budget reached after {step} measured step(s)")
                    break
        t.wall = time.perf_counter() - t0
        t.util = smi.stop() if smi else {}
    finally:
        engine.close()
    t.gen_busy = (sum(t.gen) + sum(t.sync)) / t.wall
    t.learn_busy = (sum(t.learn) + sum(t.sync)) / t.wall
    return t


def gen_worker(
    rank: int, world: int, port: int, backend: str, device: str, args: argparse.Namespace,
    requests: Any, results: Any,
) -> None:  # fmt: skip
    """A generation process: engine + weight receiver; samples its shard of each batch."""
    if args.cpu:
        torch.set_num_threads(1)
    groups = init_groups(rank, world, port, backend, device)  # type: ignore[arg-type]
    engine = Engine(build_model(args, device).eval(), IdTokenizer(), max_batch_size=args.batch)
    receiver = WeightReceiver(engine, groups).start()
    results.put(("ready", rank))
    try:
        while (req := requests.get()) is not None:
            step, rows, min_version = req
            receiver.wait_version(min_version, timeout=600)
            prompts = prompts_for(args, engine.model.config.vocab_size)
            t0 = time.monotonic()  # CLOCK_MONOTONIC: comparable across processes
            outs = generate(engine, [prompts[i] for i in rows], args, step)
            sync_device(device)
            results.put(("done", rank, step, rows, outs, t0, time.monotonic() - t0))
        receiver.join(timeout=60)
    finally:
        engine.close()
        close_groups()


def run_disaggregated(
    args: argparse.Namespace, learner_device: str, gen_devices: list[str]
) -> Timings:
    import torch.multiprocessing as mp

    backend = choose_backend(learner_device, gen_devices)
    world, port = 1 + len(gen_devices), free_port()
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    queues, procs = [], []
    for rank, dev in enumerate(gen_devices, start=1):
        q = ctx.Queue()
        p = ctx.Process(
            target=gen_worker, args=(rank, world, port, backend, dev, args, q, results), daemon=True
        )
        p.start()
        queues.append(q)
        procs.append(p)
    groups = init_groups(0, world, port, backend, learner_device)
    model = build_model(args, learner_device)
    learner = Learner(
        model, LearnerConfig(lr=1e-6, micro_batch_size=args.micro, device=learner_device)
    )
    sender = WeightSender(model, groups, bucket_mb=args.bucket_mb)
    for _ in procs:
        assert results.get(timeout=600)[0] == "ready"
    prompts = prompts_for(args, model.config.vocab_size)
    n = len(prompts)
    shards = [list(range(k, n, len(procs))) for k in range(len(procs))]
    total = args.steps + 1
    t = Timings()
    got: dict[int, dict[int, Any]] = {}
    gen_s: dict[int, list[float]] = {}  # per measured step: each worker's generation seconds
    spans: list[tuple[float, float]] = []  # every generation (start, end), monotonic clock
    dispatched = 0
    pushed = 0
    smi: SmiSampler | None = None
    t0 = m0 = m1 = 0.0
    try:
        step = -1
        while step + 1 < total:
            step += 1
            while dispatched < total and dispatched <= step + args.max_staleness:
                for q, rows in zip(queues, shards, strict=True):
                    q.put((dispatched, rows, pushed))
                dispatched += 1
            if step == 1:
                smi, t0, m0 = SmiSampler(), time.perf_counter(), time.monotonic()
            s0 = time.perf_counter()
            while len(got.get(step, {})) < len(procs):
                _, rank, st, rows, outs, g0, gs = results.get(timeout=600)
                got.setdefault(st, {})[rank] = (rows, outs)
                spans.append((g0, g0 + gs))
                if st >= 1:
                    gen_s.setdefault(st, []).append(gs)
            s1 = time.perf_counter()
            outs = [None] * n
            for rows, part in got.pop(step).values():
                for i, o in zip(rows, part, strict=True):
                    outs[i] = o
            learn(learner, prompts, outs, args, step)
            sync_device(learner_device)
            s2 = time.perf_counter()
            sender.broadcast(learner.version)
            pushed = learner.version
            s3 = time.perf_counter()
            if step:
                t.learn.append(s2 - s1)
                t.sync.append(s3 - s2)
                t.step.append(s3 - s0)
                if time.perf_counter() > args.disagg_deadline and step + 1 < total:
                    print(f"disaggregated mode: time budget reached after {step} measured step(s)")
                    total = step + 1  # dispatch nothing more; workers drop what is queued
        t.wall = time.perf_counter() - t0
        m1 = time.monotonic()
        t.util = smi.stop() if smi else {}
    finally:
        for q in queues:
            q.put(None)
        sender.close()
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
        close_groups()
    # Generation time per step: the slowest worker's (they run in parallel).
    measured = [st for st in sorted(gen_s) if st <= len(t.step)]
    t.gen = [max(gen_s[st]) for st in measured]
    # Busy: generation inside the measured window (some started before it: overlap is the point).
    inside = sum(max(0.0, min(b, m1) - max(a, m0)) for a, b in spans)
    t.gen_busy = inside / len(procs) / (m1 - m0)
    t.learn_busy = (sum(t.learn) + sum(t.sync)) / t.wall
    return t


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def table(rows: list[tuple[str, str, Timings]]) -> str:
    head = ("mode", "devices", "step s", "gen s", "learn s", "sync s", "gen busy", "learn busy",
            "nvidia-smi util %")  # fmt: skip
    lines: list[tuple[str, ...]] = [head]
    for name, devs, t in rows:
        util = ", ".join(f"gpu{k} {v:.0f}" for k, v in sorted(t.util.items())) or "n/a"
        lines.append((
            name, devs, f"{_mean(t.step):.3f}", f"{_mean(t.gen):.3f}", f"{_mean(t.learn):.3f}",
            f"{_mean(t.sync):.3f}", f"{t.gen_busy:.0%}", f"{t.learn_busy:.0%}", util,
        ))  # fmt: skip
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    out = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in lines
    ]
    out.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--single-gpu", action="store_true", help="both processes on cuda:0")
    where.add_argument("--cpu", action="store_true", help="gloo on CPU with a tiny Qwen2")
    ap.add_argument("--steps", type=int, default=3, help="measured steps (after 1 warm-up)")
    ap.add_argument("--prompts", type=int, default=8, help="prompts (GRPO groups) per batch")
    ap.add_argument("--samples", type=int, default=4, help="samples per prompt")
    ap.add_argument("--prompt-len", type=int, default=512)
    ap.add_argument("--response-len", type=int, default=256)
    ap.add_argument("--micro", type=int, default=8, help="learner micro-batch (sequences)")
    ap.add_argument("--max-staleness", type=int, default=1)
    ap.add_argument("--bucket-mb", type=int, default=256)
    ap.add_argument(
        "--budget-s", type=float, default=270.0,
        help="stop measuring (keeping >= 1 step per mode) so the whole run ends near this",
    )  # fmt: skip
    args = ap.parse_args()
    start = time.perf_counter()
    args.sync_deadline = start + 0.4 * args.budget_s
    args.disagg_deadline = start + 0.85 * args.budget_s
    if args.cpu:
        args.prompts, args.samples = min(args.prompts, 2), min(args.samples, 2)
        args.prompt_len, args.response_len = min(args.prompt_len, 32), min(args.response_len, 16)
        torch.set_num_threads(1)
    args.batch = args.prompts * args.samples
    n_gpu = torch.cuda.device_count()
    if args.cpu:
        sync_dev, learner_dev, gen_devs = "cpu", "cpu", ["cpu"]
    elif args.single_gpu:
        if n_gpu < 1:
            raise SystemExit("--single-gpu needs a CUDA device (or use --cpu)")
        sync_dev, learner_dev, gen_devs = "cuda:0", "cuda:0", ["cuda:0"]
    else:
        if n_gpu < 2:
            raise SystemExit(f"{n_gpu} GPU(s): use --single-gpu or --cpu, or run on >= 2 GPUs")
        sync_dev, learner_dev = "cuda:0", f"cuda:{n_gpu - 1}"
        gen_devs = [f"cuda:{i}" for i in range(n_gpu - 1)]
    arch = "tiny Qwen2 fp32" if args.cpu else "Qwen2.5-0.5B arch (random init) bf16"
    print(
        f"{arch}; batch {args.prompts} x {args.samples}, prompt {args.prompt_len} + response "
        f"{args.response_len} tokens; {args.steps} measured steps after 1 warm-up; "
        f"max_staleness {args.max_staleness}; torch {torch.__version__}",
        flush=True,
    )
    t0 = time.perf_counter()
    sync = run_sync(args, sync_dev)
    print(f"sync mode done in {time.perf_counter() - t0:.1f} s", flush=True)
    if sync_dev.startswith("cuda"):
        torch.cuda.empty_cache()
    t1 = time.perf_counter()
    disagg = run_disaggregated(args, learner_dev, gen_devs)
    print(f"disaggregated mode done in {time.perf_counter() - t1:.1f} s", flush=True)
    backend = choose_backend(learner_dev, gen_devs)
    rows = [
        ("sync (1 process)", sync_dev, sync),
        (f"disaggregated ({backend})", f"learner {learner_dev}; gen {', '.join(gen_devs)}", disagg),
    ]
    print(table(rows))
    print(
        f"speed-up (sync step / disaggregated step): {_mean(sync.step) / _mean(disagg.step):.2f}x"
    )
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
