"""`kwrl world ...`: serve a world's gateway and call its tools from scripts.

- `kwrl world serve ROOT [--host H] [--port N] [--uds PATH] [--in-place]` serves the world under
  ROOT (a world seed dir, or `/` inside a sandbox) and prints exactly one stdout line
  `kwrl-gateway ready <url>` once tools are listable; `--port 0` picks a free port (the line names
  it). It serves a private copy of ROOT's world (filesystem/, .apps_data/), removed on exit, so
  tool calls never change a dataset's world seed; `--in-place` serves ROOT itself (a scratch
  world, or `/` in a sandbox, whose changes are the point).
- `kwrl world call TOOL [JSON_ARGS] [--gateway URL]` makes one tool call and prints the result text;
  exit 1 on a tool error. An `input`/`request` envelope tool's fields may be given flat (as the
  agent's model writes them); they are re-wrapped. Gold solutions (`solution/solve.sh`) are
  sequences of these.

Non-obvious choices: `serve` binds the socket itself and hands it to uvicorn, so the ready line can
carry the real port and is printed only after uvicorn has started serving on it. Start-up leaves
~200k long-lived GC-tracked objects (the MCP SDK's models, the tools' schemas) and the cyclic GC's
full collections would re-scan them over and over (~0.4 s of ~3 s CPU), so `serve` keeps the GC off
until the gateway is built, then freezes what exists out of later collections.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kwrl.errors import WorldError
from kwrl.net import bind_tcp

if TYPE_CHECKING:
    from kwrl.tasks.layout import WorldRoots

app = typer.Typer(
    help="World runtime: serve a world's MCP gateway, call its tools.", no_args_is_help=True
)


def _bind(host: str, port: int, uds: Path | None) -> tuple[socket.socket, str]:
    if uds is not None:
        uds.parent.mkdir(parents=True, exist_ok=True)
        if uds.is_socket():
            uds.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(uds))
        return sock, f"unix://{uds}"
    try:
        sock = bind_tcp(host, port)
    except OSError as e:
        raise WorldError(f"--host {host} --port {port}: cannot bind: {e.strerror}") from e
    family = sock.family
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    return sock, f"http://{shown}:{bound}/mcp/"


async def _serve(asgi: Any, sock: socket.socket, url: str) -> None:
    import uvicorn

    config = uvicorn.Config(asgi, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            raise WorldError(f"gateway at {url} stopped before it was ready")
        await asyncio.sleep(0.005)
    print(f"kwrl-gateway ready {url}", flush=True)
    await task


@app.command()
def serve(
    root: Annotated[
        Path,
        typer.Argument(
            help="World dir holding filesystem/ and .apps_data/ ('/ --in-place' in a sandbox)."
        ),
    ],
    host: Annotated[
        str, typer.Option(help="Address to listen on (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port; 0 picks a free one.")] = 0,
    uds: Annotated[
        Path | None, typer.Option(help="Listen on this Unix socket instead of TCP.")
    ] = None,
    in_place: Annotated[
        bool,
        typer.Option(
            "--in-place",
            help="Serve ROOT itself: tool calls change its files. Default: a private copy, "
            "removed on exit (ROOT is never changed).",
        ),
    ] = False,
) -> None:
    """Serve a world's apps as one MCP endpoint at /mcp/, plus /health and /data/{populate,snapshot}.

    Tool calls change a private copy of ROOT's world unless --in-place."""
    import logging

    gc.disable()
    from kwrl.tasks.layout import WorldRoots

    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(message)s"
    )
    if not root.is_dir():
        raise WorldError(f"{root}: world dir does not exist")
    with contextlib.ExitStack() as stack:
        if not in_place:
            root = stack.enter_context(_private_copy(root))
        roots = WorldRoots.of_dir(root)
        roots.ensure()
        _serve_roots(roots, host, port, uds)


@contextlib.contextmanager
def _private_copy(root: Path) -> Iterator[Path]:
    """A copy of the world under `root` (its subsystems) in a temp dir, removed afterwards."""
    from kwrl.tasks.layout import SUBSYSTEMS

    with tempfile.TemporaryDirectory(prefix="kwrl-world-") as tmp:
        for name in SUBSYSTEMS:
            if (root / name).is_dir():
                shutil.copytree(root / name, Path(tmp) / name, symlinks=True)
        print(
            f"kwrl: serving a copy of {root} (tool calls never change it; --in-place serves it)",
            file=sys.stderr,
            flush=True,
        )
        yield Path(tmp)


def _serve_roots(roots: WorldRoots, host: str, port: int, uds: Path | None) -> None:
    from kwrl.worlds.gateway import build_app

    sock, url = _bind(host, port, uds)
    # uvicorn re-raises SIGTERM once it has shut down; exit through `finally` so the socket is removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        asgi = build_app(roots)
        gc.freeze()
        gc.enable()
        asyncio.run(_serve(asgi, sock, url))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
        if uds is not None and uds.is_socket():
            uds.unlink()


@app.command()
def call(
    tool: Annotated[
        str, typer.Argument(help="Tool name as the model sees it, e.g. mail_send_mail.")
    ],
    args: Annotated[str, typer.Argument(help="JSON object of arguments.")] = "{}",
    gateway: Annotated[
        str | None,
        typer.Option(help="http://host:port/mcp/ or unix:///path.sock; default $KWRL_GATEWAY."),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the result.")] = 600.0,
) -> None:
    """Call one tool on a running gateway and print its result; exit 1 if the tool reports an error.

    A tool taking one `input`/`request` envelope accepts its fields flat (they are re-wrapped)."""
    from kwrl.worlds.client import GatewayClient, resolve_url, result_text

    try:
        arguments = json.loads(args)
    except json.JSONDecodeError as e:
        raise WorldError(f"JSON_ARGS: not valid JSON: {e}") from e
    if not isinstance(arguments, dict):
        raise WorldError('JSON_ARGS: expected a JSON object, e.g. \'{"path": "/"}\'')
    url = resolve_url(gateway)

    async def run() -> tuple[bool, str]:
        async with GatewayClient(url, timeout_s=timeout) as gw:
            result = await gw.call_flat(tool, arguments)
            return result.is_error, result_text(result)

    is_error, text = asyncio.run(run())
    stream = sys.stderr if is_error else sys.stdout
    stream.write(text + ("" if text.endswith("\n") else "\n"))
    stream.flush()
    if is_error:
        raise typer.Exit(1)


if __name__ == "__main__":
    app()
