"""Benchmark of the local sandbox: readiness latency, concurrency, idle memory.

    .venv/bin/python benchmarks/sandbox.py [--starts 20] [--pool 1] [--gap-ms 250]
        [--concurrent 32] [--idle 16 | --idle 64,128,256]

Prints three figures (issue 37's targets in brackets) and where the time and memory go:
1. ready: `LocalEnvironment.start()` until one MCP session has listed the gateway's tools through
   `mcp_url`, p50/p90 over `--starts` sequential trials after one warm-up (the gateway zygote),
   split into start() (cgroups, root/mounts/bwrap, the gateway's fork), MCP connect and tools/list;
   once cold (pool 0) and once with `--pool` pre-started spares (`LocalSandboxConfig.pool`),
   `--gap-ms` apart (a spare starts in the background after each claim; back to back on a busy
   machine, a trial waits for the one still starting) [p50 <= 50 ms];
2. concurrent: `--concurrent` oracle trials through harbor at once, all must complete with reward 1;
3. idle memory: `--idle` sandboxes (each N of a comma list) with their gateways up, idle, then after
   one MCP session each: PSS per trial split by process (bwrap, the init, the gateway: a fork of
   the zygote, sharing its pages), the gateway's private dirty memory, the trial's cgroup charge
   and the drop in MemAvailable [<= 10 MB per trial, 256 at once on 2 cores].
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


def mem_available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


class _Phases:
    """Wall time of start()'s parts, by wrapping the functions it calls (this process only)."""

    def __init__(self) -> None:
        from kwrl.sandbox import cgroups
        from kwrl.sandbox.gateway import zygote
        from kwrl.sandbox.local import gateway

        self.times: dict[str, list[float]] = {}
        for cls in (cgroups.CgroupsV1, cgroups.CgroupsV2):
            self._wrap(cls, "create", "cgroups made")
        self._wrap(gateway, "start_gateway", "gateway (zygote fork to ready line)")
        self._wrap(zygote, "_request", "  of which the zygote's fork and setns")

    def _wrap(self, mod: Any, name: str, label: str) -> None:
        f = getattr(mod, name)
        times = self.times.setdefault(label, [])

        async def timed_async(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return await f(*a, **k)
            finally:
                times.append(time.perf_counter() - t)

        def timed(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                times.append(time.perf_counter() - t)

        setattr(mod, name, timed_async if asyncio.iscoroutinefunction(f) else timed)

    def clear(self) -> None:
        for v in self.times.values():
            v.clear()


def ms(xs: list[float], q: int = 5) -> str:
    """p50 (q=5) or p90 (q=9) of `xs` in ms."""
    if not xs:
        return "-"
    v = (
        statistics.median(xs)
        if q == 5
        else statistics.quantiles(xs, n=10)[8]
        if len(xs) > 1
        else xs[0]
    )
    return f"{v * 1000:.0f} ms"


async def bench_ready(
    task: Path, tmp: Path, n: int, pool: int, gap_s: float, phases: _Phases
) -> None:
    """`n` sequential trials (after one warm-up): start(), then one MCP session listing the tools."""
    from kwrl.sandbox.conformance.testing import make_environment
    from kwrl.sandbox.local import LocalEnvironment
    from kwrl.worlds.client import GatewayClient

    ready: list[float] = []
    part: dict[str, list[float]] = {"start()": [], "MCP connect": [], "tools/list": []}
    spares = 0
    for i in range(n + 1):
        env = make_environment(task, tmp / f"ready-{pool}-{i}", pool=pool)
        t0 = time.perf_counter()
        await env.start(force_build=False)
        t1 = time.perf_counter()
        assert env.mcp_url is not None
        async with GatewayClient(env.mcp_url, timeout_s=60) as gw:
            t2 = time.perf_counter()
            tools = await gw.list_tools()
        t3 = time.perf_counter()
        took = env._spare_dir is not None
        await env.stop(delete=True)
        if i == 0:
            print(
                f"  first start (zygote warm-up, pool {pool}): {(t3 - t0) * 1000:.0f} ms, {len(tools)} tools"
            )
            phases.clear()
        else:
            ready.append(t3 - t0)
            for k, v in zip(part, (t1 - t0, t2 - t1, t3 - t2), strict=True):
                part[k].append(v)
            spares += took
        await asyncio.sleep(gap_s)
    await LocalEnvironment.drain()
    how = f"pool {pool}, {gap_s * 1000:.0f} ms between trials" if pool else "cold (pool 0)"
    print(
        f"ready ({how}): p50 {ms(ready)}, p90 {ms(ready, 9)}, n={len(ready)}, "
        f"{spares} took a spare; load average {os.getloadavg()[0]:.1f}"
    )
    background = [(f"spares (background): {k.strip()}", v) for k, v in phases.times.items()]
    for k, v in [*part.items(), *(background if pool else phases.times.items())]:
        if v:
            print(f"  {k:40s} p50 {ms(v)}")
    if not pool:
        known = sum(statistics.median(v) for k, v in phases.times.items() if v and k[0] != " ")
        rest = statistics.median(part["start()"]) - known
        print(f"  {'rest: root, mounts, bwrap to init ready':40s} ~{rest * 1000:.0f} ms")
    phases.clear()


async def bench_concurrent(tasks: list[Path], out: Path) -> tuple[float, list[float | None]]:
    from kwrl.rollout.runner import RolloutConfig, run_rollout

    cfg = RolloutConfig(agent="oracle", concurrency=len(tasks), retries=0)
    t0 = time.perf_counter()
    records = (await run_rollout(tasks, cfg, out)).records
    return time.perf_counter() - t0, [r.reward for r in records]


def _kind(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    if b"kwrl.sandbox.gateway.zygote" in argv or b"kwrl.sandbox.gateway.launch" in argv:
        return "gateway"
    if argv[0].endswith(b"bwrap"):
        return "bwrap"
    return "init" if argv[0] == b"/kwrl/init" or b"-S" in argv else "other"


def rollup(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            k, v, *_ = line.split()
            out[k.rstrip(":")] = int(v) / 1024
    except OSError:
        pass
    return out


async def bench_idle(task: Path, tmp: Path, n: int) -> None:
    """`n` sandboxes with their gateways up, idle; then each gateway serves one MCP session."""
    from kwrl.sandbox.conformance.testing import make_environment
    from kwrl.worlds.client import GatewayClient

    base = mem_available_mb()
    envs = []
    t0 = time.perf_counter()
    for i in range(n):
        env = make_environment(task, tmp / f"idle-{n}-{i}")
        await env.start(force_build=False)
        envs.append(env)
    started = time.perf_counter() - t0
    await asyncio.sleep(2)  # let the gateways settle

    def measure(label: str) -> None:
        used = base - mem_available_mb()
        charges = [e.cgroups.memory_bytes() / 2**20 for e in envs if e.cgroups]
        by_kind: dict[str, list[float]] = {}
        private: list[float] = []
        for e in envs:
            for pid in e.cgroups.pids() if e.cgroups else []:
                r = rollup(pid)
                by_kind.setdefault(_kind(pid), []).append(r.get("Pss", 0.0))
                if _kind(pid) == "gateway":
                    private.append(r.get("Private_Dirty", 0.0))
        pss = sum(sum(v) for v in by_kind.values()) / n
        kinds = ", ".join(f"{k} {sum(v) / n:.1f}" for k, v in sorted(by_kind.items()))
        print(f"  {label}: PSS {pss:.1f} MB per trial ({kinds}); gateway private dirty "
              f"{statistics.mean(private or [0]):.1f} MB; cgroup charge {statistics.mean(charges or [0]):.1f} MB; "
              f"MemAvailable drop {used / n:.1f} MB")  # fmt: skip

    print(f"idle memory: {n} sandboxes with gateways (started one by one in {started:.1f} s)")
    measure("idle")
    for e in envs:
        assert e.mcp_url is not None
        async with GatewayClient(e.mcp_url, timeout_s=120) as gw:
            await gw.list_tools()
    await asyncio.sleep(1)
    measure("after one MCP session each")
    for e in envs:
        await e.stop(delete=True)


async def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--starts", type=int, default=20)
    ap.add_argument("--pool", type=int, default=1, help="spares for the pooled ready run (0: none)")
    ap.add_argument("--gap-ms", type=float, default=250, help="pause between pooled trials")
    ap.add_argument("--concurrent", type=int, default=32)
    ap.add_argument("--idle", default="16", help="sandboxes held idle; a comma list for several")
    args = ap.parse_args()
    from kwrl.sandbox.conformance.testing import make_dataset

    with tempfile.TemporaryDirectory(prefix="kwrl-bench-") as d:
        tmp = Path(d)
        tasks = make_dataset(tmp / "ds", max(1, args.concurrent))
        if args.starts:
            phases = _Phases()
            await bench_ready(tasks[0], tmp, args.starts, 0, 0.0, phases)
            if args.pool:
                await bench_ready(tasks[0], tmp, args.starts, args.pool, args.gap_ms / 1000, phases)
        if args.concurrent:
            secs, rewards = await bench_concurrent(tasks, tmp / "conc")
            ok = sum(r == 1.0 for r in rewards)
            print(
                f"concurrent: {len(rewards)} oracle trials at once: {ok}/{len(rewards)} reward 1.0 "
                f"in {secs:.1f} s; load average {os.getloadavg()[0]:.1f}"
            )
        for n in [int(x) for x in args.idle.split(",") if int(x) > 0]:
            await bench_idle(tasks[0], tmp, n)


if __name__ == "__main__":
    asyncio.run(main())
