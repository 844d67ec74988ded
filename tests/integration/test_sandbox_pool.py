"""Pre-started spares (`LocalSandboxConfig.pool`): a trial takes a fresh sandbox of its own world,
with its limits, and nothing of an earlier trial; the pool leaves nothing behind once drained.

Slow: the first gateway of a process warms the zygote (20-80 s on a shared 2-core machine).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from kwrl.sandbox.conformance.testing import make_dataset, make_environment
from kwrl.sandbox.local import LocalEnvironment, pool

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
    ),
]


def _limit(env: LocalEnvironment, controller: str) -> int:
    """The trial cgroup's memory limit (bytes) or process limit, as the kernel holds it."""
    cg = env.cgroups
    assert cg is not None
    v1 = {"memory": "memory.limit_in_bytes", "pids": "pids.max"}
    if cg.version == "v1":
        return int((cg.dirs[controller] / v1[controller]).read_text())
    return int((next(iter(cg.dirs.values())) / f"{controller}.max").read_text())


async def test_a_trial_takes_a_fresh_spare_of_its_world_and_nothing_is_left(tmp_path: Path) -> None:
    from kwrl.worlds.client import GatewayClient

    task = make_dataset(tmp_path / "ds", 1)[0]
    sbx = str(tmp_path / "sbx")

    def env(i: int, pids_max: int = 512) -> LocalEnvironment:
        return make_environment(
            task, tmp_path / f"t{i}", sandbox_dir=sbx, pool=1, pids_max=pids_max
        )

    first = env(0)
    await first.start(force_build=False)  # cold
    r = await first.exec("echo secret > /filesystem/planted && echo agent > /logs/agent/a.txt")
    assert r.return_code == 0, r.stderr
    await first.stop(delete=True)  # a spare of its world starts in the background

    second = env(1)
    await second.start(force_build=False)
    try:
        assert second._spare_dir is not None, "the second trial of the world took no spare"
        assert second.root != first.root
        r = await second.exec("ls /filesystem /logs/agent; cat /filesystem/planted")
        out = r.stdout or ""
        assert "planted" not in out and "a.txt" not in out and r.return_code != 0
        assert _limit(second, "memory") // 2**20 == second._limits().memory_mb
        assert second.mcp_url is not None
        async with GatewayClient(second.mcp_url, timeout_s=60) as gw:
            assert "filesystem_list_files" in [t.name for t in await gw.list_tools()]
        r = await second.exec("echo out > /logs/agent/b.txt")
        assert r.return_code == 0, r.stderr
        trial = second.trial_paths.trial_dir
        assert (trial / "gateway.log").is_file() and (trial / "sandbox.log").is_file()
    finally:
        await second.stop(delete=True)
    assert (second.trial_paths.agent_dir / "b.txt").read_text() == "out\n"
    assert not (tmp_path / "t0" / "agent" / "b.txt").exists()

    # other limits, another world key: no spare of the first world serves it
    other = env(2, pids_max=256)
    await other.start(force_build=False)
    try:
        assert other._spare_dir is None
        assert _limit(other, "pids") == 256
    finally:
        await other.stop(delete=True)

    await pool.drain()
    assert LocalEnvironment.leftovers() == []
    assert not (Path(sbx) / f"{os.getpid()}-pool").exists()


async def test_concurrent_trials_never_share_a_spare(tmp_path: Path) -> None:
    task = make_dataset(tmp_path / "ds", 1)[0]
    envs = [
        make_environment(task, tmp_path / f"t{i}", sandbox_dir=str(tmp_path / "sbx"), pool=2)
        for i in range(6)
    ]
    await asyncio.gather(*(e.start(force_build=False) for e in envs[:2]))
    await asyncio.gather(*(e.stop(delete=True) for e in envs[:2]))  # a spare takes each one's place
    await asyncio.gather(*(e.start(force_build=False) for e in envs[2:]))
    try:
        roots = {e.root for e in envs}
        assert len(roots) == len(envs)
        assert sum(e._spare_dir is not None for e in envs[2:]) == 2
    finally:
        await asyncio.gather(*(e.stop(delete=True) for e in envs))
        await pool.drain()
    assert LocalEnvironment.leftovers() == []


async def test_the_pool_holds_at_most_its_size_in_all_worlds(tmp_path: Path) -> None:
    task = make_dataset(tmp_path / "ds", 1)[0]
    for i, pids in enumerate((300, 301, 302)):  # three worlds (keys), one after the other
        env = make_environment(
            task, tmp_path / f"t{i}", sandbox_dir=str(tmp_path / "sbx"), pool=1, pids_max=pids
        )
        await env.start(force_build=False)
        await env.stop(delete=True)
        assert pool.pooled() == 1  # the last world's spare; the older one is being ended
    await pool.drain()
    assert pool.pooled() == 0 and LocalEnvironment.leftovers() == []
