"""Trial cgroups on the real cgroup fs, and the TCP->Unix relay on real sockets."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
from pathlib import Path

import pytest

from kwrl.sandbox import cgroups
from kwrl.sandbox.forward import UnixForwarder


@pytest.mark.skipif(not cgroups.Cgroups.available(), reason="needs writable cgroup v1 controllers")
def test_a_trial_cgroup_limits_counts_kills_and_goes_away() -> None:
    cg = cgroups.Cgroups(f"{os.getpid()}-{secrets.token_hex(4)}")
    cg.create(cgroups.Limits(memory_mb=64, pids=8, cpus=0.5))
    try:
        assert (cg.dirs["pids"] / "pids.max").read_text().strip() == "8"
        assert int((cg.dirs["memory"] / "memory.limit_in_bytes").read_text()) == 64 * 2**20
        assert (cg.dirs["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "50000"
        joined = " ".join(f'echo $$ > "{f}";' for f in cg.procs_files("exec"))
        proc = subprocess.Popen(
            ["sh", "-c", f"{joined} echo in; exec sleep 60"], stdout=subprocess.PIPE
        )
        assert proc.stdout is not None and proc.stdout.readline() == b"in\n"
        assert cg.pids("exec") == [proc.pid]
        assert cg.kill() >= 1
        proc.wait(timeout=10)
        assert cg.pids() == []
        assert cg.events().as_dict() == {"pids_max": 0, "oom_kill": 0}
    finally:
        cg.kill()
        cg.remove()
    assert not any(d.exists() for d in cg.dirs.values())


def test_owner_alive_reads_the_pid_prefix() -> None:
    assert cgroups.owner_alive(f"{os.getpid()}-abc")
    assert not cgroups.owner_alive("999999999-abc")
    assert cgroups.owner_alive("not-ours")


async def test_the_forwarder_relays_loopback_tcp_to_a_unix_socket(tmp_path: Path) -> None:
    sock = tmp_path / "echo.sock"

    async def echo(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        w.write((await r.readline()).upper())
        await w.drain()
        w.close()

    server = await asyncio.start_unix_server(echo, str(sock))
    fwd = UnixForwarder(sock)
    port = await fwd.start()
    try:
        r, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b"hello\n")
        await w.drain()
        assert await r.readline() == b"HELLO\n"
        w.close()
    finally:
        await fwd.close()
        server.close()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)
