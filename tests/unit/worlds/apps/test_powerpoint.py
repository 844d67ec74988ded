"""The powerpoint app edits real .pptx decks: every tool, read back with python-pptx."""

from __future__ import annotations

import base64
from pathlib import Path

import openpyxl
import pytest
from fastmcp import Client
from office_testkit import BAD_PATHS, call, error, make_world, png_size, text
from pptx import Presentation
from pptx.enum.chart import XL_CHART_TYPE
from pptx.enum.shapes import MSO_SHAPE_TYPE

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps import build

TABLES = "python-pptx__tbl-cell.pptx"
CHARTS = "python-pptx__cht-charts.pptx"
NOTES = "python-pptx__sld-notes.pptx"


@pytest.fixture
def roots(tmp_path: Path, office_fixtures: Path) -> WorldRoots:
    r = make_world(tmp_path, office_fixtures, "pptx")
    wb = openpyxl.Workbook()
    ws = wb.active
    for row in [["Region", "Sales"], ["North", 10], ["South", 7]]:
        ws.append(row)
    wb.save(r.filesystem / "data.xlsx")
    return r


@pytest.fixture
async def client(roots: WorldRoots):
    async with Client(build("powerpoint", roots)) as c:
        yield c


def deck(roots: WorldRoots, name: str):
    return Presentation(str(roots.filesystem / name))


async def test_tools_are_upstreams_list(client: Client) -> None:
    assert {t.name for t in await client.list_tools()} == {
        "create_deck", "add_slide", "edit_slides", "delete_deck", "read_slides", "read_completedeck",
        "read_individualslide", "add_shape", "insert_chart", "insert_table", "add_image", "modify_image", "read_image",
    }  # fmt: skip


async def test_reads_show_tables_charts_and_notes(client: Client, roots: WorldRoots) -> None:
    t = deck(roots, TABLES).slides[0].shapes[0].table
    out = await text(client, "read_slides", {"file_path": TABLES})
    assert "3 slide(s)" in out and t.cell(0, 0).text in out
    part = await text(client, "read_slides", {"file_path": TABLES, "start": 5, "end": 25})
    assert part.startswith(out[5:25]) and "read on with start=25" in part
    assert "end - start <= 10000" in await error(
        client, "read_slides", {"file_path": TABLES, "start": 0, "end": 20_000}
    )
    out = await text(client, "read_individualslide", {"file_path": CHARTS, "slide_index": 0})
    assert "[shape 0] chart" in out and "series" in out
    out = await text(client, "read_completedeck", {"file_path": NOTES})
    assert "| 0 | Blank |" in out and "| 1 | Blank |" in out
    notes = deck(roots, NOTES).slides[0].notes_slide.notes_text_frame.text.strip()
    assert f"notes: {notes}" in await text(
        client, "read_individualslide", {"file_path": NOTES, "slide_index": 0}
    )


