"""Static vs continuous batching in the in-process engine, on real agent trials (CPU).

    .venv/bin/python benchmarks/engine_batching.py [--model smollm2-135m] [--dataset DIR]
        [--tasks 24] [--concurrency 8] [--repeats 1] [--modes static,continuous]
        [--out runs/engine_batching] [--json OUT]

Evaluates the same held-out tasks twice through the real eval path (harbor trials, local
sandbox, KwrlAgent, in-process engine), once with `continuous=False` (a request that arrives
while a batch decodes waits for the next batch, and every request of a batch is answered when
the batch ends) and once with `continuous=True` (it joins the running batch at the next decode
step; each request is answered when it finishes). Agent settings are learning.py's (3 turns of
at most 96 tokens, the compact tool prompt, sampling at temperature 1 with per-trial seeds), so
both runs sample from the same seeds. Without --dataset, a fresh `kwrl data synth` set is made
(easy tier, another seed than learning.py's training worlds). --model takes a packaged name or a
checkpoint folder (learning.py's SFT checkpoint gives multi-turn trials; the base model mostly
answers in one turn).

Prints, per mode: wall time of the evaluation, trials per minute, decode steps and the mean rows
a decode step ran, rows that joined a running batch, prompt tokens prefilled and reused, and the
mean score (a check that both ran the same work, not a speed figure).
"""

from __future__ import annotations

import os

# As the `kwrl` command does (kwrl/cli.py): idle OpenMP workers sleep, before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kwrl.io import write_json

STATS = (
    "requests", "batches", "joins", "decode_steps", "decode_rows", "completion_tokens",
    "prefill_tokens", "prefix_reused_tokens",
)  # fmt: skip


def dataset(a: argparse.Namespace) -> Path:
    from kwrl.synth.generate import SynthConfig, generate
    from kwrl.train.smoke import easy_only

    if a.dataset is not None:
        src = a.dataset
    else:
        src = a.out / "data"
        if not (src / "tasks").is_dir():
            generate(SynthConfig(out=src, worlds=4, tasks_per_world=24, seed=2000, overwrite=True))
            easy_only(src)
    sub = a.out / "subset"
    shutil.rmtree(sub, ignore_errors=True)
    (sub / "tasks").mkdir(parents=True)
    (sub / "worlds").symlink_to((src / "worlds").resolve())
    for t in sorted((src / "tasks").iterdir())[: a.tasks]:
        (sub / "tasks" / t.name).symlink_to(t.resolve())
    return sub


def run_mode(a: argparse.Namespace, data: Path, continuous: bool, rep: int) -> dict[str, Any]:
    from kwrl.agent.config import AgentConfig
    from kwrl.eval.run import EvalConfig, run_eval
    from kwrl.llm.engines import EngineConfig, shared_engine
    from kwrl.llm.packaged import resolve_model
    from kwrl.train.smoke import SMOKE_TOOLS

    model = str(resolve_model(a.model))
    agent = {
        "tools": SMOKE_TOOLS, "max_steps": 3, "max_tokens_per_turn": 96, "context_window": 4096,
        "tool_prompt": "compact", "tool_result_max_chars": 1500, "temperature": 1.0,
    }  # fmt: skip
    out = a.out / f"eval-{'continuous' if continuous else 'static'}-{rep}"
    shutil.rmtree(out, ignore_errors=True)
    cfg = EvalConfig(
        dataset=data, model=f"engine:{model}", out=out, n_samples=1, concurrency=a.concurrency,
        agent=AgentConfig(**agent), tokenizer=model, policy={"engine": {"continuous": continuous}},
        sample_seed=0,
    )  # fmt: skip
    # The engine the trials will share (one per distinct config in this process), loaded first.
    engine = shared_engine(EngineConfig(model=model, continuous=continuous))
    before = dict(engine.stats)
    t = time.perf_counter()
    asyncio.run(run_eval(cfg))
    wall = time.perf_counter() - t
    s = {k: engine.stats[k] - before[k] for k in STATS}
    if not s["requests"]:
        raise SystemExit(f"{out}: the trials did not use the engine this benchmark loaded")
    ev = json.loads((out / "eval.json").read_text())
    return {
        "mode": "continuous" if continuous else "static",
        "repeat": rep,
        "wall_s": round(wall, 1),
        "trials": ev["metrics"]["overall"]["n_trials"],
        "mean_score": ev["metrics"]["overall"]["mean_score"]["value"],
        "rows_per_decode_step": round(s["decode_rows"] / max(s["decode_steps"], 1), 2),
        **s,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--dataset", type=Path, default=None)
    ap.add_argument("--tasks", type=int, default=24)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument(
        "--modes", default="static,continuous", help="comma-separated: static, continuous"
    )
    ap.add_argument("--out", type=Path, default=Path("runs/engine_batching"))
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    a.out = a.out.resolve()
    a.out.mkdir(parents=True, exist_ok=True)
    data = dataset(a)
    rows = [
        run_mode(a, data, continuous, rep)
        for rep in range(a.repeats)
        for continuous in (m == "continuous" for m in a.modes.split(","))
    ]
    result = {"model": a.model, "tasks": a.tasks, "concurrency": a.concurrency, "runs": rows}
    write_json(a.out / "engine_batching.json", result)
    if a.json:
        write_json(a.json, result)
    table = Table(title=f"engine batching on {a.tasks} agent trials, {a.concurrency} at once")
    cols = [
        "mode", "wall_s", "trials", "rows_per_decode_step", "decode_steps", "joins",
        "completion_tokens", "prefill_tokens", "prefix_reused_tokens", "mean_score",
    ]  # fmt: skip
    for c in cols:
        table.add_column(c)
    for r in rows:
        table.add_row(
            *(
                f"{r[c]:.3f}" if isinstance(r[c], float) and c == "mean_score" else str(r[c])
                for c in cols
            )
        )
    console = Console(width=max(Console().width, 150))
    console.print(table)
    static = [r["wall_s"] for r in rows if r["mode"] == "static"]
    cont = [r["wall_s"] for r in rows if r["mode"] == "continuous"]
    if static and cont:
        console.print(f"speed-up (static wall / continuous wall): {sum(static) / sum(cont):.2f}x")


if __name__ == "__main__":
    main()
