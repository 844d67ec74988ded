"""What every app shares: the app object its tools are methods of, path confinement, tool errors.

An app is a `WorldApp` subclass: built on one world's roots (`self.roots`, the filesystem root
`self.root`; an app with state of its own keeps a store over `roots.app_dir(<app>)`), each of
upstream's tools one method marked `@tool`, named as upstream names it and taking upstream's
arguments as keywords (an `input`/`request` envelope's fields, unwrapped). A tool returns what it
answers (text, a JSON-able dict, an image) and raises `fastmcp.exceptions.ToolError` with a
message a model can act on; the server keeps serving. So a tool is unit-testable as a plain call,
`MailApp(roots).read_mail(mail_id="<...>")`, and served by `kwrl.worlds.apps.contract.serve`,
which validates each call against upstream's schema first. Apps are built once per gateway (the
sandbox's zygote builds them once and forks), so they read their state per call.

Every path argument goes through `confine` (`kwrl.worlds.paths`, re-exported here with `rel`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastmcp.exceptions import ToolError

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.paths import confine, rel

__all__ = ["ToolError", "WorldApp", "confine", "rel", "tool"]

_TOOL_MARK = "__kwrl_tool__"


def tool[F: Callable[..., Any]](fn: F) -> F:
    """Mark a method of a `WorldApp` as upstream's tool of the method's name."""
    setattr(fn, _TOOL_MARK, True)
    return fn


class WorldApp:
    """One app of a world (module docstring): its `@tool` methods are the tools it serves."""

    def __init__(self, roots: WorldRoots) -> None:
        self.roots = roots
        self.root = roots.filesystem
        """The filesystem root: every path argument is confined to it (`confine`)."""

    def tools(self) -> dict[str, Callable[..., Any]]:
        """Its `@tool` methods, bound, by name, in the order its classes define them (the order
        the gateway lists them in)."""
        out: dict[str, Callable[..., Any]] = {}
        for cls in reversed(type(self).__mro__):
            for name, member in vars(cls).items():
                if getattr(member, _TOOL_MARK, False):
                    out[name] = getattr(self, name)
        return out
