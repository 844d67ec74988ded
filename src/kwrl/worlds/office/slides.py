"""Slides, placeholders, rendering and batch operations for the powerpoint app (python-pptx).

The MCP tools live in `powerpoint.py`; this module holds slide building, `edit_slides`
operations (`apply_op`), chart data and rendering.

Slides, shapes, tables and pictures are addressed by 0-based index in the order python-pptx
lists them (`read_individualslide` prints those indices). Pictures get annotations
`slide{N}_img{M}` (M counts pictures on slide N). Layout names follow Archipelago
(`title`, `title_and_content`, `section_header`, `two_content`, `title_only`, `blank`) and map to
the deck's own layouts by name, then by placeholder kinds. Decks whose masters lack such layouts
(many real decks only have 'Blank') still get a title and bullets: as text boxes named
"Title" / "Body", which the readers and editors treat like the placeholders.

python-pptx (and openpyxl, for chart data read from a workbook) are imported inside the helpers
that use them at run time: the gateway imports this module at start-up for the argument
TypedDicts, and python-pptx costs ~0.1 s to import.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

from fastmcp.exceptions import ToolError

from kwrl.worlds.office.common import cached, existing_file, md_table
from kwrl.worlds.office.sheets import fmt, parse_range
from kwrl.worlds.paths import rel

if TYPE_CHECKING:
    from pptx.presentation import Presentation as PptxPresentation
    from pptx.shapes.base import BaseShape
    from pptx.slide import Slide

LAYOUT_NAMES = {
    "title": ("Title Slide",),
    "title_and_content": ("Title and Content",),
    "section_header": ("Section Header",),
    "two_content": ("Two Content", "Comparison"),
    "title_only": ("Title Only",),
    "blank": ("Blank",),
}


def _body_types() -> tuple[Any, ...]:
    """Placeholder kinds that hold body text: body, object (content) and subtitle."""
    from pptx.enum.shapes import PP_PLACEHOLDER

    return (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT, PP_PLACEHOLDER.SUBTITLE)


def pick_layout(prs: PptxPresentation, layout: str) -> Any:
    from pptx.enum.shapes import PP_PLACEHOLDER

    layouts: list[Any] = list(prs.slide_layouts)
    for name in LAYOUT_NAMES.get(layout, ()):
        for lay in layouts:
            if lay.name.lower() == name.lower():
                return lay
    want_title = layout != "blank"
    want_body = {"title": 1, "section_header": 1, "title_and_content": 1, "two_content": 2}.get(
        layout, 0
    )
    for lay in layouts:
        kinds = [ph.placeholder_format.type for ph in lay.placeholders]
        has_title = any(k in (PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE) for k in kinds)
        bodies = sum(k in _body_types() for k in kinds)
        if has_title == want_title and bodies == want_body:
            return lay
    blank = [lay for lay in layouts if not list(lay.placeholders)]
    return blank[0] if blank else layouts[0]


def slide_at(prs: PptxPresentation, index: int, what: str = "slide_index") -> Slide:
    n = len(prs.slides)
    if not 0 <= index < n:
        raise ToolError(f"{what} {index} out of range; the deck has {n} slide(s) (0-based)")
    return prs.slides[index]


def title_shape(slide: Slide) -> Any:
    if slide.shapes.title is not None:
        return slide.shapes.title
    return next((s for s in slide.shapes if s.name == "Title" and s.has_text_frame), None)


def body_shape(slide: Slide, which: str = "body", *, create: bool = False) -> Any:
    """The body ('body'), left or right content placeholder, or the fallback 'Body' text box."""
    from pptx.util import Inches

    kinds = _body_types()
    bodies = [
        s for s in slide.placeholders if s.placeholder_format.type in kinds and s.has_text_frame
    ]
    bodies.sort(key=lambda s: s.left or 0)
    if which == "right":
        return bodies[1] if len(bodies) > 1 else None
    if bodies:
        return bodies[0]
    named = next((s for s in slide.shapes if s.name == "Body" and s.has_text_frame), None)
    if named is not None or not create:
        return named
    return add_textbox(
        slide, "Body", Inches(0.7), Inches(1.6), slide_width(slide) - Inches(1.4), Inches(5.0)
    )


def subtitle_shape(slide: Slide) -> Any:
    from pptx.enum.shapes import PP_PLACEHOLDER

    subs = [s for s in slide.placeholders if s.placeholder_format.type == PP_PLACEHOLDER.SUBTITLE]
    return subs[0] if subs else body_shape(slide)


def slide_width(slide: Slide) -> int:
    from pptx.util import Inches

    prs_part = slide.part.package.presentation_part
    return int(prs_part.presentation.slide_width or Inches(10))


def add_textbox(slide: Slide, name: str, x: int, y: int, w: int, h: int) -> Any:
    from pptx.util import Emu

    box = slide.shapes.add_textbox(Emu(x), Emu(y), Emu(w), Emu(h))
    box.name = name
    box.text_frame.word_wrap = True
    return box


def set_title(slide: Slide, text: str) -> None:
    from pptx.util import Inches, Pt

    shape = title_shape(slide)
    if shape is None:
        shape = add_textbox(
            slide, "Title", Inches(0.5), Inches(0.3), slide_width(slide) - Inches(1.0), Inches(1.1)
        )
        shape.text_frame.text = text
        run = shape.text_frame.paragraphs[0].runs[0]
        run.font.size, run.font.bold = Pt(32), True
        return
    shape.text_frame.text = text


def set_bullets(shape: Any, items: list[str], *, append: bool = False) -> None:
    tf = shape.text_frame
    if not append:
        tf.text = items[0] if items else ""
        rest = items[1:]
    else:
        rest = items
        if len(tf.paragraphs) == 1 and not tf.paragraphs[0].text:
            tf.paragraphs[0].text = rest[0]
            rest = rest[1:]
    for item in rest:
        tf.add_paragraph().text = item


def fill_table(table: Any, rows: list[list[Any]], header: bool) -> None:
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            cell = table.cell(r, c)
            cell.text = "" if value is None else str(value)
            if r == 0 and header:
                for p in cell.text_frame.paragraphs:
                    for run in p.runs:
                        run.font.bold = True


def check_rows(rows: list[list[Any]], arg: str = "rows") -> None:
    if not rows or not all(isinstance(r, list) and r for r in rows):
        raise ToolError(f"{arg} must be a non-empty list of non-empty rows")
    width = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != width:
            raise ToolError(
                f"{arg}[{i}] has {len(r)} cells; every row must have {width} like the first"
            )


def pictures(slide: Slide) -> list[Any]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    return [s for s in slide.shapes if s.shape_type == MSO_SHAPE_TYPE.PICTURE]


def _inches(v: Any) -> str:
    return "?" if v is None else f"{v / 914400:.2f}"


def _kind(shape: BaseShape) -> str:
    if shape.is_placeholder:
        return (
            f"placeholder:{str(shape.placeholder_format.type).split('.')[-1].split(' ')[0].lower()}"
        )
    if getattr(shape, "has_chart", False):
        return "chart"
    if getattr(shape, "has_table", False):
        return "table"
    st = shape.shape_type
    return str(st).split(".")[-1].split(" ")[0].lower() if st is not None else "shape"


def table_md(table: Any) -> str:
    return md_table([[c.text for c in row.cells] for row in table.rows])


def chart_lines(chart: Any) -> list[str]:
    out = [f"chart type: {str(chart.chart_type).split('.')[-1].split(' ')[0]}"]
    if chart.has_title and chart.chart_title.has_text_frame:
        out.append(f"chart title: {chart.chart_title.text_frame.text}")
    try:
        plot = chart.plots[0]
        cats = list(plot.categories)
        out.append(f"categories: {cats}")
        for s in plot.series:
            out.append(f"series {s.name!r}: {list(s.values)}")
    except (IndexError, KeyError, ValueError, AttributeError):
        out.append("(chart data not readable)")
    return out


def slide_text_md(slide: Slide, index: int) -> str:
    """A slide as markdown: title, every text frame, tables, charts, notes."""
    lines = [f"## Slide {index} ({slide.slide_layout.name})"]
    title = title_shape(slide)
    if title is not None and title.text_frame.text:
        lines.append(f"# {title.text_frame.text}")
    for shape in slide.shapes:
        lines += _shape_text(shape, skip=title)
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        notes = slide.notes_slide.notes_text_frame.text.strip()
        if notes:
            lines.append(f"Notes: {notes}")
    return "\n".join(lines)


def _shape_text(shape: Any, skip: Any) -> list[str]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    if skip is not None and shape.shape_id == skip.shape_id:
        return []
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        return [line for s in shape.shapes for line in _shape_text(s, skip)]
    if getattr(shape, "has_table", False):
        return [table_md(shape.table)]
    if getattr(shape, "has_chart", False):
        return chart_lines(shape.chart)
    if shape.has_text_frame and shape.text_frame.text.strip():
        return [
            f"- {p.text}" if p.level or len(shape.text_frame.paragraphs) > 1 else p.text
            for p in shape.text_frame.paragraphs
            if p.text.strip()
        ]
    return []


def slide_detail(slide: Slide, index: int) -> str:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    lines = [f"Slide {index}: layout {slide.slide_layout.name!r}, {len(slide.shapes)} shape(s)"]
    title = title_shape(slide)
    lines.append(f"title: {title.text_frame.text if title is not None else '(none)'}")
    pic_i = 0
    shapes: list[Any] = list(slide.shapes)
    for i, shape in enumerate(shapes):
        geo = f"x={_inches(shape.left)} y={_inches(shape.top)} w={_inches(shape.width)} h={_inches(shape.height)} in"
        head = f"[shape {i}] {_kind(shape)} {shape.name!r} ({geo})"
        if shape.shape_type == MSO_SHAPE_TYPE.PICTURE:
            head += f" image annotation: slide{index}_img{pic_i} (image_index {pic_i})"
            pic_i += 1
        lines.append(head)
        if getattr(shape, "has_table", False):
            t = shape.table
            lines.append(f"  table {len(t.rows)}x{len(t.columns)}:")
            lines.append(table_md(t))
        elif getattr(shape, "has_chart", False):
            lines += ["  " + x for x in chart_lines(shape.chart)]
        elif shape.shape_type == MSO_SHAPE_TYPE.GROUP:
            lines += ["  " + x for s in shape.shapes for x in _shape_text(s, None)]
        elif shape.has_text_frame:
            for p_i, p in enumerate(shape.text_frame.paragraphs):
                if p.text.strip():
                    lines.append(
                        f"  p{p_i}{' (level ' + str(p.level) + ')' if p.level else ''}: {p.text}"
                    )
    if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
        lines.append(f"notes: {slide.notes_slide.notes_text_frame.text.strip() or '(empty)'}")
    return "\n".join(lines)


Layout = Literal[
    "title", "title_and_content", "section_header", "two_content", "title_only", "blank"
]


class SlideSpec(TypedDict):
    layout: NotRequired[Layout]
    title: NotRequired[str]
    subtitle: NotRequired[str]
    bullets: NotRequired[list[str]]
    table: NotRequired[list[list[str]]]
    notes: NotRequired[str]


class SlideOp(TypedDict):
    type: Literal[
        "replace_text",
        "update_slide_title",
        "update_slide_subtitle",
        "set_bullets",
        "append_bullets",
        "clear_placeholder",
        "update_shape_text",
        "update_table_cell",
        "set_notes",
        "delete_slide",
    ]
    index: NotRequired[int]
    search: NotRequired[str]
    replace: NotRequired[str]
    match_case: NotRequired[bool]
    title: NotRequired[str]
    subtitle: NotRequired[str]
    placeholder: NotRequired[Literal["body", "left", "right"]]
    items: NotRequired[list[str]]
    shape_index: NotRequired[int]
    text: NotRequired[str]
    table_idx: NotRequired[int]
    row: NotRequired[int]
    column: NotRequired[int]
    notes: NotRequired[str]


def auto_shape(name: str) -> Any:
    """python-pptx's auto shape type for an add_shape `shape_type` name."""
    from pptx.enum.shapes import MSO_SHAPE

    return {
        "rectangle": MSO_SHAPE.RECTANGLE,
        "rounded_rectangle": MSO_SHAPE.ROUNDED_RECTANGLE,
        "oval": MSO_SHAPE.OVAL,
        "triangle": MSO_SHAPE.ISOSCELES_TRIANGLE,
        "right_arrow": MSO_SHAPE.RIGHT_ARROW,
        "left_arrow": MSO_SHAPE.LEFT_ARROW,
        "up_arrow": MSO_SHAPE.UP_ARROW,
        "down_arrow": MSO_SHAPE.DOWN_ARROW,
        "pentagon": MSO_SHAPE.REGULAR_PENTAGON,
        "hexagon": MSO_SHAPE.HEXAGON,
        "star": MSO_SHAPE.STAR_5_POINT,
        "heart": MSO_SHAPE.HEART,
        "cloud": MSO_SHAPE.CLOUD,
    }[name]


