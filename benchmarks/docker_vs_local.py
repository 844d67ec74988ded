"""Benchmark: the same tasks' trials in the docker preset and in the local sandbox, by phase.

    .venv/bin/python benchmarks/docker_vs_local.py [--tasks 3] [--repeat 1] [--seed 3]
        [--model oracle] [--out runs/bench-docker]

Generates a dataset (one world, `--tasks` tasks), then:
1. builds each task's docker images (`ensure_task_image`), timed cold (what had to be built, as
   `kwrl.progress` reports it) and warm (every image's key already there: the check alone);
2. runs each task's trial `--repeat` times in each environment, one at a time (local, then docker,
   alternating per task so a load change hits both), with harbor's `--model` agent (oracle: no
   policy, so the figures are the sandboxes' own);
3. prints, per environment, the trial's wall seconds (p50, mean) and the mean of each harbor phase
   (`environment_setup`: the sandbox's start; `agent_execution`: solve.sh's commands;
   `verifier`: the upload of /tests and the grader; `other`: the rest of the wall time, mostly
   `stop()`: copying outputs out and the teardown), the rewards task by task (they must be equal),
   and the load (`os.getloadavg`) before and after. `--out` gets `docker_vs_local.json`.

Needs docker (`docker info`) with kwrl's base image (scripts/docker/setup.sh) and, for local,
root and bubblewrap. docs/docker.md gives the figures and where docker's time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ENVIRONMENTS = ("local", "docker")


async def build_images(tasks: list[Path]) -> dict[str, float]:
    """Seconds of `ensure_task_image` over the tasks: cold (as found), then warm (all built)."""
    from kwrl.sandbox.docker.images import ensure_task_image

    out: dict[str, float] = {}
    for label in ("cold", "warm"):
        t0 = time.monotonic()
        for task in tasks:
            await ensure_task_image(task)
        out[label] = time.monotonic() - t0
    return out


async def one_trial(
    task: Path, environment: str, model: str, trials: Path, name: str
) -> dict[str, Any]:
    from kwrl.rollout.runner import RolloutConfig, run_trial
    from kwrl.rollout.trial import read_trial

    cfg = RolloutConfig(agent=model, environment=environment, retries=0)
    t0 = time.monotonic()
    rec = await run_trial(task, cfg, trials, name)
    wall = time.monotonic() - t0
    phases = read_trial(rec.trial_dir).phase_seconds
    return {
        "task": task.name, "environment": environment, "reward": rec.reward,
        "cause": str(rec.cause), "wall_s": wall, "phases": phases,
        "other_s": wall - sum(phases.values()),
    }  # fmt: skip


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for env in ENVIRONMENTS:
        mine = [r for r in rows if r["environment"] == env]
        if not mine:
            continue
        walls = [r["wall_s"] for r in mine]
        s = {
            "trials": len(mine),
            "wall_p50_s": statistics.median(walls),
            "wall_mean_s": statistics.fmean(walls),
        }
        for phase in sorted({p for r in mine for p in r["phases"]}):
            s[f"{phase}_s"] = statistics.fmean(r["phases"].get(phase, 0.0) for r in mine)
        s["other_s"] = statistics.fmean(r["other_s"] for r in mine)
        out[env] = s
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from kwrl.synth.generate import SynthConfig, generate

    root = Path(tempfile.mkdtemp(prefix="kwrl-bench-docker-"))
    data = root / "D"
    generate(
        SynthConfig(
            out=data, worlds=1, tasks_per_world=args.tasks, seed=args.seed, workers=1, control=False
        ),
        progress=False,
    )
    tasks = sorted((data / "tasks").iterdir())
    load_before = os.getloadavg()
    builds = await build_images(tasks)
    print(
        f"images: cold {builds['cold']:.1f} s, warm (keys checked only) {builds['warm']:.1f} s",
        flush=True,
    )
    rows: list[dict[str, Any]] = []
    for i, task in enumerate(tasks):
        for r in range(args.repeat):
            order = ENVIRONMENTS if (i + r) % 2 == 0 else ENVIRONMENTS[::-1]
            for env in order:
                row = await one_trial(
                    task, env, args.model, root / "trials", f"{task.name}__{env}__{r}"
                )
                rows.append(row)
                phases = ", ".join(f"{k} {v:.1f}" for k, v in row["phases"].items())
                print(
                    f"{task.name} {env}: {row['wall_s']:.1f} s reward {row['reward']} "
                    f"({phases}, other {row['other_s']:.1f})",
                    flush=True,
                )
    load_after = os.getloadavg()
    rewards = {
        env: {r["task"]: r["reward"] for r in rows if r["environment"] == env}
        for env in ENVIRONMENTS
    }
    return {
        "tasks": [t.name for t in tasks], "model": args.model, "repeat": args.repeat,
        "images": builds, "summary": summarize(rows), "rows": rows,
        "rewards_equal": rewards["local"] == rewards["docker"], "rewards": rewards,
        "load_before": load_before, "load_after": load_after, "cpus": os.cpu_count(),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tasks", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--model", default="oracle", help="harbor's agent: oracle or nop")
    ap.add_argument("--out", type=Path, default=Path("runs/bench-docker"))
    args = ap.parse_args()
    result = asyncio.run(main_async(args))
    for env, s in result["summary"].items():
        parts = ", ".join(
            f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in s.items()
        )
        print(f"{env}: {parts}")
    local, docker = result["summary"].get("local"), result["summary"].get("docker")
    if local and docker:
        print(f"docker / local wall (p50): {docker['wall_p50_s'] / local['wall_p50_s']:.2f}x")
    print(f"rewards equal task by task: {result['rewards_equal']}")
    print(
        f"load before {result['load_before'][0]:.1f}, after {result['load_after'][0]:.1f} ({result['cpus']} CPUs)"
    )
    from kwrl.io import write_json

    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "docker_vs_local.json", result)
    print(f"wrote {args.out / 'docker_vs_local.json'}")


if __name__ == "__main__":
    main()
