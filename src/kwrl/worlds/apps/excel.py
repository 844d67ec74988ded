"""The excel app: .xlsx workbooks through openpyxl (ARCH mcp_servers/spreadsheets).

Contract: `ExcelApp(roots)`, app "excel" of the table; upstream's tool arguments (most tools under an
`input` envelope); every path confined to `roots.filesystem`. Tabs are addressed by `tab_index`
(0-based over worksheets; chartsheets hold no cells and are only listed), create_chart's by
`sheet` name; cells in A1 notation. edit_spreadsheet takes upstream's operation types; those kwrl
does not implement (data validation, conditional formatting, images) are refused by name.

`read_tab` with `include_formulas` shows values AND formulas (without it, values, and the formula
where no value is cached): the workbook is parsed twice, once for formulas and once
with `data_only=True` for the values Excel cached at its last save; a formula cell reads
`=SUM(A1:A3) → 6`, or `→ (no cached value)` when the file holds none. openpyxl never computes
formulas; with `KWRL_FORMULA_RECALC=auto` and LibreOffice installed (as in Archipelago), a write
that leaves formulas in the workbook is recalculated (`kwrl.worlds.office.recalc`); otherwise read_tab says the
value is missing rather than inventing one.
Writes apply all of a call's operations to a fresh parse, then save once, atomically.
"""

from __future__ import annotations

