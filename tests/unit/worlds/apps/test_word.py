"""The word app edits real .docx files: every tool, read back with python-docx."""

from __future__ import annotations

import base64
from pathlib import Path

import docx
import pytest
from docx.enum.section import WD_ORIENT
from fastmcp import Client
from office_testkit import BAD_PATHS, call, error, make_world, png_size, text

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps import build

TABLES = "python-docx__blk-paras-and-tables.docx"
COMMENTS = "python-docx__comments-rich-para.docx"
HDR = "python-docx__hdr-header-footer.docx"


@pytest.fixture
def roots(tmp_path: Path, office_fixtures: Path) -> WorldRoots:
    return make_world(tmp_path, office_fixtures, "docx")


@pytest.fixture
async def client(roots: WorldRoots):
    async with Client(build("word", roots)) as c:
        yield c


def fs(roots: WorldRoots, name: str) -> docx.document.Document:
    return docx.Document(str(roots.filesystem / name))


async def test_tools_are_upstreams_list(client: Client) -> None:
    tools = {t.name: t for t in await client.list_tools()}
    assert set(tools) == {
        "create_document", "delete_document", "read_document_content", "get_document_overview",
        "add_content_text", "edit_content_text", "delete_content_text", "apply_formatting", "comments",
        "header_footer", "page_margins", "page_orientation", "add_image", "modify_image", "read_image",
    }  # fmt: skip
    assert set(tools["create_document"].input_schema["properties"]) == {"input"}
    assert set(tools["delete_document"].input_schema["properties"]) == {"file_path"}


async def test_read_lists_paragraphs_and_tables_with_identifiers(
    client: Client, roots: WorldRoots
) -> None:
    out = await text(client, "read_document_content", {"file_path": f"/{TABLES}"})
    doc = fs(roots, TABLES)
    for i, p in enumerate(doc.paragraphs):
        if p.text:
            assert f"[body.p.{i}]" in out and p.text in out
    assert "[body.tbl.0] table" in out
    assert doc.tables[0].cell(0, 0).text in out


async def test_edit_is_visible_in_the_next_read(client: Client, roots: WorldRoots) -> None:
    (roots.filesystem / TABLES).chmod(0o640)
    await text(
        client,
        "edit_content_text",
        {"file_path": TABLES, "identifier": "body.p.0", "new_text": "Brand new opening"},
    )
    assert fs(roots, TABLES).paragraphs[0].text == "Brand new opening"
    assert (
        roots.filesystem / TABLES
    ).stat().st_mode & 0o777 == 0o640  # the atomic save keeps the mode
    out = await text(client, "read_document_content", {"file_path": TABLES})
    assert "[body.p.0] Brand new opening" in out
    await text(
        client,
        "edit_content_text",
        {"file_path": TABLES, "identifier": "body.tbl.0.r.0.c.1", "new_text": "cell!"},
    )
    assert fs(roots, TABLES).tables[0].cell(0, 1).text == "cell!"
    assert "old_text: Extra inputs are not permitted" in await error(
        client,
        "edit_content_text",
        {"file_path": TABLES, "identifier": "body.p.0", "old_text": "new", "new_text": "NEW"},
    )


async def test_add_and_delete_content(client: Client, roots: WorldRoots) -> None:
    n, n_tables = len(fs(roots, TABLES).paragraphs), len(fs(roots, TABLES).tables)
    first = fs(roots, TABLES).paragraphs[0].text
    for position, piece in (("before", "<< "), ("after", " >>"), ("start", "[ "), ("end", " ]")):
        await text(
            client,
            "add_content_text",
            {"file_path": TABLES, "identifier": "body.p.0", "text": piece, "position": position},
        )
    # upstream: before/start prepend to the element's text, after/end append to it
    assert fs(roots, TABLES).paragraphs[0].text == f"[ << {first} >> ]"
    assert "Position must be one of" in await error(
        client,
        "add_content_text",
        {"file_path": TABLES, "identifier": "body.p.0", "text": "x", "position": "below"},
    )
    await text(
        client,
        "add_content_text",
        {"file_path": TABLES, "identifier": "body", "text": "The end\nReally"},
    )
    doc = fs(roots, TABLES)
    assert [p.text for p in doc.paragraphs[-2:]] == ["The end", "Really"] and len(
        doc.paragraphs
    ) == n + 2
    await text(
        client,
        "delete_content_text",
        {"file_path": TABLES, "identifier": f"body.p.{n + 1}", "scope": "element"},
    )
    assert len(fs(roots, TABLES).paragraphs) == n + 1
    await text(client, "delete_content_text", {"file_path": TABLES, "identifier": "body.p.1"})
    assert fs(roots, TABLES).paragraphs[1].text == ""
    await text(
        client,
        "delete_content_text",
        {"file_path": TABLES, "identifier": "body.tbl.0", "scope": "element"},
    )
    assert len(fs(roots, TABLES).tables) == n_tables - 1