def chart_kind(name: str) -> Any:
    """python-pptx's chart type for an insert_chart `chart_type` name."""
    from pptx.enum.chart import XL_CHART_TYPE

    return {
        "bar": XL_CHART_TYPE.COLUMN_CLUSTERED,
        "horizontal_bar": XL_CHART_TYPE.BAR_CLUSTERED,
        "line": XL_CHART_TYPE.LINE_MARKERS,
        "pie": XL_CHART_TYPE.PIE,
        "area": XL_CHART_TYPE.AREA,
        "scatter": XL_CHART_TYPE.XY_SCATTER,
        "doughnut": XL_CHART_TYPE.DOUGHNUT,
        "radar": XL_CHART_TYPE.RADAR,
    }[name]


def fill_slide(prs: PptxPresentation, spec: dict[str, Any]) -> Any:
    from pptx.util import Emu, Inches

    layout = spec.get("layout") or "title_and_content"
    slide = prs.slides.add_slide(pick_layout(prs, layout))
    if spec.get("title") is not None and layout != "blank":
        set_title(slide, spec["title"])
    if spec.get("subtitle") is not None:
        sub = subtitle_shape(slide)
        if sub is None:
            sub = body_shape(slide, create=True)
        sub.text_frame.text = spec["subtitle"]
    if spec.get("bullets"):
        set_bullets(body_shape(slide, create=True), list(spec["bullets"]))
    if spec.get("table"):
        rows = spec["table"]
        check_rows(rows, "table")
        frame = slide.shapes.add_table(
            len(rows),
            len(rows[0]),
            Inches(0.5),
            Inches(1.6),
            Inches(9.0),
            Emu(int(Inches(0.4)) * len(rows)),
        )
        fill_table(frame.table, rows, bool(spec.get("table_header", True)))
    if spec.get("notes"):
        notes_frame(slide).text = spec["notes"]
    return slide


