"""Formulas openpyxl wrote without values are computed by LibreOffice for rendering and checks."""

from __future__ import annotations

import shutil
from pathlib import Path

import openpyxl
import pytest
from grading_testkit import write_files

from kwrl.grading.checks import run_check
from kwrl.grading.diff import StateView
from kwrl.grading.evidence import Evidence
from kwrl.grading.render import clear_cache, render_file
from kwrl.tasks.models import XlsxCellCheck

pytestmark = pytest.mark.skipif(
    shutil.which("soffice") is None and shutil.which("libreoffice") is None,
    reason="LibreOffice is not installed",
)


def test_uncached_formulas_get_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KWRL_GRADER_RECALC", raising=False)
    clear_cache()
    world = write_files(tmp_path / "world", {"filesystem/readme.txt": "x"})
    final = write_files(tmp_path / "final", {"filesystem/readme.txt": "x"})
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "Model"
    ws["A1"], ws["A2"], ws["A3"] = 21, "=A1*2", "=SUM(A1:A2)"
    wb.save(final / "filesystem/model.xlsx")
    before = (final / "filesystem/model.xlsx").read_bytes()

    text = render_file(final / "filesystem/model.xlsx")
    assert "A2 = =A1*2 -> 42" in text and "A3 = =SUM(A1:A2) -> 63" in text
    ev = Evidence.collect(
        task="t", answer="", initial=StateView.of([world]), final=StateView.of([final])
    )
    r = run_check(XlsxCellCheck(path="/model.xlsx", sheet="Model", cell="A3", value=63), ev)
    assert r.passed, r.rationale
    assert (final / "filesystem/model.xlsx").read_bytes() == before  # the world's file is untouched
