"""SFT warm-start step time: one trajectory at a time vs the packed batch (`share_prefix`). (CPU)

    .venv/bin/python benchmarks/sft_step.py [--dataset D] [--steps 4] [--batch-size 4]
        [--model smollm2-135m] [--json OUT]

The gold trajectories are those `benchmarks/learning.py` trains on (4 synth worlds, seed 0, easy
tier, its agent settings), replayed through the real gateway. Both modes run the same batches
from the same weights through the warm start's own step (`kwrl.train.local.sft.step`): the packed
batch runs the leading tokens all its trajectories share (system prompt, tool list) once. Prints
seconds a step, tokens a step (as trained and as run through the decoder body), the first
step's loss in both modes and the process's peak RSS after each mode.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from rich.console import Console
from rich.table import Table

from kwrl.io import write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dataset", type=Path, default=None, help="default: generate learning.py's")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from kwrl.llm.packaged import resolve_model
    from kwrl.synth.generate import SynthConfig, generate
    from kwrl.train.batch import collate
    from kwrl.train.local import prefix
    from kwrl.train.local.sft import SFTConfig, gold_trajectories, optimizer, step
    from kwrl.train.smoke import SMOKE_TOOLS, easy_only

    console = Console()
    tmp = tempfile.TemporaryDirectory(prefix="kwrl-sft-bench-")
    ds = a.dataset
    if ds is None:
        ds = Path(tmp.name) / "data"
        generate(SynthConfig(out=ds, worlds=4, tasks_per_world=24, seed=0), progress=False)
        easy_only(ds)
    agent: dict[str, Any] = {
        "tools": SMOKE_TOOLS, "max_steps": 3, "max_tokens_per_turn": 96, "context_window": 4096,
        "tool_prompt": "compact", "tool_result_max_chars": 1500,
    }  # fmt: skip
    src = resolve_model(a.model)
    tokenizer = AutoTokenizer.from_pretrained(src)

    max_len = SFTConfig.model_fields["max_len"].default
    trajs = asyncio.run(
        gold_trajectories(sorted((ds / "tasks").iterdir()), tokenizer, agent, max_len)
    )
    g = torch.Generator().manual_seed(0)
    order = torch.randperm(len(trajs), generator=g).tolist()
    batches = [
        [trajs[i] for i in order[s : s + a.batch_size]]
        for s in range(0, a.steps * a.batch_size, a.batch_size)
    ]
    base = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32)
    pad = tokenizer.pad_token_id or 0
    rows: dict[str, dict[str, Any]] = {}
    for mode in ("one at a time", "packed"):
        model = copy.deepcopy(base)
        share = mode == "packed" and prefix.enable(model)
        opt = optimizer(model, 5e-5)
        times, losses, body = [], [], []
        for chunk in batches:
            b = collate(chunk, [0.0] * len(chunk), pad_id=pad)
            plan = prefix.plan(b.input_ids_B_L, b.attention_mask_B_L, ["sft"] * len(chunk))
            body.append(
                plan.tokens if share and plan is not None else int(b.attention_mask_B_L.sum())
            )
            t0 = time.perf_counter()
            losses.append(step(model, opt, chunk, pad, share))
            times.append(time.perf_counter() - t0)
        rows[mode] = {
            "s_per_step": statistics.median(times),
            "step_s": [round(t, 2) for t in times],
            "tokens_per_step": statistics.mean(
                len(t.prompt_ids) + len(t.response_ids) for c in batches for t in c
            )
            * a.batch_size,
            "decoder_tokens_per_step": statistics.mean(body),
            "first_loss": losses[0],
            "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        }
        del model, opt

    table = Table(title=f"SFT step, {a.batch_size} gold trajectories a step ({len(trajs)} in all)")
    for col in (
        "mode",
        "s / step (median)",
        "tokens / step",
        "decoder-body tokens",
        "loss 1",
        "peak RSS",
    ):
        table.add_column(col)
    for mode, r in rows.items():
        table.add_row(
            mode, f"{r['s_per_step']:.1f} {r['step_s']}", f"{r['tokens_per_step']:.0f}",
            f"{r['decoder_tokens_per_step']:.0f}", f"{r['first_loss']:.4f}",
            f"{r['peak_rss_gb']:.1f} GB",
        )  # fmt: skip
    speedup = rows["one at a time"]["s_per_step"] / rows["packed"]["s_per_step"]
    table.add_row("packed speed-up", f"{speedup:.2f}x", "", "", "", "")
    console.print(table)
    if a.json:
        write_json(
            a.json,
            {"args": {k: str(v) for k, v in vars(a).items()}, "modes": rows, "speedup": speedup},
        )
    tmp.cleanup()


if __name__ == "__main__":
    main()
