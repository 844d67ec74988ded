"""One MCP server per app. Each module `kwrl.worlds.apps.<name>` exports `build(roots) -> FastMCP`.

`APPS` maps the app (server) name to its module path; the gateway mounts each server so the
model sees tools as `<server>_<tool>` (DESIGN §4).

The apps import their document libraries (openpyxl, python-docx, python-pptx, the PDF libraries,
icalendar, Pillow) inside the tools, never at module level, so that a gateway starts without them
(~0.7 s). `LAZY_IMPORTS` lists them; `preload()` imports them all, for a process that forks
gateways (the sandbox's zygote), so that no forked gateway pays for them on its first call.
"""

from __future__ import annotations

import importlib

APPS: dict[str, str] = {
    "filesystem": "kwrl.worlds.apps.filesystem",
    "code_execution": "kwrl.worlds.apps.code_execution",
    "word": "kwrl.worlds.apps.word",
    "excel": "kwrl.worlds.apps.excel",
    "powerpoint": "kwrl.worlds.apps.powerpoint",
    "pdfs": "kwrl.worlds.apps.pdfs",
    "mail": "kwrl.worlds.apps.mail",
    "calendar": "kwrl.worlds.apps.calendar",
    "chat": "kwrl.worlds.apps.chat",
}

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