async def test_create_add_edit_delete_slides(client: Client, roots: WorldRoots) -> None:
    slides = [
        {"layout": "title", "title": "Q3 review", "subtitle": "Board"},
        {
            "title": "Highlights",
            "bullets": {"items": ["Revenue +12%", "Churn -2%"]},
            "notes": "say it slowly",
        },
        {"layout": "title_only", "title": "Numbers", "table": {"rows": [["k", "v"], ["a", "1"]]}},
        {
            "layout": "two_content",
            "title": "Compare",
            "columns": {"left": {"items": ["L"]}, "right": {"items": ["R"]}},
        },
    ]
    await text(
        client,
        "create_deck",
        {
            "directory": "/decks",
            "file_name": "q3.pptx",
            "slides": slides,
            "metadata": {"title": "Q3"},
        },
    )
    path = "/decks/q3.pptx"
    prs = deck(roots, "decks/q3.pptx")
    assert [s.shapes.title.text for s in prs.slides] == [
        "Q3 review",
        "Highlights",
        "Numbers",
        "Compare",
    ]
    assert sorted(
        ph.text_frame.text for ph in prs.slides[3].placeholders if ph.placeholder_format.idx
    ) == ["L", "R"]
    assert (
        prs.slides[1].notes_slide.notes_text_frame.text == "say it slowly"
        and prs.core_properties.title == "Q3"
    )
    await text(
        client,
        "add_slide",
        {"file_path": path, "index": 1, "title": "Agenda", "bullets": ["one", "two"]},
    )
    prs = deck(roots, "decks/q3.pptx")
    assert [s.shapes.title.text for s in prs.slides][:3] == ["Q3 review", "Agenda", "Highlights"]
    ops = [
        {"type": "update_slide_title", "index": 0, "title": "Q3 Review (final)"},
        {"type": "append_bullets", "index": 2, "items": ["NPS 61"]},
        {"type": "replace_text", "search": "revenue", "replace": "Sales"},
        {
            "type": "update_table_cell",
            "index": 3,
            "table_idx": 0,
            "row": 1,
            "column": 1,
            "text": "42",
        },
        {"type": "set_notes", "index": 0, "notes": "welcome"},
        {
            "type": "format_table_cell",
            "index": 3,
            "table_idx": 0,
            "row": 0,
            "column": 0,
            "bold": True,
            "bg_color": "FFFF00",
        },
        {
            "type": "apply_text_formatting",
            "index": 2,
            "paragraph_index": 0,
            "italic": True,
            "font_color": "FF0000",
        },
        {"type": "add_hyperlink", "index": 2, "url": "https://example.com", "paragraph_index": 1},
        {"type": "duplicate_slide", "index": 4},
    ]
    await text(
        client, "edit_slides", {"file_path": path, "operations": ops, "metadata": {"author": "Ana"}}
    )
    prs = deck(roots, "decks/q3.pptx")
    body = [p.text for p in prs.slides[2].placeholders[1].text_frame.paragraphs]
    assert prs.slides[0].shapes.title.text == "Q3 Review (final)" and body == [
        "Sales +12%",
        "Churn -2%",
        "NPS 61",
    ]
    table = next(s for s in prs.slides[3].shapes if s.has_table).table
    assert (
        table.cell(1, 1).text == "42"
        and prs.slides[0].notes_slide.notes_text_frame.text == "welcome"
    )
    assert table.cell(0, 0).text_frame.paragraphs[0].runs[0].font.bold
    runs = prs.slides[2].placeholders[1].text_frame.paragraphs
    assert (
        runs[0].runs[0].font.italic and runs[1].runs[0].hyperlink.address == "https://example.com"
    )
    assert len(prs.slides) == 6 and prs.slides[5].shapes.title.text == "Compare"
    assert prs.core_properties.author == "Ana"
    await text(
        client,
        "edit_slides",
        {
            "file_path": path,
            "operations": [
                {"type": "delete_slide", "index": 5},
                {"type": "delete_slide", "index": 3},
                {"type": "delete_slide", "index": 1},
            ],
        },
    )
    assert [s.shapes.title.text for s in deck(roots, "decks/q3.pptx").slides] == [
        "Q3 Review (final)",
        "Highlights",
        "Compare",
    ]
    msg = await error(
        client,
        "edit_slides",
        {"file_path": path, "operations": [{"type": "set_notes", "index": 5, "notes": "x"}]},
    )
    assert "out of range" in msg
    await text(client, "delete_deck", {"file_path": path})
    assert not (roots.filesystem / "decks/q3.pptx").exists()
    assert "did not exist" in await text(client, "delete_deck", {"file_path": path})  # idempotent
    assert "slides: List should have at least 1 item" in await error(
        client, "create_deck", {"directory": "/", "file_name": "e.pptx", "slides": []}
    )


async def test_title_on_a_deck_with_only_blank_layouts(client: Client, roots: WorldRoots) -> None:
    await text(
        client, "add_slide", {"file_path": TABLES, "index": 3, "title": "Added", "bullets": ["x"]}
    )
    assert "request.index: Field required" in await error(
        client, "add_slide", {"file_path": TABLES, "title": "x"}
    )
    out = await text(client, "read_individualslide", {"file_path": TABLES, "slide_index": 3})
    assert "title: Added" in out and "x" in out


