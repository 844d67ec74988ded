"""The excel app works on real .xlsx files: every tool, read back with openpyxl."""

from __future__ import annotations

import asyncio
import shutil
import string
import zipfile
from pathlib import Path

import openpyxl
import pytest
from anyio.from_thread import start_blocking_portal
from fastmcp import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from office_testkit import BAD_PATHS, error, make_world, text

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps import build

FORMULAE = "openpyxl__formulae.xlsx"
BOOK = "openpyxl__book1.xlsx"
CHARTSHEETS = "openpyxl__contains_chartsheets.xlsx"


@pytest.fixture
def roots(tmp_path: Path, office_fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> WorldRoots:
    monkeypatch.setenv(
        "KWRL_FORMULA_RECALC", "0"
    )  # LibreOffice recalculation has its own (slow) test
    r = make_world(tmp_path, office_fixtures, "xlsx")
    (r.filesystem / "people.csv").write_text(
        "name,age,city\nAnn,34,Oslo\nBob,27,Rome\nCy,41,Oslo\n"
    )
    return r


@pytest.fixture
async def client(roots: WorldRoots):
    async with Client(build("excel", roots)) as c:
        yield c


def wb(roots: WorldRoots, name: str, data_only: bool = False) -> openpyxl.Workbook:
    return openpyxl.load_workbook(roots.filesystem / name, data_only=data_only)


async def test_tools_are_upstreams_list(client: Client) -> None:
    names = {t.name for t in await client.list_tools()}
    assert names == {
        "create_spreadsheet", "delete_spreadsheet", "read_tab", "read_csv", "list_tabs_in_spreadsheet", "add_tab",
        "delete_tab", "edit_spreadsheet", "add_content_text", "delete_content_cell", "create_chart", "filter_tab",
    }  # fmt: skip


async def test_read_tab_shows_formula_and_cached_value(client: Client) -> None:
    args = {"file_path": f"/{FORMULAE}", "tab_index": 0, "include_formulas": True}
    out = await text(client, "read_tab", args)
    assert "=A2+A3 → 24690" in out and "=SUM(A2:A4) → 49380" in out
    assert "| 2 | 12345 | No Formula |" in out
    values = await text(client, "read_tab", {"file_path": f"/{FORMULAE}", "tab_index": 0})
    assert "=A2+A3" not in values and "| 24690 |" in values
    assert (
        await text(client, "read_tab", {**args, "cell_range": "a5"})
        == "Sheet1!A5: =SUM(A2:A4) → 49380"
    )
    assert (
        await text(client, "read_tab", {**args, "cell_range": "a5", "include_formulas": False})
        == "Sheet1!A5: 49380"
    )
    out = await text(client, "read_tab", {**args, "cell_range": "A2:B3"})
    assert "Simple" not in out and "| 3 | =12345 → 12345 | Value |" in out
    cut = await text(client, "read_tab", {**args, "max_rows": 2, "max_cols": 1})
    assert "truncated to 2 of" in cut
    compact = await text(
        client,
        "read_tab",
        {"file_path": FORMULAE, "tab_index": 0, "cell_range": "A2:B2", "compact": True},
    )
    assert compact.splitlines()[-1] == "12345,No Formula"


async def test_written_formula_reads_back_without_an_invented_value(
    client: Client, roots: WorldRoots
) -> None:
    await text(
        client,
        "edit_spreadsheet",
        {
            "file_path": BOOK,
            "operations": [
                {"type": "set_cell", "cell": "D1", "value": "=C2*10"},
                {"type": "set_cell", "cell": "E2", "value": "2.5"},
                {"type": "set_cell", "sheet": "Sheet1", "cell": "F2", "value": True},
                {"type": "append_rows", "sheet": "Sheet2", "rows": [["a", 1], ["b", 2]]},
                {
                    "type": "format_cells",
                    "sheet": "Sheet1",
                    "range": "D1",
                    "font_bold": True,
                    "fill_color": "FFFF00",
                },
                {"type": "rename_sheet", "sheet": "Sheet3", "new_name": "Summary"},
                {"type": "set_column_width", "sheet": "Sheet1", "column": "D", "width": 20},
                {"type": "set_row_height", "sheet": "Sheet1", "row": 1, "height": 30},
                {"type": "freeze_panes", "sheet": "Sheet1", "cell": "A2"},
                {"type": "merge_cells", "sheet": "Sheet2", "range": "C1:D1"},
                {"type": "set_number_format", "sheet": "Sheet1", "range": "E2", "format": "0.00%"},
                {"type": "add_named_range", "name": "Rate", "sheet": "Sheet1", "range": "E2"},
                {"type": "set_auto_filter", "sheet": "Sheet2"},
            ],
        },
    )
    book = wb(roots, BOOK)
    ws = book["Sheet1"]
    assert (
        ws["D1"].value == "=C2*10"
        and ws["D1"].font.bold
        and ws["E2"].value == 2.5
        and ws["F2"].value is True
    )
    assert list(book["Sheet2"].iter_rows(values_only=True)) == [
        ("a", 1, None, None),
        ("b", 2, None, None),
    ]
    assert "Summary" in book.sheetnames
    assert ws.column_dimensions["D"].width == 20 and ws.row_dimensions[1].height == 30
    assert ws.freeze_panes == "A2" and "C1:D1" in {
        str(r) for r in book["Sheet2"].merged_cells.ranges
    }
    assert ws["E2"].number_format == "0.00%" and "Rate" in book.defined_names
    assert book["Sheet2"].auto_filter.ref == "A1:B2"
    out = await text(client, "read_tab", {"file_path": BOOK, "tab_index": 0, "cell_range": "D1"})
    assert out == "Sheet1!D1: =C2*10 → (no cached value)"
    assert "'add_image' is not supported here" in await error(
        client,
        "edit_spreadsheet",
        {
            "file_path": BOOK,
            "operations": [
                {"type": "add_image", "sheet": "Sheet1", "image_path": "/logo.png", "cell": "A1"}
            ],
        },
    )
    assert "Validation error: input.operations.0" in await error(
        client,
        "edit_spreadsheet",
        {"file_path": BOOK, "operations": [{"type": "set_range", "range": "A1"}]},
    )
    # a failing batch changes nothing
    before = (roots.filesystem / BOOK).read_bytes()
    msg = await error(
        client,
        "edit_spreadsheet",
        {
            "file_path": BOOK,
            "operations": [
                {"type": "set_cell", "cell": "A1", "value": 9},
                {"type": "set_cell", "cell": "ZZZZ1", "value": 1},
            ],
        },
    )
    assert "bad cell reference 'ZZZZ1'" in msg
    assert (roots.filesystem / BOOK).read_bytes() == before


async def test_tabs_list_add_delete(client: Client, roots: WorldRoots) -> None:
    out = await text(client, "list_tabs_in_spreadsheet", {"file_path": CHARTSHEETS})
    assert "data" in out and "chartsheet" in out and "moredata" in out
    await text(
        client,
        "add_tab",
        {
            "file_path": BOOK,
            "tab_name": "New",
            "sheet_data": {"headers": ["k", "v"], "rows": [["a", "1"]]},
        },
    )
    ws = wb(roots, BOOK)["New"]
    assert [c.value for c in ws[2]] == ["a", 1] and ws["A1"].font.bold
    assert "already exists" in await error(
        client, "add_tab", {"file_path": BOOK, "tab_name": "new"}
    )
    assert "tab_name: String should have at most 31 characters" in await error(
        client, "add_tab", {"file_path": BOOK, "tab_name": "x" * 32}
    )
    await text(client, "delete_tab", {"file_path": BOOK, "tab_index": 1})
    assert wb(roots, BOOK).sheetnames == ["Sheet1", "Sheet3", "New"]
    assert "tab_index 9 out of range" in await error(
        client, "read_tab", {"file_path": BOOK, "tab_index": 9}
    )


async def test_add_and_delete_cell_content(client: Client, roots: WorldRoots) -> None:
    await text(
        client,
        "add_content_text",
        {"file_path": BOOK, "tab_index": 1, "cell": "B2", "value": "hello"},
    )
    assert wb(roots, BOOK)["Sheet2"]["B2"].value == "hello"
    assert "already holds" in await error(
        client, "add_content_text", {"file_path": BOOK, "tab_index": 1, "cell": "B2", "value": "x"}
    )
    await text(client, "delete_content_cell", {"file_path": BOOK, "tab_index": 1, "cell": "B2"})
    assert wb(roots, BOOK)["Sheet2"]["B2"].value is None


async def test_create_chart_filter_and_lifecycle(client: Client, roots: WorldRoots) -> None:
    await text(
        client,
        "create_spreadsheet",
        {
            "directory": "/reports",
            "file_name": "sales.xlsx",
            "sheets": [
                {
                    "name": "Sales",
                    "headers": ["Region", "Q1", "Q2"],
                    "rows": [["North", 10, 12], ["South", 7, 9], ["East", 15, 4]],
                }
            ],
        },
    )
    path = "/reports/sales.xlsx"
    await text(
        client,
        "create_chart",
        {
            "file_path": path,
            "sheet": "Sales",
            "data_range": "A1:C4",
            "chart_type": "line",
            "title": "By region",
        },
    )
    with zipfile.ZipFile(roots.filesystem / "reports/sales.xlsx") as z:
        chart_xml = z.read("xl/charts/chart1.xml").decode()
    assert "lineChart" in chart_xml and "Sales!$B$2:$B$4" in chart_xml.replace("'", "")
    await text(
        client,
        "create_chart",
        {
            "file_path": path,
            "sheet": "Sales",
            "data_range": "A1:C4",
            "chart_type": "pie",
            "position": "E20",
        },
    )
    with zipfile.ZipFile(roots.filesystem / "reports/sales.xlsx") as z:
        assert "pieChart" in z.read("xl/charts/chart2.xml").decode()
    assert "input.chart_type: Input should be 'bar', 'line' or 'pie'" in await error(
        client,
        "create_chart",
        {"file_path": path, "sheet": "Sales", "data_range": "A1:C4", "chart_type": "scatter"},
    )
    assert len(wb(roots, "reports/sales.xlsx")["Sales"]._charts) == 2
    out = await text(
        client,
        "filter_tab",
        {
            "file_path": path,
            "tab_index": 0,
            "filters": [{"column": "Q1", "operator": "greater_than", "value": 9}],
        },
    )
    assert "2 matching row(s)" in out and "| 2 | North | 10 | 12 |" in out and "South" not in out
    out = await text(
        client,
        "filter_tab",
        {
            "file_path": path,
            "tab_index": 0,
            "match_all": False,
            "filters": [
                {"column": "A", "operator": "starts_with", "value": "s"},
                {"column": "Q2", "operator": "less_than", "value": 5},
            ],
        },
    )
    assert "South" in out and "East" in out and "North" not in out
    assert "filter column 'Q9' not found" in await error(
        client,
        "filter_tab",
        {
            "file_path": path,
            "tab_index": 0,
            "filters": [{"column": "Q9", "operator": "equals", "value": 1}],
        },
    )
    await text(client, "delete_spreadsheet", {"file_path": path})
    assert not (roots.filesystem / "reports/sales.xlsx").exists()


async def test_read_csv(client: Client) -> None:
    out = await text(client, "read_csv", {"file_path": "people.csv"})
    assert "3 data rows x 3 columns" in out and "| Bob | 27 | Rome |" in out
    compact = await text(
        client, "read_csv", {"file_path": "people.csv", "compact": True, "has_header": False}
    )
    assert compact.splitlines()[1:3] == ["col1,col2,col3", "name,age,city"]
    assert "showing the first 1" in await text(
        client, "read_csv", {"file_path": "people.csv", "row_limit": 1}
    )


@pytest.mark.parametrize("bad", [*BAD_PATHS, "link.xlsx"])
async def test_bad_paths_refused(client: Client, bad: str) -> None:
    msg = await error(client, "read_tab", {"file_path": bad, "tab_index": 0})
    assert bad in msg and ("outside the allowed root" in msg or "must end with .xlsx" in msg)


async def test_missing_wrong_type_corrupt_bad_ref_and_server_keeps_serving(client: Client) -> None:
    assert "file not found" in await error(
        client, "read_tab", {"file_path": "missing.xlsx", "tab_index": 0}
    )
    assert "must end with .xlsx" in await error(
        client, "list_tabs_in_spreadsheet", {"file_path": "notes.txt"}
    )
    assert "corrupted" in await error(
        client, "read_tab", {"file_path": "corrupt.xlsx", "tab_index": 0}
    )
    assert "bad cell reference '1A'" in await error(
        client, "read_tab", {"file_path": FORMULAE, "tab_index": 0, "cell_range": "1A"}
    )
    assert "tab_index: Input should be greater than or equal to 0" in await error(
        client, "read_tab", {"file_path": FORMULAE, "tab_index": -1}
    )
    assert "→ 24690" in await text(
        client, "read_tab", {"file_path": FORMULAE, "tab_index": 0, "include_formulas": True}
    )


_segments = st.lists(
    st.sampled_from(["..", ".", "x", "link.xlsx", "etc", "outside", "filesystem", "", FORMULAE]),
    min_size=1,
    max_size=6,
)


@pytest.fixture
def sync_client(roots: WorldRoots):
    """One client kept open in a background event loop, so each fuzz example is one call."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Client(build("excel", roots))) as c,
    ):
        yield portal, c


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    parts=_segments,
    lead=st.sampled_from(["", "/", "/filesystem/"]),
    tail=st.text(string.ascii_letters + "./", max_size=8),
)
def test_fuzzed_paths_never_reach_outside_the_root(
    sync_client, roots: WorldRoots, parts: list[str], lead: str, tail: str
) -> None:
    """A path resolving outside the root is refused as such; one inside never claims to be outside."""
    portal, client = sync_client
    path = lead + "/".join(parts) + tail
    result = portal.call(
        lambda: client.call_tool(
            "list_tabs_in_spreadsheet", {"file_path": path}, raise_on_error=False
        )
    )
    root = roots.filesystem.resolve()
    inner = (
        path[len("/filesystem") :]
        if path == "/filesystem" or path.startswith("/filesystem/")
        else path
    )
    resolved = (root / inner.lstrip("/")).resolve()
    message = result.content[0].text
    if not resolved.is_relative_to(root):
        assert result.is_error and "outside the allowed root" in message
    else:
        assert "outside the allowed root" not in message
        if not result.is_error:
            assert resolved.suffix == ".xlsx" and resolved.is_file()


async def test_concurrent_edits_of_one_file_all_land(client: Client, roots: WorldRoots) -> None:
    cells = [f"H{i}" for i in range(1, 9)]
    await asyncio.gather(
        *(
            client.call_tool(
                "add_content_text", {"file_path": BOOK, "tab_index": 0, "cell": c, "value": i}
            )
            for i, c in enumerate(cells)
        )
    )
    ws = wb(roots, BOOK)["Sheet1"]
    assert [ws[c].value for c in cells] == list(range(8))


async def test_reads_follow_outside_writes(client: Client, roots: WorldRoots) -> None:
    assert "| 2 | 12345 |" in await text(
        client, "read_tab", {"file_path": FORMULAE, "tab_index": 0}
    )
    book = wb(roots, FORMULAE)
    book["Sheet1"]["A2"] = 777
    book.save(roots.filesystem / FORMULAE)  # e.g. code_exec rewrote the file in place
    assert "| 2 | 777 |" in await text(client, "read_tab", {"file_path": FORMULAE, "tab_index": 0})


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed"
)
async def test_libreoffice_recalculates_written_formulas(
    client: Client, roots: WorldRoots, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KWRL_FORMULA_RECALC", "auto")
    out = await text(
        client,
        "edit_spreadsheet",
        {
            "file_path": FORMULAE,
            "operations": [{"type": "set_cell", "cell": "C2", "value": "=A2*2"}],
        },
    )
    assert "(formulas recalculated)" in out
    assert (
        await text(
            client,
            "read_tab",
            {"file_path": FORMULAE, "tab_index": 0, "cell_range": "C2", "include_formulas": True},
        )
        == "Sheet1!C2: =A2*2 → 24690"
    )
    assert wb(roots, FORMULAE)["Sheet1"]["C2"].value == "=A2*2"
