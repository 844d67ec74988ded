"""Shared pieces of the office app tests: a world copied from the real fixtures, call helpers.

Each test gets its own copy of the fixture documents under tmp_path/filesystem and talks to the
app through a real in-memory fastmcp Client.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.exceptions import ToolError
from PIL import Image

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.client import envelope_key, rewrap


def make_world(tmp_path: Path, office_fixtures: Path, kind: str) -> WorldRoots:
    """A world whose filesystem holds copies of fixtures/office/<kind>/*, plus a PNG and traps."""
    roots = WorldRoots.of_dir(tmp_path / "world")
    roots.ensure()
    for f in sorted((office_fixtures / kind).iterdir()):
        dst = roots.filesystem / f.name
        shutil.copyfile(f, dst)
        os.chmod(dst, 0o644)
    img = Image.new("RGB", (40, 20), (200, 30, 30))
    for x in range(20):
        img.putpixel((x, 5), (0, 0, 255))
    img.save(roots.filesystem / "logo.png")
    (roots.filesystem / f"corrupt.{kind}").write_bytes(os.urandom(2048))
    (roots.filesystem / "notes.txt").write_text("plain text\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / f"secret.{kind}").write_bytes(b"secret")
    (roots.filesystem / f"link.{kind}").symlink_to(outside / f"secret.{kind}")
    return roots


async def call(client: Client, tool: str, args: dict[str, Any] | None = None) -> Any:
    """`client.call_tool` with an `input`/`request` envelope's fields given flat (re-wrapped, as
    the agent and `kwrl world call` do)."""
    schema = next(t.inputSchema for t in await client.list_tools() if t.name == tool)
    return await client.call_tool(tool, rewrap(args or {}, envelope_key(schema)))


async def text(client: Client, tool: str, args: dict[str, Any]) -> str:
    result = await call(client, tool, args)
    assert not result.is_error
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def error(client: Client, tool: str, args: dict[str, Any]) -> str:
    """Call a tool that must fail; return its error message."""
    try:
        await call(client, tool, args)
    except ToolError as exc:
        return str(exc)
    raise AssertionError(f"{tool}({args}) did not fail")


def png_size(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as im:
        return im.size


BAD_PATHS = ("../x", "/etc/passwd", "../../outside/secret")
