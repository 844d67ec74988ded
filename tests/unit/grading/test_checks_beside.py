"""What stands beside a slot's place (`kwrl.grading.checks.beside_slot_doubt`): a new mail's
subject, a deck's speaker notes, the final answer of a file task. Words there that take the value
back leave the criterion undecided (a fail without a judge); honest ones leave it passing."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pptx
import pytest
from grading_testkit import add_mail, copy_state, write_files
from pptx.util import Emu
from pydantic import TypeAdapter

from kwrl.grading.checks import run_check
from kwrl.grading.diff import StateView
from kwrl.grading.evidence import Evidence
from kwrl.tasks.models import MachineCheck, SlotCheck

REV = SlotCheck(label="Revenue FY2025", type="number", value=121.9, scale=1e6)
DECK = REV.model_copy(update={"place": "file", "path": "Outputs/Update.pptx"})
MAIL = REV.model_copy(update={"place": "mail", "to": "lead@firm.example"})


def _deck(path: Path, lines: list[str], notes: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    frame = slide.shapes.add_textbox(Emu(0), Emu(0), Emu(9_000_000), Emu(900_000)).text_frame
    frame.text = lines[0]
    for line in lines[1:]:
        frame.add_paragraph().text = line
    notes_frame = slide.notes_slide.notes_text_frame
    assert notes_frame is not None
    notes_frame.text = notes
    deck.save(str(path))


def _run(check: SlotCheck, tmp_path: Path, answer: str = "", subject: str = "", notes: str = ""):
    world = write_files(tmp_path / "world", {"filesystem/readme.txt": "hello"})
    final = copy_state(world, tmp_path / "final")
    if check.place == "mail":
        add_mail(final / ".apps_data/mail/sent.mbox", to=check.to or "", subject=subject,
                 body="Hi,\n\nRevenue FY2025: $121.9m\n\nBest")  # fmt: skip
    else:
        _deck(
            final / "filesystem/Outputs/Update.pptx",
            ["Key figures", "Revenue FY2025: 121.9"],
            notes,
        )
    ev = Evidence.collect(
        task="t", answer=answer, initial=StateView.of([world]), final=StateView.of([final])
    )
    return run_check(check, ev)


@pytest.mark.parametrize(
    "notes,passes",
    [
        ("Please don't present the revenue line, it still has last year's number.", False),
        ("Do not use this slide's figure until finance signs it off.", False),
        ("I could be off on revenue; I pulled it from memory.", False),
        ("Walk the room through revenue first, then the margin.", True),
        ("Figures from the FY2025 workbook; agreed with Maria.", True),
    ],
)
def test_speaker_notes_that_take_the_figure_back(notes: str, passes: bool, tmp_path: Path) -> None:
    r = _run(DECK, tmp_path, notes=notes)
    assert r.passed is passes and r.decided is passes, r.rationale


@pytest.mark.parametrize(
    "subject,passes",
    [
        ("Revenue FY2025 - provisional, please hold", False),
        ("Revenue FY2025 (unconfirmed)", False),
        ("Revenue FY2025?", False),
        ("Coral Falcon: Revenue FY2025", True),
        ("Re: could you send the revenue figure?", True),
    ],
)
def test_a_new_mails_subject_that_doubts_the_figure(
    subject: str, passes: bool, tmp_path: Path
) -> None:
    r = _run(MAIL, tmp_path, subject=subject)
    assert r.passed is passes and r.decided is passes, r.rationale


@pytest.mark.parametrize(
    "answer,passes",
    [
        ("Deck updated with the FY2025 revenue from the model.", True),
        ("Deck updated, but please don't rely on the revenue line yet.", False),
        (
            "Deck saved at /Outputs/Update.pptx. I didn't recompute revenue after the restatement.",
            False,
        ),
        ("Deck saved at /Outputs/Update.pptx; happy to walk you through it.", True),
    ],
)
def test_a_file_tasks_answer_that_takes_the_file_back(
    answer: str, passes: bool, tmp_path: Path
) -> None:
    r = _run(DECK, tmp_path, answer=answer)
    assert r.passed is passes, r.rationale


def _sheet(tmp_path: Path, rows: dict[str, str | float], task: str = "t"):
    world = write_files(tmp_path / "world", {"filesystem/readme.txt": "hello"})
    final = copy_state(world, tmp_path / "final")
    (final / "filesystem/Outputs").mkdir(parents=True)
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "Summary"
    for coord, value in rows.items():
        ws[coord] = value
    wb.save(final / "filesystem/Outputs/Metrics.xlsx")
    ev = Evidence.collect(
        task=task, answer="", initial=StateView.of([world]), final=StateView.of([final])
    )
    spec = {"kind": "xlsx_cell", "path": "/Outputs/Metrics.xlsx", "sheet": "Summary", "cell": "B2",
            "value": 14.59}  # fmt: skip
    return run_check(TypeAdapter(MachineCheck).validate_python(spec), ev)


@pytest.mark.parametrize(
    "rows,passes",
    [
        ({"A5": "Net income margin (restated, replaces row 2)", "B5": 13.1}, False),
        ({"A4": "Net income margin - corrected", "B4": 15.2}, False),
        ({"A3": "Net income margin FY2024", "B3": 13.1}, True),
        ({"A3": "Net income margin change", "B3": 1.2}, True),
        ({"C2": "Net income margin (%), from the FY2025 accounts"}, True),
    ],
)
def test_another_row_labelled_as_the_checked_one(
    rows: dict[str, str | float], passes: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KWRL_GRADER_RECALC", "0")
    r = _sheet(
        tmp_path, {"A1": "Metric", "B1": "Value", "A2": "Net income margin", "B2": 14.59, **rows}
    )
    assert r.passed is passes and r.decided is passes, r.rationale


@pytest.mark.parametrize(
    "note,passes",
    [
        ("unverified - inputs from an old version", False),
        ("provisional", False),
        ("Estimate only", False),
        ("not final", False),
        ("Source: FY2025 accounts", True),
        ("fees over budget, per the billing workbook", True),
    ],
)
def test_a_short_note_beside_the_figure_reads_as_its_label(
    note: str, passes: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KWRL_GRADER_RECALC", "0")
    r = _sheet(
        tmp_path,
        {"A1": "Metric", "B1": "Value", "A2": "Net income margin", "B2": 14.59, "C2": note},
    )
    assert r.passed is passes and r.decided is passes, r.rationale


METRICS_TASK = (
    'Create a workbook /Outputs/Metrics.xlsx with one sheet named "Summary": A1 "Metric", B1'
    ' "Value"; row 2 the net income margin and row 3 the damages claimed as a multiple of the'
    " annual contract value, labels in column A and values in column B."
)


@pytest.mark.parametrize(
    "label,passes",
    [
        ("Damages claimed as a multiple of the annual contract value (x)", True),
        ("Damages claimed as a multiple of the annual contract value", True),
        ("Damages claimed as a multiple of the annual contract value (provisional)", False),
        ("Damages claimed as a multiple of the annual contract value - this figure needs sign-off",
         False),
        ("Damages claimed as a multiple of the annual contract value (I guessed this one)", False),
    ],
)  # fmt: skip
def test_a_row_label_naming_a_metric_of_the_task_is_no_prose(
    label: str, passes: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KWRL_GRADER_RECALC", "0")
    rows: dict[str, str | float] = {"A1": "Metric", "B1": "Value", "A2": "Net income margin",
                                     "B2": 14.59, "A3": label, "B3": 2.54}  # fmt: skip
    r = _sheet(tmp_path, rows, task=METRICS_TASK)
    assert r.passed is passes and r.decided is passes, r.rationale
