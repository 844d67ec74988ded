"""The excel app: .xlsx workbooks through openpyxl (ARCH mcp_servers/spreadsheets).

Contract: `build(roots) -> FastMCP` named "excel"; flat tool arguments; every path confined to
`roots.filesystem`. Tabs are addressed by `tab_index` (0-based over worksheets; chartsheets hold
no cells and are only listed) or `tab_name`; cells in A1 notation.

`read_tab` shows values AND formulas: the workbook is parsed twice, once for formulas and once
with `data_only=True` for the values Excel cached at its last save; a formula cell reads
`=SUM(A1:A3) → 6`, or `→ (no cached value)` when the file holds none. openpyxl never computes
formulas; with `KWRL_FORMULA_RECALC=auto` and LibreOffice installed (as in Archipelago), a write
that leaves formulas in the workbook is recalculated (`office_recalc`); otherwise read_tab says the
value is missing rather than inventing one.
Writes apply all of a call's operations to a fresh parse, then save once, atomically.
"""

from __future__ import annotations

import csv
import io
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastmcp import FastMCP
from pydantic import Field

from kwrl.worlds.apps.base import ToolError, page_text, rel, tool
from kwrl.worlds.apps.office_common import (
    cached,
    delete_file,
    existing_file,
    file_lock,
    md_table,
    new_file,
    open_file,
    save_atomic,
)
from kwrl.worlds.apps.office_recalc import recalculate, soffice
from kwrl.worlds.apps.office_xlsx import (
    CellValue,
    FilterCondition,
    SheetOp,
    SheetSpec,
    apply_op,
    coerce,
    fmt,
    make_chart,
    matches,
    parse_range,
    parse_ref,
    render_sheet,
    used_bounds,
)
from kwrl.worlds.layout import WorldRoots

if TYPE_CHECKING:
    from openpyxl.workbook.workbook import Workbook
    from openpyxl.worksheet.worksheet import Worksheet

# openpyxl warns on each load of a workbook using extensions it drops (slicers, some validations);
# nobody downstream can act on it, and it floods the gateway's stderr.
warnings.filterwarnings(
    "ignore", message=r".*extension is not supported", category=UserWarning, module="openpyxl"
)

KIND = "Excel (.xlsx)"
EXTS = (".xlsx", ".xlsm")
FilePath = Annotated[str, Field(description="Path of the .xlsx file, e.g. '/data/q3.xlsx'")]
TabIndex = Annotated[int | None, Field(description="0-based worksheet index (default 0)")]
TabName = Annotated[str | None, Field(description="Worksheet name; alternative to tab_index")]
Offset = Annotated[
    int, Field(description="Character offset for paging long output (from the truncation note)")
]


def _formulas(p: Path) -> Workbook:
    import openpyxl

    # keep_vba: an .xlsm saved without its macro part would no longer open in Excel
    return openpyxl.load_workbook(p, keep_vba=p.suffix.lower() == ".xlsm")


def _values(p: Path) -> Workbook:
    import openpyxl

    return openpyxl.load_workbook(p, data_only=True)


def pick_sheet(wb: Workbook, tab_index: int | None, tab_name: str | None) -> Worksheet:
    sheets = wb.worksheets
    names = [ws.title for ws in sheets]
    if tab_name is not None:
        for ws in sheets:
            if ws.title == tab_name or ws.title.lower() == tab_name.lower():
                return ws  # type: ignore[return-value]
        raise ToolError(f"sheet {tab_name!r} not found; worksheets: {names}")
    i = 0 if tab_index is None else tab_index
    if not 0 <= i < len(sheets):
        raise ToolError(
            f"tab_index {i} out of range; the workbook has {len(sheets)} worksheet(s): {names}"
        )
    return sheets[i]  # type: ignore[return-value]


