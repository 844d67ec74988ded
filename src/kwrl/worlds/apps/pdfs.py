"""The pdfs app: read, search, render and create PDFs (ARCH mcp_servers/pdfs).

Contract: `PdfsApp(roots)`, app "pdfs" of the table; upstream's tool arguments (read_pdf_pages and
create_pdf under an `input` envelope; create_pdf's blocks may be `spacer`s, paragraphs `bold`/
`italic`); every path confined to `roots.filesystem`. Pages render as 144-DPI JPEGs, as upstream. Pages are 1-based, as in Archipelago; embedded images are `page{N}_img{M}`
(M 0-based within page N).

Text comes from PDFium (pypdfium2): it is about ten times faster than
pypdf's pure-Python extraction, which matters because models read PDFs often. A file's page
texts are extracted once and memoised on its stat. PDFium is not thread-safe and tools run in a
thread pool, so every PDFium call holds `_PDFIUM`. Document properties from pypdf; new PDFs are typeset with reportlab. Every one of
these libraries is imported inside the function that needs it, so building the app (gateway
start-up) pays for none of them.
"""

from __future__ import annotations

import io
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from fastmcp.utilities.types import Image as McpImage

from kwrl.worlds.apps.base import ToolError, WorldApp, rel, tool
from kwrl.worlds.office.blocks import inline_runs, parse_content
from kwrl.worlds.office.common import (
    cached,
    existing_file,
    file_lock,
    new_file,
    write_atomic,
)

KIND = "PDF"
EXTS = (".pdf",)
_PDFIUM = threading.Lock()


@dataclass(frozen=True)
class PdfText:
    pages: list[str]
    images: list[int]
    """Number of image objects on each page."""
    meta: dict[str, str]


def _extract(p: Path) -> PdfText:
    import pypdfium2 as pdfium

    with _PDFIUM:
        doc = pdfium.PdfDocument(str(p))
        try:
            pages, images = [], []
            for i in range(len(doc)):
                page = doc[i]
                text = page.get_textpage().get_text_bounded()
                pages.append(text.replace("\r\n", "\n").replace("\r", "\n"))
                images.append(
                    sum(
                        1
                        for _ in page.get_objects(
                            filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE], max_depth=2
                        )
                    )
                )
            meta = {
                k: v
                for k, v in doc.get_metadata_dict(skip_empty=True).items()
                if k in ("Title", "Author", "Subject")
            }
        finally:
            doc.close()
    return PdfText(pages, images, meta)


def _page_numbers(pages: list[int] | None, n: int) -> list[int]:
    if not pages:
        return list(range(1, n + 1))
    bad = [p for p in pages if not 1 <= p <= n]
    if bad:
        raise ToolError(f"page(s) {bad} out of range; the PDF has {n} page(s), numbered from 1")
    return list(dict.fromkeys(pages))


