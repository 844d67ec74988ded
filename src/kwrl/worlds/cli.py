"""`kwrl world ...`: serve a world's gateway and call its tools from scripts.

- `kwrl world serve ROOT [--host H] [--port N] [--uds PATH] [--in_place]` serves the world under
  ROOT (a world seed dir, or `/` inside a sandbox) and prints exactly one stdout line
  `kwrl-gateway ready <url>` once tools are listable; `--port 0` picks a free port (the line names
  it). It serves a private copy of ROOT's world (filesystem/, .apps_data/), removed on exit, so
  tool calls never change a dataset's world seed; `--in_place` serves ROOT itself (a scratch
  world, or `/` in a sandbox, whose changes are the point).
- `kwrl world call TOOL [JSON_ARGS] [--gateway URL] [--timeout S]` makes one tool call and prints the result text;
  exit 1 on a tool error. An `input`/`request` envelope tool's fields may be given flat (as the
  agent's model writes them); they are re-wrapped. Gold solutions (`solution/solve.sh`) are
  sequences of these.

Their flags are `WorldServeConfig`'s and `WorldCallConfig`'s fields (`kwrl.cli_config`).

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
from pydantic import Field

from kwrl.cli_config import build_config, config_flags
from kwrl.config import KwrlConfig
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


class WorldServeConfig(KwrlConfig):
    """`kwrl world serve`'s config (its flags)."""

    host: str = "127.0.0.1"
    """Address to listen on (loopback by default)."""
    port: int = Field(default=0, ge=0, le=65535)
    """TCP port; 0 picks a free one."""
    uds: Path | None = None
    """Listen on this Unix socket instead of TCP."""
    in_place: bool = False
    """Serve ROOT itself: tool calls change its files. Default: a private copy, removed on exit
    (ROOT is never changed)."""


class WorldCallConfig(KwrlConfig):
    """`kwrl world call`'s config (its flags)."""

    gateway: str | None = None
    """http://host:port/mcp/ or unix:///path.sock; default $KWRL_GATEWAY."""
    timeout: float = Field(default=600.0, gt=0)
    """Seconds to wait for the result."""


@app.command()
@config_flags(WorldServeConfig, switches={"in_place"})
def serve(
    root: Annotated[
        Path,
        typer.Argument(
            help="World dir holding filesystem/ and .apps_data/ ('/ --in_place' in a sandbox)."
        ),
    ],
    *,
    overrides: dict[str, Any],
) -> None:
    """Serve a world's apps as one MCP endpoint at /mcp/, plus /health and /data/{populate,snapshot}.

    Tool calls change a private copy of ROOT's world unless --in_place."""
    import logging

    cfg = build_config(WorldServeConfig, overrides, "kwrl world serve")
    gc.disable()
    from kwrl.tasks.layout import WorldRoots

    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(message)s"
    )
    if not root.is_dir():
        raise WorldError(f"{root}: world dir does not exist")
    with contextlib.ExitStack() as stack:
        if not cfg.in_place:
            root = stack.enter_context(_private_copy(root))
        roots = WorldRoots.of_dir(root)
        roots.ensure()
        _serve_roots(roots, cfg.host, cfg.port, cfg.uds)


@contextlib.contextmanager
def _private_copy(root: Path) -> Iterator[Path]:
    """A copy of the world under `root` (its subsystems) in a temp dir, removed afterwards."""
    from kwrl.tasks.layout import SUBSYSTEMS

    with tempfile.TemporaryDirectory(prefix="kwrl-world-") as tmp:
        for name in SUBSYSTEMS:
            if (root / name).is_dir():
                shutil.copytree(root / name, Path(tmp) / name, symlinks=True)
        print(
            f"kwrl: serving a copy of {root} (tool calls never change it; --in_place serves it)",
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
@config_flags(WorldCallConfig)
def call(
    tool: Annotated[
        str, typer.Argument(help="Tool name as the model sees it, e.g. mail_send_mail.")
    ],
    args: Annotated[str, typer.Argument(help="JSON object of arguments.")] = "{}",
    *,
    overrides: dict[str, Any],
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
    cfg = build_config(WorldCallConfig, overrides, "kwrl world call")
    url = resolve_url(cfg.gateway)

    async def run() -> tuple[bool, str]:
        async with GatewayClient(url, timeout_s=cfg.timeout) as gw:
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
