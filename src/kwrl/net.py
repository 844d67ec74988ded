"""Listening sockets for kwrl's HTTP servers (`kwrl world serve`, `kwrl serve`).

Non-obvious choice: the socket is created with proto=IPPROTO_TCP. Servers hand it to uvicorn, and
asyncio sets TCP_NODELAY on accepted sockets only when the listening socket's proto says TCP; with
proto 0 every small reply waits ~40 ms on Nagle's algorithm and the client's delayed ACK.
"""

from __future__ import annotations

import socket


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
