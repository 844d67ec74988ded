from __future__ import annotations

import shutil
from pathlib import Path

from kwrl.grading.render import render_file


def test_xlsx_shows_values_and_formulas_with_cached_results(office_fixtures: Path) -> None:
    text = render_file(office_fixtures / "xlsx/openpyxl__formulae.xlsx")
    assert "## Sheet: Sheet1" in text
    assert "A2 = 12345" in text
    assert "A4 = =A2+A3 -> 24690" in text


def test_docx_shows_paragraphs_tables_and_headers(office_fixtures: Path) -> None:
    text = render_file(office_fixtures / "docx/python-docx__hdr-header-footer.docx")
    assert "section with header" in text
    assert "[header] Header for section-1" in text
    merged = render_file(office_fixtures / "docx/docx2python__merged_cells.docx")
    assert "| 0-0 | 0-12 | 0-3 |" in merged


def test_pptx_shows_tables_charts_and_notes(office_fixtures: Path) -> None:
    assert "| having custom margins |" in render_file(
        office_fixtures / "pptx/python-pptx__tbl-cell.pptx"
    )
    chart = render_file(office_fixtures / "pptx/python-pptx__cht-charts.pptx")
    assert "series Series 1: Category 1=4.3" in chart
    assert "[notes] Notes" in render_file(office_fixtures / "pptx/python-pptx__sld-notes.pptx")


def test_pdf_text_per_page(office_fixtures: Path) -> None:
    text = render_file(office_fixtures / "pdf/pypdf__crazyones.pdf")
    assert text.startswith("## Page 1\nThe Crazy Ones")


def test_corrupt_and_binary_files_render_as_markers(tmp_path: Path, office_fixtures: Path) -> None:
    bad = tmp_path / "broken.xlsx"
    bad.write_bytes(b"not a zip")
    assert render_file(bad).startswith("[unreadable xlsx file:")
    png = tmp_path / "img.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert render_file(png) == "[binary file: 10 bytes]"
    txt = tmp_path / "notes"
    shutil.copy(office_fixtures / "pdf/pypdf__crazyones.txt", txt)
    assert "The Crazy Ones" in render_file(txt, max_chars=20)
    assert "[truncated:" in render_file(txt, max_chars=20)
