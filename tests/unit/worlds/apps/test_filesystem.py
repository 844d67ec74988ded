"""The filesystem app reads the world's files and nothing outside its root."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest
from apps_testkit import ESCAPES, data, demo_world, error, text
from fastmcp import Client
from fastmcp.exceptions import ToolError
from hypothesis import given, settings
from hypothesis import strategies as st

from kwrl.worlds.apps import filesystem
from kwrl.worlds.layout import WorldRoots

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def roots(tmp_path: Path, office_fixtures: Path) -> WorldRoots:
    roots = demo_world(tmp_path)
    (roots.filesystem / "deck.pptx").write_bytes(
        (office_fixtures / "pptx" / "python-pptx__prs-notes.pptx").read_bytes()
    )
    (roots.filesystem / "reports" / "logo.png").write_bytes(PNG)
    return roots


@pytest.fixture
async def client(roots: WorldRoots):
    async with Client(filesystem.build(roots)) as c:
        yield c


async def test_list_files_shows_dirs_first_with_sizes(client: Client) -> None:
    out = await text(client, "list_files", {"path": "/"})
    lines = out.splitlines()
    assert lines[0] == "/: 4 entries"
    assert lines[1] == "[dir]  reports/"
    assert "[file] notes.txt (11 B)" in lines


async def test_read_text_file_reads_and_pages(client: Client) -> None:
    assert (
        await text(client, "read_text_file", {"path": "/reports/summary.md"})
        == "# Summary\nRevenue grew 12%.\n"
    )
    page = await text(
        client, "read_text_file", {"path": "reports/summary.md", "offset": 2, "limit": 7}
    )
    assert page.startswith("Summary")
    assert "call again with offset=9" in page


async def test_read_text_file_refuses_office_files_naming_the_right_tool(client: Client) -> None:
    msg = await error(client, "read_text_file", {"path": "/deck.pptx"})
    assert "binary" in msg and "powerpoint_read_completedeck" in msg


async def test_read_image_file_returns_the_pixels(client: Client) -> None:
    result = await client.call_tool("read_image_file", {"path": "/reports/logo.png"})
    block = result.content[0]
    assert block.type == "image"
    assert base64.b64decode(block.data) == PNG  # type: ignore[union-attr]
    assert "not an image" in await error(client, "read_image_file", {"path": "/notes.txt"})


async def test_search_files_by_glob_and_substring(client: Client) -> None:
    assert "/reports/summary.md" in await text(client, "search_files", {"pattern": "*.MD"})
    out = await text(client, "search_files", {"pattern": "summ"})
    assert out.splitlines() == ["1 matches", "/reports/summary.md"]
    assert "no files matching" in await text(client, "search_files", {"pattern": "*.xlsx"})


async def test_get_file_metadata_matches_stat(client: Client, roots: WorldRoots) -> None:
    meta = await data(client, "get_file_metadata", {"path": "/deck.pptx"})
    assert meta["size_bytes"] == (roots.filesystem / "deck.pptx").stat().st_size
    assert meta["type"] == "file" and meta["path"] == "/deck.pptx"
    assert meta["mime_type"].endswith("presentationml.presentation")


async def test_get_directory_tree_respects_depth(client: Client, roots: WorldRoots) -> None:
    (roots.filesystem / "reports" / "deep" / "deeper").mkdir(parents=True)
    (roots.filesystem / "reports" / "deep" / "deeper" / "x.txt").write_text("x")
    shallow = await text(client, "get_directory_tree", {"max_depth": 2})
    assert "deep/" in shallow and "deeper/" not in shallow
    full = await text(client, "get_directory_tree", {"max_depth": 5})
    assert "      x.txt" in full


async def test_missing_paths_and_wrong_types_are_tool_errors(
    client: Client, roots: WorldRoots
) -> None:
    with (roots.filesystem / "huge.log").open("wb") as f:
        f.truncate(filesystem.MAX_TEXT_BYTES + 1)  # sparse: nothing is written
    assert "code_execution_code_exec" in await error(
        client, "read_text_file", {"path": "/huge.log"}
    )
    assert "does not exist" in await error(client, "read_text_file", {"path": "/nope.txt"})
    assert "is a directory" in await error(client, "read_text_file", {"path": "/reports"})
    assert "not a directory" in await error(client, "list_files", {"path": "/notes.txt"})
    assert await error(client, "read_text_file", {"path": 42})
    assert await error(client, "get_directory_tree", {"max_depth": "deep"})


async def test_paths_outside_the_root_are_refused(client: Client) -> None:
    for path in [*ESCAPES, "/link_out.txt"]:
        for tool in ("read_text_file", "get_file_metadata", "list_files", "read_image_file"):
            assert "outside the allowed root" in await error(client, tool, {"path": path})


_PATH_CHARS = st.sampled_from(
    ["..", ".", "/", "outside", "secret.txt", "reports", "link_out.txt", "~", "%2e", "\\"]
)


@pytest.fixture(scope="module")
def tool_fns(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The tools' plain functions on one world, so each fuzz example is a direct call."""
    server = filesystem.build(demo_world(tmp_path_factory.mktemp("fuzz")))
    names = ("read_text_file", "get_file_metadata", "list_files", "get_directory_tree")
    return {n: asyncio.run(server.get_tool(n)).fn for n in names}  # type: ignore[union-attr]


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(_PATH_CHARS, min_size=1, max_size=8), sep=st.sampled_from(["/", "", "//"]))
def test_fuzzed_paths_never_read_outside_the_root(
    tool_fns: dict[str, Any], parts: list[str], sep: str
) -> None:
    path = sep.join(parts)
    for fn in tool_fns.values():
        try:
            out = fn(path=path)
        except ToolError as e:
            assert str(e)
            continue
        assert "TOP SECRET" not in str(out)
        assert "outside" not in str(out) or "outside" in path