class PdfsApp(WorldApp):
    """The pdfs app: its tools read and write the world's PDFs (module docstring)."""

    def _read(self, file_path: str) -> tuple[Path, PdfText]:
        p = existing_file(self.root, file_path, EXTS)
        return p, cached(self.root, p, _extract, KIND)

    @tool
    def read_pdf_pages(self, file_path: str, pages: list[int] | None) -> str:
        p, info = self._read(file_path)
        numbers = _page_numbers(pages, len(info.pages))
        meta = ", ".join(f"{k.lower()}: {v}" for k, v in info.meta.items())
        parts = [f"{rel(self.root, p)}: {len(info.pages)} page(s)" + (f"; {meta}" if meta else "")]
        for n in numbers:
            section = [
                f"--- page {n} ---",
                info.pages[n - 1].strip() or "(no extractable text; try read_page_as_image)",
            ]
            if info.images[n - 1]:
                section.append(
                    "images: " + ", ".join(f"page{n}_img{m}" for m in range(info.images[n - 1]))
                )
            parts.append("\n".join(section))
        return "\n\n".join(parts)

    @tool
    def search_pdf(
        self,
        file_path: str,
        query: str,
        case_sensitive: bool,
        whole_word: bool,
        max_results: int,
        context_chars: int,
    ) -> str:
        if not query:
            raise ToolError("query must not be empty")
        p, info = self._read(file_path)
        pattern = re.escape(query)
        if whole_word:
            pattern = rf"(?<!\w){pattern}(?!\w)"
        rx = re.compile(pattern, 0 if case_sensitive else re.IGNORECASE)
        hits: list[str] = []
        total = 0
        for n, text in enumerate(info.pages, start=1):
            flat = re.sub(r"\s+", " ", text)
            for m in rx.finditer(flat):
                total += 1
                if len(hits) < max_results:
                    a, b = (
                        max(m.start() - context_chars, 0),
                        min(m.end() + context_chars, len(flat)),
                    )
                    hits.append(
                        f"page {n}: ...{flat[a : m.start()]}[{m.group(0)}]{flat[m.end() : b]}..."
                    )
        if not total:
            return f"No match for {query!r} in {rel(self.root, p)} ({len(info.pages)} page(s))"
        head = f"{total} match(es) for {query!r} in {rel(self.root, p)}"
        if total > len(hits):
            head += f"; showing {len(hits)}"
        return head + "\n" + "\n".join(hits)

    @tool
    def read_page_as_image(self, file_path: str, page_number: int) -> McpImage:
        import pypdfium2 as pdfium

        dpi = 144
        p, info = self._read(file_path)
        (n,) = _page_numbers([page_number], len(info.pages))
        with _PDFIUM:
            doc = pdfium.PdfDocument(str(p))
            try:
                pil = doc[n - 1].render(scale=dpi / 72).to_pil()  # type: ignore[arg-type]
            finally:
                doc.close()
        buf = io.BytesIO()
        pil.convert("RGB").save(buf, format="JPEG", quality=85)
        return McpImage(data=buf.getvalue(), format="jpeg")

    @tool
    def read_image(self, file_path: str, annotation: str) -> McpImage:
        import pypdfium2 as pdfium

        p, info = self._read(file_path)
        m = re.fullmatch(r"page(\d+)_img(\d+)", annotation.strip().lstrip("@"))
        if m is None:
            raise ToolError(
                f"annotation {annotation!r} must look like 'page1_img0' (see read_pdf_pages)"
            )
        n, i = int(m.group(1)), int(m.group(2))
        _page_numbers([n], len(info.pages))
        if i >= info.images[n - 1]:
            raise ToolError(
                f"image {annotation!r} not found; page {n} has {info.images[n - 1]} image(s)"
            )
        with _PDFIUM:
            doc = pdfium.PdfDocument(str(p))
            try:
                objs = list(
                    doc[n - 1].get_objects(filter=[pdfium.raw.FPDF_PAGEOBJ_IMAGE], max_depth=2)
                )
                pil = objs[i].get_bitmap(render=False).to_pil()  # type: ignore[attr-defined]
            finally:
                doc.close()
        buf = io.BytesIO()
        pil.save(buf, format="PNG")
        return McpImage(data=buf.getvalue(), format="png")

    @tool
    def create_pdf(
        self,
        directory: str,
        file_name: str,
        content: list[dict[str, Any]],
        metadata: dict[str, Any] | None,
        page_size: str,
    ) -> str:
        import pypdf

        size = page_size.strip().lower()
        if size not in ("letter", "a4"):
            raise ToolError(f"page_size must be 'letter' or 'a4'; got {page_size!r}")
        if not content:
            raise ToolError("content must hold at least one block")
        blocks: list[dict[str, Any]] = []
        for i, raw in enumerate(content):
            b = {k: v for k, v in raw.items() if v is not None}
            if b.get("type") == "spacer":
                blocks.append({"type": "spacer", "height": float(b.get("height") or 12)})
                continue
            (parsed,) = parse_content([b], arg=f"content[{i}]")
            blocks.append({**parsed, **{k: b[k] for k in ("bold", "italic") if k in b}})
        meta = {k: v for k, v in (metadata or {}).items() if v}
        target = new_file(self.root, directory, file_name, ".pdf", overwrite=True)
        data = render_pdf(blocks, title=meta.get("title"), author=meta.get("author"),
                          subject=meta.get("subject"), page_size=size)  # fmt: skip
        with file_lock(target):
            write_atomic(target, data)
        n = len(pypdf.PdfReader(io.BytesIO(data)).pages)
        return f"PDF {file_name} created at {rel(self.root, target)} ({n} page(s))"


def _markup(text: str) -> str:
    out = []
    for chunk, bold, italic in inline_runs(text):
        s = escape(chunk)
        out.append(f"<b>{s}</b>" if bold else f"<i>{s}</i>" if italic else s)
    return "".join(out)


def render_pdf(
    blocks: list[dict[str, Any]],
    *,
    title: str | None,
    author: str | None,
    page_size: str,
    subject: str | None = None,
) -> bytes:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4, LETTER
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.lib.units import inch
    from reportlab.platypus import (
        ListFlowable,
        ListItem,
        PageBreak,
        Paragraph,
        SimpleDocTemplate,
        Spacer,
        Table,
        TableStyle,
    )

    styles = getSampleStyleSheet()
    story: list[Any] = []
    for b in blocks:
        t = b["type"]
        if t == "heading":
            level = b.get("level", 1)
            story.append(Paragraph(_markup(b.get("text", "")), styles[f"Heading{level}"]))
        elif t == "paragraph":
            text = _markup(b.get("text", ""))
            text = f"<b>{text}</b>" if b.get("bold") else text
            text = f"<i>{text}</i>" if b.get("italic") else text
            story.append(Paragraph(text, styles["BodyText"]))
        elif t == "spacer":
            story.append(Spacer(1, b["height"]))
        elif t in ("bullet_list", "numbered_list"):
            items: list[Any] = [
                ListItem(Paragraph(_markup(x), styles["BodyText"])) for x in b.get("items", [])
            ]
            story.append(
                ListFlowable(
                    items,
                    bulletType="bullet" if t == "bullet_list" else "1",
                    start=None if t == "bullet_list" else 1,
                )
            )
        elif t == "table":
            rows = [
                [Paragraph(_markup(str(c)), styles["BodyText"]) for c in r]
                for r in b.get("rows", [])
            ]
            table = Table(rows, repeatRows=1 if b.get("header", True) else 0)
            style = [
                ("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ]
            if b.get("header", True):
                style.append(("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#DDDDDD")))
            table.setStyle(TableStyle(style))
            story += [table, Spacer(1, 0.15 * inch)]
        elif t == "page_break":
            story.append(PageBreak())
    buf = io.BytesIO()
    doc = SimpleDocTemplate(
        buf, pagesize=A4 if page_size == "a4" else LETTER, title=title or "", author=author or "", subject=subject or "",
        leftMargin=inch, rightMargin=inch, topMargin=inch, bottomMargin=inch,
    )  # fmt: skip
    try:
        doc.build(story)
    except Exception as exc:  # reportlab rejects e.g. a table cell taller than a page
        raise ToolError(f"the PDF could not be laid out: {type(exc).__name__}: {exc}") from exc
    return buf.getvalue()
