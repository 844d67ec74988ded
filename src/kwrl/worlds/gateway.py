"""The world gateway: one HTTP server over every app of a world (ARCH environment).

Routes (docs/contracts.md):
- `/mcp/`: streamable-HTTP MCP endpoint. Each app of the app table (`kwrl.tasks.apps.APPS`) is built
  on the world's roots and its tools are added to one server as `<server>_<tool>` (`mail_send_mail`,
  `code_execution_code_exec`); the apps' schemas are already flat.
- `GET /health`: `{"status": "ok", "apps": [...], "missing_apps": [...]}`.
- `POST /data/populate?subsystem=filesystem|.apps_data`: body is a tar (optionally compressed) whose
  members are relative to that subsystem's root; extracted over it after every member is checked
  (`kwrl.worlds.snapshot.populate`). 400 with the reason on an unsafe or unreadable archive.
- `POST /data/snapshot`: streams a tar.gz holding `filesystem/` and `.apps_data/`.

Non-obvious choices: the apps' tools are copied into one flat server under prefixed names rather
than `FastMCP.mount`ed: a mount routes each call through a provider chain (namespace transform,
per-provider lookup) that cost about as much CPU per call as the rest of the call (measured: 9.7 vs
4.6 ms in-process for a trivial read), and the apps have no lifespan or middleware of their own to
keep. An app module that does not exist is skipped with a logged warning (and listed
under `missing_apps`), so a world can be served while an app is still being written; any other
import error is a bug and propagates.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import anyio.to_thread
from fastmcp import FastMCP
from fastmcp.tools import Tool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from kwrl.errors import UnsafeArchiveError
from kwrl.tasks.apps import APPS
from kwrl.tasks.layout import SUBSYSTEMS, WorldRoots
from kwrl.worlds.apps import build
from kwrl.worlds.snapshot import populate, write_snapshot

if TYPE_CHECKING:
    from starlette.applications import Starlette

log = logging.getLogger(__name__)

MCP_PATH = "/mcp/"
_SPOOL_BYTES = 32 * 1024 * 1024
_CHUNK = 1024 * 1024


def build_server(roots: WorldRoots) -> tuple[FastMCP, list[str], list[str]]:
    """The composed MCP server, the mounted app names, and the names of app modules not found."""
    # Each app's listing is dereferenced already (`_tools_of`): walking all 73 schemas again on
    # every tools/list cost ~10 ms of a session's ~22 (benchmarks/sandbox.py's ready figure).
    server = FastMCP("kwrl-world", dereference_schemas=False)
    apps: dict[str, FastMCP] = {}
    missing: list[str] = []
    for name, app in APPS.items():
        try:
            apps[name] = build(name, roots)
        except ModuleNotFoundError as e:
            if e.name != app.module:
                raise
            log.warning("world gateway: app %r skipped: module %s does not exist", name, app.module)
            missing.append(name)
    for name, tools in _tools_of(apps).items():
        for tool in tools:
            server.add_tool(tool.model_copy(update={"name": f"{name}_{tool.name}"}))
    return server, list(apps), missing


def _tools_of(apps: dict[str, FastMCP]) -> dict[str, Sequence[Tool]]:
    """Each app's tools as its clients would list them (schemas dereferenced), read on one private
    event loop in a worker thread, since this may be called from inside a running loop."""

    async def list_all() -> dict[str, Sequence[Tool]]:
        return {name: await app.list_tools() for name, app in apps.items()}

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, list_all()).result()


def build_app(roots: WorldRoots) -> Starlette:
    """The gateway's ASGI app for a world: MCP at /mcp/ plus /health and /data/* routes."""
    server, mounted, missing = build_server(roots)

    @server.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "apps": mounted, "missing_apps": missing})

    @server.custom_route("/data/populate", methods=["POST"])
    async def data_populate(request: Request) -> Response:
        subsystem = request.query_params.get("subsystem", "")
        if subsystem not in SUBSYSTEMS:
            return JSONResponse(
                {
                    "error": f"query parameter subsystem={subsystem!r}: expected one of {list(SUBSYSTEMS)}"
                },
                status_code=400,
            )
        dest = roots.subsystem(subsystem)
        with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as spool:
            async for chunk in request.stream():
                spool.write(chunk)
            spool.seek(0)
            try:
                counts = await anyio.to_thread.run_sync(
                    lambda: populate(spool, dest, source=f"populate?subsystem={subsystem}")  # type: ignore[arg-type]
                )
            except UnsafeArchiveError as e:
                return JSONResponse({"error": str(e)}, status_code=400)
        return JSONResponse({"subsystem": subsystem, **counts})

    @server.custom_route("/data/snapshot", methods=["POST"])
    async def data_snapshot(request: Request) -> Response:
        spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)  # noqa: SIM115 (closed by the stream)
        try:
            await anyio.to_thread.run_sync(lambda: write_snapshot(roots, spool))  # type: ignore[arg-type]
        except BaseException:
            spool.close()
            raise
        spool.seek(0)

        async def body() -> AsyncIterator[bytes]:
            try:
                while chunk := spool.read(_CHUNK):
                    yield chunk
            finally:
                spool.close()

        return StreamingResponse(
            body(),
            media_type="application/gzip",
            headers={"Content-Disposition": 'attachment; filename="snapshot.tar.gz"'},
        )

    return server.http_app(path=MCP_PATH, json_response=True)