async def test_shape_table_chart(client: Client, roots: WorldRoots) -> None:
    await text(
        client,
        "add_shape",
        {
            "file_path": NOTES,
            "slide_index": 1,
            "shape_type": "oval",
            "fill_color": "FF0000",
            "text": "Hi",
            "x": 2,
            "width": 3,
        },
    )
    shp = deck(roots, NOTES).slides[1].shapes[-1]
    assert (
        shp.auto_shape_type is not None
        and shp.text_frame.text == "Hi"
        and str(shp.fill.fore_color.rgb) == "FF0000"
    )
    assert abs(shp.left / 914400 - 2) < 1e-6 and abs(shp.width / 914400 - 3) < 1e-6
    await text(
        client,
        "insert_table",
        {"file_path": NOTES, "slide_index": 1, "rows": [["a", "b"], ["1", "2"]]},
    )
    t = next(s for s in deck(roots, NOTES).slides[1].shapes if s.has_table).table
    assert t.cell(1, 1).text == "2" and t.cell(0, 0).text_frame.paragraphs[0].runs[0].font.bold
    await text(
        client,
        "insert_chart",
        {
            "presentation_path": NOTES,
            "slide_index": 0,
            "spreadsheet_path": "/data.xlsx",
            "sheet_name": "Sheet",
            "data_range": "A1:B3",
            "chart_type": "line",
            "title": "Trend",
            "position": "left",
        },
    )
    frame = next(s for s in deck(roots, NOTES).slides[0].shapes if s.has_chart)
    assert (
        frame.chart.chart_type == XL_CHART_TYPE.LINE_MARKERS
        and abs(frame.width / 914400 - 4.5) < 1e-3
    )
    await text(
        client,
        "insert_chart",
        {
            "presentation_path": NOTES,
            "slide_index": 1,
            "spreadsheet_path": "/data.xlsx",
            "sheet_name": "Sheet",
            "data_range": "A1:B3",
            "chart_type": "pie",
        },
    )
    chart = next(s for s in deck(roots, NOTES).slides[1].shapes if s.has_chart).chart
    assert list(chart.plots[0].categories) == ["North", "South"] and list(
        chart.plots[0].series[0].values
    ) == [10.0, 7.0]


async def test_images_add_read_modify(client: Client, roots: WorldRoots) -> None:
    await text(
        client,
        "add_image",
        {"file_path": NOTES, "image_path": "logo.png", "slide_index": 0, "width": 4},
    )
    pics = [
        s for s in deck(roots, NOTES).slides[0].shapes if s.shape_type == MSO_SHAPE_TYPE.PICTURE
    ]
    assert len(pics) == 1 and abs(pics[0].width / 914400 - 4) < 1e-3
    assert "slide0_img0" in await text(
        client, "read_individualslide", {"file_path": NOTES, "slide_index": 0}
    )
    result = await call(client, "read_image", {"file_path": NOTES, "annotation": "slide0_img0"})
    assert result.content[0].mime_type == "image/png" and png_size(
        base64.b64decode(result.content[0].data)
    ) == (40, 20)
    await text(
        client,
        "modify_image",
        {
            "file_path": NOTES,
            "slide_index": 0,
            "image_index": 0,
            "operation": "crop",
            "crop_left": 0,
            "crop_top": 0,
            "crop_right": 10,
            "crop_bottom": 20,
        },
    )
    result = await call(client, "read_image", {"file_path": NOTES, "annotation": "slide0_img0"})
    assert png_size(base64.b64decode(result.content[0].data)) == (10, 20)
    assert "not found" in await error(
        client, "read_image", {"file_path": NOTES, "annotation": "slide0_img3"}
    )


@pytest.mark.parametrize("bad", [*BAD_PATHS, "link.pptx"])
async def test_bad_paths_refused(client: Client, bad: str) -> None:
    msg = await error(client, "read_slides", {"file_path": bad})
    assert bad in msg and ("outside the allowed root" in msg or "must end with .pptx" in msg)


async def test_missing_wrong_type_corrupt_and_server_keeps_serving(client: Client) -> None:
    assert "file not found" in await error(client, "read_completedeck", {"file_path": "gone.pptx"})
    assert "must end with .pptx" in await error(client, "read_slides", {"file_path": "notes.txt"})
    assert "corrupted" in await error(client, "read_slides", {"file_path": "corrupt.pptx"})
    assert "slide_index 7 out of range" in await error(
        client, "read_individualslide", {"file_path": TABLES, "slide_index": 7}
    )
    assert "spreadsheet_path 'nope.xlsx': file not found" in await error(
        client,
        "insert_chart",
        {
            "presentation_path": TABLES,
            "slide_index": 0,
            "spreadsheet_path": "nope.xlsx",
            "sheet_name": "Sheet1",
            "data_range": "A1:B2",
        },
    )
    assert "3 slide(s)" in await text(client, "read_slides", {"file_path": TABLES})
