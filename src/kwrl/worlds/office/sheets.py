"""Cell references, value rendering, batch operations, charts and filters for the excel app.

Pure helpers over openpyxl objects; the MCP tools live in `excel.py`. References are A1
notation, case-insensitive, optionally with `$` anchors; ranges `A1:C10`.

openpyxl is imported inside the helpers that need it, never at module level: the gateway imports
this module (for the argument TypedDicts) at start-up, and openpyxl costs ~0.25 s to import.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

from fastmcp.exceptions import ToolError

from kwrl.worlds.office.common import md_table, parse_color

if TYPE_CHECKING:
    from openpyxl.workbook.workbook import Workbook
    from openpyxl.worksheet.worksheet import Worksheet

    SheetPicker = Callable[[Workbook, int | None, str | None], Worksheet]

CellValue = str | int | float | bool | None


class SheetSpec(TypedDict):
    name: str
    headers: NotRequired[list[CellValue]]
    rows: NotRequired[list[list[CellValue]]]


class FilterCondition(TypedDict):
    column: str
    """Column letter ('C') or header name."""
    operator: str
    value: NotRequired[CellValue]


class SheetOp(TypedDict):
    type: Literal[
        "set_cell",
        "set_range",
        "append_rows",
        "rename_sheet",
        "format_cells",
        "merge_cells",
        "set_column_width",
        "insert_rows",
        "delete_rows",
    ]
    sheet: NotRequired[str]
    cell: NotRequired[str]
    range: NotRequired[str]
    value: NotRequired[CellValue]
    values: NotRequired[list[list[CellValue]]]
    rows: NotRequired[list[list[CellValue]]]
    new_name: NotRequired[str]
    bold: NotRequired[bool]
    italic: NotRequired[bool]
    font_size: NotRequired[float]
    font_color: NotRequired[str]
    fill_color: NotRequired[str]
    number_format: NotRequired[str]
    horizontal_alignment: NotRequired[str]
    column: NotRequired[str]
    width: NotRequired[float]
    row: NotRequired[int]
    count: NotRequired[int]


_REF = re.compile(r"^\$?([A-Za-z]{1,3})\$?([1-9][0-9]{0,6})$")


def parse_ref(ref: str) -> tuple[int, int]:
    """'B5' -> (col 2, row 5)."""
    from openpyxl.utils import column_index_from_string

    m = _REF.match(str(ref).strip())
    if not m:
        raise ToolError(f"bad cell reference {ref!r}; use A1 notation like 'B5'")
    col = column_index_from_string(m.group(1).upper())
    if col > 16384:
        raise ToolError(f"bad cell reference {ref!r}: column beyond XFD")
    return col, int(m.group(2))


def parse_range(rng: str) -> tuple[int, int, int, int]:
    """'A1:C10' -> (c1, r1, c2, r2), normalised so c1 <= c2 and r1 <= r2."""
    parts = str(rng).strip().split("!")[-1].split(":")
    if len(parts) != 2:
        raise ToolError(f"bad range {rng!r}; use 'A1:C10'")
    (a, b), (c, d) = parse_ref(parts[0]), parse_ref(parts[1])
    return min(a, c), min(b, d), max(a, c), max(b, d)


def fmt(v: Any) -> str:
    """A cell value as text a model reads unambiguously."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return repr(round(v, 10))
    if isinstance(v, dt.datetime):
        return v.date().isoformat() if v.time() == dt.time() else v.isoformat(sep=" ")
    if isinstance(v, dt.date | dt.time):
        return v.isoformat()
    return str(v)


_NUM = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?$")


def coerce(v: Any) -> Any:
    """Numbers sent as strings ('42', '3.5') become numbers; '=...' stays a formula string."""
    if isinstance(v, str) and _NUM.match(v.strip()):
        s = v.strip()
        return float(s) if "." in s else int(s)
    return v


def used_bounds(ws: Worksheet) -> tuple[int, int]:
    """(last column, last row) holding a value; (0, 0) for an empty sheet."""
    max_r = max_c = 0
    for row in ws.iter_rows(values_only=False):
        for c in row:
            if c.value is not None and c.value != "":
                max_r = max(max_r, c.row)  # type: ignore[arg-type]
                max_c = max(max_c, c.column)  # type: ignore[arg-type]
    return max_c, max_r