def notes_frame(slide: Any) -> Any:
    frame = slide.notes_slide.notes_text_frame
    if frame is None:
        raise ToolError("this slide's notes page has no notes placeholder")
    return frame


def move_slide(prs: PptxPresentation, old: int, new: int) -> None:
    lst = prs.slides._sldIdLst
    el = list(lst)[old]
    lst.remove(el)
    lst.insert(new, el)


def delete_slide_at(prs: PptxPresentation, index: int) -> None:
    slide_at(prs, index)
    lst = prs.slides._sldIdLst
    el = list(lst)[index]
    prs.part.drop_rel(el.rId)
    lst.remove(el)


def apply_op(prs: PptxPresentation, o: dict[str, Any], i: int) -> str:
    kind = o.get("type")
    where = f"operations[{i}] ({kind})"

    def need(key: str) -> Any:
        if o.get(key) is None:
            raise ToolError(f"{where} needs '{key}'")
        return o[key]

    if kind == "replace_text":
        search, repl = need("search"), o.get("replace", "")
        n = 0
        for slide in prs.slides:
            shapes: list[Any] = list(slide.shapes)
            for shape in shapes:
                frames = [shape.text_frame] if shape.has_text_frame else []
                if getattr(shape, "has_table", False):
                    frames += [c.text_frame for row in shape.table.rows for c in row.cells]
                for tf in frames:
                    for p in tf.paragraphs:
                        for run in p.runs:
                            mc = bool(o.get("match_case"))
                            count = (
                                run.text.count(search)
                                if mc
                                else run.text.lower().count(search.lower())
                            )
                            if count:
                                n += count
                                run.text = replace_text_in(run.text, search, repl, mc)
        return f"replaced {n} occurrence(s) of {search!r}"
    if kind == "delete_slide":
        delete_slide_at(prs, need("index"))
        return f"deleted slide {o['index']}"
    slide = slide_at(prs, need("index"), f"{where} index")
    if kind == "update_slide_title":
        set_title(slide, need("title"))
    elif kind == "update_slide_subtitle":
        sub = subtitle_shape(slide)
        if sub is None:
            raise ToolError(f"{where}: slide {o['index']} has no subtitle or body placeholder")
        sub.text_frame.text = need("subtitle")
    elif kind in ("set_bullets", "append_bullets", "clear_placeholder"):
        which = o.get("placeholder") or "body"
        shape = body_shape(slide, which, create=kind != "clear_placeholder" and which == "body")
        if shape is None:
            raise ToolError(f"{where}: slide {o['index']} has no {which} placeholder")
        if kind == "clear_placeholder":
            shape.text_frame.text = ""
        else:
            set_bullets(shape, [str(x) for x in need("items")], append=kind == "append_bullets")
    elif kind == "update_shape_text":
        all_shapes: list[Any] = list(slide.shapes)
        si = need("shape_index")
        if not 0 <= si < len(all_shapes) or not all_shapes[si].has_text_frame:
            raise ToolError(
                f"{where}: shape {si} is not a text shape on slide {o['index']} (see read_individualslide)"
            )
        all_shapes[si].text_frame.text = need("text")
    elif kind == "update_table_cell":
        _table_cell(slide, o, where, need("row"), need("column")).text = str(o.get("text", ""))
    elif kind == "set_notes":
        notes_frame(slide).text = need("notes")
    elif kind == "append_table":
        from pptx.util import Emu, Inches

        rows = need("rows")
        check_rows(rows, f"{where} rows")
        shape = body_shape(slide, o.get("placeholder") or "body")
        left, top = (shape.left, shape.top) if shape is not None else (Inches(0.5), Inches(1.6))
        width = shape.width if shape is not None else Inches(9.0)
        frame = slide.shapes.add_table(
            len(rows), len(rows[0]), left, top, width, Emu(int(Inches(0.4)) * len(rows))
        )
        fill_table(frame.table, rows, bool(o.get("header", True)))
    elif kind == "duplicate_slide":
        import copy

        new = prs.slides.add_slide(slide.slide_layout)
        for ph in list(new.placeholders):
            ph._element.getparent().remove(ph._element)
        for el in slide.shapes._spTree.iterchildren():
            if el.tag.rsplit("}", 1)[-1] in ("sp", "graphicFrame", "grpSp", "cxnSp", "pic"):
                new.shapes._spTree.append(copy.deepcopy(el))
        n = len(prs.slides) - 1
        at = o["index"] + 1 if o.get("position", "after") == "after" else o["index"]
        move_slide(prs, n, at)
        return f"duplicated slide {o['index']} to {at}"
    elif kind in ("apply_text_formatting", "add_hyperlink"):
        shape = (
            body_shape(slide, o.get("placeholder") or "body")
            if o.get("placeholder") not in ("title",)
            else title_shape(slide)
        )
        if shape is None:
            raise ToolError(
                f"{where}: slide {o['index']} has no {o.get('placeholder', 'body')} placeholder"
            )
        paras = list(shape.text_frame.paragraphs)
        if o.get("paragraph_index") is not None:
            if not 0 <= o["paragraph_index"] < len(paras):
                raise ToolError(
                    f"{where}: paragraph_index {o['paragraph_index']} out of range (0..{len(paras) - 1})"
                )
            paras = [paras[o["paragraph_index"]]]
        runs = [r for p in paras for r in p.runs]
        if o.get("run_index") is not None:
            if not 0 <= o["run_index"] < len(runs):
                raise ToolError(
                    f"{where}: run_index {o['run_index']} out of range (0..{len(runs) - 1})"
                )
            runs = [runs[o["run_index"]]]
        for run in runs:
            if kind == "add_hyperlink":
                run.hyperlink.address = need("url")
            else:
                _format_font(run.font, o)
        if kind == "apply_text_formatting" and o.get("alignment"):
            from pptx.enum.text import PP_ALIGN

            align = {
                "left": PP_ALIGN.LEFT,
                "center": PP_ALIGN.CENTER,
                "right": PP_ALIGN.RIGHT,
                "justify": PP_ALIGN.JUSTIFY,
            }
            if o["alignment"] not in align:
                raise ToolError(f"{where}: alignment must be one of {', '.join(align)}")
            for p in paras:
                p.alignment = align[o["alignment"]]
    elif kind == "format_table_cell":
        cell = _table_cell(slide, o, where, need("row"), need("column"))
        for p in cell.text_frame.paragraphs:
            for run in p.runs:
                _format_font(run.font, o)
        if o.get("bg_color"):
            from pptx.dml.color import RGBColor

            cell.fill.solid()
            cell.fill.fore_color.rgb = RGBColor.from_string(_hex(o["bg_color"], "bg_color"))
    else:
        raise ToolError(f"{where}: unknown type {kind!r}")
    return f"{kind} on slide {o['index']}"


