"""The powerpoint app: .pptx decks through python-pptx (ARCH mcp_servers/presentations).

Contract: `build(roots) -> FastMCP` named "powerpoint"; flat tool arguments; every path confined
to `roots.filesystem`. Slides are 0-based (`slide_index`); `read_individualslide` prints shape,
table and picture indices and image annotations (`slide0_img0`) that the other tools take.
Positions and sizes are inches from the slide's top-left corner (a default deck is 10 x 7.5 in).
`edit_slides` applies a list of operations to one fresh parse and saves once: all or nothing.
python-pptx is imported inside the tools that use it, so building the app (gateway start-up) does
not pay for it.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.utilities.types import Image as McpImage
from pydantic import Field

from kwrl.worlds.apps.base import ToolError, page_text, rel, tool
from kwrl.worlds.apps.office_common import (
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
from kwrl.worlds.apps.office_pptx import (
    Layout,
    SlideOp,
    SlideSpec,
    apply_op,
    auto_shape,
    build_chart_data,
    chart_kind,
    check_rows,
    delete_slide_at,
    fill_slide,
    fill_table,
    move_slide,
    picture_at,
    pictures,
    read_sheet_range,
    slide_at,
    slide_detail,
    slide_text_md,
    title_shape,
)
from kwrl.worlds.layout import WorldRoots

if TYPE_CHECKING:
    from pptx.presentation import Presentation as PptxPresentation

KIND = "PowerPoint (.pptx)"
EXTS = (".pptx",)
FilePath = Annotated[str, Field(description="Path of the .pptx file, e.g. '/decks/q3.pptx'")]
SlideIndex = Annotated[int, Field(description="0-based slide index")]


def _load(p: Path) -> PptxPresentation:
    from pptx import Presentation

    return Presentation(str(p))


def build(roots: WorldRoots) -> FastMCP:
    root = roots.filesystem
    mcp = FastMCP("powerpoint")

    def read_deck(file_path: str) -> tuple[Path, PptxPresentation]:
        p = existing_file(root, file_path, EXTS)
        return p, cached(root, p, _load, KIND)

    def edit_deck(file_path: str, fn: Any) -> str:
        return edit_file(root, file_path, EXTS, _load, KIND, fn)

    @tool(mcp)
    def create_slides(
        directory: Annotated[str, Field(description="Folder to create the deck in, e.g. '/decks'")],
        file_name: Annotated[str, Field(description="File name ending with .pptx, no '/'")],
        slides: Annotated[
            list[SlideSpec],
            Field(
                description="Slides: [{layout?, title?, subtitle?, bullets?, table? (2D list), notes?}]"
            ),
        ],
        title: Annotated[str | None, Field(description="Document property: title")] = None,
        author: Annotated[str | None, Field(description="Document property: author")] = None,
        overwrite: Annotated[bool, Field(description="Replace the file if it exists")] = False,
    ) -> str:
        """Create a new .pptx deck (10 x 7.5 in) from slide definitions."""
        from pptx import Presentation

        if not slides:
            raise ToolError("slides is empty; pass at least one slide definition")
        target = new_file(root, directory, file_name, ".pptx", overwrite=overwrite)
        prs = Presentation()
        for spec in slides:
            fill_slide(prs, dict(spec))
        if title is not None:
            prs.core_properties.title = title
        if author is not None:
            prs.core_properties.author = author
        with file_lock(target):
            save_atomic(prs, target)
        return f"Created {rel(root, target)} with {len(prs.slides)} slide(s)"

    @tool(mcp)
    def delete_slides(
        file_path: FilePath,
        slide_indices: Annotated[
            list[int] | None,
            Field(description="Slides to remove (0-based); omit to delete the whole file"),
        ] = None,
    ) -> str:
        """Delete slides from a deck, or the deck file itself when no indices are given."""
        if slide_indices is None:
            return delete_file(root, file_path, EXTS)

        def op(prs: PptxPresentation) -> str:
            for i in sorted(set(slide_indices), reverse=True):
                delete_slide_at(prs, i)
            return f"Deleted slide(s) {sorted(set(slide_indices))}; {len(prs.slides)} left"

        return edit_deck(file_path, op)

    @tool(mcp)
    def add_slide(
        file_path: FilePath,
        index: Annotated[
            int | None,
            Field(description="Position of the new slide (0-based); default: at the end"),
        ] = None,
        layout: Layout = "title_and_content",
        title: str | None = None,
        subtitle: str | None = None,
        bullets: list[str] | None = None,
        notes: str | None = None,
    ) -> str:
        """Insert a slide with a layout, title, subtitle, bullets and notes."""

        def op(prs: PptxPresentation) -> str:
            n = len(prs.slides)
            at = n if index is None else index
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

        return edit_deck(file_path, op)

    @tool(mcp)
    def edit_slides(
        file_path: FilePath,
        operations: Annotated[
            list[SlideOp],
            Field(
                description="Applied in order, saved once (all or nothing): replace_text {search, replace, match_case?}; "
                "update_slide_title {index, title}; update_slide_subtitle {index, subtitle}; set_bullets / append_bullets "
                "{index, items, placeholder?: body|left|right}; clear_placeholder {index, placeholder?}; update_shape_text "
                "{index, shape_index, text}; update_table_cell {index, table_idx?, row, column, text}; set_notes {index, notes}; "
                "delete_slide {index} (later indices shift)"
            ),
        ],
    ) -> str:
        """Batch-edit slide text, bullets, tables and notes."""
        if not operations:
            raise ToolError("operations is empty")

        def op(prs: PptxPresentation) -> str:
            return "Applied: " + "; ".join(
                apply_op(prs, dict(o), i) for i, o in enumerate(operations)
            )

        return edit_deck(file_path, op)

    @tool(mcp)
    def read_slides(
        file_path: FilePath,
        offset: Annotated[
            int, Field(description="Character offset for paging (from the truncation note)")
        ] = 0,
    ) -> str:
        """The whole deck's text as markdown: titles, text, tables, charts, notes."""
        p = existing_file(root, file_path, EXTS)

        def render(q: Path) -> str:
            prs = cached(root, q, _load, KIND)
            body = "\n\n".join(slide_text_md(s, i) for i, s in enumerate(prs.slides))
            return f"{rel(root, q)}: {len(prs.slides)} slide(s)\n\n{body}"

        return page_text(cached(root, p, render, KIND, "read_slides"), offset=offset)

    @tool(mcp)
    def read_completedeck(file_path: FilePath) -> str:
        """Overview of every slide: index, layout, title, shape count, text preview."""
        p, prs = read_deck(file_path)
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
        head = (
            f"{rel(root, p)}: {len(prs.slides)} slide(s), {w / 914400:.2f} x {h / 914400:.2f} in\n"
        )
        return head + md_table(rows, header=["slide", "layout", "title", "shapes", "text"])

    @tool(mcp)
    def read_individualslide(file_path: FilePath, slide_index: SlideIndex) -> str:
        """One slide in detail: every shape with index, kind, position, text; tables, charts, images, notes."""
        p, prs = read_deck(file_path)
        slide = slide_at(prs, slide_index)
        return cached(
            root, p, lambda _: slide_detail(slide, slide_index), KIND, f"slide:{slide_index}"
        )

    @tool(mcp)
    def add_shape(
        file_path: FilePath,
        slide_index: SlideIndex,
        shape_type: Literal[
            "rectangle",
            "rounded_rectangle",
            "oval",
            "triangle",
            "right_arrow",
            "left_arrow",
            "up_arrow",
            "down_arrow",
            "pentagon",
            "hexagon",
            "star",
            "heart",
            "cloud",
        ] = "rectangle",
        x: float = 1.0,
        y: float = 1.0,
        width: float = 2.0,
        height: float = 1.0,
        fill_color: Annotated[str | None, Field(description="Hex RGB, e.g. '1F4E79'")] = None,
        line_color: str | None = None,
        text: str | None = None,
        text_color: str | None = None,
        font_size: float | None = None,
    ) -> str:
        """Add a geometric shape (inches), optionally filled and with text."""
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
            if text is not None:
                shp.text_frame.text = text
                for run in shp.text_frame.paragraphs[0].runs:
                    if "text_color" in colors:
                        run.font.color.rgb = RGBColor.from_string(colors["text_color"])
                    if font_size:
                        run.font.size = Pt(font_size)
            return f"Added {shape_type} as shape {len(slide.shapes) - 1} on slide {slide_index}"

        return edit_deck(file_path, op)

    @tool(mcp)
    def insert_table(
        file_path: FilePath,
        slide_index: SlideIndex,
        rows: Annotated[
            list[list[str | int | float | None]],
            Field(description="2D cell values, all rows equally long"),
        ],
        header: Annotated[bool, Field(description="Bold the first row")] = True,
        x: float = 0.5,
        y: float = 1.5,
        width: float = 9.0,
        height: Annotated[float | None, Field(description="Inches; default 0.4 per row")] = None,
    ) -> str:
        """Insert a table on a slide."""
        check_rows(rows)

        def op(prs: PptxPresentation) -> str:
            from pptx.util import Emu, Inches

            slide = slide_at(prs, slide_index)
            h = Inches(height) if height else Emu(int(Inches(0.4)) * len(rows))
            frame = slide.shapes.add_table(
                len(rows), len(rows[0]), Inches(x), Inches(y), Inches(width), h
            )
            fill_table(frame.table, rows, header)
            return f"Inserted a {len(rows)}x{len(rows[0])} table on slide {slide_index}"

        return edit_deck(file_path, op)

    @tool(mcp)
    def insert_chart(
        file_path: FilePath,
        slide_index: SlideIndex,
        chart_type: Literal[
            "bar", "horizontal_bar", "line", "pie", "area", "scatter", "doughnut", "radar"
        ] = "bar",
        data: Annotated[
            list[list[str | int | float | None]] | None,
            Field(
                description="Inline table: first column categories (x for scatter), other columns series; first row series names if include_header"
            ),
        ] = None,
        spreadsheet_path: Annotated[
            str | None, Field(description="Or take the data from an .xlsx file ...")
        ] = None,
        sheet_name: Annotated[
            str | None, Field(description="... its sheet (default first) ...")
        ] = None,
        data_range: Annotated[str | None, Field(description="... and range, e.g. 'A1:C5'")] = None,
        include_header: bool = True,
        title: str | None = None,
        x: float = 1.0,
        y: float = 1.5,
        width: float = 8.0,
        height: float = 5.0,
    ) -> str:
        """Insert a native chart from inline data or a spreadsheet range."""
        table = (
            data
            if data is not None
            else read_sheet_range(root, spreadsheet_path, sheet_name, data_range)
        )
        chart_data = build_chart_data(table, chart_type, include_header)

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

        return edit_deck(file_path, op)

    @tool(mcp)
    def add_image(
        file_path: FilePath,
        image_path: Annotated[
            str, Field(description="Image in the filesystem (.png, .jpg, .gif, .bmp)")
        ],
        slide_index: SlideIndex,
        x: float = 1.0,
        y: float = 1.5,
        width: Annotated[
            float | None, Field(description="Inches; height scales unless given")
        ] = None,
        height: float | None = None,
    ) -> str:
        """Place an image from the filesystem on a slide."""
        img = image_file(root, image_path)

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

        return edit_deck(file_path, op)

    @tool(mcp)
    def modify_image(
        file_path: FilePath,
        slide_index: SlideIndex,
        image_index: Annotated[int, Field(description="M of slide{N}_img{M}")],
        operation: Literal["rotate", "flip", "brightness", "contrast", "crop"],
        rotation: Annotated[float | None, Field(description="rotate: degrees clockwise")] = None,
        flip: Literal["horizontal", "vertical"] | None = None,
        brightness: Annotated[float | None, Field(description="factor, 1.0 = unchanged")] = None,
        contrast: Annotated[float | None, Field(description="factor, 1.0 = unchanged")] = None,
        crop_left: int | None = None,
        crop_top: int | None = None,
        crop_right: int | None = None,
        crop_bottom: int | None = None,
    ) -> str:
        """Rotate, flip, crop or adjust a picture on a slide (its frame follows the new aspect ratio)."""
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

        return edit_deck(file_path, op)

    @tool(mcp)
    def read_image(
        file_path: FilePath,
        annotation: Annotated[
            str, Field(description="Image key from read_individualslide, e.g. 'slide0_img0'")
        ],
    ) -> McpImage:
        """Return a picture of a slide as an image."""
        _, prs = read_deck(file_path)
        key = annotation.strip().lstrip("@")
        try:
            s_part, i_part = key.removeprefix("slide").split("_img")
            s, i = int(s_part), int(i_part)
        except ValueError as exc:
            raise ToolError(
                f"annotation {annotation!r} must look like 'slide0_img0' (see read_individualslide)"
            ) from exc
        return image_result(picture_at(prs, s, i).image.blob)

    return mcp
