"""Slides, placeholders and rendering for the powerpoint app (python-pptx).

Slides, shapes, tables and pictures are addressed by 0-based index in the order python-pptx
lists them (`read_individualslide` prints those indices). Pictures get annotations
`slide{N}_img{M}` (M counts pictures on slide N). Layout names follow Archipelago
(`title`, `title_and_content`, `section_header`, `two_content`, `title_only`, `blank`) and map to
the deck's own layouts by name, then by placeholder kinds. Decks whose masters lack such layouts
(many real decks only have 'Blank') still get a title and bullets: as text boxes named
"Title" / "Body", which the readers and editors treat like the placeholders.
"""

from __future__ import annotations

from typing import Any

from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER
from pptx.presentation import Presentation as PptxPresentation
from pptx.shapes.base import BaseShape
from pptx.slide import Slide
from pptx.util import Emu, Inches, Pt

from kwrl.worlds.apps.base import ToolError
from kwrl.worlds.apps.office_common import md_table

LAYOUT_NAMES = {
    "title": ("Title Slide",),
    "title_and_content": ("Title and Content",),
    "section_header": ("Section Header",),
    "two_content": ("Two Content", "Comparison"),
    "title_only": ("Title Only",),
    "blank": ("Blank",),
}
_TITLE_TYPES = (PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE)
_BODY_TYPES = (PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT)


def pick_layout(prs: PptxPresentation, layout: str) -> Any:
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
        has_title = any(k in _TITLE_TYPES for k in kinds)
        bodies = sum(k in (*_BODY_TYPES, PP_PLACEHOLDER.SUBTITLE) for k in kinds)
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
    bodies = [
        s
        for s in slide.placeholders
        if s.placeholder_format.type in (*_BODY_TYPES, PP_PLACEHOLDER.SUBTITLE) and s.has_text_frame
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
    subs = [s for s in slide.placeholders if s.placeholder_format.type == PP_PLACEHOLDER.SUBTITLE]
    return subs[0] if subs else body_shape(slide)


def slide_width(slide: Slide) -> int:
    prs_part = slide.part.package.presentation_part
    return int(prs_part.presentation.slide_width or Inches(10))


def add_textbox(slide: Slide, name: str, x: int, y: int, w: int, h: int) -> Any:
    box = slide.shapes.add_textbox(Emu(x), Emu(y), Emu(w), Emu(h))
    box.name = name
    box.text_frame.word_wrap = True
    return box


def set_title(slide: Slide, text: str) -> None:
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
