"""What every app shares: tool registration, path confinement, tool errors, paging.

Tools are registered with `@tool(mcp)` (not `@mcp.tool`, see its docstring: it keeps gateway
start-up cheap). Tools raise `fastmcp.exceptions.ToolError` with a message a model can act on; the
server keeps serving. Every path argument goes through `confine`, which refuses absolute paths that
leave the root, `..` escapes and symlinks resolving outside the root.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

__all__ = ["ToolError", "confine", "page_text", "rel", "tool"]


def tool[F: Callable[..., Any]](mcp: FastMCP) -> Callable[[F], F]:
    """`@tool(mcp)`: register the function as a tool of `mcp`, like `@mcp.tool`, only cheaper.

    The tool is the same (name, description = the docstring, schema); building it costs about a
    third less CPU, and griffe is never imported. fastmcp evaluates a tool's annotations about seven times while building it, and they
    are strings here (`from __future__ import annotations`), compiled and evaluated each time: they
    are resolved once, in place. It also parses the docstring with griffe (~0.3 s to import) for
    per-parameter docs, which the apps never write (they use `Field(description=...)`): the
    docstring is passed as the description instead, and cleared so that nothing parses it.
    """

    def register(fn: F) -> F:
        fn.__annotations__ = typing.get_type_hints(fn, include_extras=True)
        description = inspect.getdoc(fn)
        fn.__doc__ = None
        mcp.tool(fn, description=description)
        return fn

    return register


def confine(root: Path, path: str, *, must_exist: bool = False, kind: str = "path") -> Path:
    """Resolve `path` (relative to `root`, or absolute within the root's virtual `/`) inside `root`.

    "/reports/q3.xlsx" and "reports/q3.xlsx" both mean `<root>/reports/q3.xlsx`: inside the sandbox
    the root is mounted at `/filesystem`, so a leading "/filesystem/" is accepted and stripped too.
    """
    if not isinstance(path, str) or "\x00" in path:
        raise ToolError(f"invalid {kind}: {path!r}")
    root_resolved = root.resolve()
    p = path.strip()
    for prefix in (str(root_resolved), str(root), "/filesystem"):
        if p == prefix or p.startswith(prefix.rstrip("/") + "/"):
            p = p[len(prefix.rstrip("/")) :]
            break
    candidate = (root_resolved / p.lstrip("/")).resolve()
    if candidate != root_resolved and root_resolved not in candidate.parents:
        raise ToolError(f"{kind} {path!r} is outside the allowed root")
    if must_exist and not candidate.exists():
        raise ToolError(f"{kind} {path!r} does not exist")
    return candidate


def rel(root: Path, path: Path) -> str:
    """The model-facing path of `path`: '/' + its path relative to the root."""
    return "/" + path.resolve().relative_to(root.resolve()).as_posix()


def page_text(text: str, *, offset: int = 0, limit: int = 20_000) -> str:
    """Return a window of `text`; when cut, say how to read the next page."""
    if offset < 0:
        raise ToolError("offset must be >= 0")
    chunk = text[offset : offset + limit]
    end = offset + len(chunk)
    if end < len(text):
        chunk += f"\n\n[truncated: showing characters {offset}-{end} of {len(text)}; call again with offset={end}]"
    return chunk
