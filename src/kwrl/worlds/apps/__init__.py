"""One MCP server per app. Each module `kwrl.worlds.apps.<name>` exports `build(roots) -> FastMCP`.

`APPS` maps the app (server) name to its module path, derived from the one app table
(`kwrl.tasks.apps.APPS`); the gateway mounts each server so the model sees tools as
`<server>_<tool>` (DESIGN §4).

The apps import their document libraries (openpyxl, python-docx, python-pptx, the PDF libraries,
icalendar, Pillow) inside the tools, never at module level, so that a gateway starts without them
(~0.7 s). `LAZY_IMPORTS` lists them; `preload()` imports them all, for a process that forks
gateways (the sandbox's zygote), so that no forked gateway pays for them on its first call.
"""

from __future__ import annotations

import importlib

from kwrl.tasks.apps import APPS as APP_TABLE

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


def preload() -> None:
    """Import every library in `LAZY_IMPORTS` now (seconds, once per process)."""
    for module in LAZY_IMPORTS:
        importlib.import_module(module)