import csv
import io
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kwrl.worlds.apps.base import ToolError, WorldApp, rel, tool
from kwrl.worlds.office.common import (
    cached,
    delete_file,
    existing_file,
    file_lock,
    md_table,
    new_file,
    open_file,
    save_atomic,
)
from kwrl.worlds.office.recalc import recalculate, soffice
from kwrl.worlds.office.sheets import (
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


class ExcelApp(WorldApp):
    """The excel app: its tools read and edit the world's workbooks (module docstring)."""

    def _read_books(self, file_path: str) -> tuple[Path, Workbook, Workbook]:
        p = existing_file(self.root, file_path, EXTS)
        return (
            p,
            cached(self.root, p, _formulas, KIND, "f"),
            cached(self.root, p, _values, KIND, "v"),
        )

    def _edit_book(self, file_path: str, fn: Any) -> str:
        p = existing_file(self.root, file_path, EXTS)
        with file_lock(p):
            wb = open_file(self.root, p, _formulas, KIND)
            msg = fn(wb)
            save_atomic(wb, p)
            note = _recalc(p, wb)
        return f"{msg} in {rel(self.root, p)}{note}"

    @tool
    def create_spreadsheet(
        self, directory: str, file_name: str, sheets: list[dict[str, Any]]
    ) -> str:
        from openpyxl.workbook.workbook import Workbook

        if not sheets:
            raise ToolError("sheets must hold at least one sheet definition")
        target = new_file(self.root, directory, file_name, ".xlsx", overwrite=True)
        wb = Workbook()
        wb.remove(wb.active)  # type: ignore[arg-type]
        for spec in sheets:
            name = spec["name"]
            _check_title(wb, name)
            headers, rows = spec.get("headers"), spec.get("rows") or []
            if headers and any(len(r) != len(headers) for r in rows):
                raise ToolError(
                    f"sheet {name!r}: every row must have {len(headers)} values, as its headers"
                )
            _fill(wb.create_sheet(name), headers, rows)
        with file_lock(target):
            save_atomic(wb, target)
            note = _recalc(target, wb)
        return f"Created {rel(self.root, target)} with sheets {wb.sheetnames}{note}"

    @tool
    def delete_spreadsheet(self, file_path: str) -> str:
        return delete_file(self.root, file_path, EXTS)

    @tool
    def read_tab(
        self,
        file_path: str,
        tab_index: int,
        cell_range: str | None,
        include_formulas: bool,
        max_rows: int | None,
        max_cols: int | None,
        compact: bool,
    ) -> str:
        p, fwb, vwb = self._read_books(file_path)
        fws = pick_sheet(fwb, tab_index, None)
        vws = vwb[fws.title]
        if cell_range is not None and ":" not in cell_range:
            col, row = parse_ref(cell_range)
            f, v = fws.cell(row, col).value, vws.cell(row, col).value
            if isinstance(f, str) and f.startswith("="):
                cv = "(no cached value)" if v is None else fmt(v)
                return (
                    f"{fws.title}!{cell_range.upper()}: {f} → {cv}"
                    if include_formulas or v is None
                    else f"{fws.title}!{cell_range.upper()}: {cv}"
                )
            return f"{fws.title}!{cell_range.upper()}: {fmt(f)}"
        if cell_range is not None:
            c1, r1, c2, r2 = parse_range(cell_range)
        else:
            c1, r1 = 1, 1
            c2, r2 = used_bounds(fws)
        rows_cap, cols_cap = max_rows or r2 - r1 + 1, max_cols or c2 - c1 + 1
        shown_r2, shown_c2 = min(r2, r1 + max(rows_cap, 1) - 1), min(c2, c1 + max(cols_cap, 1) - 1)
        if compact:
            text = "\n".join(
                ",".join(fmt(vws.cell(r, c).value) for c in range(c1, shown_c2 + 1))
                for r in range(r1, shown_r2 + 1)
            )
        else:
            text = render_sheet(
                fws if include_formulas else _values_or_formulas(fws, vws),
                vws,
                c1,
                r1,
                shown_c2,
                shown_r2,
            )
        head = f"{rel(self.root, p)} sheet {fws.title!r} (tab {_tab_of(fwb, fws)})"
        if shown_r2 < r2 or shown_c2 < c2:
            head += f"; truncated to {shown_r2 - r1 + 1} of {r2 - r1 + 1} rows and {shown_c2 - c1 + 1} of {c2 - c1 + 1} columns (raise max_rows/max_cols or use cell_range)"
        return head + "\n" + text

    @tool
    def read_csv(
        self,
        file_path: str,
        delimiter: str,
        encoding: str,
        has_header: bool,
        row_limit: int | None,
        compact: bool,
    ) -> str:
        p = existing_file(self.root, file_path, (".csv", ".tsv", ".txt"))
        try:
            raw = p.read_text(encoding=encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ToolError(
                f"{rel(self.root, p)} cannot be decoded as {encoding}: {exc}; try encoding='latin-1'"
            ) from exc
        rows = list(csv.reader(io.StringIO(raw), delimiter=delimiter or ","))
        header = (
            rows[0]
            if has_header and rows
            else [f"col{i + 1}" for i in range(max((len(r) for r in rows), default=0))]
        )
        data = rows[1:] if has_header else rows
        shown = data[:row_limit] if row_limit else data
        head = f"{rel(self.root, p)}: {len(data)} data rows x {len(header)} columns"
        if len(shown) < len(data):
            head += f"; showing the first {len(shown)}"
        if compact:
            return head + "\n" + "\n".join(",".join(r) for r in [header, *shown])
        return head + "\n" + md_table(shown, header=header)

    @tool
    def list_tabs_in_spreadsheet(self, file_path: str) -> str:
        from openpyxl.utils import get_column_letter
        from openpyxl.worksheet.worksheet import Worksheet

        p, fwb, _ = self._read_books(file_path)
        rows: list[list[Any]] = []
        for s in fwb._sheets:  # type: ignore[attr-defined]  # worksheets AND chartsheets, in order
            if isinstance(s, Worksheet):
                c2, r2 = used_bounds(s)
                ref = f"A1:{get_column_letter(c2)}{r2}" if r2 else "(empty)"
                rows.append([_tab_of(fwb, s), s.title, ref, r2, c2, s.sheet_state])
            else:
                rows.append(["-", s.title, "(chartsheet, no cells)", 0, 0, s.sheet_state])
        return f"{rel(self.root, p)}\n" + md_table(
            rows, header=["tab_index", "name", "used range", "rows", "cols", "state"]
        )

    @tool
    def add_tab(self, file_path: str, tab_name: str, sheet_data: dict[str, Any] | None) -> str:
        data = sheet_data or {}

        def op(wb: Workbook) -> str:
            _check_title(wb, tab_name)
            ws = wb.create_sheet(tab_name)
            _fill(ws, data.get("headers"), data.get("rows") or [])
            return f"Added sheet {tab_name!r} (sheets: {wb.sheetnames})"

        return self._edit_book(file_path, op)

    @tool
    def delete_tab(self, file_path: str, tab_index: int) -> str:
        def op(wb: Workbook) -> str:
            ws = pick_sheet(wb, tab_index, None)
            if len(wb.worksheets) == 1:
                raise ToolError("cannot delete the only worksheet; delete the file instead")
            wb.remove(ws)
            return f"Deleted sheet {ws.title!r} (sheets: {wb.sheetnames})"

        return self._edit_book(file_path, op)

    @tool
    def edit_spreadsheet(self, file_path: str, operations: list[dict[str, Any]]) -> str:
        if not operations:
            raise ToolError("operations is empty")

        def op(wb: Workbook) -> str:
            done = [apply_op(wb, o, i, pick_sheet) for i, o in enumerate(operations)]
            return "Applied: " + "; ".join(done)

        return self._edit_book(file_path, op)

    @tool
    def add_content_text(self, file_path: str, tab_index: int, cell: str, value: Any) -> str:
        def op(wb: Workbook) -> str:
            ws = pick_sheet(wb, tab_index, None)
            col, row = parse_ref(cell)
            c = ws.cell(row, col)
            if c.value not in (None, ""):
                raise ToolError(
                    f"{ws.title}!{cell.upper()} already holds {fmt(c.value)!r}; use edit_spreadsheet set_cell to overwrite"
                )
            c.value = coerce(value)
            return f"Set {ws.title}!{cell.upper()} = {fmt(c.value)}"

        return self._edit_book(file_path, op)

    @tool
    def delete_content_cell(self, file_path: str, tab_index: int, cell: str) -> str:
        def op(wb: Workbook) -> str:
            ws = pick_sheet(wb, tab_index, None)
            col, row = parse_ref(cell)
            ws.cell(row, col).value = None
            return f"Cleared {ws.title}!{cell.upper()}"

        return self._edit_book(file_path, op)

    @tool
    def create_chart(
        self,
        file_path: str,
        sheet: str,
        data_range: str,
        chart_type: str,
        title: str | None,
        position: str,
        categories_column: int | None,
        include_header: bool,
    ) -> str:
        def op(wb: Workbook) -> str:
            ws = pick_sheet(wb, None, sheet)
            parse_ref(position)
            if categories_column not in (None, 1):
                raise ToolError(
                    "categories_column: only the first column of data_range (1, or null) holds categories here"
                )
            chart, n = make_chart(ws, data_range, chart_type, title, include_header, None, None)
            ws.add_chart(chart, position.upper())
            return f"Added a {chart_type} chart of {n} series from {ws.title}!{data_range.upper()} at {position.upper()}"

        return self._edit_book(file_path, op)

    @tool
    def filter_tab(
        self,
        file_path: str,
        tab_index: int,
        filters: list[dict[str, Any]],
        cell_range: str | None,
        match_all: bool,
        use_headers: bool,
        include_diagnostics: bool,
        compact: bool,
    ) -> str:
        from openpyxl.utils import get_column_letter

        if not filters:
            raise ToolError("filters is empty; pass at least one {column, operator, value}")
        p, _, vwb = self._read_books(file_path)
        vws = pick_sheet(vwb, tab_index, None)
        if cell_range:
            c1, r1, c2, r2 = parse_range(cell_range)
        else:
            (c2, r2), c1, r1 = used_bounds(vws), 1, 1
        rows = [
            list(r)
            for r in vws.iter_rows(
                min_row=r1, max_row=max(r2, r1), min_col=c1, max_col=max(c2, c1), values_only=True
            )
        ]
        header = [fmt(v) for v in rows[0]] if use_headers and rows else None
        letters = [get_column_letter(c1 + i) for i in range(max(c2 - c1 + 1, 1))]
        cols = [_column_index(f.get("column", ""), header, letters) for f in filters]
        hits: list[list[Any]] = []
        start = 1 if header is not None else 0
        for r_i in range(start, len(rows)):
            row = rows[r_i]
            results = [
                matches(row[c], f.get("operator") or "equals", f.get("value"))
                for c, f in zip(cols, filters, strict=True)
            ]
            if all(results) if match_all else any(results):
                hits.append([r1 + r_i, *(fmt(v) for v in row)])
        head = f"{rel(self.root, p)} sheet {vws.title!r}: {len(hits)} matching row(s)"
        if include_diagnostics:
            head += f" of {len(rows) - start} scanned; conditions on columns {[letters[c] for c in cols]} ({'all' if match_all else 'any'} must hold)"
        if compact:
            return head + "\n" + "\n".join(",".join(str(v) for v in h) for h in hits)
        return head + "\n" + md_table(hits, header=["row", *(header or letters)])


class _ValuesView:
    """A worksheet view showing cached values, and the formula only where none is cached."""

    def __init__(self, fws: Worksheet, vws: Worksheet) -> None:
        self.fws, self.vws = fws, vws

    def cell(self, row: int, column: int) -> Any:
        v = self.vws.cell(row, column)
        return self.fws.cell(row, column) if v.value is None else v

    def __getattr__(self, name: str) -> Any:  # everything else (merged cells, title) as the sheet's
        return getattr(self.fws, name)


def _values_or_formulas(fws: Worksheet, vws: Worksheet) -> Any:
    return _ValuesView(fws, vws)


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
