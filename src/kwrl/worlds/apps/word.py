"""The word app: .docx documents through python-docx (ARCH mcp_servers/documents).

Contract: `WordApp(roots)`, app "word" of the table; tools take upstream's arguments (the content,
image, formatting and page tools under an `input` envelope); every path is confined to
`roots.filesystem` ("/reports/a.docx" means `<filesystem>/reports/a.docx`). read_document_content
pages by `page_index` (0-based; each answer ends with `[page_index i of total_pages n]`).
`read_document_content` prints each paragraph and table with an identifier (`body.p.3`,
`body.tbl.0.r.1.c.2`, see `kwrl.worlds.office.docs`); the edit tools take those identifiers, so a model reads,
then edits exactly the element it saw. Indices shift after inserting or deleting elements: read again.
Reads are memoised on the file's stat (never stale); writes open a fresh copy and save atomically.
python-docx is imported inside the tools that use it, so building the app (gateway start-up) does
not pay for it.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastmcp.utilities.types import Image as McpImage

from kwrl.worlds.apps.base import ToolError, WorldApp, rel, tool
from kwrl.worlds.office.blocks import parse_content
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
from kwrl.worlds.office.docs import (
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

if TYPE_CHECKING:
    from docx.document import Document as DocxDocument

KIND = "Word (.docx)"
EXTS = (".docx",)


def _load(p: Path) -> DocxDocument:
    from docx import Document

    return Document(str(p))


PAGE_CHARS = 20_000


def _page(text: str, page_index: int | None) -> str:
    """Page `page_index` (0-based) of `text`, cut at line ends, with upstream's total_pages note."""
    pages: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.split("\n"):
        if current and size + len(line) + 1 > PAGE_CHARS:
            pages.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    pages.append("\n".join(current))
    i = page_index or 0
    if not 0 <= i < len(pages):
        raise ToolError(
            f"page_index {i} out of range: total_pages is {len(pages)} (0 to {len(pages) - 1})"
        )
    return f"{pages[i]}\n\n[page_index {i} of total_pages {len(pages)}]"


def _block_text(block: dict[str, Any]) -> str:
    """A header/footer content block as text lines."""
    if block.get("items"):
        return "\n".join(str(x) for x in block["items"])
    if block.get("rows"):
        return "\n".join(" | ".join(str(c) for c in r) for r in block["rows"])
    return str(block.get("text") or "")


