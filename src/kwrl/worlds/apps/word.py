"""The word app: .docx documents through python-docx (ARCH mcp_servers/documents).

Contract: `build(roots) -> FastMCP` named "word"; tools take flat arguments; every path is
confined to `roots.filesystem` ("/reports/a.docx" means `<filesystem>/reports/a.docx`).
`read_document_content` prints each paragraph and table with an identifier (`body.p.3`,
`body.tbl.0.r.1.c.2`, see `office_docx`); the edit tools take those identifiers, so a model reads,
then edits exactly the element it saw. Indices shift after inserting or deleting elements: read again.
Reads are memoised on the file's stat (never stale); writes open a fresh copy and save atomically.
python-docx is imported inside the tools that use it, so building the app (gateway start-up) does
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
from kwrl.worlds.apps.office_blocks import Block, parse_content
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
from kwrl.worlds.apps.office_docx import (
    add_text_runs,
    body_blips,
    comment_anchors,
    ensure_style,
    first_rpr,
    heading_level,
    image_part,
    inches,
    new_paragraph_after,
    orientation_of,
    para_text,
    paragraph_alignment,
    paragraphs_of,
    prepend_run,
    remove_element,
    render_container,
    render_document,
    replace_in,
    resolve,
    runs_of,
    section_at,
    set_paragraph_text,
    write_blocks,
)
from kwrl.worlds.layout import WorldRoots

if TYPE_CHECKING:
    from docx.document import Document as DocxDocument

KIND = "Word (.docx)"
EXTS = (".docx",)
FilePath = Annotated[str, Field(description="Path of the .docx file, e.g. '/reports/memo.docx'")]
Ident = Annotated[
    str,
    Field(
        description="Element identifier from read_document_content, e.g. 'body.p.0', 'body.tbl.0.r.1.c.2', 'header.s.0.p.0'"
    ),
]
Offset = Annotated[
    int, Field(description="Character offset for paging long output (from the truncation note)")
]


def _load(p: Path) -> DocxDocument:
    from docx import Document

    return Document(str(p))


def build(roots: WorldRoots) -> FastMCP:
    root = roots.filesystem
    mcp = FastMCP("word")

    def read_doc(file_path: str) -> tuple[Path, DocxDocument]:
        p = existing_file(root, file_path, EXTS)
        return p, cached(root, p, _load, KIND)

    def edit_doc(file_path: str, fn: Any) -> str:
        return edit_file(root, file_path, EXTS, _load, KIND, fn)

    def style_of(doc: DocxDocument, style: str | None) -> Any:
        return None if style is None else ensure_style(doc, style)

    @tool(mcp)
    def create_document(
        directory: Annotated[
            str, Field(description="Folder to create the file in, e.g. '/' or '/reports'")
        ],
        file_name: Annotated[str, Field(description="File name ending with .docx, no '/'")],
        content: Annotated[
            str | list[Block],
            Field(
                description="Body: markdown-ish text (# heading, - bullet, 1. item, | table |, one paragraph per line) "
                "or a list of blocks {type: paragraph|heading|bullet_list|numbered_list|table|page_break, text, level, items, rows, header}"
            ),
        ],
        title: Annotated[str | None, Field(description="Document property: title")] = None,
        author: Annotated[str | None, Field(description="Document property: author")] = None,
        overwrite: Annotated[bool, Field(description="Replace the file if it exists")] = False,
    ) -> str:
        """Create a new .docx document from content blocks or markdown-ish text."""
        from docx import Document

        blocks = parse_content(content)
        target = new_file(root, directory, file_name, ".docx", overwrite=overwrite)
        doc = Document()
        if title is not None:
            doc.core_properties.title = title
        if author is not None:
            doc.core_properties.author = author
        write_blocks(doc, blocks)
        with file_lock(target):
            save_atomic(doc, target)
        return f"Created {rel(root, target)} ({len(doc.paragraphs)} paragraphs, {len(doc.tables)} tables)"

    @tool(mcp)
    def delete_document(file_path: FilePath) -> str:
        """Delete a .docx file (irreversible)."""
        return delete_file(root, file_path, EXTS)

    @tool(mcp)
    def read_document_content(
        file_path: FilePath,
        show_runs: Annotated[
            bool, Field(description="Also list each run with its formatting")
        ] = False,
        offset: Offset = 0,
    ) -> str:
        """Read a .docx: every paragraph and table in order, each with its identifier for edits."""
        p = existing_file(root, file_path, EXTS)
        rendered = cached(
            root,
            p,
            lambda q: render_document(cached(root, q, _load, KIND), rel(root, q), show_runs),
            KIND,
            f"read:{show_runs}",
        )
        return page_text(rendered, offset=offset)

    @tool(mcp)
    def get_document_overview(file_path: FilePath) -> str:
        """Outline of a .docx: headings with identifiers, counts, properties, page setup."""
        p, doc = read_doc(file_path)
        words = sum(len(para_text(par).split()) for par in doc.paragraphs)
        cp = doc.core_properties
        sec = doc.sections[0]
        lines = [
            f"{rel(root, p)}",
            f"paragraphs: {len(doc.paragraphs)}, tables: {len(doc.tables)}, sections: {len(doc.sections)}, "
            f"images: {len(body_blips(doc))}, comments: {len(list(doc.comments))}, words: {words}",
            f"title: {cp.title or '-'}, author: {cp.author or '-'}",
            f"page: {inches(sec.page_width)} x {inches(sec.page_height)} in, {orientation_of(sec)}",
            "headings:",
        ]
        heads = [
            f"{'  ' * max(lvl - 1, 0)}- [body.p.{i}] (level {lvl}) {para_text(par)}"
            for i, par in enumerate(doc.paragraphs)
            if (lvl := heading_level(par)) is not None
        ]
        return "\n".join(lines + (heads or ["  (no headings)"]))

    @tool(mcp)
    def add_content_text(
        file_path: FilePath,
        identifier: Ident,
        text: Annotated[
            str, Field(description="Text to add; with before/after, each line becomes a paragraph")
        ],
        position: Annotated[
            Literal["start", "end", "before", "after"],
            Field(
                description="'start'/'end': inside the element (prepend/append text); "
                "'before'/'after': new paragraph(s) next to the paragraph or table"
            ),
        ] = "end",
        style: Annotated[
            str | None,
            Field(description="Style of new paragraphs, e.g. 'Heading 2', 'List Bullet'"),
        ] = None,
    ) -> str:
        """Add text at an element: into it (start/end) or as new paragraphs before/after it.
        identifier 'body' appends new paragraphs at the end of the document."""

        def op(doc: DocxDocument) -> str:
            if identifier.strip().lstrip("@") == "body":
                st = style_of(doc, style)
                lines = text.split("\n")
                for line in lines:
                    add_text_runs(doc.add_paragraph(style=st), line)
                return f"Appended {len(lines)} paragraph(s) at the end of the body"
            t = resolve(doc, identifier)
            if position in ("start", "end"):
                if t.kind == "run":
                    t.obj.text = text + t.obj.text if position == "start" else t.obj.text + text
                elif t.kind in ("paragraph", "cell"):
                    par = (
                        t.obj
                        if t.kind == "paragraph"
                        else t.obj.paragraphs[-1 if position == "end" else 0]
                    )
                    if position == "end":
                        add_text_runs(par, text, first_rpr(par))
                    else:
                        prepend_run(par, text)
                else:
                    raise ToolError(
                        f"{identifier!r} is a {t.kind}; add text into a paragraph, run or cell"
                    )
                return f"Added text at the {position} of {identifier}"
            if t.kind not in ("paragraph", "table"):
                raise ToolError(
                    f"position {position!r} needs a paragraph or table identifier; {identifier!r} is a {t.kind}"
                )
            el = t.obj._p if t.kind == "paragraph" else t.obj._tbl
            parent = t.obj._parent
            st = style_of(doc, style) if style else (t.obj.style if t.kind == "paragraph" else None)
            rpr = first_rpr(t.obj) if t.kind == "paragraph" and style is None else None
            lines = text.split("\n")
            if position == "before":
                from docx.oxml import OxmlElement
                from docx.text.paragraph import Paragraph

                first = Paragraph(OxmlElement("w:p"), parent)
                el.addprevious(first._p)
                if st is not None:
                    first.style = st
                add_text_runs(first, lines[0], rpr)
                anchor = first._p
            else:
                anchor = new_paragraph_after(el, parent, lines[0], st, rpr)._p
            for line in lines[1:]:
                anchor = new_paragraph_after(anchor, parent, line, st, rpr)._p
            return f"Inserted {len(lines)} paragraph(s) {position} {identifier}"

        return edit_doc(file_path, op)

    @tool(mcp)
    def edit_content_text(
        file_path: FilePath,
        identifier: Ident,
        new_text: Annotated[str, Field(description="Replacement text")],
        old_text: Annotated[
            str | None,
            Field(
                description="If set, replace only occurrences of this text inside the element; else replace all its text"
            ),
        ] = None,
    ) -> str:
        """Replace the text of a paragraph, run or cell (keeps the first run's formatting)."""

        def op(doc: DocxDocument) -> str:
            t = resolve(doc, identifier)
            if old_text is not None:
                return replace_in(t, old_text, new_text)
            if t.kind == "run":
                t.obj.text = new_text
            elif t.kind == "paragraph":
                set_paragraph_text(t.obj, new_text)
            elif t.kind == "cell":
                pars = t.obj.paragraphs
                set_paragraph_text(pars[0], new_text)
                for extra in pars[1:]:
                    remove_element(extra._p)
            else:
                raise ToolError(f"{identifier!r} is a {t.kind}; edit a paragraph, run or cell")
            return f"Replaced the text of {identifier}"

        return edit_doc(file_path, op)

    @tool(mcp)
    def delete_content_text(
        file_path: FilePath,
        identifier: Ident,
        scope: Annotated[
            Literal["content", "element"],
            Field(
                description="'content': clear the text, keep the element; 'element': remove it (paragraph, run, table, row)"
            ),
        ] = "content",
    ) -> str:
        """Clear or remove the element an identifier names."""

        def op(doc: DocxDocument) -> str:
            t = resolve(doc, identifier)
            if scope == "element":
                if t.kind == "cell":
                    raise ToolError(
                        "a cell cannot be removed; delete its row, or use scope='content'"
                    )
                el = {"paragraph": "_p", "run": "_r", "table": "_tbl", "row": "_tr"}[t.kind]
                remove_element(getattr(t.obj, el))
                return f"Removed {t.kind} {identifier} (later indices shift down)"
            if t.kind == "run":
                t.obj.text = ""
            else:
                for par in paragraphs_of(t):
                    set_paragraph_text(par, "")
            return f"Cleared the text of {identifier}"

        return edit_doc(file_path, op)

    @tool(mcp)
    def apply_formatting(
        file_path: FilePath,
        identifier: Ident,
        bold: bool | None = None,
        italic: bool | None = None,
        underline: bool | None = None,
        strikethrough: bool | None = None,
        font_size: Annotated[float | None, Field(description="Points, e.g. 12")] = None,
        font_color: Annotated[str | None, Field(description="Hex RGB, e.g. 'FF0000'")] = None,
        font_name: Annotated[str | None, Field(description="e.g. 'Arial'")] = None,
        alignment: Literal["left", "center", "right", "justify"] | None = None,
        style: Annotated[
            str | None, Field(description="Paragraph style name, e.g. 'Heading 1'")
        ] = None,
    ) -> str:
        """Format every run of a run, paragraph, cell, row or table; unset options stay unchanged."""
        color = parse_color(font_color, arg="font_color") if font_color else None

        def op(doc: DocxDocument) -> str:
            from docx.shared import Pt, RGBColor

            t = resolve(doc, identifier)
            st = style_of(doc, style)
            runs = runs_of(t)
            for run in runs:
                for attr, value in (("bold", bold), ("italic", italic), ("underline", underline)):
                    if value is not None:
                        setattr(run, attr, value)
                if strikethrough is not None:
                    run.font.strike = strikethrough
                if font_size is not None:
                    run.font.size = Pt(font_size)
                if color is not None:
                    run.font.color.rgb = RGBColor.from_string(color)
                if font_name is not None:
                    run.font.name = font_name
            pars = paragraphs_of(t)
            for par in pars:
                if alignment is not None:
                    par.alignment = paragraph_alignment(alignment)
                if st is not None:
                    par.style = st
            if (alignment or st) and not pars:
                raise ToolError(
                    "alignment and style apply to paragraphs; use a paragraph identifier, not a run"
                )
            return f"Formatted {len(runs)} run(s), {len(pars)} paragraph(s) of {identifier}"

        return edit_doc(file_path, op)

    @tool(mcp)
    def comments(
        file_path: FilePath,
        action: Literal["read", "add", "delete"] = "read",
        identifier: Annotated[
            str | None, Field(description="add: element to comment on, e.g. 'body.p.2'")
        ] = None,
        text: Annotated[str | None, Field(description="add: the comment text")] = None,
        author: Annotated[str, Field(description="add: author name")] = "",
        comment_id: Annotated[
            int | None, Field(description="delete: id from action='read'")
        ] = None,
    ) -> str:
        """List, add or delete comments of a .docx."""
        if action == "read":
            p, doc = read_doc(file_path)
            rows = [[c.comment_id, c.author, c.timestamp or "", c.text] for c in doc.comments]
            where = comment_anchors(doc)
            if not rows:
                return f"{rel(root, p)} has no comments"
            return md_table(
                [[*r[:3], where.get(int(r[0]), "-"), r[3]] for r in rows],
                header=["id", "author", "date", "on", "text"],
            )
        if action == "add":
            if not identifier or not text:
                raise ToolError("action 'add' needs identifier and text")

            def add(doc: DocxDocument) -> str:
                t = resolve(doc, identifier)
                runs = [
                    r
                    for r in runs_of(t)
                    if r._r.getparent() is not None and r._r.getparent().tag.endswith("}p")
                ]
                if not runs:
                    pars = paragraphs_of(t)
                    if not pars:
                        raise ToolError(f"{identifier!r} has no paragraph to attach a comment to")
                    runs = [pars[0].add_run("")]
                c = doc.add_comment(runs, text=text, author=author, initials=author[:1] or None)
                return f"Added comment {c.comment_id} on {identifier}"

            return edit_doc(file_path, add)
        if comment_id is None:
            raise ToolError("action 'delete' needs comment_id (see action='read')")

        def delete(doc: DocxDocument) -> str:
            elm = doc.comments._comments_elm
            found = [c for c in elm.comment_lst if int(c.id) == comment_id]
            if not found:
                raise ToolError(
                    f"comment {comment_id} not found; ids: {[int(c.id) for c in elm.comment_lst]}"
                )
            for c in found:
                elm.remove(c)
            body = doc.element.body
            for tag in ("w:commentRangeStart", "w:commentRangeEnd"):
                for el in body.xpath(f".//{tag}[@w:id='{comment_id}']"):
                    remove_element(el)
            for ref in body.xpath(f".//w:commentReference[@w:id='{comment_id}']"):
                run = ref.getparent()
                remove_element(run if run.tag.endswith("}r") else ref)
            return f"Deleted comment {comment_id}"

        return edit_doc(file_path, delete)

    @tool(mcp)
    def header_footer(
        file_path: FilePath,
        action: Literal["read", "set", "clear"] = "read",
        area: Literal["header", "footer"] = "header",
        section_index: int = 0,
        text: Annotated[
            str | None, Field(description="set: the new content, one paragraph per line")
        ] = None,
    ) -> str:
        """Read, set or clear the header or footer of a section."""

        def section(doc: DocxDocument) -> Any:
            if not 0 <= section_index < len(doc.sections):
                raise ToolError(
                    f"section_index {section_index} out of range (document has {len(doc.sections)} sections)"
                )
            sec = doc.sections[section_index]
            return sec.header if area == "header" else sec.footer

        if action == "read":
            _, doc = read_doc(file_path)
            hf = section(doc)
            lines = render_container(hf, f"{area}.s.{section_index}", [], False)
            linked = " (linked to previous section)" if hf.is_linked_to_previous else ""
            return f"{area} of section {section_index}{linked}:\n" + ("\n".join(lines) or "(empty)")
        if action == "set" and text is None:
            raise ToolError("action 'set' needs text")

        def op(doc: DocxDocument) -> str:
            hf = section(doc)
            hf.is_linked_to_previous = False
            for child in list(hf._element.iterchildren()):
                if child.tag.rsplit("}", 1)[-1] in ("p", "tbl"):
                    hf._element.remove(child)
            for line in (text or "").split("\n") if action == "set" else [""]:
                add_text_runs(hf.add_paragraph(), line)
            return (
                f"{'Set' if action == 'set' else 'Cleared'} the {area} of section {section_index}"
            )

        return edit_doc(file_path, op)

    @tool(mcp)
    def page_margins(
        file_path: FilePath,
        action: Literal["read", "set"] = "read",
        section_index: int = 0,
        top: Annotated[float | None, Field(description="Inches")] = None,
        bottom: Annotated[float | None, Field(description="Inches")] = None,
        left: Annotated[float | None, Field(description="Inches")] = None,
        right: Annotated[float | None, Field(description="Inches")] = None,
    ) -> str:
        """Read or set a section's page margins (inches)."""
        values = {"top": top, "bottom": bottom, "left": left, "right": right}

        def describe(sec: Any) -> str:
            return ", ".join(f"{k} {inches(getattr(sec, f'{k}_margin'))} in" for k in values)

        if action == "read":
            _, doc = read_doc(file_path)
            return f"section {section_index} margins: " + describe(section_at(doc, section_index))
        if all(v is None for v in values.values()):
            raise ToolError("action 'set' needs at least one of top, bottom, left, right")
        if any(v is not None and not 0 <= v <= 22 for v in values.values()):
            raise ToolError("margins must be between 0 and 22 inches")

        def op(doc: DocxDocument) -> str:
            from docx.shared import Inches

            sec = section_at(doc, section_index)
            for k, v in values.items():
                if v is not None:
                    setattr(sec, f"{k}_margin", Inches(v))
            return f"Set section {section_index} margins: {describe(sec)}"

        return edit_doc(file_path, op)

    @tool(mcp)
    def page_orientation(
        file_path: FilePath,
        action: Literal["read", "set"] = "read",
        section_index: int = 0,
        orientation: Literal["portrait", "landscape"] | None = None,
    ) -> str:
        """Read or set a section's page orientation (swaps page width and height)."""
        if action == "read":
            _, doc = read_doc(file_path)
            sec = section_at(doc, section_index)
            return f"section {section_index}: {orientation_of(sec)}, {inches(sec.page_width)} x {inches(sec.page_height)} in"
        if orientation is None:
            raise ToolError("action 'set' needs orientation 'portrait' or 'landscape'")

        def op(doc: DocxDocument) -> str:
            from docx.enum.section import WD_ORIENT

            sec = section_at(doc, section_index)
            w, h = sec.page_width, sec.page_height
            sec.orientation = (
                WD_ORIENT.LANDSCAPE if orientation == "landscape" else WD_ORIENT.PORTRAIT
            )
            if w is not None and h is not None and (w > h) != (orientation == "landscape"):
                sec.page_width, sec.page_height = h, w
            return f"Set section {section_index} to {orientation}"

        return edit_doc(file_path, op)

    @tool(mcp)
    def add_image(
        file_path: FilePath,
        image_path: Annotated[
            str, Field(description="Image in the filesystem (.png, .jpg, .gif, .bmp)")
        ],
        identifier: Ident,
        position: Annotated[
            Literal["start", "end", "after"],
            Field(
                description="In the paragraph ('start'/'end') or in a new paragraph after it ('after')"
            ),
        ] = "end",
        width: Annotated[
            float | None, Field(description="Inches; height scales unless given")
        ] = None,
        height: Annotated[float | None, Field(description="Inches")] = None,
    ) -> str:
        """Insert an image from the filesystem into a paragraph."""
        img = image_file(root, image_path)

        def op(doc: DocxDocument) -> str:
            from docx.shared import Inches

            t = resolve(doc, identifier)
            if t.kind not in ("paragraph", "cell"):
                raise ToolError(f"images go into a paragraph or cell; {identifier!r} is a {t.kind}")
            par = t.obj if t.kind == "paragraph" else t.obj.paragraphs[-1]
            if position == "after":
                par = new_paragraph_after(par._p, par._parent, "", None, None)
            run = par.add_run()
            try:
                run.add_picture(
                    str(img),
                    width=Inches(width) if width else None,
                    height=Inches(height) if height else None,
                )
            except Exception as exc:
                raise ToolError(
                    f"{image_path!r} is not a readable image: {type(exc).__name__}: {exc}"
                ) from exc
            if position == "start":
                par._p.remove(run._r)
                par._p.insert(1 if par._p.pPr is not None else 0, run._r)
            index = next(i for i, b in enumerate(body_blips(doc)) if b in run._r.xpath(".//a:blip"))
            return f"Inserted image img{index} ({position} of {identifier})"

        return edit_doc(file_path, op)

    @tool(mcp)
    def modify_image(
        file_path: FilePath,
        image_index: Annotated[int, Field(description="N of imgN in read_document_content")],
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
        """Rotate, flip, crop or adjust an embedded image (by index in body order)."""
        from PIL import Image as PILImage

        def op(doc: DocxDocument) -> str:
            blip, part = image_part(doc, image_index)
            data = transform_image(
                part.blob,
                operation,
                rotation=rotation,
                flip=flip,
                brightness=brightness,
                contrast=contrast,
                crop_left=crop_left,
                crop_top=crop_top,
                crop_right=crop_right,
                crop_bottom=crop_bottom,
            )
            part._blob = data
            with PILImage.open(io.BytesIO(data)) as im:
                w_px, h_px = im.size
            for ext in blip.xpath("ancestor::wp:inline/wp:extent | ancestor::wp:anchor/wp:extent"):
                ext.set("cy", str(int(int(ext.get("cx")) * h_px / w_px)))
            for ext in blip.xpath("ancestor::pic:pic/pic:spPr/a:xfrm/a:ext"):
                ext.set("cy", str(int(int(ext.get("cx")) * h_px / w_px)))
            return f"Applied {operation} to img{image_index} (now {w_px}x{h_px} px)"

        return edit_doc(file_path, op)

    @tool(mcp)
    def read_image(
        file_path: FilePath,
        annotation: Annotated[
            str, Field(description="Image key from read_document_content, e.g. 'img0'")
        ],
    ) -> McpImage:
        """Return an embedded image of a .docx as an image."""
        _, doc = read_doc(file_path)
        key = annotation.strip().lstrip("@").removeprefix("img")
        if not key.isdigit():
            raise ToolError(
                f"annotation {annotation!r} must look like 'img0' (see read_document_content)"
            )
        _, part = image_part(doc, int(key))
        return image_result(part.blob)

    return mcp