def _table_cell(slide: Any, o: dict[str, Any], where: str, r: int, c: int) -> Any:
    """Cell (r, c) of the slide's table `o["table_idx"]` (default 0), or a ToolError naming it."""
    tables: list[Any] = [s for s in slide.shapes if getattr(s, "has_table", False)]
    ti = o.get("table_idx") or 0
    if not 0 <= ti < len(tables):
        raise ToolError(
            f"{where}: table {ti} not found; slide {o['index']} has {len(tables)} table(s)"
        )
    t = tables[ti].table
    if not (0 <= r < len(t.rows) and 0 <= c < len(t.columns)):
        raise ToolError(
            f"{where}: cell ({r}, {c}) outside the {len(t.rows)}x{len(t.columns)} table"
        )
    return t.cell(r, c)


def _hex(value: str, arg: str) -> str:
    v = value.strip().lstrip("#")
    if not re.fullmatch(r"[0-9A-Fa-f]{6}", v):
        raise ToolError(f"{arg} must be a 6-digit hex colour like 'FF0000'; got {value!r}")
    return v.upper()


def _format_font(font: Any, o: dict[str, Any]) -> None:
    from pptx.dml.color import RGBColor
    from pptx.util import Pt

    for key in ("bold", "italic", "underline"):
        if o.get(key) is not None:
            setattr(font, key, o[key])
    if o.get("font_size") is not None:
        font.size = Pt(o["font_size"])
    if o.get("font_name"):
        font.name = o["font_name"]
    if o.get("font_color"):
        font.color.rgb = RGBColor.from_string(_hex(o["font_color"], "font_color"))