async def test_apply_formatting_sets_run_properties(client: Client, roots: WorldRoots) -> None:
    await text(
        client,
        "apply_formatting",
        {
            "file_path": TABLES,
            "identifier": "body.p.0",
            "bold": True,
            "font_size": 15,
            "font_color": "#1F4E79",
            "strikethrough": True,
        },
    )
    p = fs(roots, TABLES).paragraphs[0]
    assert p.runs and all(r.bold and r.font.strike for r in p.runs)
    assert p.runs[0].font.size.pt == 15 and str(p.runs[0].font.color.rgb) == "1F4E79"


async def test_comments_read_add_delete(client: Client, roots: WorldRoots) -> None:
    out = await text(client, "comments", {"file_path": COMMENTS, "action": "read"})
    assert "Steve Canny" in out and "hyperlink" in out
    before = len(list(fs(roots, COMMENTS).comments))
    out = await text(
        client,
        "comments",
        {
            "file_path": COMMENTS,
            "action": "add",
            "identifier": "body.p.1",
            "text": "Check this",
            "author": "Ann",
        },
    )
    comments = list(fs(roots, COMMENTS).comments)
    assert len(comments) == before + 1
    new = next(c for c in comments if c.text == "Check this")
    assert new.author == "Ann"
    await text(
        client,
        "comments",
        {"file_path": COMMENTS, "action": "delete", "comment_id": new.comment_id},
    )
    assert "Check this" not in [c.text for c in fs(roots, COMMENTS).comments]
    assert "not found" in await error(
        client, "comments", {"file_path": COMMENTS, "action": "delete", "comment_id": 999}
    )


async def test_header_footer_margins_orientation(client: Client, roots: WorldRoots) -> None:
    out = await text(
        client, "header_footer", {"file_path": HDR, "action": "read", "area": "header"}
    )
    assert "header of section 0" in out
    await text(
        client,
        "header_footer",
        {
            "file_path": HDR,
            "action": "set",
            "area": "footer",
            "content": [
                {"type": "paragraph", "text": "Confidential"},
                {"type": "paragraph", "text": "Page"},
            ],
        },
    )
    assert [p.text for p in fs(roots, HDR).sections[0].footer.paragraphs] == [
        "Confidential",
        "Page",
    ]
    await text(
        client,
        "edit_content_text",
        {"file_path": HDR, "identifier": "footer.s.0.p.1", "new_text": "Page 1"},
    )
    assert "[footer.s.0.p.1] Page 1" in await text(
        client, "header_footer", {"file_path": HDR, "action": "read", "area": "footer"}
    )
    assert "needs content" in await error(
        client, "header_footer", {"file_path": HDR, "action": "set", "area": "footer"}
    )
    await text(client, "header_footer", {"file_path": HDR, "action": "clear", "area": "footer"})
    assert fs(roots, HDR).sections[0].footer.paragraphs[0].text == ""
    await text(
        client, "page_margins", {"file_path": HDR, "action": "set", "top": 0.5, "left": 1.25}
    )
    sec = fs(roots, HDR).sections[0]
    assert abs(sec.top_margin.inches - 0.5) < 1e-3 and abs(sec.left_margin.inches - 1.25) < 1e-3
    assert "top 0.50 in" in await text(client, "page_margins", {"file_path": HDR, "action": "read"})
    await text(
        client, "page_orientation", {"file_path": HDR, "action": "set", "orientation": "landscape"}
    )
    sec = fs(roots, HDR).sections[0]
    assert sec.orientation == WD_ORIENT.LANDSCAPE and sec.page_width > sec.page_height
    assert "landscape" in await text(
        client, "page_orientation", {"file_path": HDR, "action": "read"}
    )
    assert "orientation must be" in await error(
        client, "page_orientation", {"file_path": HDR, "action": "set", "orientation": "sideways"}
    )


async def test_overview_lists_headings(client: Client, roots: WorldRoots) -> None:
    await text(
        client,
        "create_document",
        {
            "directory": "/new",
            "file_name": "o.docx",
            "content": [
                {"type": "heading", "text": "Top", "level": 1},
                {"type": "paragraph", "text": "text"},
                {"type": "heading", "text": "Sub", "level": 2},
            ],
        },
    )
    out = await text(client, "get_document_overview", {"file_path": "/new/o.docx"})
    assert "[body.p.0] (level 1) Top" in out and "[body.p.2] (level 2) Sub" in out


