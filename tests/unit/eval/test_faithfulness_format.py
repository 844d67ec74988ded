"""kwrl.eval.faithfulness: the case format's errors, placeholders and file writers."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from openpyxl import load_workbook

from kwrl.errors import TaskFormatError
from kwrl.eval import faithfulness as F


def test_a_bad_case_names_its_file_and_field(tmp_path: Path) -> None:
    p = tmp_path / "compute.yaml"
    p.write_text(
        "family: compute\ncases:\n  - id: a\n    kind: honest\n  - id: b\n    kind: sneaky\n"
    )
    with pytest.raises(TaskFormatError) as e:
        F.load_cases(tmp_path)
    assert "compute.yaml" in str(e.value) and "cases[1].kind" in str(e.value)


def test_a_gamed_case_must_name_what_it_games(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("family: compute\ncases:\n  - id: a\n    kind: gamed\n")
    with pytest.raises(TaskFormatError, match=r"cases\[0\]\.target"):
        F.load_cases(tmp_path)


def test_an_unknown_family_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("family: poetry\ncases: []\n")
    with pytest.raises(TaskFormatError, match="unknown family"):
        F.load_cases(tmp_path)


def test_defaults_fill_what_a_case_leaves_out(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text(
        "family: chat_post\ndefaults:\n  post: 'P {v_text}'\ncases:\n"
        "  - {id: a, kind: honest}\n  - {id: b, kind: gamed, target: [1], post: 'Q'}\n"
    )
    a, b = F.load_cases(tmp_path)["chat_post"]
    assert a.post == "P {v_text}" and b.post == "Q"
    facts = {"v_text": "12.5", "mail_to": "", "mail_subject": ""}
    assert F.render(a, facts).post == "P 12.5"
    with pytest.raises(KeyError, match="case a: unknown placeholder"):
        F.render(a, {})


def test_a_schedule_case_books_the_gold_event_unless_it_says_none(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(
        "family: schedule\ncases:\n  - {id: a, kind: honest}\n"
        "  - {id: b, kind: gamed, target: [1], event: null}\n"
        "  - {id: c, kind: gamed, target: [1], event: {hour: '09'}}\n"
    )
    a, b, c = F.load_cases(tmp_path)["schedule"]
    assert a.event is not None and a.event.hour == "{hour}"
    assert b.event is None
    assert c.event is not None and c.event.hour == "09"


def test_slot_labels_are_read_from_the_instruction() -> None:
    ins = "Do it. End with: `Revenue FY2025: <figure in $m>` and `Revenue FY2024: <figure in $m>`."
    assert F._slots(ins) == ["Revenue FY2025", "Revenue FY2024"]
    v = {"row": "Revenue", "period": "FY2025", "prev": "FY2024"}
    F.contract_slots("table_lookup", v, [])
    assert (v["slot_v"], v["slot_pv"]) == ("Revenue FY2025", "Revenue FY2024")


def test_cells_are_numbers_unless_quoted() -> None:
    spec = F.FileSpec(cells={"Summary!B2": "12.61", "Summary!B3": "'12.61", "Summary!A1": "Metric"})
    wb = load_workbook(io.BytesIO(F.file_bytes(spec, "/Outputs/a.xlsx", None)))
    assert wb.sheetnames == ["Summary"]
    ws = wb["Summary"]
    assert ws["B2"].value == 12.61 and ws["B3"].value == "12.61" and ws["A1"].value == "Metric"


def test_speaker_notes_stay_out_of_the_slide_text() -> None:
    from pptx import Presentation

    spec = F.FileSpec(title="T", slides=[F.SlideSpec(title="S", bullets=["a: 1"], notes="b: 2")])
    prs = Presentation(io.BytesIO(F.file_bytes(spec, "/Outputs/d.pptx", None)))
    slide = prs.slides[1]
    texts = [s.text_frame.text for s in slide.shapes if s.has_text_frame]  # type: ignore[attr-defined]
    assert "a: 1" in texts and not any("b: 2" in t for t in texts)
    assert slide.notes_slide.notes_text_frame.text == "b: 2"  # type: ignore[union-attr]


def test_rates_count_targeted_criteria() -> None:
    o1 = F.Outcome("f", "t", "h", "honest", "pass", {1: "pass", 2: "fail"}, {1: "", 2: "x"}, [1, 2])
    o2 = F.Outcome("f", "t", "g", "gamed", "fail", {1: "pass", 2: "fail"}, {1: "y", 2: ""}, [1])
    r = F.rates([o1, o2])["total"]
    assert (r.honest, r.fn, r.gamed, r.fp) == (2, 1, 1, 1)
