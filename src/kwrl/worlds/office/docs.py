"""Addressing, rendering and editing .docx content for the word app (python-docx).

The MCP tools live in `word.py`; this module holds what they share: identifier resolution,
the reader's rendering, text writers that keep the first run's formatting, and style lookup.

Identifiers (Archipelago's grammar) name one element so edits are precise:

    body.p.3                   4th top-level paragraph of the body
    body.p.3.r.0               its first run
    body.tbl.0                 first top-level table
    body.tbl.0.r.2             its third row
    body.tbl.0.r.2.c.1         a cell (cells hold paragraphs and tables again: ...c.1.p.0)
    header.s.0.p.0             first paragraph of section 0's header (footer.s.N... likewise)

Paragraph and table indices count paragraphs and tables separately, as python-docx's
`.paragraphs` / `.tables` do; `render_document` prints them in document order with their ids.
Images are numbered in body order (`img0`, `img1`, ...) over every `a:blip` in the body.

python-docx is imported inside the helpers that use it at run time (annotations only need it for
type checking): the gateway imports this module at start-up, python-docx is ~0.15 s to import.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastmcp.exceptions import ToolError

from kwrl.worlds.office.blocks import Block, inline_runs
from kwrl.worlds.office.common import md_table

if TYPE_CHECKING:
    from docx.document import Document as DocxDocument
    from docx.table import Table
    from docx.text.paragraph import Paragraph
    from docx.text.run import Run


@dataclass
class Target:
    kind: str  # "paragraph" | "run" | "table" | "row" | "cell"
    obj: Any
    ident: str


def _container(doc: DocxDocument, tokens: list[str], ident: str) -> tuple[Any, list[str], str]:
    area = tokens[0]
    if area == "body":
        return doc, tokens[1:], "document body"
    if area in ("header", "footer"):
        if len(tokens) < 3 or tokens[1] != "s" or not tokens[2].isdigit():
            raise ToolError(f"identifier {ident!r}: expected '{area}.s.<section>.p.<n>'")
        s = int(tokens[2])
        if s >= len(doc.sections):
            raise ToolError(
                f"identifier {ident!r}: section {s} out of range (document has {len(doc.sections)})"
            )
        sec = doc.sections[s]
        return (
            (sec.header if area == "header" else sec.footer),
            tokens[3:],
            f"{area} of section {s}",
        )
    raise ToolError(
        f"identifier {ident!r} must start with 'body', 'header.s.<n>' or 'footer.s.<n>'"
    )


def resolve(doc: DocxDocument, ident: str) -> Target:
    """The element an identifier names; ToolError saying which step failed otherwise."""
    tokens = [t for t in ident.strip().lstrip("@").split(".") if t]
    if not tokens:
        raise ToolError("identifier is empty; use one from read_document_content, e.g. 'body.p.0'")
    obj, rest, where = _container(doc, tokens, ident)
    kind = "container"
    if len(rest) % 2:
        raise ToolError(f"identifier {ident!r}: every label needs an index, e.g. 'body.p.0.r.1'")
    for label, raw in zip(rest[::2], rest[1::2], strict=True):
        if not raw.isdigit():
            raise ToolError(f"identifier {ident!r}: index {raw!r} after {label!r} must be a number")
        i = int(raw)
        if kind in ("container", "cell") and label in ("p", "tbl"):
            items = obj.paragraphs if label == "p" else obj.tables
            noun = "paragraph" if label == "p" else "table"
            if i >= len(items):
                raise ToolError(
                    f"identifier {ident!r}: {noun} {i} out of range ({where} has {len(items)} {noun}s)"
                )
            obj, kind, where = items[i], noun, f"{noun} {i}"
        elif kind == "table" and label == "r":
            rows = obj.rows
            if i >= len(rows):
                raise ToolError(
                    f"identifier {ident!r}: row {i} out of range (table has {len(rows)} rows)"
                )
            obj, kind = rows[i], "row"
        elif kind == "row" and label == "c":
            cells = obj.cells
            if i >= len(cells):
                raise ToolError(
                    f"identifier {ident!r}: cell {i} out of range (row has {len(cells)} cells)"
                )
            obj, kind, where = cells[i], "cell", f"cell {i}"
        elif kind == "paragraph" and label == "r":
            runs = obj.runs
            if i >= len(runs):
                raise ToolError(
                    f"identifier {ident!r}: run {i} out of range (paragraph has {len(runs)} runs)"
                )
            obj, kind = runs[i], "run"
        else:
            raise ToolError(f"identifier {ident!r}: label {label!r} cannot follow a {kind}")
    if kind == "container":
        raise ToolError(f"identifier {ident!r} names no element; add e.g. '.p.0'")
    return Target(kind, obj, ident)


def paragraphs_of(t: Target) -> list[Paragraph]:
    """Every paragraph a target covers (a run's own paragraph is not included)."""
    if t.kind == "paragraph":
        return [t.obj]
    if t.kind == "cell":
        return list(t.obj.paragraphs)
    if t.kind == "row":
        return [p for c in t.obj.cells for p in c.paragraphs]
    if t.kind == "table":
        return [p for row in t.obj.rows for c in row.cells for p in c.paragraphs]
    return []


def runs_of(t: Target) -> list[Run]:
    """Every run a target covers, including runs inside hyperlinks."""
    from docx.text.run import Run

    if t.kind == "run":
        return [t.obj]
    runs: list[Run] = []
    for p in paragraphs_of(t):
        for item in p.iter_inner_content():
            runs.extend([item] if isinstance(item, Run) else item.runs)
    return runs


def body_blips(doc: DocxDocument) -> list[Any]:
    return list(doc.element.body.xpath(".//a:blip"))


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_TEXT_TAGS = (f"{_W}t", f"{_W}tab", f"{_W}br", f"{_W}cr", f"{_W}delText")


def _collect(el: Any, *, deleted: bool) -> str:
    out: list[str] = []
    for node in el.iter(*_TEXT_TAGS):
        tag = node.tag
        if (tag == f"{_W}t" and not deleted) or (tag == f"{_W}delText" and deleted):
            out.append(node.text or "")
        elif tag == f"{_W}tab" and not deleted:
            out.append("\t")
        elif tag in (f"{_W}br", f"{_W}cr") and not deleted:
            out.append("\n")
    return "".join(out)


def para_text(p: Paragraph) -> str:
    """A paragraph's text as Word shows it with tracked changes accepted: insertions included
    (python-docx's `.text` drops text inside w:ins), deletions left out."""
    return _collect(p._p, deleted=False)


def tracked_changes(p: Paragraph) -> list[str]:
    changes = [f"+{_collect(el, deleted=False)!r}" for el in p._p.iter(f"{_W}ins")]
    changes += [f"-{_collect(el, deleted=True)!r}" for el in p._p.iter(f"{_W}del")]
    return [c for c in changes if len(c) > 3]


def cell_text(cell: Any) -> str:
    return "\n".join(para_text(p) for p in cell.paragraphs)


def _run_format(run: Run) -> str:
    flags = [n for n in ("bold", "italic", "underline") if getattr(run, n)]
    if run.font.strike:
        flags.append("strike")
    if run.font.size is not None:
        flags.append(f"{run.font.size.pt:g}pt")
    if (
        run.font.color is not None
        and run.font.color.type is not None
        and run.font.color.rgb is not None
    ):
        flags.append(f"#{run.font.color.rgb}")
    return " ".join(flags)


def _paragraph_line(p: Paragraph, ident: str, blips: list[Any], show_runs: bool) -> list[str]:
    style = p.style.name if p.style is not None else None
    head = f"[{ident}]"
    if style and style != "Normal":
        head += f" ({style})"
    extras: list[str] = []
    for b in p._p.xpath(".//a:blip"):
        idx = next((i for i, x in enumerate(blips) if x is b), None)
        if idx is not None:
            extras.append(f"[image img{idx}]")
    for cid in p._p.xpath(".//w:commentRangeStart/@w:id"):
        extras.append(f"[comment {cid}]")
    changes = tracked_changes(p)
    if changes:
        extras.append(f"[tracked changes: {'; '.join(changes)}]")
    line = " ".join([head, para_text(p), *extras]).rstrip()
    lines = [line]
    if show_runs:
        for r_i, run in enumerate(p.runs):
            fmt = _run_format(run)
            lines.append(f"    [{ident}.r.{r_i}] {run.text!r}" + (f" ({fmt})" if fmt else ""))
    return lines


def _table_lines(tbl: Table, ident: str) -> list[str]:
    rows = [[cell_text(c) for c in row.cells] for row in tbl.rows]
    ncols = max((len(r) for r in rows), default=0)
    head = f"[{ident}] table, {len(rows)} rows x {ncols} cols; cells are {ident}.r.<row>.c.<col>"
    header = [f"c.{i}" for i in range(ncols)]
    return [head, md_table([[f"r.{i}", *r] for i, r in enumerate(rows)], header=["", *header])]


def render_container(container: Any, prefix: str, blips: list[Any], show_runs: bool) -> list[str]:
    """Lines for each paragraph and table of a body / header / footer, in document order."""
    from docx.document import Document as DocxDocument
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    lines: list[str] = []
    p_i = t_i = 0
    element = container.element.body if isinstance(container, DocxDocument) else container._element
    for child in element.iterchildren():
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "p":
            lines += _paragraph_line(
                Paragraph(child, container), f"{prefix}.p.{p_i}", blips, show_runs
            )
            p_i += 1
        elif tag == "tbl":
            lines += _table_lines(Table(child, container), f"{prefix}.tbl.{t_i}")
            t_i += 1
        elif tag == "sdt":  # content control: shown, not addressable by the edit tools
            inner = _collect(child, deleted=False).strip()
            if inner:
                lines.append(f"[content control, read-only here] {inner}")
    return lines


def render_document(doc: DocxDocument, name: str, show_runs: bool) -> str:
    blips = body_blips(doc)
    comments = list(doc.comments)
    head = (
        f"{name}: {len(doc.paragraphs)} paragraphs, {len(doc.tables)} tables, "
        f"{len(doc.sections)} section(s), {len(blips)} image(s), {len(comments)} comment(s)\n"
        "Identifiers in [brackets] address elements for the edit tools "
        "(append .r.<n> for a run; show_runs=true lists runs).\n"
    )
    return head + "\n".join(render_container(doc, "body", blips, show_runs))


def heading_level(p: Paragraph) -> int | None:
    name = (p.style.name if p.style is not None else "") or ""
    low = name.lower()
    if low == "title":
        return 0
    if low.startswith("heading"):
        tail = low.removeprefix("heading").strip()
        return int(tail) if tail.isdigit() else 1
    return None


def remove_element(el: Any) -> None:
    parent = el.getparent()
    if parent is not None:
        parent.remove(el)


def is_cell(obj: Any) -> bool:
    from docx.table import _Cell

    return isinstance(obj, _Cell)


def is_row(obj: Any) -> bool:
    from docx.table import _Row

    return isinstance(obj, _Row)


def paragraph_alignment(name: str) -> Any:
    """python-docx's paragraph alignment for 'left' | 'center' | 'right' | 'justify'."""
    from docx.enum.text import WD_ALIGN_PARAGRAPH

    return {
        "left": WD_ALIGN_PARAGRAPH.LEFT,
        "center": WD_ALIGN_PARAGRAPH.CENTER,
        "right": WD_ALIGN_PARAGRAPH.RIGHT,
        "justify": WD_ALIGN_PARAGRAPH.JUSTIFY,
    }[name]


def add_text_runs(p: Paragraph, text: str, rpr: Any = None) -> None:
    for chunk, bold, italic in inline_runs(text):
        run = p.add_run(chunk)
        if rpr is not None:
            run._r.insert(0, copy.deepcopy(rpr))
        if bold:
            run.bold = True
        if italic:
            run.italic = True


def write_blocks(doc: DocxDocument, blocks: list[Block]) -> None:
    """Append content blocks to a document body."""
    from docx.enum.text import WD_BREAK

    for b in blocks:
        t = b["type"]
        style = b.get("style")
        if t == "heading":
            level = min(max(int(b.get("level", 1)), 1), 4)
            if style:
                add_text_runs(doc.add_paragraph(style=ensure_style(doc, style)), b.get("text", ""))
            else:
                doc.add_heading(b.get("text", ""), level=level)
        elif t == "paragraph":
            p = doc.add_paragraph(style=ensure_style(doc, style) if style else None)
            add_text_runs(p, b.get("text", ""))
            for run in p.runs:
                run.bold = True if b.get("bold") else run.bold
                run.italic = True if b.get("italic") else run.italic
        elif t in ("bullet_list", "numbered_list"):
            list_style = style or ("List Bullet" if t == "bullet_list" else "List Number")
            for item in b.get("items", []):
                add_text_runs(doc.add_paragraph(style=list_style), item)
        elif t == "section_break":
            from docx.enum.section import WD_SECTION

            starts = {"new_page": WD_SECTION.NEW_PAGE, "continuous": WD_SECTION.CONTINUOUS,
                      "odd_page": WD_SECTION.ODD_PAGE, "even_page": WD_SECTION.EVEN_PAGE,
                      "new_column": WD_SECTION.NEW_COLUMN}  # fmt: skip
            doc.add_section(starts.get(str(b.get("start_type", "new_page")), WD_SECTION.NEW_PAGE))
        elif t == "table":
            rows = b.get("rows", [])
            table = doc.add_table(rows=len(rows), cols=len(rows[0]))
            table.style = style if style in {s.name for s in doc.styles} else "Table Grid"
            for r_i, row in enumerate(rows):
                for c_i, value in enumerate(row):
                    cell = table.cell(r_i, c_i)
                    cell.text = str(value)
                    if r_i == 0 and b.get("header", True):
                        for run in cell.paragraphs[0].runs:
                            run.bold = True
        elif t == "page_break":
            doc.add_paragraph().add_run().add_break(WD_BREAK.PAGE)


_HEADING_PT = {0: 26, 1: 16, 2: 13, 3: 12}


def ensure_style(doc: DocxDocument, name: str) -> Any:
    """The paragraph style `name`; Word's built-in headings, Title and list styles are added
    when a document lacks them (Word keeps them latent until first use)."""
    from docx.enum.style import WD_STYLE_TYPE
    from docx.shared import Pt

    names = {s.name for s in doc.styles}
    if name in names:
        return doc.styles[name]
    m = re.fullmatch(r"Heading ([1-9])|Title|List (Bullet|Number)|Quote", name)
    if m is None:
        shown = ", ".join(sorted(n for n in names if n)[:20])
        raise ToolError(f"style {name!r} does not exist in this document; some that do: {shown}")
    style: Any = doc.styles.add_style(name, WD_STYLE_TYPE.PARAGRAPH)
    if "Normal" in names:
        style.base_style = doc.styles["Normal"]
    if name.startswith("Heading") or name == "Title":
        level = 0 if name == "Title" else int(name.split()[1])
        style.font.bold = True
        style.font.size = Pt(_HEADING_PT.get(level, 11))
        style.paragraph_format.space_before = Pt(12)
        style.paragraph_format.keep_with_next = True
    elif name == "Quote":
        style.font.italic = True
    return style


def first_rpr(p: Paragraph) -> Any:
    for r in p.runs:
        if r.text and r._r.rPr is not None:
            return r._r.rPr
    return None


def set_paragraph_text(p: Paragraph, text: str) -> None:
    """Replace a paragraph's text, keeping its first run's formatting and any image runs."""
    rpr = first_rpr(p)
    anchor_index: int | None = None
    for child in list(p._p.iterchildren()):
        tag = child.tag.rsplit("}", 1)[-1]
        if tag in ("r", "hyperlink", "ins", "del", "smartTag") and not child.xpath(".//a:blip"):
            if anchor_index is None:
                anchor_index = p._p.index(child)
            p._p.remove(child)
    run = p.add_run(text)
    if rpr is not None:
        run._r.insert(0, copy.deepcopy(rpr))
    if anchor_index is not None:
        p._p.remove(run._r)
        p._p.insert(anchor_index, run._r)


def new_paragraph_after(el: Any, parent: Any, text: str, style: Any, rpr: Any) -> Paragraph:
    from docx.oxml import OxmlElement
    from docx.text.paragraph import Paragraph

    new = OxmlElement("w:p")
    el.addnext(new)
    para = Paragraph(new, parent)
    if style is not None:
        para.style = style
    add_text_runs(para, text, rpr)
    return para


def prepend_run(p: Paragraph, text: str) -> None:
    rpr = first_rpr(p)
    run = p.add_run(text)
    if rpr is not None:
        run._r.insert(0, copy.deepcopy(rpr))
    p._p.remove(run._r)
    p._p.insert(1 if p._p.pPr is not None else 0, run._r)


def image_part(doc: DocxDocument, index: int) -> tuple[Any, Any]:
    blips = body_blips(doc)
    if not 0 <= index < len(blips):
        raise ToolError(f"image {index} not found; the document has {len(blips)} image(s) (img0..)")
    blip = blips[index]
    rid = blip.get("{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed")
    part = doc.part.related_parts.get(rid) if rid else None
    if part is None:
        raise ToolError(f"image {index} is linked, not embedded; it cannot be read or modified")
    return blip, part


def replace_in(t: Target, old: str, new: str) -> str:
    if not old:
        raise ToolError("old_text must not be empty")
    if t.kind == "run":
        n = t.obj.text.count(old)
        t.obj.text = t.obj.text.replace(old, new)
    else:
        n = 0
        for par in paragraphs_of(t):
            full = para_text(par)
            count = full.count(old)
            if not count:
                continue
            n += count
            runs = par.runs
            if sum(r.text.count(old) for r in runs) == count:
                for r in runs:
                    if old in r.text:
                        r.text = r.text.replace(old, new)
            else:  # the text spans runs or tracked changes: rewrite with the first run's format
                set_paragraph_text(par, full.replace(old, new))
    if n == 0:
        raise ToolError(f"{old!r} not found in {t.ident}")
    return f"Replaced {n} occurrence(s) of {old!r} in {t.ident}"


def section_at(doc: DocxDocument, index: int) -> Any:
    if not 0 <= index < len(doc.sections):
        raise ToolError(
            f"section_index {index} out of range (document has {len(doc.sections)} sections)"
        )
    return doc.sections[index]


def inches(v: Any) -> str:
    return "?" if v is None else f"{v / 914400:.2f}"


def orientation_of(sec: Any) -> str:
    from docx.enum.section import WD_ORIENT

    return "landscape" if sec.orientation == WD_ORIENT.LANDSCAPE else "portrait"


def comment_anchors(doc: DocxDocument) -> dict[int, str]:
    out: dict[int, str] = {}
    for i, par in enumerate(doc.paragraphs):
        for cid in par._p.xpath(".//w:commentRangeStart/@w:id | .//w:commentReference/@w:id"):
            out.setdefault(int(cid), f"body.p.{i}")
    return out
