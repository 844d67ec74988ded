"""Trial names' owners, and the TCP->Unix relay on real sockets (cgroups: test_cgroups.py)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from kwrl.sandbox import cgroups
from kwrl.sandbox.gateway.forward import UnixForwarder


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