def render_sheet(fws: Worksheet, vws: Worksheet, c1: int, r1: int, c2: int, r2: int) -> str:
    from openpyxl.utils import get_column_letter

    if c2 < c1 or r2 < r1:
        return "(empty sheet)"
    rows: list[list[str]] = []
    n_formulas = n_uncached = 0
    for r in range(r1, r2 + 1):
        out = [str(r)]
        for c in range(c1, c2 + 1):
            f = fws.cell(r, c).value
            if isinstance(f, str) and f.startswith("="):
                n_formulas += 1
                v = vws.cell(r, c).value
                if v is None:
                    n_uncached += 1
                out.append(f"{f} → {'(no cached value)' if v is None else fmt(v)}")
            elif f is not None and type(f).__name__ == "ArrayFormula":
                n_formulas += 1
                out.append(f"{getattr(f, 'text', '')} (array) → {fmt(vws.cell(r, c).value)}")
            else:
                out.append(fmt(f))
        rows.append(out)
    header = ["", *(get_column_letter(c) for c in range(c1, c2 + 1))]
    notes = [f"range {get_column_letter(c1)}{r1}:{get_column_letter(c2)}{r2}"]
    if n_formulas:
        notes.append(f"{n_formulas} formula cell(s) shown as '=FORMULA → cached value'")
    if n_uncached:
        notes.append(
            f"{n_uncached} formula(s) have no cached value (written since the last recalculation; not computed here)"
        )
    if fws.merged_cells.ranges:
        notes.append("merged: " + ", ".join(str(m) for m in list(fws.merged_cells.ranges)[:20]))
    return "; ".join(notes) + "\n" + md_table(rows, header=header)


