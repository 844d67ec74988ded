"""One MCP server per app. Each module `kwrl.worlds.apps.<name>` exports `build(roots) -> FastMCP`.

`APPS` maps the app (server) name to its module path; the gateway mounts each server so the
model sees tools as `<server>_<tool>` (DESIGN §4).
"""

from __future__ import annotations

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
