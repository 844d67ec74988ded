"""The powerpoint app: .pptx decks through python-pptx (ARCH mcp_servers/presentations).

Contract: `PowerpointApp(roots)`, app "powerpoint" of the table; upstream's tools and arguments
(each under a `request` envelope; the deck is made by `create_deck` and removed by `delete_deck`, idempotently);
every path confined to `roots.filesystem`. read_slides reads the deck's markdown by character
`start`/`end` (at most 10,000 at a time); insert_chart takes its data from a spreadsheet range and
places it at a preset `position` (body, left, right). Slides are 0-based (`slide_index`); `read_individualslide` prints shape,
table and picture indices and image annotations (`slide0_img0`) that the other tools take.
Positions and sizes are inches from the slide's top-left corner (a default deck is 10 x 7.5 in).
`edit_slides` applies a list of operations to one fresh parse and saves once: all or nothing.
python-pptx is imported inside the tools that use it, so building the app (gateway start-up) does
not pay for it.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastmcp.utilities.types import Image as McpImage

from kwrl.worlds.apps.base import ToolError, WorldApp, confine, rel, tool
from kwrl.worlds.office.common import (
    cached,
    delete_file,
    edit_file,
    existing_file,
    file_lock,
    image_file,
    image_result,
    md_table,
    new_file,
    parse_color,
    save_atomic,
    transform_image,
)
from kwrl.worlds.office.slides import (
    apply_op,
    auto_shape,
    body_shape,
    build_chart_data,
    chart_kind,
    check_rows,
    fill_slide,
    fill_table,
    move_slide,
    picture_at,
    pictures,
    read_sheet_range,
    set_bullets,
    slide_at,
    slide_detail,
    slide_text_md,
    title_shape,
)

if TYPE_CHECKING:
    from pptx.presentation import Presentation as PptxPresentation

KIND = "PowerPoint (.pptx)"
EXTS = (".pptx",)


def _load(p: Path) -> PptxPresentation:
    from pptx import Presentation

    return Presentation(str(p))


MAX_READ_CHARS = 10_000
# insert_chart's position presets (inches: x, y, width, height), as upstream describes them.
CHART_POSITIONS = {
    "body": (1.0, 1.5, 8.0, 5.0),
    "left": (0.5, 1.5, 4.5, 5.0),
    "right": (5.0, 1.5, 4.5, 5.0),
}


class PowerpointApp(WorldApp):
    """The powerpoint app: its tools read and edit the world's decks (module docstring)."""

    def _read_deck(self, file_path: str) -> tuple[Path, PptxPresentation]:
        p = existing_file(self.root, file_path, EXTS)
        return p, cached(self.root, p, _load, KIND)

    def _edit_deck(self, file_path: str, fn: Any) -> str:
        return edit_file(self.root, file_path, EXTS, _load, KIND, fn)

    @tool
    def create_deck(
        self,
        directory: str,
        file_name: str,
        slides: list[dict[str, Any]],
        metadata: dict[str, Any] | None,
    ) -> str:
        from pptx import Presentation

        target = new_file(self.root, directory, file_name, ".pptx", overwrite=True)
        prs = Presentation()
        for spec in slides:
            columns = spec.get("columns") or {}
            slide = fill_slide(prs, {
                "layout": spec.get("layout"), "title": spec.get("title"),
                "subtitle": spec.get("subtitle"), "notes": spec.get("notes"),
                "bullets": None if columns else (spec.get("bullets") or {}).get("items"),
                "table": None if columns else (spec.get("table") or {}).get("rows"),
                "table_header": (spec.get("table") or {}).get("header", True),
            })  # fmt: skip
            for side in ("left", "right"):
                items = (columns.get(side) or {}).get("items")
                if items:
                    shape = body_shape(slide, side)
                    if shape is None:
                        raise ToolError(
                            f"columns need the 'two_content' layout (slide {len(prs.slides) - 1})"
                        )
                    set_bullets(shape, [str(x) for x in items])
        for key, value in (metadata or {}).items():
            if value is not None:
                setattr(prs.core_properties, key, value)
        with file_lock(target):
            save_atomic(prs, target)
        return f"Created {rel(self.root, target)} with {len(prs.slides)} slide(s)"

    @tool
    def delete_deck(self, file_path: str) -> str:
        p = confine(self.root, file_path, kind="file")
        if not p.exists():
            return f"Deleted {file_path} (it did not exist)"
        return delete_file(self.root, file_path, EXTS)

    @tool
    def add_slide(
        self,
        file_path: str,
        index: int,
        layout: str,
        title: str | None,
        subtitle: str | None,
        bullets: list[str] | None,
    ) -> str:
        notes = None

        def op(prs: PptxPresentation) -> str:
            n = len(prs.slides)
            at = index
            if not 0 <= at <= n:
                raise ToolError(f"index {at} out of range; use 0..{n} (the deck has {n} slides)")
            spec: dict[str, Any] = {
                "layout": layout,
                "title": title,
                "subtitle": subtitle,
                "bullets": bullets,
                "notes": notes,
            }
            fill_slide(prs, dict(spec))
            if at != n:
                move_slide(prs, n, at)
            return f"Added slide {at} ({layout})"

        return self._edit_deck(file_path, op)

    @tool
    def edit_slides(
        self, file_path: str, operations: list[dict[str, Any]], metadata: dict[str, Any] | None
    ) -> str:
        if not operations:
            raise ToolError("operations is empty")

        def op(prs: PptxPresentation) -> str:
            done = [apply_op(prs, {k: v for k, v in o.items() if v is not None}, i)
                    for i, o in enumerate(operations)]  # fmt: skip
            for key, value in (metadata or {}).items():
                if value is not None:
                    setattr(prs.core_properties, key, value)
            return "Applied: " + "; ".join(done)

        return self._edit_deck(file_path, op)

    @tool
    def read_slides(self, file_path: str, start: int | None, end: int | None) -> str:
        p = existing_file(self.root, file_path, EXTS)

        def render(q: Path) -> str:
            prs = cached(self.root, q, _load, KIND)
            body = "\n\n".join(slide_text_md(s, i) for i, s in enumerate(prs.slides))
            return f"{rel(self.root, q)}: {len(prs.slides)} slide(s)\n\n{body}"

        text = cached(self.root, p, render, KIND, "read_slides")
        lo = start or 0
        hi = end if end is not None else min(lo + MAX_READ_CHARS, len(text))
        if lo < 0 or hi < lo or hi - lo > MAX_READ_CHARS:
            raise ToolError(
                f"start/end must satisfy 0 <= start <= end and end - start <= {MAX_READ_CHARS}"
            )
        more = (
            f"\n\n[characters {lo}-{min(hi, len(text))} of {len(text)}; read on with start={hi}]"
            if hi < len(text)
            else ""
        )
        return text[lo:hi] + more

    @tool
    def read_completedeck(self, file_path: str) -> str:
        p, prs = self._read_deck(file_path)
        rows = []
        for i, s in enumerate(prs.slides):
            t = title_shape(s)
            shapes: list[Any] = list(s.shapes)
            preview = " / ".join(
                sh.text_frame.text.replace("\n", " ")
                for sh in shapes
                if sh.has_text_frame and sh.text_frame.text
            )
            rows.append(
                [
                    i,
                    s.slide_layout.name,
                    t.text_frame.text if t is not None else "",
                    len(s.shapes),
                    preview[:120],
                ]
            )
        w, h = prs.slide_width or 0, prs.slide_height or 0
        head = f"{rel(self.root, p)}: {len(prs.slides)} slide(s), {w / 914400:.2f} x {h / 914400:.2f} in\n"
        return head + md_table(rows, header=["slide", "layout", "title", "shapes", "text"])

    @tool
    def read_individualslide(self, file_path: str, slide_index: int) -> str:
        p, prs = self._read_deck(file_path)
        slide = slide_at(prs, slide_index)
        return cached(
            self.root, p, lambda _: slide_detail(slide, slide_index), KIND, f"slide:{slide_index}"
        )

    @tool
    def add_shape(
        self,
        file_path: str,
        slide_index: int,
        shape_type: str,
        x: float,
        y: float,
        width: float,
        height: float,
        fill_color: str | None,
        line_color: str | None,
        line_width: float | None,
        text: str | None,
        text_color: str | None,
        font_size: float | None,
    ) -> str:
        colors = {
            k: parse_color(v, arg=k)
            for k, v in (
                ("fill_color", fill_color),
                ("line_color", line_color),
                ("text_color", text_color),
            )
            if v
        }
        if width <= 0 or height <= 0:
            raise ToolError("width and height must be > 0 inches")

        def op(prs: PptxPresentation) -> str:
            from pptx.dml.color import RGBColor
            from pptx.util import Inches, Pt

            slide = slide_at(prs, slide_index)
            shp: Any = slide.shapes.add_shape(
                auto_shape(shape_type), Inches(x), Inches(y), Inches(width), Inches(height)
            )
            if "fill_color" in colors:
                shp.fill.solid()
                shp.fill.fore_color.rgb = RGBColor.from_string(colors["fill_color"])
            if "line_color" in colors:
                shp.line.color.rgb = RGBColor.from_string(colors["line_color"])
            if line_width is not None:
                shp.line.width = Pt(line_width)
            if text is not None:
                shp.text_frame.text = text
                for run in shp.text_frame.paragraphs[0].runs:
                    if "text_color" in colors:
                        run.font.color.rgb = RGBColor.from_string(colors["text_color"])
                    if font_size:
                        run.font.size = Pt(font_size)
            return f"Added {shape_type} as shape {len(slide.shapes) - 1} on slide {slide_index}"

        return self._edit_deck(file_path, op)

    @tool
    def insert_table(
        self,
        file_path: str,
        slide_index: int,
        rows: list[list[Any]],
        header: bool,
        x: float,
        y: float,
        width: float,
        height: float,
    ) -> str:
        check_rows(rows)

        def op(prs: PptxPresentation) -> str:
            from pptx.util import Inches

            slide = slide_at(prs, slide_index)
            frame = slide.shapes.add_table(
                len(rows), len(rows[0]), Inches(x), Inches(y), Inches(width), Inches(height)
            )
            fill_table(frame.table, rows, header)
            return f"Inserted a {len(rows)}x{len(rows[0])} table on slide {slide_index}"

        return self._edit_deck(file_path, op)

    @tool
    def insert_chart(
        self,
        presentation_path: str,
        slide_index: int,
        spreadsheet_path: str,
        sheet_name: str,
        data_range: str,
        chart_type: str,
        title: str | None,
        position: str,
        include_header: bool,
    ) -> str:
        table = read_sheet_range(self.root, spreadsheet_path, sheet_name, data_range)
        chart_data = build_chart_data(table, chart_type, include_header)
        x, y, width, height = CHART_POSITIONS[position]

        def op(prs: PptxPresentation) -> str:
            from pptx.util import Inches

            slide = slide_at(prs, slide_index)
            frame: Any = slide.shapes.add_chart(
                chart_kind(chart_type),
                Inches(x),
                Inches(y),
                Inches(width),
                Inches(height),
                chart_data,
            )
            if title:
                frame.chart.has_title = True
                frame.chart.chart_title.text_frame.text = title
            return f"Inserted a {chart_type} chart on slide {slide_index}"

        return self._edit_deck(presentation_path, op)

    @tool
    def add_image(
        self,
        file_path: str,
        image_path: str,
        slide_index: int,
        x: float,
        y: float,
        width: float | None,
        height: float | None,
    ) -> str:
        img = image_file(self.root, image_path)

        def op(prs: PptxPresentation) -> str:
            from pptx.util import Inches

            slide = slide_at(prs, slide_index)
            try:
                slide.shapes.add_picture(
                    str(img),
                    Inches(x),
                    Inches(y),
                    Inches(width) if width else None,
                    Inches(height) if height else None,
                )
            except Exception as exc:
                raise ToolError(
                    f"{image_path!r} is not a readable image: {type(exc).__name__}: {exc}"
                ) from exc
            n = len(pictures(slide)) - 1
            return f"Added image slide{slide_index}_img{n} on slide {slide_index}"

        return self._edit_deck(file_path, op)

    @tool
    def modify_image(
        self,
        file_path: str,
        slide_index: int,
        image_index: int,
        operation: str,
        rotation: float | None,
        flip: str | None,
        brightness: float | None,
        contrast: float | None,
        crop_left: int | None,
        crop_top: int | None,
        crop_right: int | None,
        crop_bottom: int | None,
    ) -> str:
        from PIL import Image as PILImage

        def op(prs: PptxPresentation) -> str:
            pic = picture_at(prs, slide_index, image_index)
            part = pic.part.related_part(pic._element.blip_rId)
            new = transform_image(
                part.blob, operation, rotation=rotation, flip=flip, brightness=brightness, contrast=contrast,
                crop_left=crop_left, crop_top=crop_top, crop_right=crop_right, crop_bottom=crop_bottom,
            )  # fmt: skip
            part._blob = new
            with PILImage.open(io.BytesIO(new)) as im:
                w_px, h_px = im.size
            pic.height = int(pic.width * h_px / w_px)
            return (
                f"Applied {operation} to slide{slide_index}_img{image_index} (now {w_px}x{h_px} px)"
            )

        return self._edit_deck(file_path, op)

    @tool
    def read_image(self, file_path: str, annotation: str) -> McpImage:
        _, prs = self._read_deck(file_path)
        key = annotation.strip().lstrip("@")
        try:
            s_part, i_part = key.removeprefix("slide").split("_img")
            s, i = int(s_part), int(i_part)
        except ValueError as exc:
            raise ToolError(
                f"annotation {annotation!r} must look like 'slide0_img0' (see read_individualslide)"
            ) from exc
        return image_result(picture_at(prs, s, i).image.blob)
