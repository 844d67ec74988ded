"""The verifier phase's side of `kwrl.sandbox.network.egress`: a relay from its own loopback to the proxy.

`python -I -m kwrl.sandbox.network.relay --port P --socket S -- CMD...` listens on 127.0.0.1:P in the
verifier phase's network namespace, relays every connection to the proxy's Unix socket S, and runs
CMD with HTTP_PROXY/HTTPS_PROXY (and the lower-case forms) naming that port and NO_PROXY empty; its
exit status is CMD's. Standard library only, no asyncio: it starts once per verifier command.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence

PROXY_PORT = 3128
"""The relay's port on the verifier phase's own loopback."""
SANDBOX_SOCKET = "/kwrl/run/egress.sock"
"""The proxy's socket as the verifier phase sees it (the host's `<root>/run/egress.sock`)."""
_CHUNK = 256 * 1024


def proxy_env(port: int = PROXY_PORT) -> dict[str, str]:
    """The variables that send a command's HTTP clients through the relay on `port`."""
    url = f"http://127.0.0.1:{port}"
    return {
        "HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
        "NO_PROXY": "", "no_proxy": "",
    }  # fmt: skip


def _copy(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(_CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _serve(conn: socket.socket, path: str) -> None:
    with conn:
        up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with up:
            try:
                up.connect(path)
            except OSError:
                return
            back = threading.Thread(target=_copy, args=(up, conn), daemon=True)
            back.start()
            _copy(conn, up)
            back.join()


def _accept(server: socket.socket, path: str) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=_serve, args=(conn, path), daemon=True).start()


def main(argv: Sequence[str] | None = None) -> int:
    """Relay 127.0.0.1:PORT to SOCKET while CMD runs with the proxy variables; CMD's exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m kwrl.sandbox.network.relay", description=main.__doc__
    )
    ap.add_argument("--port", type=int, default=PROXY_PORT)
    ap.add_argument("--socket", default=SANDBOX_SOCKET)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command")
    server = socket.create_server(("127.0.0.1", args.port))
    threading.Thread(target=_accept, args=(server, args.socket), daemon=True).start()
    proc = subprocess.Popen(command, env={**os.environ, **proxy_env(args.port)})
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: proc.send_signal(s))
    rc = proc.wait()
    return 128 - rc if rc < 0 else rc


if __name__ == "__main__":
    sys.exit(main())
