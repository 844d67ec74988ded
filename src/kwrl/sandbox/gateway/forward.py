"""A loopback TCP listener that relays every connection to a Unix socket.

The world gateway listens on a Unix socket inside the sandbox (the sandbox has no network); the
agent runs on the host and speaks HTTP to `http://127.0.0.1:PORT/mcp/`. `UnixForwarder` is the
bridge: it lives in the host's event loop, binds 127.0.0.1 only, and pipes bytes both ways.
Closing it closes the listener and every open relay.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

_CHUNK = 256 * 1024


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()


class UnixForwarder:
    """Relay 127.0.0.1:<port> to the Unix socket `socket_path`."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = Path(socket_path)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._relays: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._relays.add(task)
        try:
            try:
                up_r, up_w = await asyncio.open_unix_connection(str(self.socket_path))
            except OSError:
                return
            try:
                await asyncio.gather(pump(reader, up_w), pump(up_r, writer))
            finally:
                up_w.close()
        except asyncio.CancelledError:
            pass  # close() cancels relays; ending quietly keeps asyncio from logging the cancel
        finally:
            writer.close()
            self._relays.discard(task)

    async def close(self) -> None:
        await close_relays(self._server, self._relays)
        self._server = None


async def close_relays(server: asyncio.Server | None, relays: set[asyncio.Task[None]]) -> None:
    """Stop listening on `server` and cancel every relay task still open."""
    if server is not None:
        server.close()
    for t in list(relays):
        t.cancel()
    if relays:
        await asyncio.gather(*relays, return_exceptions=True)
    relays.clear()
