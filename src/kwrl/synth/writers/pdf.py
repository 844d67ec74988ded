"""PDF writer (reportlab platypus) with invariant output: no timestamps, fixed document id."""

from __future__ import annotations

import io

from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from kwrl.synth.writers import Block


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def pdf_bytes(title: str, blocks: list[Block], author: str) -> bytes:
    buf = io.BytesIO()
    doc = SimpleDocTemplate(buf, pagesize=A4, title=title, author=author, invariant=1)
    styles = getSampleStyleSheet()
    story: list[object] = [Paragraph(_esc(title), styles["Title"]), Spacer(1, 12)]
    for kind, content in blocks:
        if kind == "h":
            story.append(Paragraph(_esc(str(content)), styles["Heading2"]))
        elif kind == "p":
            story.append(Paragraph(_esc(str(content)), styles["BodyText"]))
            story.append(Spacer(1, 6))
        elif kind == "table":
            t = Table(content)  # type: ignore[arg-type]
            t.setStyle(
                TableStyle(
                    [
                        ("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                        ("BACKGROUND", (0, 0), (-1, 0), colors.lightgrey),
                        ("FONTSIZE", (0, 0), (-1, -1), 9),
                    ]
                )
            )
            story.append(t)
            story.append(Spacer(1, 10))
    doc.build(story)  # type: ignore[arg-type]
    return buf.getvalue()
