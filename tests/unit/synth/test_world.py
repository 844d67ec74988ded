"""A rendered world: 50-200 files, formulas with cached values, the same figures in every file."""

from __future__ import annotations

import email
import io
import json
import mailbox
import zipfile
from pathlib import Path

import openpyxl
import pytest
from docx import Document
from pptx import Presentation
from pypdf import PdfReader

from kwrl.synth.layout import WorldFiles, build_world
from kwrl.synth.render import TABLE_HOMES, table_rows
from kwrl.tasks.models import DOMAINS


@pytest.fixture(scope="module", params=DOMAINS)
def wf(request: pytest.FixtureRequest) -> WorldFiles:
    return build_world(3, DOMAINS.index(request.param), request.param, 6)


def fs(wf: WorldFiles, path: str) -> bytes:
    return wf.files["filesystem" + path]


def pptx_text(data: bytes) -> str:
    prs = Presentation(io.BytesIO(data))
    out = []
    for slide in prs.slides:
        for shape in slide.shapes:
            if shape.has_table:
                out += [c.text for row in shape.table.rows for c in row.cells]
            elif shape.has_text_frame:
                out.append(shape.text_frame.text)
    return "\n".join(out)


def test_world_has_between_50_and_200_files_across_formats(wf: WorldFiles) -> None:
    fsfiles = [k for k in wf.files if k.startswith("filesystem/")]
    assert 50 <= len(fsfiles) <= 200
    exts = {k.rsplit(".", 1)[-1] for k in fsfiles}
    assert {"xlsx", "docx", "pptx", "pdf"} <= exts
    assert ".apps_data/mail/inbox.mbox" in wf.files
    assert ".apps_data/calendar/calendar.ics" in wf.files
    assert ".apps_data/chat/users.json" in wf.files


def test_workbook_formulas_carry_cached_values_that_match_the_facts(
    wf: WorldFiles, tmp_path: Path
) -> None:
    w = wf.world
    p = w.projects[0]
    path = tmp_path / "m.xlsx"
    path.write_bytes(fs(wf, p.files[TABLE_HOMES[w.domain][0]]))
    formulas = openpyxl.load_workbook(path)
    values = openpyxl.load_workbook(path, data_only=True)
    n_formulas = 0
    for ws in formulas.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if isinstance(cell.value, str) and cell.value.startswith("="):
                    n_formulas += 1
                    assert values[ws.title][cell.coordinate].value is not None, (
                        ws.title,
                        cell.coordinate,
                    )
    assert n_formulas >= 4
    assert any(
        "!" in str(c.value) for ws in formulas.worksheets[1:] for r in ws.iter_rows() for c in r
    )
    inputs = values["Inputs"]
    first = next(iter(p.table.rows))
    assert inputs["B2"].value == pytest.approx(p.table.rows[first][0])
    if w.domain == "Investment Banking":
        assert values["Valuation"]["B5"].value == pytest.approx(
            p.facts["ev_ebitda"].value, abs=0.01
        )


def test_deck_and_report_show_the_model_figures(wf: WorldFiles) -> None:
    w = wf.world
    p = w.projects[1]
    deck = pptx_text(fs(wf, p.files[TABLE_HOMES[w.domain][1]]))
    for row in table_rows(p)[1:]:
        for cell in row[1:]:
            assert cell in deck
    if w.domain == "Investment Banking":
        pdf = "\n".join(
            pg.extract_text() for pg in PdfReader(io.BytesIO(fs(wf, p.files["teaser"]))).pages
        )
        assert table_rows(p)[1][-1] in pdf
        memo = "\n".join(
            par.text for par in Document(io.BytesIO(fs(wf, p.files["memo"]))).paragraphs
        )
        tables = Document(io.BytesIO(fs(wf, p.files["memo"]))).tables
        cells = [c.text for t in tables for r in t.rows for c in r.cells]
        assert p.facts["offer_ev"].text in cells
        assert p.code in memo


def test_stale_versions_differ_from_the_current_files(wf: WorldFiles, tmp_path: Path) -> None:
    w = wf.world
    p = w.projects[0]
    stale = [r for r in p.files if r.endswith("_old") or r.endswith("_draft")]
    assert stale
    for r in stale:
        assert fs(wf, p.files[r]) != fs(wf, p.files[r.rsplit("_", 1)[0]])


def test_mail_calendar_chat_parse_and_hold_the_mail_only_fact(
    wf: WorldFiles, tmp_path: Path
) -> None:
    mb = tmp_path / "inbox.mbox"
    mb.write_bytes(wf.files[".apps_data/mail/inbox.mbox"])
    msgs = list(mailbox.mbox(mb))
    assert len(msgs) == len(wf.world.mails)
    assert all(m["Message-ID"] for m in msgs)
    body = "\n".join(
        m.get_payload(decode=True).decode() for m in msgs if isinstance(m, email.message.Message)
    )
    from kwrl.synth.world import mail_only_fact

    p = wf.world.projects[2]
    assert p.facts[mail_only_fact(wf.world)].text in body
    from icalendar import Calendar

    cal = Calendar.from_ical(wf.files[".apps_data/calendar/calendar.ics"])
    assert len(cal.walk("VEVENT")) == len(wf.world.events)
    ch = json.loads(wf.files[f".apps_data/chat/messages/{p.channel}.json"])
    assert ch["messages"] and ch["messages"][0]["user"]


def test_office_zips_have_fixed_member_dates(wf: WorldFiles) -> None:
    for k, data in wf.files.items():
        if k.endswith((".docx", ".xlsx", ".pptx")):
            z = zipfile.ZipFile(io.BytesIO(data))
            assert {i.date_time for i in z.infolist()} == {(2026, 1, 5, 9, 0, 0)}, k
            assert b"2026-01-05T09:00:00Z" in z.read("docProps/core.xml")