def apply_op(wb: Workbook, op: SheetOp | dict[str, Any], i: int, pick: SheetPicker) -> str:
    """Apply one edit_spreadsheet operation (upstream's operation types); a short description."""
    from openpyxl.styles import Alignment, Border, Font, PatternFill, Side
    from openpyxl.utils import get_column_letter

    o: dict[str, Any] = {k: v for k, v in dict(op).items() if v is not None}
    kind = o.get("type")
    where = f"operations[{i}] ({kind})"

    def need(key: str) -> Any:
        if o.get(key) is None:
            raise ToolError(f"{where} needs '{key}'")
        return o[key]

    if kind == "delete_named_range":
        name = need("name")
        if name not in wb.defined_names:
            raise ToolError(f"{where}: no named range {name!r}")
        del wb.defined_names[name]
        return f"deleted named range {name!r}"
    if kind == "append_rows" and o.get("sheet") and o["sheet"] not in wb.sheetnames:
        wb.create_sheet(o["sheet"])  # upstream: the sheet is created if it does not exist
    ws = pick(wb, None, o.get("sheet"))
    if kind == "set_cell":
        col, row = parse_ref(need("cell"))
        ws.cell(row, col).value = coerce(o.get("value"))
        return f"{ws.title}!{o['cell'].upper()}"
    if kind == "append_rows":
        rows = o.get("rows") or []
        last = used_bounds(ws)[1]  # max_row counts formatted-but-empty rows; append after real data
        for dr, row in enumerate(rows, start=1):
            for dc, v in enumerate(row, start=1):
                ws.cell(last + dr, dc).value = coerce(v)
        return f"{len(rows)} row(s) appended to {ws.title} at row {last + 1}"
    if kind == "rename_sheet":
        new = need("new_name")
        if not new or len(new) > 31 or any(ch in new for ch in "\\/?*[]:") or new in wb.sheetnames:
            raise ToolError(
                f"{where}: new_name {new!r} must be a new 1-31 character name without \\ / ? * [ ] :"
            )
        old, ws.title = ws.title, new
        return f"renamed {old!r} to {new!r}"
    if kind in ("format_cells", "set_number_format"):
        c1, r1, c2, r2 = _cells(ws, need("range"))
        font_keys = (
            "font_name",
            "font_size",
            "font_bold",
            "font_italic",
            "font_underline",
            "font_color",
        )
        font_color = parse_color(o["font_color"], arg="font_color") if o.get("font_color") else None
        fill = parse_color(o["fill_color"], arg="fill_color") if o.get("fill_color") else None
        side = (
            Side(
                style=o["border_style"],
                color=parse_color(o.get("border_color") or "000000", arg="border_color"),
            )
            if o.get("border_style")
            else None
        )
        for r in range(r1, r2 + 1):
            for c in range(c1, c2 + 1):
                cell = ws.cell(r, c)
                if kind == "set_number_format":
                    cell.number_format = need("format")
                    continue
                if any(k in o for k in font_keys):
                    f = cell.font
                    cell.font = Font(
                        name=o.get("font_name", f.name),
                        size=o.get("font_size", f.size),
                        bold=o.get("font_bold", f.bold),
                        italic=o.get("font_italic", f.italic),
                        underline=("single" if o["font_underline"] else None)
                        if "font_underline" in o
                        else f.underline,
                        color=font_color or f.color,
                    )
                if fill:
                    cell.fill = PatternFill(
                        start_color=fill, end_color=fill, fill_type=o.get("fill_pattern", "solid")
                    )
                if any(k in o for k in ("horizontal_alignment", "vertical_alignment", "wrap_text")):
                    a = cell.alignment
                    cell.alignment = Alignment(
                        horizontal=o.get("horizontal_alignment", a.horizontal),
                        vertical=o.get("vertical_alignment", a.vertical),
                        wrap_text=o.get("wrap_text", a.wrap_text),
                    )
                if side is not None:
                    sides = [
                        s.lower()
                        for s in o.get("border_sides") or ["left", "right", "top", "bottom"]
                    ]
                    cell.border = Border(
                        left=side if "left" in sides else None,
                        right=side if "right" in sides else None,
                        top=side if "top" in sides else None,
                        bottom=side if "bottom" in sides else None,
                    )
        return f"formatted {ws.title}!{o['range'].upper()}"
    if kind in ("merge_cells", "unmerge_cells"):
        rng = _as_range(need("range")).upper()
        (ws.merge_cells if kind == "merge_cells" else ws.unmerge_cells)(rng)
        return f"{kind.split('_')[0]}d {ws.title}!{rng}"
    if kind == "set_column_width":
        col = str(need("column")).upper()
        if not col.isalpha():
            raise ToolError(f"{where}: column {col!r} must be a letter like 'B'")
        ws.column_dimensions[col].width = float(need("width"))
        return f"column {col} width {o['width']}"
    if kind == "set_row_height":
        ws.row_dimensions[int(need("row"))].height = float(need("height"))
        return f"row {o['row']} height {o['height']}"
    if kind == "freeze_panes":
        ws.freeze_panes = o["cell"].upper() if o.get("cell") else None
        return f"froze {ws.title} at {o.get('cell') or '(none)'}"
    if kind == "set_auto_filter":
        if o.get("range"):
            ws.auto_filter.ref = _as_range(o["range"]).upper()
        else:
            c2, r2 = used_bounds(ws)
            ws.auto_filter.ref = f"A1:{get_column_letter(max(c2, 1))}{max(r2, 1)}"
        return f"auto filter on {ws.title}!{ws.auto_filter.ref}"
    if kind == "add_named_range":
        from openpyxl.workbook.defined_name import DefinedName

        c1, r1, c2, r2 = parse_range(_as_range(need("range")))
        ref = f"'{ws.title}'!${get_column_letter(c1)}${r1}:${get_column_letter(c2)}${r2}"
        wb.defined_names[need("name")] = DefinedName(o["name"], attr_text=ref)
        return f"named range {o['name']!r} = {ref}"
    raise ToolError(f"{where}: operation type {kind!r} is not supported here")


def _cells(ws: Any, rng: str) -> tuple[int, int, int, int]:
    """A1, A1:B5, whole columns ('A:A') or rows ('1:5') as (c1, r1, c2, r2) within the used range."""
    from openpyxl.utils import column_index_from_string

    a, _, b = rng.strip().upper().partition(":")
    b = b or a
    c2max, r2max = (max(n, 1) for n in used_bounds(ws))
    if a.isalpha() and b.isalpha():
        return column_index_from_string(a), 1, column_index_from_string(b), r2max
    if a.isdigit() and b.isdigit():
        return 1, int(a), c2max, int(b)
    return parse_range(f"{a}:{b}")


