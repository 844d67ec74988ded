"""The world's apps, one table: the single source of truth for which apps a world has.

An app is one of Archipelago's MCP servers that kwrl ports (docs/extending.md, "A world app").
Each row says what the other layers need of it: the title a world's metadata lists
(`kwrl.synth.layout`), the upstream server it ports (`kwrl.worlds.apps.contract.UPSTREAM_SERVER`,
which picks its tools' schemas) and the module that builds its server (`kwrl.worlds.apps.APPS`,
which the gateway mounts). Those derive from `APPS`; `kwrl.tasks.models.AppName` (a Literal, so
pyright can check app names) names the same apps, and tests/unit/tasks/test_apps.py asserts that
every list agrees. It lives in `kwrl.tasks`, the lowest layer, so synth and worlds both read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kwrl.tasks.models import AppName


@dataclass(frozen=True)
class App:
    title: str
    """The app's name in a world's metadata (world.json, archipelago.json)."""
    upstream: str
    """Archipelago's MCP server it ports (archipelago_tools.json's `server`)."""
    module: str
    """The module whose `build(roots) -> FastMCP` serves it."""


APPS: dict[AppName, App] = {
    "filesystem": App("Filesystem", "filesystem_server", "kwrl.worlds.apps.filesystem"),
    "code_execution": App(
        "Code Execution", "code_execution_server", "kwrl.worlds.apps.code_execution"
    ),
    "word": App("Word", "docs_server", "kwrl.worlds.apps.word"),
    "excel": App("Excel", "sheets_server", "kwrl.worlds.apps.excel"),
    "powerpoint": App("Powerpoint", "slides_server", "kwrl.worlds.apps.powerpoint"),
    "pdfs": App("PDFs", "pdf_server", "kwrl.worlds.apps.pdfs"),
    "mail": App("Mail", "mail_server", "kwrl.worlds.apps.mail"),
    "calendar": App("Calendar", "calendar_server", "kwrl.worlds.apps.calendar"),
    "chat": App("Chat", "chat_server", "kwrl.worlds.apps.chat"),
}
"""Apps by server name (the gateway's `<server>_` tool prefix, DESIGN §4), in mount order.

To add one: a row here and its name in `kwrl.tasks.models.AppName`; its server module
`kwrl/worlds/apps/<name>.py` and its tools in `kwrl/worlds/apps/archipelago_tools.json`; its seed
data in `kwrl.synth.render.apps_files` (docs/extending.md, "A world app", lists the rest: the
contract fixture, grading's readers, tests). Tests: tests/unit/tasks/test_apps.py (every app list
agrees with this table)."""
