"""The filesystem app reads the world's files and nothing outside its root."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest
from apps_testkit import ESCAPES, call, demo_world, error, text
from fastmcp import Client
from fastmcp.exceptions import ToolError
from hypothesis import given, settings
from hypothesis import strategies as st

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps import build, filesystem

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
    async with Client(build("filesystem", roots)) as c:
        yield c


async def test_list_files_lines_name_type_and_size(client: Client) -> None:
    out = await text(client, "list_files", {"path": "/"})
    assert "'reports' (folder)" in out.splitlines()
    assert "'notes.txt' (text/plain file) 11 bytes" in out.splitlines()
    assert "link_out.txt" not in out  # a link leaving the root is neither a file nor a folder here
    assert await text(client, "list_files", {"path": "/nope"}) == "[not found: /nope]\n"
    assert await text(client, "list_files", {}) == out  # path defaults to '/'


async def test_read_text_file_reads_whole_files_in_the_asked_encoding(
    client: Client, roots: WorldRoots
) -> None:
    assert (
        await text(client, "read_text_file", {"file_path": "/reports/summary.md"})
        == "# Summary\nRevenue grew 12%.\n"
    )
    (roots.filesystem / "latin.txt").write_bytes("café".encode("latin-1"))
    assert (
        await text(client, "read_text_file", {"file_path": "/latin.txt", "encoding": "latin-1"})
        == "café"
    )
    assert "Failed to decode" in await error(client, "read_text_file", {"file_path": "/latin.txt"})
    assert "Unknown encoding" in await error(
        client, "read_text_file", {"file_path": "/latin.txt", "encoding": "klingon"}
    )
    # max_size is accepted (upstream: deprecated, ignored)
    assert (
        await text(client, "read_text_file", {"file_path": "/notes.txt", "max_size": 3})
        == "alpha\nbeta\n"
    )


async def test_read_text_file_refuses_office_files_naming_the_right_tool(client: Client) -> None:
    msg = await error(client, "read_text_file", {"file_path": "/deck.pptx"})
    assert "binary" in msg and "powerpoint_read_completedeck" in msg


async def test_read_image_file_returns_the_pixels(client: Client) -> None:
    result = await call(client, "read_image_file", {"file_path": "/reports/logo.png"})
    block = result.content[0]
    assert block.type == "image"
    assert base64.b64decode(block.data) == PNG  # type: ignore[union-attr]
    assert "Unsupported image format" in await error(
        client, "read_image_file", {"file_path": "/notes.txt"}
    )


async def test_search_files_by_glob_recursive_and_limited(
    client: Client, roots: WorldRoots
) -> None:
    out = await text(client, "search_files", {"pattern": "*.md"})
    assert out.splitlines() == ["Found 1 file(s) matching '*.md':", "/reports/summary.md"]
    assert "No files matching" in await text(
        client, "search_files", {"pattern": "*.md", "recursive": False}
    )
    assert (
        await text(client, "search_files", {"pattern": "*.xlsx"})
        == "No files matching '*.xlsx' found in /"
    )
    for i in range(3):
        (roots.filesystem / f"n{i}.txt").write_text("x")
    limited = await text(client, "search_files", {"pattern": "*.txt", "max_results": 2})
    assert limited.startswith("Found 2 file(s)") and limited.endswith("(Results limited to 2)")
    assert "Found 4 file(s)" in await text(
        client, "search_files", {"pattern": "*.txt", "max_results": 0}
    )


async def test_get_file_metadata_matches_stat(client: Client, roots: WorldRoots) -> None:
    meta = await text(client, "get_file_metadata", {"file_path": "/deck.pptx"})
    size = (roots.filesystem / "deck.pptx").stat().st_size
    lines = meta.splitlines()
    assert lines[:2] == ["Path: /deck.pptx", "Type: file"]
    assert lines[2].startswith("MIME type: ") and lines[2].endswith("presentationml.presentation")
    assert f"Size: {size} bytes" in meta
    assert await text(client, "get_file_metadata", {"file_path": "/x"}) == "[not found: /x]"


async def test_get_directory_tree_respects_depth_files_and_sizes(
    client: Client, roots: WorldRoots
) -> None:
    (roots.filesystem / "reports" / "deep" / "deeper").mkdir(parents=True)
    (roots.filesystem / "reports" / "deep" / "deeper" / "x.txt").write_text("x")
    shallow = await text(client, "get_directory_tree", {"max_depth": 2})
    assert "deep/" in shallow and "deeper/" not in shallow
    full = await text(client, "get_directory_tree", {"max_depth": 5, "show_size": True})
    assert "└── x.txt (1 bytes)" in full
    dirs = await text(client, "get_directory_tree", {"include_files": False})
    assert "notes.txt" not in dirs and "reports/" in dirs


async def test_bad_paths_and_wrong_types(client: Client, roots: WorldRoots) -> None:
    with (roots.filesystem / "huge.log").open("wb") as f:
        f.truncate(filesystem.MAX_TEXT_BYTES + 1)  # sparse: nothing is written
    assert "code_execution_code_exec" in await error(
        client, "read_text_file", {"file_path": "/huge.log"}
    )
    assert "File not found" in await error(client, "read_text_file", {"file_path": "/nope.txt"})
    assert "Not a file" in await error(client, "read_text_file", {"file_path": "/reports"})
    assert (
        await text(client, "list_files", {"path": "/notes.txt"})
        == "[not a directory: /notes.txt]\n"
    )
    msg = await error(client, "read_text_file", {"file_path": 42})
    assert msg.startswith("Error calling tool 'read_text_file': Validation error: file_path")
    assert await error(client, "get_directory_tree", {"max_depth": "deep"})
    assert "path: Extra inputs are not permitted" in await error(
        client, "read_text_file", {"path": "/notes.txt"}
    )


async def test_paths_outside_the_root_are_refused(client: Client) -> None:
    for path in [*ESCAPES, "/link_out.txt"]:
        assert await text(client, "list_files", {"path": path}) in (
            f"[access denied: {path}]\n",
            f"[not a directory: {path}]\n",
        )
        assert (
            await text(client, "get_file_metadata", {"file_path": path})
            == f"[access denied: {path}]"
        )
        for tool in ("read_text_file", "read_image_file"):
            assert "Access denied" in await error(client, tool, {"file_path": path})


_PATH_CHARS = st.sampled_from(
    ["..", ".", "/", "outside", "secret.txt", "reports", "link_out.txt", "~", "%2e", "\\"]
)


@pytest.fixture(scope="module")
def tool_fns(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The tools' plain functions on one world, so each fuzz example is a direct call."""
    server = build("filesystem", demo_world(tmp_path_factory.mktemp("fuzz")))
    names = ("read_text_file", "get_file_metadata", "list_files", "get_directory_tree")
    return {n: asyncio.run(server.get_tool(n))._fn for n in names}  # type: ignore[union-attr]


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(_PATH_CHARS, min_size=1, max_size=8), sep=st.sampled_from(["/", "", "//"]))
def test_fuzzed_paths_never_read_outside_the_root(
    tool_fns: dict[str, Any], parts: list[str], sep: str
) -> None:
    path = sep.join(parts)
    args = {
        "read_text_file": {"file_path": path, "encoding": "utf-8", "max_size": 0},
        "get_file_metadata": {"file_path": path},
        "list_files": {"path": path},
        "get_directory_tree": {
            "path": path,
            "max_depth": 3,
            "include_files": True,
            "show_size": False,
        },
    }
    for name, fn in tool_fns.items():
        try:
            out = fn(**args[name])
        except ToolError as e:
            assert str(e)
            continue
        assert "TOP SECRET" not in str(out)
        assert "outside" not in str(out) or "outside" in path
