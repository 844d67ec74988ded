"""A toy app added through docs/extending.md's "A world app" recipe, and nothing else: its module
(here a file on sys.path), its row in the app table, its tools' schemas (the entries
archipelago_tools.json would hold, added to the loaded contract) and this test. The real gateway
server then lists its tool and serves calls through a real MCP client, the world layout makes its
state dir, and the tool is a plain method too."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from kwrl.tasks.apps import App
from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps.contract import specs
from kwrl.worlds.gateway import build_server

MODULE = '''
    from kwrl.worlds.apps.base import ToolError, WorldApp, tool


    class NotesApp(WorldApp):
        """One note per file under .apps_data/notes/."""

        def __init__(self, roots):
            super().__init__(roots)
            self.notes = roots.app_dir("notes")

        @tool
        def add_note(self, title: str, text: str, pinned: bool) -> dict[str, object]:
            if not title.strip():
                raise ToolError("title must not be empty")
            (self.notes / f"{title}.txt").write_text(("[pinned] " if pinned else "") + text)
            return {"saved": title, "notes": len(list(self.notes.glob("*.txt")))}
'''
SCHEMA = {
    "type": "object",
    "properties": {
        "request": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "The note's title."},
                "text": {"type": "string", "description": "What the note says."},
                "pinned": {"type": "boolean", "default": False},
            },
            "required": ["title", "text"],
        }
    },
    "required": ["request"],
}
"""Both the published `inputSchema` and the `validationSchema` (it has nothing to flatten)."""


@pytest.fixture
def notes_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, app_table: dict[str, App]
) -> Iterator[WorldRoots]:
    """The recipe's steps for a toy app `notes`, undone after the test; a world with it."""
    pkg = tmp_path / "toy"
    pkg.mkdir()
    (pkg / "toy_notes.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(pkg))
    app_table["notes"] = App("Notes", "notes_server", "toy_notes:NotesApp", "<title>.txt")
    monkeypatch.setitem(
        specs(),
        ("notes_server", "add_note"),
        {"server": "notes_server", "name": "add_note", "description": "Save a note.",
         "inputSchema": SCHEMA, "validationSchema": SCHEMA},
    )  # fmt: skip
    roots = WorldRoots.of_dir(tmp_path / "world")
    roots.ensure()
    yield roots
    sys.modules.pop("toy_notes", None)


async def test_a_toy_app_added_by_the_recipe_is_served_by_the_gateway(
    notes_app: WorldRoots,
) -> None:
    roots = notes_app
    assert roots.app_dir("notes").is_dir()  # the layout's state dirs come from the table
    server, mounted, missing = build_server(roots)
    assert mounted[-1] == "notes" and missing == []
    async with Client(server) as client:
        tools = {t.name: t for t in await client.list_tools()}
        assert tools["notes_add_note"].inputSchema == SCHEMA
        assert tools["notes_add_note"].description == "Save a note."
        ok = await client.call_tool("notes_add_note", {"request": {"title": "q3", "text": "EV up"}})
        bad = await client.call_tool(
            "notes_add_note", {"request": {"text": "no title"}}, raise_on_error=False
        )
        refused = await client.call_tool(
            "notes_add_note", {"request": {"title": " ", "text": "x"}}, raise_on_error=False
        )
    assert json.loads(_text(ok)) == {"saved": "q3", "notes": 1}
    assert (roots.app_dir("notes") / "q3.txt").read_text() == "EV up"  # the schema's default
    assert bad.is_error and _text(bad) == (
        "Error calling tool 'notes_add_note': Validation error: request.title: Field required"
    )
    assert refused.is_error and _text(refused) == "title must not be empty"


def test_a_toy_apps_tool_is_a_plain_method(notes_app: WorldRoots) -> None:
    import toy_notes  # type: ignore[import-not-found]  # written by the fixture

    app = toy_notes.NotesApp(notes_app)
    assert list(app.tools()) == ["add_note"]
    assert app.add_note(title="a", text="b", pinned=True) == {"saved": "a", "notes": 1}
    assert (notes_app.app_dir("notes") / "a.txt").read_text() == "[pinned] b"


def _text(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)