def replace_text_in(text: str, search: str, repl: str, match_case: bool) -> str:
    if match_case:
        return text.replace(search, repl)
    return re.sub(re.escape(search), lambda _: repl, text, flags=re.IGNORECASE)


def picture_at(prs: PptxPresentation, slide_index: int, image_index: int) -> Any:
    pics = pictures(slide_at(prs, slide_index))
    if not 0 <= image_index < len(pics):
        raise ToolError(
            f"image {image_index} not found; slide {slide_index} has {len(pics)} picture(s)"
        )
    return pics[image_index]


def read_sheet_range(
    root: Path, path: str | None, sheet: str | None, rng: str | None
) -> list[list[Any]]:
    if not path or not rng:
        raise ToolError("pass data (a 2D list), or spreadsheet_path and data_range")
    import openpyxl

    p = existing_file(root, path, (".xlsx", ".xlsm"), arg="spreadsheet_path")
    wb = cached(root, p, lambda q: openpyxl.load_workbook(q, data_only=True), "Excel (.xlsx)", "v")
    if sheet is not None and sheet not in wb.sheetnames:
        raise ToolError(f"sheet {sheet!r} not found in {rel(root, p)}; sheets: {wb.sheetnames}")
    ws = wb[sheet] if sheet else wb.worksheets[0]
    c1, r1, c2, r2 = parse_range(rng)
    return [
        list(r)
        for r in ws.iter_rows(min_row=r1, max_row=r2, min_col=c1, max_col=c2, values_only=True)
    ]


