"""docx, xlsx and pptx writers (python-docx, openpyxl, python-pptx) with deterministic bytes.

Spreadsheet choice: openpyxl cannot compute formulas and writes formula cells with an empty cached
value, so a reader that shows values (openpyxl `data_only=True`, most viewers, our excel app) would
see nothing. We write each formula AND its value, computed in Python: after openpyxl saves, the
sheet XML's `<f>..</f><v></v>` is patched to `<f>..</f><v>VALUE</v>`. Readers then see both the
formula (how the figure is derived, across tabs) and the cached value (what it is), like a file
last saved by Excel.

Determinism: the zip is re-packed with members in a fixed order and fixed `date_time`, and every
ISO timestamp in docProps/core.xml is replaced by the fixed generation date.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from docx import Document
from docx.oxml.ns import qn
from openpyxl import Workbook
from openpyxl.styles import Font
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.util import Inches, Pt

from kwrl.synth.rng import FIXED_TIMESTAMP, ZIP_DATE_TIME
from kwrl.synth.writers import Block, Sheet, Slide

_ISO = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?")
_FIXED_ISO = FIXED_TIMESTAMP.strftime("%Y-%m-%dT%H:%M:%SZ").encode()


def normalize_zip(data: bytes, patch: dict[str, bytes] | None = None) -> bytes:
    """Re-pack a zip with sorted members, fixed dates and fixed core-property timestamps."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    names = src.namelist()
    # [Content_Types].xml first, as Office writes it; the rest sorted.
    order = sorted(names, key=lambda n: (n != "[Content_Types].xml", n))
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as dst:
        for name in order:
            body = patch[name] if patch and name in patch else src.read(name)
            if name == "docProps/core.xml":
                body = _ISO.sub(_FIXED_ISO, body)
            elif name.endswith((".xlsx", ".docx", ".pptx")):
                body = normalize_zip(body)  # embedded chart workbooks carry their own timestamps
            info = zipfile.ZipInfo(name, ZIP_DATE_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            dst.writestr(info, body, compresslevel=1)
    return out.getvalue()


def _core(props: object, title: str, author: str) -> None:
    for attr in ("created", "modified", "last_printed"):
        if hasattr(props, attr):
            setattr(props, attr, FIXED_TIMESTAMP.replace(tzinfo=None))
    props.title = title  # type: ignore[attr-defined]
    for attr in ("author", "creator", "last_modified_by", "lastModifiedBy"):
        if hasattr(props, attr):
            setattr(props, attr, author)


_DOC: list[Any] = []


def _blank_document() -> Any:
    """One python-docx Document per process, its body cleared before each use.

    Parsing the default template is most of python-docx's cost per file; every other part
    (styles, settings, theme) is identical across generated documents, so it is parsed once.
    """
    if not _DOC:
        _DOC.append(Document())
    doc = _DOC[0]
    body = doc.element.body
    for child in list(body):
        if child.tag != qn("w:sectPr"):
            body.remove(child)
    return doc


def docx_bytes(title: str, blocks: list[Block], author: str) -> bytes:
    doc = _blank_document()
    _core(doc.core_properties, title, author)
    # Style objects, not names: python-docx resolves a style name by scanning every style.
    styles = doc.styles
    title_style, h1, normal = styles["Title"], styles["Heading 1"], styles["Normal"]
    doc.add_paragraph(title, style=title_style)
    for kind, content in blocks:
        if kind == "h":
            doc.add_paragraph(str(content), style=h1)
        elif kind == "p":
            doc.add_paragraph(str(content), style=normal)
        elif kind == "table":
            rows: list[list[str]] = content  # type: ignore[assignment]
            t = doc.add_table(rows=len(rows), cols=len(rows[0]))
            t.style = "Table Grid"
            for i, row in enumerate(rows):
                for j, val in enumerate(row):
                    t.cell(i, j).text = val
    buf = io.BytesIO()
    doc.save(buf)
    return normalize_zip(buf.getvalue())


def _num(v: float) -> str:
    return repr(float(v)) if not float(v).is_integer() else str(int(v))


def xlsx_bytes(sheets: list[Sheet], title: str, author: str) -> bytes:
    wb = Workbook()
    wb.remove(wb.active)  # type: ignore[arg-type]
    _core(wb.properties, title, author)
    bold = Font(bold=True)
    for sh in sheets:
        ws = wb.create_sheet(sh.name)
        for ref, val in sh.cells.items():
            ws[ref] = val
            if isinstance(val, str) and ref[1:] == "1":
                ws[ref].font = bold
        for ref, (formula, _value) in sh.formulas.items():
            ws[ref] = "=" + formula
        for col, w in sh.widths.items():
            ws.column_dimensions[col].width = w
    buf = io.BytesIO()
    wb.save(buf)
    data = buf.getvalue()
    # Patch cached values into each sheet's XML (sheetN.xml in creation order).
    src = zipfile.ZipFile(io.BytesIO(data))
    patch: dict[str, bytes] = {}
    for n, sh in enumerate(sheets, start=1):
        name = f"xl/worksheets/sheet{n}.xml"
        xml = src.read(name)
        for ref, (_formula, value) in sh.formulas.items():
            pat = re.compile(rb'(<c r="' + ref.encode() + rb'"[^>]*><f>[^<]*</f>)<v\s*/?>(</v>)?')
            xml, k = pat.subn(
                lambda m, v=value: m.group(1) + b"<v>" + _num(v).encode() + b"</v>", xml, count=1
            )
            if k != 1:
                raise AssertionError(
                    f"{name}: formula cell {ref} not found while writing its cached value"
                )
        patch[name] = xml
    return normalize_zip(data, patch)


def pptx_bytes(title: str, slides: list[Slide], author: str) -> bytes:
    prs = Presentation()
    _core(prs.core_properties, title, author)
    first = prs.slides.add_slide(prs.slide_layouts[0])
    first.shapes.title.text = title  # type: ignore[union-attr]
    first.placeholders[1].text = author  # type: ignore[attr-defined]
    for s in slides:
        slide = prs.slides.add_slide(prs.slide_layouts[5])
        slide.shapes.title.text = s.title  # type: ignore[union-attr]
        top = Inches(1.5)
        if s.bullets:
            box = slide.shapes.add_textbox(Inches(0.5), top, Inches(9), Inches(1.5))
            tf = box.text_frame
            tf.text = s.bullets[0]
            for b in s.bullets[1:]:
                tf.add_paragraph().text = b
            top = Inches(3.0)
        if s.table:
            rows, cols = len(s.table), len(s.table[0])
            shape = slide.shapes.add_table(
                rows, cols, Inches(0.5), top, Inches(9), Inches(0.4 * rows)
            )
            for i, row in enumerate(s.table):
                for j, val in enumerate(row):
                    cell = shape.table.cell(i, j)
                    cell.text = val
                    for para in cell.text_frame.paragraphs:
                        for run in para.runs:
                            run.font.size = Pt(11)
        if s.chart:
            cats, series = s.chart
            cd = CategoryChartData()
            cd.categories = cats
            for name, vals in series.items():
                cd.add_series(name, vals)
            slide.shapes.add_chart(
                XL_CHART_TYPE.COLUMN_CLUSTERED,
                Inches(0.5),
                top,
                Inches(9),
                Inches(4),
                cd,  # type: ignore[arg-type]  (python-pptx's stub names the base class)
            )
    buf = io.BytesIO()
    prs.save(buf)
    return normalize_zip(buf.getvalue())