def _as_range(r: str) -> str:
    return r if ":" in r else f"{r}:{r}"


def make_chart(
    ws: Worksheet,
    data_range: str,
    chart_type: str,
    title: str | None,
    include_header: bool,
    x_title: str | None,
    y_title: str | None,
) -> tuple[Any, int]:
    from openpyxl.chart import AreaChart, BarChart, LineChart, PieChart, Reference, ScatterChart
    from openpyxl.chart.series_factory import SeriesFactory

    c1, r1, c2, r2 = parse_range(data_range)
    if c2 <= c1:
        raise ToolError(
            f"data_range {data_range!r} needs at least 2 columns: categories, then one column per series"
        )
    first_data = r1 + 1 if include_header else r1
    if first_data > r2:
        raise ToolError(f"data_range {data_range!r} has no data rows")
    charts = {
        "bar": BarChart,
        "column": BarChart,
        "line": LineChart,
        "pie": PieChart,
        "area": AreaChart,
        "scatter": ScatterChart,
    }
    chart = charts[chart_type]()
    if chart_type == "bar":
        chart.type = "bar"
    elif chart_type == "column":
        chart.type = "col"
    cats = Reference(ws, min_col=c1, min_row=first_data, max_row=r2)
    if chart_type == "scatter":
        for c in range(c1 + 1, c2 + 1):
            ys = Reference(ws, min_col=c, min_row=r1, max_row=r2)
            chart.series.append(SeriesFactory(ys, cats, title_from_data=include_header))
    else:
        data = Reference(ws, min_col=c1 + 1, max_col=c2, min_row=r1, max_row=r2)
        chart.add_data(data, titles_from_data=include_header)
        chart.set_categories(cats)
    if title:
        chart.title = title
    if chart_type != "pie":
        if x_title:
            chart.x_axis.title = x_title
        if y_title:
            chart.y_axis.title = y_title
    return chart, c2 - c1


_OPS = {
    "greater_than_or_equal": "greater_or_equal",
    "less_than_or_equal": "less_or_equal",
    "=": "equals",
    "==": "equals",
    "eq": "equals",
    "!=": "not_equals",
    "<>": "not_equals",
    "ne": "not_equals",
    ">": "greater_than",
    "gt": "greater_than",
    ">=": "greater_or_equal",
    "ge": "greater_or_equal",
    "<": "less_than",
    "lt": "less_than",
    "<=": "less_or_equal",
    "le": "less_or_equal",
}
OPERATORS = (
    "equals",
    "not_equals",
    "greater_than",
    "greater_or_equal",
    "less_than",
    "less_or_equal",
    "contains",
    "not_contains",
    "starts_with",
    "ends_with",
    "is_empty",
    "is_not_empty",
)


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    try:
        return float(str(v).replace(",", "").strip())
    except ValueError:
        return None


def matches(cell: Any, operator: str, value: Any) -> bool:
    op = _OPS.get(operator.strip().lower(), operator.strip().lower())
    if op not in OPERATORS:
        raise ToolError(f"unknown filter operator {operator!r}; use one of {', '.join(OPERATORS)}")
    text = fmt(cell)
    if op == "is_empty":
        return text == ""
    if op == "is_not_empty":
        return text != ""
    a, b = _num(cell), _num(value)
    if op in ("greater_than", "greater_or_equal", "less_than", "less_or_equal"):
        if a is None or b is None:
            return False
        return {
            "greater_than": a > b,
            "greater_or_equal": a >= b,
            "less_than": a < b,
            "less_or_equal": a <= b,
        }[op]
    want = fmt(value).lower()
    low = text.lower()
    if op in ("equals", "not_equals"):
        same = (a == b) if a is not None and b is not None else low == want
        return same if op == "equals" else not same
    if op == "contains":
        return want in low
    if op == "not_contains":
        return want not in low
    if op == "starts_with":
        return low.startswith(want)
    return low.endswith(want)
