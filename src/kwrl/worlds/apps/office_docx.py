"""Addressing and rendering .docx content for the word app (python-docx).

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from docx.document import Document as DocxDocument
from docx.table import Table, _Cell, _Row
from docx.text.paragraph import Paragraph
from docx.text.run import Run

from kwrl.worlds.apps.base import ToolError
from kwrl.worlds.apps.office_common import md_table


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
    return isinstance(obj, _Cell)


def is_row(obj: Any) -> bool:
    return isinstance(obj, _Row)