def to_number(v: Any, where: str) -> float | None:
    if v is None or v == "":
        return None
    try:
        return float(str(v).replace(",", "")) if not isinstance(v, int | float) else float(v)
    except ValueError as exc:
        raise ToolError(f"chart value {v!r} at {where} is not a number") from exc


def build_chart_data(table: list[list[Any]], chart_type: str, include_header: bool) -> Any:
    from pptx.chart.data import CategoryChartData, XyChartData

    check_rows(table, "data")
    if len(table[0]) < 2:
        raise ToolError(
            "chart data needs at least 2 columns: categories, then one column per series"
        )
    header = (
        [fmt(v) for v in table[0]]
        if include_header
        else ["", *(f"Series {i}" for i in range(1, len(table[0])))]
    )
    body = table[1:] if include_header else table
    if not body:
        raise ToolError("chart data has no data rows")
    if chart_type == "scatter":
        xy = XyChartData()
        for c in range(1, len(header)):
            series = xy.add_series(header[c] or f"Series {c}")
            for r, row in enumerate(body):
                xv, yv = to_number(row[0], f"row {r}"), to_number(row[c], f"row {r}")
                if xv is not None and yv is not None:
                    series.add_data_point(xv, yv)
        return xy
    cd = CategoryChartData()
    cd.categories = [fmt(row[0]) for row in body]
    for c in range(1, len(header)):
        cd.add_series(
            header[c] or f"Series {c}",
            [to_number(row[c], f"row {r}, column {c}") for r, row in enumerate(body)],
        )
    return cd
