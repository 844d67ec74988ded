"""The pdfs app reads, searches, renders and creates real PDFs."""

from __future__ import annotations

import base64
from pathlib import Path

import pypdf
import pytest
from fastmcp import Client
from office_testkit import BAD_PATHS, call, error, make_world, png_size, text
from reportlab.lib.pagesizes import LETTER
from reportlab.pdfgen import canvas

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps import build

CRAZY = "pypdf__crazyones.pdf"
OUTLINE = "pypdf__pdflatex-outline.pdf"
TABLE_PDF = "pdfplumber__senate-expenditures.pdf"


@pytest.fixture
def roots(tmp_path: Path, office_fixtures: Path) -> WorldRoots:
    r = make_world(tmp_path, office_fixtures, "pdf")
    c = canvas.Canvas(str(r.filesystem / "with_image.pdf"), pagesize=LETTER)
    c.drawString(72, 720, "Page with a logo")
    c.drawImage(str(r.filesystem / "logo.png"), 72, 500, width=200, height=100)
    c.save()
    return r


@pytest.fixture
async def client(roots: WorldRoots):
    async with Client(build("pdfs", roots)) as c:
        yield c


async def test_tools_are_upstreams_list(client: Client) -> None:
    names = {t.name for t in await client.list_tools()}
    assert names == {
        "read_pdf_pages",
        "search_pdf",
        "read_page_as_image",
        "read_image",
        "create_pdf",
    }


async def test_read_pages_matches_the_known_text(client: Client, office_fixtures: Path) -> None:
    out = await text(client, "read_pdf_pages", {"file_path": f"/{CRAZY}"})
    expected = (office_fixtures / "pdf" / "pypdf__crazyones.txt").read_text()
    words = expected.split()
    assert "1 page(s)" in out and "--- page 1 ---" in out
    assert " ".join(out.split()).count(" ".join(words[:12])) == 1
    assert out == await text(
        client, "read_pdf_pages", {"file_path": f"/filesystem/{CRAZY}"}
    )  # sandbox-style path
    out = await text(client, "read_pdf_pages", {"file_path": OUTLINE, "pages": [2, 4]})
    assert "--- page 2 ---" in out and "--- page 4 ---" in out and "--- page 1 ---" not in out
    assert "out of range" in await error(
        client, "read_pdf_pages", {"file_path": OUTLINE, "pages": [9]}
    )


async def test_search_reports_pages_and_context(client: Client) -> None:
    out = await text(client, "search_pdf", {"file_path": OUTLINE, "query": "baz"})
    assert "match(es) for 'baz'" in out and "page 1:" in out and "[Baz]" in out
    assert "No match" in await text(
        client, "search_pdf", {"file_path": OUTLINE, "query": "baz", "case_sensitive": True}
    )
    out = await text(
        client, "search_pdf", {"file_path": CRAZY, "query": "crazy", "whole_word": True}
    )
    assert "[crazy]" in out.lower() and "[crazyones]" not in out.lower()


async def test_render_page_and_read_embedded_image(client: Client) -> None:
    result = await call(client, "read_page_as_image", {"file_path": CRAZY, "page_number": 1})
    img = result.content[0]
    assert img.type == "image" and img.mime_type == "image/jpeg"
    assert png_size(base64.b64decode(img.data)) == (1224, 1584)  # 144 DPI, as upstream
    assert "page_number: Field required" in await error(
        client, "read_page_as_image", {"file_path": CRAZY}
    )
    out = await text(client, "read_pdf_pages", {"file_path": "with_image.pdf"})
    assert "images: page1_img0" in out and "Page with a logo" in out
    result = await call(
        client, "read_image", {"file_path": "with_image.pdf", "annotation": "page1_img0"}
    )
    assert png_size(base64.b64decode(result.content[0].data)) == (40, 20)
    assert "not found" in await error(
        client, "read_image", {"file_path": "with_image.pdf", "annotation": "page1_img4"}
    )


async def test_create_pdf_from_markdown_and_blocks(client: Client, roots: WorldRoots) -> None:
    content = [
        {"type": "heading", "text": "Findings", "level": 1},
        {"type": "paragraph", "text": "Revenue grew **12%** <fast> & steady."},
        {"type": "paragraph", "text": "Bold line", "bold": True},
        {"type": "spacer", "height": 24},
        {"type": "bullet_list", "items": ["first", "second"]},
        {"type": "table", "rows": [["k", "v"], ["a", "1"]], "header": True},
    ]
    out = await text(
        client,
        "create_pdf",
        {
            "directory": "/out",
            "file_name": "f.pdf",
            "content": content,
            "metadata": {"title": "Findings", "author": "Ana"},
        },
    )
    assert out.startswith("PDF f.pdf created at /out/f.pdf")
    reader = pypdf.PdfReader(roots.filesystem / "out/f.pdf")
    body = reader.pages[0].extract_text()
    assert "Findings" in body and "Revenue grew 12% <fast> & steady." in body and "second" in body
    assert (
        reader.metadata is not None
        and reader.metadata.title == "Findings"
        and reader.metadata.author == "Ana"
    )
    blocks = [
        {"type": "paragraph", "text": "one"},
        {"type": "page_break"},
        {"type": "heading", "text": "two", "level": 2},
    ]
    out = await text(
        client,
        "create_pdf",
        {"directory": "/out", "file_name": "g.pdf", "content": blocks, "page_size": "a4"},
    )
    assert "2 page(s)" in out
    assert "two" in await text(client, "read_pdf_pages", {"file_path": "/out/g.pdf", "pages": [2]})
    assert "poem" in await error(
        client,
        "create_pdf",
        {"directory": "/", "file_name": "h.pdf", "content": [{"type": "poem", "text": "x"}]},
    )
    assert "input.content: Input should be a valid list" in await error(
        client, "create_pdf", {"directory": "/", "file_name": "h.pdf", "content": "# markdown"}
    )
    assert "page_size must be 'letter' or 'a4'" in await error(
        client,
        "create_pdf",
        {"directory": "/", "file_name": "h.pdf", "content": blocks, "page_size": "legal"},
    )


@pytest.mark.parametrize("bad", [*BAD_PATHS, "link.pdf"])
async def test_bad_paths_refused(client: Client, bad: str) -> None:
    msg = await error(client, "read_pdf_pages", {"file_path": bad})
    assert bad in msg and ("outside the allowed root" in msg or "must end with .pdf" in msg)


async def test_missing_wrong_type_corrupt_and_server_keeps_serving(client: Client) -> None:
    assert "file not found" in await error(
        client, "search_pdf", {"file_path": "none.pdf", "query": "x"}
    )
    assert "must end with .pdf" in await error(client, "read_pdf_pages", {"file_path": "notes.txt"})
    assert "corrupted" in await error(client, "read_pdf_pages", {"file_path": "corrupt.pdf"})
    assert "corrupted" in await error(
        client, "read_page_as_image", {"file_path": "corrupt.pdf", "page_number": 1}
    )
    assert "outside the allowed root" in await error(
        client,
        "create_pdf",
        {
            "directory": "../..",
            "file_name": "x.pdf",
            "content": [{"type": "paragraph", "text": "x"}],
        },
    )
    assert "--- page 1 ---" in await text(client, "read_pdf_pages", {"file_path": CRAZY})
