"""Benchmark of the local sandbox: readiness latency, concurrency, idle memory.

    .venv/bin/python benchmarks/sandbox.py [--starts 20] [--concurrent 32] [--idle 16]

Prints three figures (targets in brackets):
1. ready: `LocalEnvironment.start()` until the gateway's tools are listed through `mcp_url`,
   p50/p90 over `--starts` sequential sandboxes, after one warm-up (the gateway zygote) [p50 <= 500 ms];
2. concurrent: `--concurrent` oracle trials through harbor at once, all must complete with reward 1;
3. idle memory: `--idle` sandboxes with their gateways up, idle; memory per trial as the drop in
   MemAvailable and as the trials' cgroup charge [<= 100 MB].
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def mem_available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


async def bench_ready(task: Path, tmp: Path, n: int) -> tuple[list[float], list[float]]:
    from kwrl.sandbox.testing import make_environment
    from kwrl.worlds.client import GatewayClient

    times: list[float] = []
    starts: list[float] = []
    for i in range(n + 1):
        env = make_environment(task, tmp / f"ready-{i}")
        t0 = time.perf_counter()
        await env.start(force_build=False)
        t_started = time.perf_counter() - t0
        assert env.mcp_url is not None
        async with GatewayClient(env.mcp_url, timeout_s=60) as gw:
            tools = await gw.list_tools()
        dt = time.perf_counter() - t0
        await env.stop(delete=True)
        if i == 0:
            print(f"  first start (zygote warm-up): {dt * 1000:.0f} ms, {len(tools)} tools")
        else:
            times.append(dt)
            starts.append(t_started)
    return times, starts


async def bench_concurrent(tasks: list[Path], out: Path) -> tuple[float, list[float | None]]:
    from kwrl.rollout.runner import RolloutConfig, run_rollout

    cfg = RolloutConfig(agent="oracle", concurrency=len(tasks), retries=0)
    t0 = time.perf_counter()
    records = await run_rollout(tasks, cfg, out)
    return time.perf_counter() - t0, [r.reward for r in records]


async def bench_idle(task: Path, tmp: Path, n: int) -> None:
    from kwrl.sandbox.testing import make_environment

    base = mem_available_mb()
    envs = []
    for i in range(n):
        env = make_environment(task, tmp / f"idle-{i}")
        await env.start(force_build=False)
        envs.append(env)
    await asyncio.sleep(2)  # let the gateways settle
    used = base - mem_available_mb()
    charges = [e.cgroups.memory_bytes() / 2**20 for e in envs if e.cgroups]
    pss = [sum(pss_mb(p) for p in e.cgroups.pids()) for e in envs if e.cgroups]
    for e in envs:
        await e.stop(delete=True)
    print(f"idle memory: {n} sandboxes with gateways")
    print(f"  MemAvailable drop per trial: {used / n:.1f} MB")
    print(f"  cgroup charge per trial:     {statistics.mean(charges):.1f} MB (mean)")
    print(f"  PSS of trial processes:      {statistics.mean(pss):.1f} MB (mean)")


async def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--starts", type=int, default=20)
    ap.add_argument("--concurrent", type=int, default=32)
    ap.add_argument("--idle", type=int, default=16)
    args = ap.parse_args()
    from kwrl.sandbox.testing import make_dataset

    with tempfile.TemporaryDirectory(prefix="kwrl-bench-") as d:
        tmp = Path(d)
        tasks = make_dataset(tmp / "ds", max(1, args.concurrent))
        if args.starts:
            times, starts = await bench_ready(tasks[0], tmp, args.starts)
            q = statistics.quantiles(times, n=10) if len(times) > 1 else times * 9
            print(
                f"ready (start -> tools listed): p50 {statistics.median(times) * 1000:.0f} ms, "
                f"p90 {q[8] * 1000:.0f} ms, n={len(times)}; of which start() p50 "
                f"{statistics.median(starts) * 1000:.0f} ms; load average {os.getloadavg()[0]:.1f}"
            )
        if args.concurrent:
            secs, rewards = await bench_concurrent(tasks, tmp / "conc")
            ok = sum(r == 1.0 for r in rewards)
            print(
                f"concurrent: {len(rewards)} oracle trials at once: {ok}/{len(rewards)} reward 1.0 in {secs:.1f} s"
            )
        if args.idle:
            await bench_idle(tasks[0], tmp, args.idle)


if __name__ == "__main__":
    asyncio.run(main())