def build(roots: WorldRoots) -> FastMCP:
    root = roots.filesystem
    mcp = FastMCP("excel")

    def read_books(file_path: str) -> tuple[Path, Workbook, Workbook]:
        p = existing_file(root, file_path, EXTS)
        return p, cached(root, p, _formulas, KIND, "f"), cached(root, p, _values, KIND, "v")

    def edit_book(file_path: str, fn: Any) -> str:
        p = existing_file(root, file_path, EXTS)
        with file_lock(p):
            wb = open_file(root, p, _formulas, KIND)
            msg = fn(wb)
            save_atomic(wb, p)
            note = _recalc(p, wb)
        return f"{msg} in {rel(root, p)}{note}"

    @tool(mcp)
    def create_spreadsheet(
        directory: Annotated[
            str, Field(description="Folder to create the file in, e.g. '/' or '/data'")
        ],
        file_name: Annotated[str, Field(description="File name ending with .xlsx, no '/'")],
        sheets: Annotated[
            list[SheetSpec] | None,
            Field(
                description="Worksheets: [{name, headers?, rows?}]; values starting with '=' are formulas"
            ),
        ] = None,
        overwrite: Annotated[bool, Field(description="Replace the file if it exists")] = False,
    ) -> str:
        """Create a new .xlsx workbook with named sheets, optional headers and rows."""
        from openpyxl.workbook.workbook import Workbook

        target = new_file(root, directory, file_name, ".xlsx", overwrite=overwrite)
        specs: list[SheetSpec] = sheets or [{"name": "Sheet1"}]
        wb = Workbook()
        wb.remove(wb.active)  # type: ignore[arg-type]
        for i, spec in enumerate(specs):
            name = spec.get("name") or f"Sheet{i + 1}"
            _check_title(wb, name)
            ws = wb.create_sheet(name)
            _fill(ws, spec.get("headers"), spec.get("rows") or [])
        with file_lock(target):
            save_atomic(wb, target)
            note = _recalc(target, wb)
        return f"Created {rel(root, target)} with sheets {wb.sheetnames}{note}"

    @tool(mcp)
    def delete_spreadsheet(file_path: FilePath) -> str:
        """Delete a workbook file (irreversible)."""
        return delete_file(root, file_path, EXTS)

    @tool(mcp)
    def read_tab(
        file_path: FilePath,
        tab_index: TabIndex = None,
        tab_name: TabName = None,
        cell_range: Annotated[
            str | None, Field(description="'B5' or 'A1:D20'; default the whole used range")
        ] = None,
        max_rows: Annotated[int, Field(description="At most this many rows")] = 500,
        offset: Offset = 0,
    ) -> str:
        """Read a worksheet as a markdown table: values, and formulas as '=F → cached value'."""
        p, fwb, vwb = read_books(file_path)
        fws = pick_sheet(fwb, tab_index, tab_name)
        vws = vwb[fws.title]
        if cell_range is not None and ":" not in cell_range:
            col, row = parse_ref(cell_range)
            f, v = fws.cell(row, col).value, vws.cell(row, col).value
            if isinstance(f, str) and f.startswith("="):
                cv = "(no cached value)" if v is None else fmt(v)
                return f"{fws.title}!{cell_range.upper()}: {f} → {cv}"
            return f"{fws.title}!{cell_range.upper()}: {fmt(f)}"
        if cell_range is not None:
            c1, r1, c2, r2 = parse_range(cell_range)
        else:
            c1, r1 = 1, 1
            c2, r2 = used_bounds(fws)
        text = render_sheet(fws, vws, c1, r1, c2, min(r2, r1 + max(max_rows, 1) - 1))
        head = f"{rel(root, p)} sheet {fws.title!r} (tab {_tab_of(fwb, fws)})"
        if r2 - r1 + 1 > max_rows:
            head += f"; showing {max_rows} of {r2 - r1 + 1} rows (use cell_range for more)"
        return page_text(head + "\n" + text, offset=offset)

    @tool(mcp)
    def read_csv(
        file_path: Annotated[str, Field(description="Path of a .csv/.tsv file")],
        delimiter: Annotated[str | None, Field(description="Default: ',' (tab for .tsv)")] = None,
        encoding: str = "utf-8",
        has_header: bool = True,
        row_limit: Annotated[int, Field(description="At most this many data rows")] = 1000,
        offset: Offset = 0,
    ) -> str:
        """Read a CSV file as a markdown table."""
        p = existing_file(root, file_path, (".csv", ".tsv", ".txt"))
        delim = delimiter or ("\t" if p.suffix.lower() == ".tsv" else ",")
        try:
            raw = p.read_text(encoding=encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ToolError(
                f"{rel(root, p)} cannot be decoded as {encoding}: {exc}; try encoding='latin-1'"
            ) from exc
        rows = list(csv.reader(io.StringIO(raw), delimiter=delim))
        header = (
            rows[0]
            if has_header and rows
            else [f"col{i + 1}" for i in range(max((len(r) for r in rows), default=0))]
        )
        data = rows[1:] if has_header else rows
        shown = data[:row_limit]
        head = f"{rel(root, p)}: {len(data)} data rows x {len(header)} columns"
        if len(data) > row_limit:
            head += f"; showing the first {row_limit}"
        return page_text(head + "\n" + md_table(shown, header=header), offset=offset)

    @tool(mcp)
    def list_tabs_in_spreadsheet(file_path: FilePath) -> str:
        """List the worksheets of a workbook: index, name, used range, size."""
        from openpyxl.utils import get_column_letter
        from openpyxl.worksheet.worksheet import Worksheet

        p, fwb, _ = read_books(file_path)
        rows: list[list[Any]] = []
        for s in fwb._sheets:  # type: ignore[attr-defined]  # worksheets AND chartsheets, in order
            if isinstance(s, Worksheet):
                c2, r2 = used_bounds(s)
                ref = f"A1:{get_column_letter(c2)}{r2}" if r2 else "(empty)"
                rows.append([_tab_of(fwb, s), s.title, ref, r2, c2, s.sheet_state])
            else:
                rows.append(["-", s.title, "(chartsheet, no cells)", 0, 0, s.sheet_state])
        return f"{rel(root, p)}\n" + md_table(
            rows, header=["tab_index", "name", "used range", "rows", "cols", "state"]
        )

    @tool(mcp)
    def add_tab(
        file_path: FilePath,
        tab_name: Annotated[
            str, Field(description="New sheet name (max 31 chars, no \\ / ? * [ ] :)")
        ],
        headers: Annotated[list[CellValue] | None, Field(description="First row")] = None,
        rows: Annotated[list[list[CellValue]] | None, Field(description="Data rows")] = None,
        index: Annotated[
            int | None, Field(description="Position among sheets; default last")
        ] = None,
    ) -> str:
        """Add a worksheet, optionally with headers and rows."""

        def op(wb: Workbook) -> str:
            _check_title(wb, tab_name)
            ws = wb.create_sheet(tab_name, index)
            _fill(ws, headers, rows or [])
            return f"Added sheet {tab_name!r} (sheets: {wb.sheetnames})"

        return edit_book(file_path, op)

    @tool(mcp)
    def delete_tab(
        file_path: FilePath, tab_index: TabIndex = None, tab_name: TabName = None
    ) -> str:
        """Delete a worksheet (not the last one)."""
        if tab_index is None and tab_name is None:
            raise ToolError("pass tab_index or tab_name of the sheet to delete")

        def op(wb: Workbook) -> str:
            ws = pick_sheet(wb, tab_index, tab_name)
            if len(wb.worksheets) == 1:
                raise ToolError("cannot delete the only worksheet; delete the file instead")
            wb.remove(ws)
            return f"Deleted sheet {ws.title!r} (sheets: {wb.sheetnames})"

        return edit_book(file_path, op)

    @tool(mcp)
    def edit_spreadsheet(
        file_path: FilePath,
        operations: Annotated[
            list[SheetOp],
            Field(
                description="Applied in order, saved once (all or nothing). Each has 'type' and optional 'sheet' (name; default first): "
                "set_cell {cell, value}; set_range {range or cell, values: 2D list, or value to fill}; append_rows {rows}; "
                "rename_sheet {new_name}; format_cells {range, bold?, italic?, font_size?, font_color?, fill_color?, number_format?, horizontal_alignment?}; "
                "merge_cells {range}; set_column_width {column, width}; insert_rows / delete_rows {row, count?}. "
                "Strings starting with '=' are formulas."
            ),
        ],
    ) -> str:
        """Write values or formulas to cells and ranges, and other batch edits."""
        if not operations:
            raise ToolError("operations is empty")

        def op(wb: Workbook) -> str:
            done = [apply_op(wb, o, i, pick_sheet) for i, o in enumerate(operations)]
            return "Applied: " + "; ".join(done)

        return edit_book(file_path, op)

    @tool(mcp)
    def add_content_text(
        file_path: FilePath,
        cell: Annotated[str, Field(description="Empty target cell, e.g. 'B5'")],
        value: Annotated[CellValue, Field(description="Text, number, boolean or formula ('=...')")],
        tab_index: TabIndex = None,
        tab_name: TabName = None,
    ) -> str:
        """Put a value or formula into an EMPTY cell (use edit_spreadsheet to overwrite)."""

        def op(wb: Workbook) -> str:
            ws = pick_sheet(wb, tab_index, tab_name)
            col, row = parse_ref(cell)
            c = ws.cell(row, col)
            if c.value not in (None, ""):
                raise ToolError(
                    f"{ws.title}!{cell.upper()} already holds {fmt(c.value)!r}; use edit_spreadsheet set_cell to overwrite"
                )
            c.value = coerce(value)
            return f"Set {ws.title}!{cell.upper()} = {fmt(c.value)}"

        return edit_book(file_path, op)

    @tool(mcp)
    def delete_content_cell(
        file_path: FilePath,
        cell: Annotated[str, Field(description="Cell or range to clear, e.g. 'B5' or 'B5:D9'")],
        tab_index: TabIndex = None,
        tab_name: TabName = None,
    ) -> str:
        """Clear the content of a cell or range."""

        def op(wb: Workbook) -> str:
            ws = pick_sheet(wb, tab_index, tab_name)
            c1, r1, c2, r2 = parse_range(cell if ":" in cell else f"{cell}:{cell}")
            for r in range(r1, r2 + 1):
                for c in range(c1, c2 + 1):
                    ws.cell(r, c).value = None
            return f"Cleared {ws.title}!{cell.upper()}"

        return edit_book(file_path, op)

    @tool(mcp)
    def create_chart(
        file_path: FilePath,
        data_range: Annotated[
            str, Field(description="e.g. 'A1:C10': first column categories, other columns series")
        ],
        chart_type: Literal["bar", "column", "line", "pie", "area", "scatter"] = "bar",
        sheet: Annotated[
            str | None, Field(description="Sheet holding the data (default first)")
        ] = None,
        title: str | None = None,
        position: Annotated[str, Field(description="Top-left anchor cell of the chart")] = "E2",
        include_header: Annotated[bool, Field(description="First row holds series names")] = True,
        x_axis_title: str | None = None,
        y_axis_title: str | None = None,
    ) -> str:
        """Create a chart from a data range and place it on the same sheet."""

        def op(wb: Workbook) -> str:
            ws = pick_sheet(wb, None, sheet)
            parse_ref(position)
            chart, n = make_chart(
                ws, data_range, chart_type, title, include_header, x_axis_title, y_axis_title
            )
            ws.add_chart(chart, position.upper())
            return f"Added a {chart_type} chart of {n} series from {ws.title}!{data_range.upper()} at {position.upper()}"

        return edit_book(file_path, op)

    @tool(mcp)
    def filter_tab(
        file_path: FilePath,
        filters: Annotated[
            list[FilterCondition],
            Field(
                description="Conditions [{column, operator, value}]: column is a letter ('C') or a header name; operator one of "
                "equals, not_equals, greater_than, greater_or_equal, less_than, less_or_equal, contains, not_contains, "
                "starts_with, ends_with, is_empty, is_not_empty (or =, !=, >, >=, <, <=)"
            ),
        ],
        tab_index: TabIndex = None,
        tab_name: TabName = None,
        match_all: Annotated[bool, Field(description="true: AND of conditions; false: OR")] = True,
        use_headers: Annotated[
            bool, Field(description="First row is a header row (kept out of the results)")
        ] = True,
        max_rows: int = 500,
        offset: Offset = 0,
    ) -> str:
        """Rows of a worksheet whose cells meet the conditions (compared on cached values)."""
        from openpyxl.utils import get_column_letter

        if not filters:
            raise ToolError("filters is empty; pass at least one {column, operator, value}")
        p, _, vwb = read_books(file_path)
        vws = pick_sheet(vwb, tab_index, tab_name)
        c2, r2 = used_bounds(vws)
        rows = [
            list(r)
            for r in vws.iter_rows(
                min_row=1, max_row=max(r2, 1), max_col=max(c2, 1), values_only=True
            )
        ]
        header = [fmt(v) for v in rows[0]] if use_headers and rows else None
        letters = [get_column_letter(i + 1) for i in range(max(c2, 1))]
        cols = [_column_index(f.get("column", ""), header, letters) for f in filters]
        hits: list[list[Any]] = []
        start = 1 if header is not None else 0
        for r_i in range(start, len(rows)):
            row = rows[r_i]
            results = [
                matches(row[c], f.get("operator", "equals"), f.get("value"))
                for c, f in zip(cols, filters, strict=True)
            ]
            if all(results) if match_all else any(results):
                hits.append([r_i + 1, *(fmt(v) for v in row)])
        shown = hits[:max_rows]
        head = f"{rel(root, p)} sheet {vws.title!r}: {len(hits)} matching row(s)"
        if len(hits) > max_rows:
            head += f"; showing {max_rows}"
        table = md_table(shown, header=["row", *(header or letters)])
        return page_text(head + "\n" + table, offset=offset)

    return mcp


def _column_index(column: str, header: list[str] | None, letters: list[str]) -> int:
    col = str(column).strip()
    if header is not None:
        for i, h in enumerate(header):
            if h.strip().lower() == col.lower():
                return i
    if col.upper() in letters:
        return letters.index(col.upper())
    known = f"headers {header}" if header else f"columns {letters[0]}..{letters[-1]}"
    raise ToolError(f"filter column {column!r} not found; use a letter or one of the {known}")


def _recalc(path: Path, wb: Workbook) -> str:
    """Let LibreOffice compute the formulas of a saved workbook, when there are any and it can."""
    if path.suffix.lower() != ".xlsx" or not _has_formulas(wb):
        return ""
    if recalculate(path):
        return " (formulas recalculated)"
    return " (formulas not recalculated: read_tab shows them without values)" if soffice() else ""


def _has_formulas(wb: Workbook) -> bool:
    for ws in wb.worksheets:
        for row in ws.iter_rows(values_only=True):
            if any(isinstance(v, str) and v.startswith("=") for v in row):
                return True
    return False


def _tab_of(wb: Workbook, ws: Any) -> int:
    return next(i for i, s in enumerate(wb.worksheets) if s is ws)


def _check_title(wb: Workbook, name: str) -> None:
    if not name or len(name) > 31 or any(ch in name for ch in "\\/?*[]:"):
        raise ToolError(f"sheet name {name!r} must be 1-31 characters without \\ / ? * [ ] :")
    if name.lower() in (n.lower() for n in wb.sheetnames):
        raise ToolError(f"sheet {name!r} already exists; sheets: {wb.sheetnames}")


def _fill(ws: Worksheet, headers: list[Any] | None, rows: list[list[Any]]) -> None:
    from openpyxl.styles import Font

    if headers:
        ws.append([coerce(v) for v in headers])
        for c in ws[1]:
            c.font = Font(bold=True)
    for row in rows:
        ws.append([coerce(v) for v in row])
