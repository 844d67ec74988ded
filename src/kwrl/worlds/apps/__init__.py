"""One MCP server per app: each row of the app table (`kwrl.tasks.apps.APPS`) names a
`WorldApp` class (`kwrl.worlds.apps.base`) in a module here; `build(name, roots)` serves it.

`APPS` maps the app (server) name to its module, derived from the table; the gateway adds each
app's tools to one server as `<server>_<tool>`.

The apps import their document libraries (openpyxl, python-docx, python-pptx, the PDF libraries,
icalendar, Pillow) inside the tools, never at module level, so that a gateway starts without them
(~0.7 s). `LAZY_IMPORTS` lists them; `preload()` imports them all, for a process that forks
gateways (the sandbox's zygote), so that no forked gateway pays for them on its first call.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from kwrl.tasks.apps import APPS as APP_TABLE

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from kwrl.tasks.layout import WorldRoots

APPS: dict[str, str] = {name: app.module for name, app in APP_TABLE.items()}
"""App (server) name -> its module, from the one app table (`kwrl.tasks.apps.APPS`: add an app
there)."""

LAZY_IMPORTS: tuple[str, ...] = (
    "openpyxl",
    "docx",
    "pptx",
    "pptx.chart.data",
    "pypdf",
    "pypdfium2",
    "reportlab.platypus",
    "icalendar",
    "PIL.Image",
    "PIL.ImageEnhance",
    "PIL.ImageOps",
)


def build(name: str, roots: WorldRoots) -> FastMCP:
    """App `name` of the table, built on `roots` and served as its own MCP server (its tools under
    upstream's names and schemas). ModuleNotFoundError when the row's module does not exist."""
    from kwrl.worlds.apps.contract import serve

    module, _, cls = APP_TABLE[name].entry.partition(":")
    return serve(name, getattr(importlib.import_module(module), cls)(roots))


def preload() -> None:
    """Import every library in `LAZY_IMPORTS` now (seconds, once per process)."""
    for module in LAZY_IMPORTS:
        importlib.import_module(module)
