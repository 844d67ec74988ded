"""Formulas openpyxl wrote without values are computed by LibreOffice for rendering and checks, in a
sandbox where opening the agent's workbook has no effect outside it (no network, no capability,
nothing of the host writable)."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pytest
from grading_testkit import write_files

from kwrl.grading import recalc
from kwrl.grading.checks import run_check
from kwrl.grading.diff import StateView
from kwrl.grading.evidence import Evidence
from kwrl.grading.recalc import strip_external
from kwrl.grading.render import clear_cache, render_file
from kwrl.sandbox.conformance.testing import loopback_listener, write_linked_workbook
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


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    with loopback_listener() as (url, hits):
        yield url, hits


def test_external_relationships_are_stripped_from_the_copy(tmp_path: Path) -> None:
    book = tmp_path / "linked.xlsx"
    write_linked_workbook(book, "http://127.0.0.1:9")
    with zipfile.ZipFile(io.BytesIO(strip_external(book.read_bytes()))) as z:
        rels = {n: z.read(n).decode() for n in z.namelist() if n.endswith(".rels")}
    assert not [n for n, t in rels.items() if "External" in t or "127.0.0.1" in t]
    assert (
        "../drawings/drawing1.xml" in rels["xl/worksheets/_rels/sheet1.xml.rels"]
    )  # internal kept
    assert (
        openpyxl.load_workbook(io.BytesIO(strip_external(book.read_bytes())))["Sheet"]["A1"].value
        == 20
    )


@pytest.mark.parametrize("stripped", [True, False])
def test_libreoffice_sends_nothing_to_a_workbooks_links(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    listener: tuple[str, list[str]],
    stripped: bool,
) -> None:
    """A picture linked to, and a WEBSERVICE formula fetching, a listener on the loopback: the
    formulas are computed and the listener hears nothing, even with the links left in (the
    sandbox has no network of its own). Unsandboxed, LibreOffice fetched the picture three times."""
    url, hits = listener
    monkeypatch.delenv("KWRL_GRADER_RECALC", raising=False)
    if not stripped:
        monkeypatch.setattr(recalc, "strip_external", lambda data: data)
    book = tmp_path / "linked.xlsx"
    write_linked_workbook(book, url)
    (tmp_path / "out").mkdir()
    copy = recalc.recalculated_copy(book, tmp_path / "out")
    assert copy is not None
    assert openpyxl.load_workbook(copy, data_only=True)["Sheet"]["A2"].value == 41
    assert hits == []


def test_libreoffice_runs_without_network_capabilities_or_host_access(
    monkeypatch: pytest.MonkeyPatch, listener: tuple[str, list[str]]
) -> None:
    """A stand-in for LibreOffice reports what it may do: run as `nobody` (the grader is root
    here), no capability, no network, the system read-only, no host process, no host variable."""
    url, hits = listener
    monkeypatch.setenv("KWRL_TEST_SECRET", "sk-recalc-secret")
    home = Path(tempfile.mkdtemp(prefix="kwrl-fake-lo-"))  # searchable by nobody, unlike tmp_path
    try:
        home.chmod(0o755)
        exe = home / "program" / "soffice"
        exe.parent.mkdir(mode=0o755)
        port = url.rsplit(":", 1)[1]
        exe.write_text(
            "#!/bin/bash\n"
            "for a; do case $prev in --outdir) out=$a;; esac; prev=$a; done\n"
            "{ echo uid=$(id -u); grep CapEff /proc/self/status\n"
            f"  (echo GET / > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo net=yes || echo net=no\n"
            "  touch /usr/kwrl-probe 2>/dev/null && echo usr=rw || echo usr=ro\n"
            "  echo procs=$(ls -d /proc/[0-9]* | wc -l); env\n"
            "} > $out/book.xlsx\n"
        )
        exe.chmod(0o755)
        monkeypatch.setattr(recalc, "soffice", lambda: str(exe))
        (home / "out").mkdir()
        copy = recalc.recalculated_copy(_plain_book(home / "book.xlsx"), home / "out")
        assert copy is not None
        report = copy.read_text()
    finally:
        shutil.rmtree(home)
    if os.geteuid() == 0:
        assert "uid=65534" in report
    assert "CapEff:\t0000000000000000" in report
    assert "net=no" in report and "usr=ro" in report and hits == []
    assert int(report.split("procs=")[1].split()[0]) < 10  # its own pid namespace
    assert "sk-recalc-secret" not in report and "KWRL" not in report


def _plain_book(path: Path) -> Path:
    wb = openpyxl.Workbook()
    wb.active["A1"] = "=1+1"  # type: ignore[index]
    wb.save(path)
    return path
