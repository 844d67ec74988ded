"""Shared pieces of the non-office app tests: a demo world, call helpers returning text or JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.exceptions import ToolError

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.client import envelope_key, rewrap
from kwrl.worlds.demo import write_demo_apps_data

# Path arguments that must never reach outside the root.
ESCAPES = [
    "../outside/secret.txt",
    "/../outside/secret.txt",
    "a/../../outside",
    "/filesystem/../../outside",
]


def demo_world(tmp_path: Path) -> WorldRoots:
    """A world with demo mail/calendar/chat, a few files, and a secret file beside (outside) it."""
    roots = WorldRoots.of_dir(tmp_path / "world")
    write_demo_apps_data(roots)
    (roots.filesystem / "reports").mkdir()
    (roots.filesystem / "reports" / "summary.md").write_text("# Summary\nRevenue grew 12%.\n")
    (roots.filesystem / "notes.txt").write_text("alpha\nbeta\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET")
    (roots.filesystem / "link_out.txt").symlink_to(outside / "secret.txt")
    return roots


async def call(client: Client, tool: str, args: dict[str, Any] | None = None) -> Any:
    """`client.call_tool` with an `input`/`request` envelope's fields given flat (re-wrapped, as
    the agent and `kwrl world call` do)."""
    schema = next(t.inputSchema for t in await client.list_tools() if t.name == tool)
    return await client.call_tool(tool, rewrap(args or {}, envelope_key(schema)))


async def text(client: Client, tool: str, args: dict[str, Any] | None = None) -> str:
    result = await call(client, tool, args)
    assert not result.is_error
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def data(client: Client, tool: str, args: dict[str, Any] | None = None) -> Any:
    return json.loads(await text(client, tool, args))


async def error(client: Client, tool: str, args: dict[str, Any]) -> str:
    """Call a tool that must fail; return its error message."""
    try:
        await call(client, tool, args)
    except ToolError as exc:
        return str(exc)
    raise AssertionError(f"{tool}({args}) did not fail")
