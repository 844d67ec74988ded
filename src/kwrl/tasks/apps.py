"""The world's apps, one table: the single source of truth for which apps a world has.

An app is one of Archipelago's MCP servers that kwrl ports (docs/extending.md, "A world app").
Each row says what the other layers need of it: the title a world's metadata lists
(`kwrl.synth.layout`), the upstream server it ports (which picks its tools' schemas,
`kwrl.worlds.apps.contract`), the class that serves it (`kwrl.worlds.apps.base.WorldApp`, which
the gateway builds, `kwrl.worlds.gateway`) and the state it keeps: the files under
`.apps_data/<name>/` (`kwrl.tasks.layout`), the one place a layer below the app learns of them.
Every other list of apps derives from `APPS`, and tests/unit/tasks/test_apps.py asserts that
every list agrees. It lives in `kwrl.tasks`, the lowest layer, so synth, worlds and grading all
read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class App:
    title: str
    """The app's name in a world's metadata (world.json, archipelago.json)."""
    upstream: str
    """Archipelago's MCP server it ports (archipelago_tools.json's `server`)."""
    entry: str
    """`module:Class` of the `kwrl.worlds.apps.base.WorldApp` that serves it."""
    state: str | None = None
    """What it keeps in `.apps_data/<name>/` (`kwrl.tasks.layout.WorldRoots.app_dir`), or None
    for an app with no state of its own (the office apps work on the filesystem)."""

    @property
    def module(self) -> str:
        """The module of `entry`."""
        return self.entry.partition(":")[0]


APPS: dict[str, App] = {
    "filesystem": App("Filesystem", "filesystem_server", "kwrl.worlds.apps.filesystem:FilesystemApp"),
    "code_execution": App(
        "Code Execution", "code_execution_server", "kwrl.worlds.apps.code_execution:CodeExecutionApp"
    ),
    "word": App("Word", "docs_server", "kwrl.worlds.apps.word:WordApp"),
    "excel": App("Excel", "sheets_server", "kwrl.worlds.apps.excel:ExcelApp"),
    "powerpoint": App("Powerpoint", "slides_server", "kwrl.worlds.apps.powerpoint:PowerpointApp"),
    "pdfs": App("PDFs", "pdf_server", "kwrl.worlds.apps.pdfs:PdfsApp"),
    "mail": App("Mail", "mail_server", "kwrl.worlds.apps.mail:MailApp",
                "*.mbox, one mailbox per file (inbox.mbox, sent.mbox)"),
    "calendar": App("Calendar", "calendar_server", "kwrl.worlds.apps.calendar:CalendarApp",
                    "*.ics, events as iCalendar VEVENTs"),
    "chat": App("Chat", "chat_server", "kwrl.worlds.apps.chat:ChatApp",
                "users.json, channels.json, messages/<channel id>.json"),
}  # fmt: skip
"""Apps by server name (the gateway's `<server>_` tool prefix), in mount order.

To add one: a row here, its `WorldApp` module under `kwrl/worlds/apps/`, its tools' schemas in
`kwrl/worlds/apps/archipelago_tools.json` and its tests (docs/extending.md, "A world app").
Tests: tests/unit/tasks/test_apps.py (every app list agrees with this table)."""