class WordApp(WorldApp):
    """The word app: its tools read and edit the world's .docx documents (module docstring)."""

    def _read_doc(self, file_path: str) -> tuple[Path, DocxDocument]:
        p = existing_file(self.root, file_path, EXTS)
        return p, cached(self.root, p, _load, KIND)

    def _edit_doc(self, file_path: str, fn: Any) -> str:
        return edit_file(self.root, file_path, EXTS, _load, KIND, fn)

    def _style_of(self, doc: DocxDocument, style: str | None) -> Any:
        return None if style is None else ensure_style(doc, style)

    @tool
    def create_document(
        self,
        directory: str,
        file_name: str,
        content: list[dict[str, Any]],
        metadata: dict[str, Any] | None,
    ) -> str:
        from docx import Document

        blocks = [{k: v for k, v in b.items() if v is not None} for b in content]
        for b in blocks:  # upstream clamps heading levels to 1-4
            if b.get("type") == "heading":
                b["level"] = min(max(int(b.get("level", 1)), 1), 4)
        parse_content([b for b in blocks if b.get("type") != "section_break"])
        target = new_file(self.root, directory, file_name, ".docx", overwrite=True)
        doc = Document()
        cp = doc.core_properties
        for key, value in (metadata or {}).items():
            if value is not None:
                setattr(cp, key, value)
        write_blocks(doc, blocks)  # type: ignore[arg-type]
        with file_lock(target):
            save_atomic(doc, target)
        return f"Created {rel(self.root, target)} ({len(doc.paragraphs)} paragraphs, {len(doc.tables)} tables)"

    @tool
    def delete_document(self, file_path: str) -> str:
        return delete_file(self.root, file_path, EXTS)

    @tool
    def read_document_content(self, file_path: str, page_index: int | None) -> str:
        show_runs = False
        p = existing_file(self.root, file_path, EXTS)
        rendered = cached(
            self.root,
            p,
            lambda q: render_document(
                cached(self.root, q, _load, KIND), rel(self.root, q), show_runs
            ),
            KIND,
            f"read:{show_runs}",
        )
        return _page(rendered, page_index)

    @tool
    def get_document_overview(self, file_path: str) -> str:
        p, doc = self._read_doc(file_path)
        words = sum(len(para_text(par).split()) for par in doc.paragraphs)
        cp = doc.core_properties
        sec = doc.sections[0]
        lines = [
            f"{rel(self.root, p)}",
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

    @tool
    def add_content_text(self, file_path: str, identifier: str, text: str, position: str) -> str:
        # upstream: 'start'/'before' prepend to, 'end'/'after' append to the element's text
        where = {"before": "start", "after": "end"}.get(position.strip().lower(), position)
        if where not in ("start", "end"):
            raise ToolError(
                f"Position must be one of: before, after, start, end (got {position!r})"
            )

        def op(doc: DocxDocument) -> str:
            if identifier.strip().lstrip("@") == "body":  # kwrl: new paragraphs at the end
                lines = text.split("\n")
                for line in lines:
                    add_text_runs(doc.add_paragraph(), line)
                return f"Appended {len(lines)} paragraph(s) at the end of the body"
            t = resolve(doc, identifier)
            if t.kind == "run":
                t.obj.text = text + t.obj.text if where == "start" else t.obj.text + text
            elif t.kind in ("paragraph", "cell"):
                par = t.obj if t.kind == "paragraph" else t.obj.paragraphs[0]
                if where == "end":
                    add_text_runs(par, text, first_rpr(par))
                else:
                    prepend_run(par, text)
            else:
                raise ToolError(
                    f"Unsupported target for insert; use run, paragraph, or cell (got {t.kind})"
                )
            return f"Added text at the {where} of {identifier}"

        return self._edit_doc(file_path, op)

    @tool
    def edit_content_text(self, file_path: str, identifier: str, new_text: str) -> str:
        old_text = None

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

        return self._edit_doc(file_path, op)

    @tool
    def delete_content_text(
        self, file_path: str, identifier: str, scope: str, collapse_whitespace: bool
    ) -> str:
        if scope not in ("content", "element"):
            raise ToolError(f"scope must be 'content' or 'element'; got {scope!r}")

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
                if collapse_whitespace and t.kind == "cell":
                    for par in t.obj.paragraphs[1:]:
                        remove_element(par._p)
            return f"Cleared the text of {identifier}"

        return self._edit_doc(file_path, op)

    @tool
    def apply_formatting(
        self,
        file_path: str,
        identifier: str,
        bold: bool | None,
        italic: bool | None,
        underline: bool | None,
        strikethrough: bool | None,
        font_size: float | None,
        font_color: str | None,
    ) -> str:
        font_name = alignment = style = None
        color = parse_color(font_color, arg="font_color") if font_color else None

        def op(doc: DocxDocument) -> str:
            from docx.shared import Pt, RGBColor

            t = resolve(doc, identifier)
            st = self._style_of(doc, style)
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

        return self._edit_doc(file_path, op)

    @tool
    def comments(
        self,
        file_path: str,
        action: str,
        identifier: str | None,
        text: str | None,
        author: str | None,
        comment_id: int | None,
    ) -> str:
        author = author or ""
        if action not in ("read", "add", "delete"):
            raise ToolError(f"action must be 'read', 'add' or 'delete'; got {action!r}")
        if action == "read":
            p, doc = self._read_doc(file_path)
            rows = [[c.comment_id, c.author, c.timestamp or "", c.text] for c in doc.comments]
            where = comment_anchors(doc)
            if not rows:
                return f"{rel(self.root, p)} has no comments"
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

            return self._edit_doc(file_path, add)
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

        return self._edit_doc(file_path, delete)

    @tool
    def header_footer(
        self,
        file_path: str,
        action: str,
        area: str,
        section_index: int,
        content: list[dict[str, Any]] | None,
        link_to_previous: bool | None,
    ) -> str:
        if action not in ("read", "set", "clear", "link") or area not in ("header", "footer"):
            raise ToolError("action must be read, set, clear or link; area header or footer")
        text = "\n".join(_block_text(b) for b in content or []) if content is not None else None

        def section(doc: DocxDocument) -> Any:
            if not 0 <= section_index < len(doc.sections):
                raise ToolError(
                    f"section_index {section_index} out of range (document has {len(doc.sections)} sections)"
                )
            sec = doc.sections[section_index]
            return sec.header if area == "header" else sec.footer

        if action == "read":
            _, doc = self._read_doc(file_path)
            hf = section(doc)
            lines = render_container(hf, f"{area}.s.{section_index}", [], False)
            linked = " (linked to previous section)" if hf.is_linked_to_previous else ""
            return f"{area} of section {section_index}{linked}:\n" + ("\n".join(lines) or "(empty)")
        if action == "set" and not content:
            raise ToolError(
                "action 'set' needs content: a list of blocks, e.g. [{'type': 'paragraph', 'text': '...'}]"
            )

        def op(doc: DocxDocument) -> str:
            hf = section(doc)
            if action == "link":
                hf.is_linked_to_previous = True if link_to_previous is None else link_to_previous
                return f"{area} of section {section_index} linked to previous: {hf.is_linked_to_previous}"
            hf.is_linked_to_previous = False
            for child in list(hf._element.iterchildren()):
                if child.tag.rsplit("}", 1)[-1] in ("p", "tbl"):
                    hf._element.remove(child)
            for line in (text or "").split("\n") if action == "set" else [""]:
                add_text_runs(hf.add_paragraph(), line)
            return (
                f"{'Set' if action == 'set' else 'Cleared'} the {area} of section {section_index}"
            )

        return self._edit_doc(file_path, op)

    @tool
    def page_margins(
        self,
        file_path: str,
        action: str,
        section_index: int,
        top: float | None,
        bottom: float | None,
        left: float | None,
        right: float | None,
    ) -> str:
        if action not in ("read", "set"):
            raise ToolError(f"action must be 'read' or 'set'; got {action!r}")
        values = {"top": top, "bottom": bottom, "left": left, "right": right}

        def describe(sec: Any) -> str:
            return ", ".join(f"{k} {inches(getattr(sec, f'{k}_margin'))} in" for k in values)

        if action == "read":
            _, doc = self._read_doc(file_path)
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

        return self._edit_doc(file_path, op)

    @tool
    def page_orientation(
        self, file_path: str, action: str, section_index: int, orientation: str | None
    ) -> str:
        if action not in ("read", "set"):
            raise ToolError(f"action must be 'read' or 'set'; got {action!r}")
        if orientation not in (None, "portrait", "landscape"):
            raise ToolError(f"orientation must be 'portrait' or 'landscape'; got {orientation!r}")
        if action == "read":
            _, doc = self._read_doc(file_path)
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

        return self._edit_doc(file_path, op)

    @tool
    def add_image(
        self,
        file_path: str,
        image_path: str,
        identifier: str,
        position: str,
        width: float | None,
        height: float | None,
    ) -> str:
        if position not in ("start", "end"):
            raise ToolError(f"position must be 'start' or 'end'; got {position!r}")
        img = image_file(self.root, image_path)

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

        return self._edit_doc(file_path, op)

    @tool
    def modify_image(
        self,
        file_path: str,
        image_index: int,
        operation: str,
        rotation: int | None,
        flip: str | None,
        brightness: float | None,
        contrast: float | None,
    ) -> str:
        crop_left = crop_top = crop_right = crop_bottom = None
        if operation not in ("rotate", "flip", "brightness", "contrast"):
            raise ToolError(
                f"operation must be rotate, flip, brightness or contrast; got {operation!r}"
            )
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

        return self._edit_doc(file_path, op)

    @tool
    def read_image(self, file_path: str, annotation: str) -> McpImage:
        _, doc = self._read_doc(file_path)
        key = annotation.strip().lstrip("@").removeprefix("img")
        if not key.isdigit():
            raise ToolError(
                f"annotation {annotation!r} must look like 'img0' (see read_document_content)"
            )
        _, part = image_part(doc, int(key))
        return image_result(part.blob)
