"""Listening sockets for kwrl's HTTP servers (`kwrl world serve`, `kwrl serve`), and the loopback
server the scripted test endpoints build on (`LoopbackServer`).

Non-obvious choice: the socket is created with proto=IPPROTO_TCP. Servers hand it to uvicorn, and
asyncio sets TCP_NODELAY on accepted sockets only when the listening socket's proto says TCP; with
proto 0 every small reply waits ~40 ms on Nagle's algorithm and the client's delayed ACK.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


def bind_tcp(host: str, port: int) -> socket.socket:
    """A bound (not yet listening) TCP socket on host:port (IPv6 when host has a ':'; port 0: any)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def send_json(handler: BaseHTTPRequestHandler, status: int, obj: Any) -> None:
    """Answer `handler`'s request with `obj` as JSON; a client that hung up is no error."""
    data = json.dumps(obj).encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client gave up on this request (its timeout): nobody to answer


class LoopbackServer:
    """A stdlib `ThreadingHTTPServer` on 127.0.0.1 (any free port) serving `handler` from a daemon
    thread: the base of the scripted endpoints tests and benchmarks talk to
    (`kwrl.grading.judges.loopback.LoopbackJudge`, `kwrl.llm.loopback.LoopbackPolicy`). `release`
    is set by `close()`, so an answer a subclass holds back goes out at once."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.release = threading.Event()
        """Set by `close()`: every delayed answer goes out at once."""
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        """The OpenAI-style base URL, `http://127.0.0.1:PORT/v1`."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
