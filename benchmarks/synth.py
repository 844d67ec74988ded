"""Benchmark the world/task generator: N worlds x M tasks with a process pool; print the time.

Target (issue 4): 100 worlds x 20 tasks in <= 10 minutes on a 2-core machine with 2 workers.

    .venv/bin/python benchmarks/synth.py [--worlds 100] [--tasks 20] [--workers 2] [--layout task-dirs]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from kwrl.synth.generate import SynthConfig, generate


def _cpu() -> float:
    """CPU seconds of this process and its (finished) workers: robust to a shared, loaded machine."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("--worlds", type=int, default=100)
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layout", default="task-dirs", choices=["task-dirs", "apex-hf"])
    ap.add_argument(
        "--keep", type=Path, help="write here and keep the dataset (default: a temp dir)"
    )
    args = ap.parse_args()
    tmp = None if args.keep else Path(tempfile.mkdtemp(prefix="kwrl-synth-bench-"))
    out = args.keep or (tmp / "ds")  # type: ignore[operator]
    cfg = SynthConfig(out=out, worlds=args.worlds, tasks_per_world=args.tasks, seed=args.seed,
                      layout=args.layout, workers=args.workers, overwrite=True)  # fmt: skip
    t0 = time.perf_counter()
    c0 = _cpu()
    summary = generate(cfg)
    dt = time.perf_counter() - t0
    cpu = _cpu() - c0
    files = [p for p in Path(out).rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    exts = Counter(p.suffix for p in files if "/filesystem/" in p.as_posix())
    print(f"synth: {summary['worlds']} worlds x {args.tasks} tasks = {summary['tasks']} tasks, layout {args.layout}, "
          f"{args.workers} workers: {dt:.1f} s ({dt / summary['worlds']:.2f} s/world)")  # fmt: skip
    print(
        f"  cpu: {cpu:.1f} s in all ({cpu / summary['worlds']:.2f} cpu-s/world); on {args.workers} idle cores "
        f"that is about {cpu / args.workers:.1f} s wall; load average now {os.getloadavg()[0]:.1f}"
    )
    print(
        f"  {len(files)} files, {size / 2**20:.1f} MiB; world files by type: {dict(exts.most_common(8))}"
    )
    if args.layout == "task-dirs":
        prompts = [p.read_text() for p in sorted(Path(out).glob("tasks/*/instruction.md"))]
        print(f"  prompts: {len(prompts)}, distinct: {len(set(prompts))}")
    if summary["control"] is not None:
        c = summary["control"]
        print(f"  no-op control: {c['graded']} criteria fail on the untouched worlds; "
              f"{summary['control_seconds']:.1f} s of the total")  # fmt: skip
    print(f"  target <= 600 s: {'OK' if dt <= 600 else 'MISSED'}")
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