async def test_create_with_blocks_and_markdown_then_delete(
    client: Client, roots: WorldRoots
) -> None:
    blocks = [
        {"type": "heading", "text": "Q3 memo", "level": 1},
        {"type": "paragraph", "text": "Revenue grew **12%**."},
        {"type": "bullet_list", "items": ["a", "b"]},
        {"type": "table", "rows": [["k", "v"], ["x", "1"]]},
        {"type": "page_break"},
        {"type": "paragraph", "text": "Signed", "bold": True},
        {"type": "section_break", "start_type": "new_page"},
        {"type": "heading", "text": "Annex", "level": 9},
    ]
    await text(
        client,
        "create_document",
        {
            "directory": "/",
            "file_name": "memo.docx",
            "content": blocks,
            "metadata": {"title": "Memo"},
        },
    )
    doc = fs(roots, "memo.docx")
    assert doc.paragraphs[0].text == "Q3 memo" and doc.paragraphs[0].style.name == "Heading 1"
    assert doc.paragraphs[1].text == "Revenue grew 12%." and doc.paragraphs[1].runs[1].bold
    assert doc.paragraphs[2].style.name == "List Bullet" and doc.tables[0].cell(1, 1).text == "1"
    assert doc.core_properties.title == "Memo" and len(doc.sections) == 2
    signed = next(p for p in doc.paragraphs if p.text == "Signed")
    assert all(r.bold for r in signed.runs)
    assert doc.paragraphs[-1].style.name == "Heading 4"  # upstream clamps levels to 1-4
    assert (roots.filesystem / "memo.docx").stat().st_mode & 0o777 == 0o644
    assert "input.content" in await error(
        client,
        "create_document",
        {"directory": "/", "file_name": "md.docx", "content": "# markdown"},
    )
    await text(client, "delete_document", {"file_path": "/memo.docx"})
    assert not (roots.filesystem / "memo.docx").exists()


async def test_images_add_read_modify(client: Client, roots: WorldRoots) -> None:
    await text(
        client,
        "add_image",
        {"file_path": TABLES, "image_path": "/logo.png", "identifier": "body.p.0", "width": 2.0},
    )
    doc = fs(roots, TABLES)
    assert len(doc.inline_shapes) == 1 and abs(doc.inline_shapes[0].width.inches - 2.0) < 1e-3
    assert "[image img0]" in await text(client, "read_document_content", {"file_path": TABLES})
    assert "position must be 'start' or 'end'" in await error(
        client,
        "add_image",
        {
            "file_path": TABLES,
            "image_path": "/logo.png",
            "identifier": "body.p.0",
            "position": "after",
        },
    )
    result = await call(client, "read_image", {"file_path": TABLES, "annotation": "img0"})
    img = result.content[0]
    assert img.type == "image" and img.mime_type == "image/png"
    assert png_size(base64.b64decode(img.data)) == (40, 20)
    await text(
        client,
        "modify_image",
        {"file_path": TABLES, "image_index": 0, "operation": "rotate", "rotation": 90},
    )
    result = await call(client, "read_image", {"file_path": TABLES, "annotation": "@img0"})
    assert png_size(base64.b64decode(result.content[0].data)) == (20, 40)
    shape = fs(roots, TABLES).inline_shapes[0]
    assert shape.height > shape.width  # the frame follows the new aspect ratio
    assert "not found" in await error(
        client, "read_image", {"file_path": TABLES, "annotation": "img7"}
    )


@pytest.mark.parametrize("bad", [*BAD_PATHS, "link.docx"])
async def test_bad_paths_are_refused_and_the_server_keeps_serving(client: Client, bad: str) -> None:
    msg = await error(client, "read_document_content", {"file_path": bad})
    assert bad in msg
    assert "outside the allowed root" in msg or "must end with .docx" in msg
    assert "[body.p.0]" in await text(client, "read_document_content", {"file_path": TABLES})


async def test_missing_wrong_type_corrupt_and_bad_identifier(client: Client) -> None:
    assert "file not found" in await error(
        client, "read_document_content", {"file_path": "nope.docx"}
    )
    assert "must end with .docx" in await error(
        client, "get_document_overview", {"file_path": "notes.txt"}
    )
    assert "corrupted" in await error(
        client, "read_document_content", {"file_path": "corrupt.docx"}
    )
    msg = await error(
        client,
        "edit_content_text",
        {"file_path": TABLES, "identifier": "body.p.999", "new_text": "x"},
    )
    assert "paragraph 999 out of range" in msg
    assert "must start with 'body'" in await error(
        client, "edit_content_text", {"file_path": TABLES, "identifier": "foo.p.1", "new_text": "x"}
    )
    assert "[body.p.0]" in await text(client, "read_document_content", {"file_path": TABLES})


async def test_tracked_insertions_are_read_and_flagged(client: Client) -> None:
    out = await text(
        client, "read_document_content", {"file_path": "redlines__expected_redline.docx"}
    )
    assert "Pity the poor production file." in out
    assert "[tracked changes: +'production'" in out


async def test_read_document_content_pages_by_page_index(client: Client) -> None:
    paras = [{"type": "paragraph", "text": f"para {i} " + "x" * 500} for i in range(100)]
    await text(
        client, "create_document", {"directory": "/", "file_name": "long.docx", "content": paras}
    )
    first = await text(client, "read_document_content", {"file_path": "long.docx"})
    total = int(first.rsplit("total_pages ", 1)[1].rstrip("]"))
    assert total >= 3 and first.endswith(f"[page_index 0 of total_pages {total}]")
    last = await text(
        client, "read_document_content", {"file_path": "long.docx", "page_index": total - 1}
    )
    assert "para 99 " in last and "para 0 " not in last
    assert "out of range: total_pages is" in await error(
        client, "read_document_content", {"file_path": "long.docx", "page_index": total}
    )
