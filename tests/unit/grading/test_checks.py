"""Machine checks against real office files edited the way an agent's tools would edit them."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import docx
import openpyxl
import pytest
from grading_testkit import add_mail, copy_state, write_calendar, write_files
from pydantic import TypeAdapter

from kwrl.grading.checks import numbers_in, run_check
from kwrl.grading.diff import StateView
from kwrl.grading.evidence import Evidence
from kwrl.grading.render import clear_cache
from kwrl.tasks.models import MachineCheck

CHECK = TypeAdapter(MachineCheck)


@pytest.fixture
def world(tmp_path: Path, office_fixtures: Path) -> Path:
    root = write_files(tmp_path / "world", {"filesystem/readme.txt": "hello"})
    (root / "filesystem/finance").mkdir()
    shutil.copy(
        office_fixtures / "xlsx/openpyxl__formulae.xlsx", root / "filesystem/finance/model.xlsx"
    )
    shutil.copy(office_fixtures / "docx/redlines__original.docx", root / "filesystem/memo.docx")
    add_mail(root / ".apps_data/mail/inbox.mbox", to="agent@corp.example", subject="Old", body="old mail",
             sender="boss@corp.example", msg_id="<old@corp>")  # fmt: skip
    write_calendar(root / ".apps_data/calendar/work.ics", [
        {"uid": "e1", "summary": "Standup", "start": dt.datetime(2025, 3, 14, 9), "end": dt.datetime(2025, 3, 14, 10)},
    ])  # fmt: skip
    chat = {
        "channels": [{"name": "general", "messages": [{"id": 1, "user": "bob", "text": "hi all"}]}]
    }
    write_files(root, {".apps_data/chat/state.json": json.dumps(chat)})
    return root


def evidence(world: Path, final: Path, answer: str = "") -> Evidence:
    return Evidence.collect(
        task="t", answer=answer, initial=StateView.of([world]), final=StateView.of([final])
    )


def check(ev: Evidence, **spec: object):
    return run_check(CHECK.validate_python(spec), ev)


def test_xlsx_cell_reads_an_edited_value_and_tolerates_rounding(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KWRL_GRADER_RECALC", "0")  # the checked cells are plain values
    final = copy_state(world, tmp_path / "final")
    path = final / "filesystem/finance/model.xlsx"
    wb = openpyxl.load_workbook(path)
    wb["Sheet1"]["D2"] = 1234.5678
    wb["Sheet1"]["D3"] = "Approved"
    wb.save(path)
    ev = evidence(world, final)
    assert check(
        ev, kind="xlsx_cell", path="/finance/model.xlsx", sheet="Sheet1", cell="D2", value=1234.6
    ).passed
    assert check(ev, kind="xlsx_cell", path="finance/*.xlsx", cell="D3", value="approved").passed
    miss = check(ev, kind="xlsx_cell", path="/finance/model.xlsx", cell="D2", value=1300)
    assert not miss.passed and "1234.5678" in miss.rationale
    assert not check(
        ev, kind="xlsx_cell", path="/finance/model.xlsx", sheet="Nope", cell="A1", value=1
    ).passed
    assert not check(ev, kind="xlsx_cell", path="/missing.xlsx", cell="A1", value=1).passed


def test_a_text_cell_states_a_number_only_as_one_number_and_its_unit(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KWRL_GRADER_RECALC", "0")
    cells = {"D2": "12.61", "D3": "12.61%", "D4": "$12.61m", "D5": "12.61 (or 11.92)",
             "D6": "~12.61", "D7": "12.61?", "D8": "11.92 / 12.61", "D9": "12.61 est."}  # fmt: skip
    got = {}
    for cell, text in cells.items():  # one workbook each: the others' text would be notes beside it
        final = copy_state(world, tmp_path / f"final-{cell}")
        path = final / "filesystem/finance/model.xlsx"
        wb = openpyxl.load_workbook(path)
        wb["Sheet1"][cell] = text
        wb.save(path)
        ev = evidence(world, final)
        spec = {"kind": "xlsx_cell", "path": "/finance/model.xlsx", "cell": cell, "value": 12.61}
        got[cell] = check(ev, **spec).passed
    assert got == {"D2": True, "D3": True, "D4": True, "D5": False, "D6": False, "D7": False,
                   "D8": False, "D9": False}  # fmt: skip


def test_a_cell_coarser_than_the_decimals_asked_misses_unless_only_zeros_are_dropped(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`decimals` (the instruction asks "rounded to two decimals"): 79.4 for 79.42, or 80 for
    79.71, is a rounding that changes the figure, and 79.45 or "79.40" are off at the precision
    asked, though all within the relative tolerance; 79.42, a formula's 79.4166..., 80.0 for 80
    and the text "79.42" are the figure."""
    monkeypatch.setenv("KWRL_GRADER_RECALC", "0")
    got = {}
    for cell, value, want in [
        ("D2", 79.42, 79.42), ("D3", 79.41666666, 79.42), ("D4", 79.4, 79.42), ("D5", 80, 79.71),
        ("D6", 80.0, 80.0), ("D7", "79.42", 79.42), ("D8", "79.4", 79.42), ("D9", 79.5, 79.42),
        ("D10", 79.45, 79.42), ("D11", "79.40", 79.42), ("D12", 79.4249, 79.42),
    ]:  # fmt: skip
        final = copy_state(world, tmp_path / f"final-{cell}")
        path = final / "filesystem/finance/model.xlsx"
        wb = openpyxl.load_workbook(path)
        wb["Sheet1"][cell] = value
        wb.save(path)
        spec = {"kind": "xlsx_cell", "path": "/finance/model.xlsx", "cell": cell, "value": want}
        r = check(evidence(world, final), **spec, decimals=2)
        got[cell] = r.passed
        if cell == "D4":
            assert "coarser than the 2 decimal(s) asked" in r.rationale
        if cell == "D10":
            assert "not 79.42 at the 2 decimal(s) asked" in r.rationale
        assert check(evidence(world, final), **spec).passed  # all within 0.5%: no decimals asked
    assert got == {"D2": True, "D3": True, "D4": False, "D5": False, "D6": True, "D7": True,
                   "D8": False, "D9": False, "D10": False, "D11": False, "D12": True}  # fmt: skip


def test_xlsx_cell_reads_cached_formula_values_and_explains_missing_ones(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "KWRL_GRADER_RECALC", "0"
    )  # no LibreOffice: formulas openpyxl wrote stay empty
    clear_cache()
    ev = evidence(world, copy_state(world, tmp_path / "same"))
    assert check(ev, kind="xlsx_cell", path="/finance/model.xlsx", cell="A4", value=24690).passed
    final = copy_state(world, tmp_path / "final")
    path = final / "filesystem/finance/model.xlsx"
    wb = openpyxl.load_workbook(path)
    wb["Sheet1"]["E1"] = "=A2*2"
    wb.save(path)
    r = check(
        evidence(world, final), kind="xlsx_cell", path="/finance/model.xlsx", cell="E1", value=24690
    )
    assert not r.passed and "no cached value" in r.rationale
    assert check(
        evidence(world, final),
        kind="xlsx_cell",
        path="/finance/model.xlsx",
        cell="E1",
        value="=A2*2",
    ).passed


def test_doc_contains_sees_a_paragraph_added_with_python_docx(world: Path, tmp_path: Path) -> None:
    final = copy_state(world, tmp_path / "final")
    d = docx.Document(str(final / "filesystem/memo.docx"))
    d.add_paragraph("Recommendation: approve the Acme acquisition at $2.1bn.")
    d.save(str(final / "filesystem/memo.docx"))
    ev = evidence(world, final)
    assert check(
        ev, kind="doc_contains", path="/memo.docx", all_of=["acme acquisition", "$2.1BN"]
    ).passed
    r = check(ev, kind="doc_contains", path="/memo.docx", all_of=["acme", "reject"])
    assert not r.passed and "reject" in r.rationale
    # text checks over produced files see the new paragraph; over the answer they do not
    assert check(ev, kind="number", value=2.1e9, source="files").passed
    assert not check(ev, kind="number", value=2.1e9, source="answer").passed


def test_answer_checks(world: Path, tmp_path: Path) -> None:
    ev = evidence(
        world, copy_state(world, tmp_path / "f"), answer="EBITDA was $1,234.5 million, up 12.5%."
    )
    assert check(ev, kind="number", value=1234.5).passed
    assert check(ev, kind="number", value=1.2345e9, rel_tol=0.001).passed
    assert check(ev, kind="number", value=0.125).passed
    assert not check(ev, kind="number", value=1250, rel_tol=0.001).passed
    assert check(ev, kind="regex", pattern=r"ebitda was \$1,234").passed
    assert not check(ev, kind="regex", pattern=r"ebitda was \$1,234", ignore_case=False).passed
    assert check(ev, kind="contains", all_of=["ebitda", "12.5%"], none_of=["loss"]).passed
    assert not check(ev, kind="contains", all_of=["ebitda"], none_of=["million"]).passed


def test_numbers_in_reads_separators_signs_and_magnitudes() -> None:
    assert numbers_in("(1,200) and -3.5 and 2.1bn") == [1200.0, -1200.0, -3.5, 2.1, 2.1e9]
    assert 15000.0 in numbers_in("about 15k users")


def test_file_exists_needs_a_readable_file_of_the_expected_type(
    world: Path, tmp_path: Path, office_fixtures: Path
) -> None:
    final = copy_state(world, tmp_path / "final")
    (final / "filesystem/out").mkdir()
    shutil.copy(office_fixtures / "pdf/pypdf__crazyones.pdf", final / "filesystem/out/summary.pdf")
    write_files(final, {"filesystem/out/empty.docx": b"", "filesystem/out/fake.pptx": "12.5 42"})
    ev = evidence(world, final)
    assert check(ev, kind="file_exists", path="/out/*.pdf").passed
    assert not check(ev, kind="file_exists", path="/out/*.docx").passed  # empty: no content
    fake = check(ev, kind="file_exists", path="/out/fake.pptx")
    assert not fake.passed and "no readable content" in fake.rationale
    typed = run_check(
        CHECK.validate_python({"kind": "file_exists", "path": "/out/summary.pdf"}),
        ev,
        "Presentations (.pptx, .ppt, .odp)",
    )
    assert not typed.passed  # a pdf is not the deck the criterion expects


def test_mail_sent_needs_a_new_message_to_the_recipient(world: Path, tmp_path: Path) -> None:
    final = copy_state(world, tmp_path / "final")
    add_mail(final / ".apps_data/mail/sent.mbox", to="Jane CFO <cfo@corp.example>", subject="Q3 numbers",
             body="Revenue was $12.4m.")  # fmt: skip
    ev = evidence(world, final)
    assert [m.subject for m in ev.mail] == ["Q3 numbers"]
    assert check(
        ev,
        kind="mail_sent",
        to="cfo@corp.example",
        subject_contains=["q3"],
        body_contains=["$12.4m"],
    ).passed
    assert not check(ev, kind="mail_sent", to="cfo@corp.example", body_contains=["EBITDA"]).passed
    assert not check(
        ev, kind="mail_sent", to="agent@corp.example"
    ).passed  # the old inbox mail is not new


def test_event_exists_for_new_and_moved_events(world: Path, tmp_path: Path) -> None:
    final = copy_state(world, tmp_path / "final")
    write_calendar(final / ".apps_data/calendar/work.ics", [
        {"uid": "e1", "summary": "Standup", "start": dt.datetime(2025, 3, 15, 9), "end": dt.datetime(2025, 3, 15, 10)},
        {"uid": "e2", "summary": "Board review", "start": dt.datetime(2025, 3, 20, 14),
         "end": dt.datetime(2025, 3, 20, 15), "attendees": ["cfo@corp.example"]},
    ])  # fmt: skip
    ev = evidence(world, final)
    assert check(
        ev,
        kind="event_exists",
        title_contains="board",
        date="2025-03-20",
        attendee="CFO@corp.example",
    ).passed
    assert check(
        ev, kind="event_exists", title_contains="standup", date="2025-03-15"
    ).passed  # moved
    assert not check(ev, kind="event_exists", title_contains="board", date="2025-03-21").passed


@pytest.mark.parametrize(
    "summary,passes",
    [
        ("Board review", True),
        ("Q3 Board review with the CFO", True),
        ("Board review - May 20", True),
        ("HOLD - Board review", False),
        ("HOLD (tentative) - Board review", False),
        ("Board review - DRAFT", False),
        ("Board review (not confirmed)", False),
        ("Board review?", False),
    ],
)
def test_an_event_whose_title_hedges_books_nothing_for_certain(
    summary: str, passes: bool, world: Path, tmp_path: Path
) -> None:
    final = copy_state(world, tmp_path / "final")
    write_calendar(final / ".apps_data/calendar/work.ics", [
        {"uid": "e2", "summary": summary, "start": dt.datetime(2025, 3, 20, 14),
         "end": dt.datetime(2025, 3, 20, 15)},
    ])  # fmt: skip
    r = check(evidence(world, final), kind="event_exists", title_contains="board review",
              date="2025-03-20")  # fmt: skip
    assert r.passed is passes and r.decided is passes, r.rationale


def test_chat_posted_in_the_right_channel(world: Path, tmp_path: Path) -> None:
    final = copy_state(world, tmp_path / "final")
    chat = {"channels": [
        {"name": "general", "messages": [{"id": 1, "user": "bob", "text": "hi all"},
                                         {"id": 2, "user": "agent", "text": "Deck is ready: Q3 review"}]},
        {"name": "random", "messages": [{"id": 3, "user": "agent", "text": "coffee?"}]},
    ]}  # fmt: skip
    write_files(final, {".apps_data/chat/state.json": json.dumps(chat)})
    ev = evidence(world, final)
    assert sorted(p.text for p in ev.chat) == ["Deck is ready: Q3 review", "coffee?"]
    assert check(ev, kind="chat_posted", channel="#general", all_of=["deck is ready"]).passed
    assert not check(ev, kind="chat_posted", channel="random", all_of=["deck"]).passed
    assert not check(
        ev, kind="chat_posted", channel="general", all_of=["hi all"]
    ).passed  # old post


# --------------------------------------------------------------------------- the judge's semantics


def test_a_value_counts_only_when_asserted() -> None:
    from kwrl.grading.checks import value_asserted

    def stated(text: str, value: float = 283.0) -> bool:
        return value_asserted(text, value, 0.005)[0]

    assert stated("Revenue for FY2025 was $283.0m, up from $251.2m in FY2024.")
    assert stated("It shows 1,234.5 but the workbook has 1,100.2.", 1100.2)
    assert stated("EBITDA / revenue = 141.5 / 283.0 = 50.0%")
    assert not stated(" ".join(str(i) for i in range(1, 5001)))  # the spray
    assert not stated("Revenue was either $283.0m or $290m.")  # the hedge
    assert not stated("Revenue was between 283.0 and 290.")
    assert not stated("Revenue was 283.0-290.")
    assert not stated("Candidates: 250, 283.0, 310")  # a bare list
    assert not stated("Revenue was $290m.")
    years = "The figure is for 2024."
    assert value_asserted(years, 2024, 0)[0]
    assert not value_asserted("2020 2021 2022 2023 2024 2025", 2024, 0)[0]


def test_text_answers_fail_when_they_list_or_hedge_rivals(world: Path) -> None:
    ev = evidence(world, world, "Jane Smith sent it; the deck's 2024 Revenue is wrong.")
    who = {"kind": "contains", "all_of": ["Smith"], "rivals": ["Jones", "Brown", "Lee"]}
    assert check(ev, **who).passed
    for answer in ("It was Smith, Jones, Brown or Lee.", "Either Smith or Jones sent it."):
        assert not check(evidence(world, world, answer), **who).passed
    assert check(evidence(world, world, "Smith sent it, not Jones."), **who).passed  # one ruled out
    date = {"kind": "regex", "pattern": "2026-03-05", "rival_pattern": r"\d{4}-\d{2}-\d{2}"}
    assert check(evidence(world, world, "On 2026-03-05."), **date).passed
    many = " ".join(f"2026-03-{d:02d}" for d in range(1, 20))
    assert not check(evidence(world, world, many), **date).passed


def test_file_checks_read_what_the_trial_wrote_of_the_expected_type(
    world: Path, tmp_path: Path
) -> None:
    final = copy_state(world, tmp_path / "final")
    write_files(final, {"filesystem/Outputs/12.34% 1,234.5.txt": "see the name"})
    deck = "Presentations (.pptx, .ppt, .odp)"
    spec = CHECK.validate_python({"kind": "number", "value": 12.34, "source": "files"})
    names_only = evidence(world, final)
    assert not run_check(spec, names_only, deck).passed  # no deck: fails like the judge
    assert not run_check(spec, names_only, None).passed  # a name is not content
    write_files(final, {"filesystem/Outputs/rate.txt": "The rate is 12.34%."})
    assert run_check(spec, evidence(world, final), None).passed
    # A modified file counts by what was added: the memo already said 12.34%.
    memo = docx.Document(str(final / "filesystem/memo.docx"))
    memo.add_paragraph("Old rate: 12.34%.")
    memo.save(str(world / "filesystem/memo.docx"))
    memo.add_paragraph("Analyst update: nothing new.")
    memo.save(str(final / "filesystem/memo.docx"))
    (final / "filesystem/Outputs/rate.txt").unlink()
    ev = evidence(world, final)
    assert not run_check(spec, ev, None).passed
    assert check(ev, kind="doc_contains", path="/memo.docx", all_of=["Analyst update"]).passed
    assert not check(ev, kind="doc_contains", path="/memo.docx", all_of=["Old rate"]).passed


def test_a_dump_of_the_world_states_nothing(world: Path) -> None:
    lines = [f"Posted note number {i} about the quarterly figures for the team." for i in range(20)]
    for k in range(4):  # the world's data spread over four files
        write_files(world, {f"filesystem/notes{k}.txt": "\n".join(lines[k * 5 : k * 5 + 5])})
    dump = "\n".join(lines) + "\nThe rate is 72.34%."
    ev = evidence(world, world, dump)
    assert ev.own_text(dump)[0] == ""
    assert not check(ev, kind="number", value=72.34).passed
    quote = "\n".join(lines[:3]) + "\nThe rate is 72.34%."
    assert check(evidence(world, world, quote), kind="number", value=72.34).passed
    deck = [f"Slide line {i} of the one deck saved again." for i in range(20)]
    write_files(world, {"filesystem/deck.txt": "\n".join(deck)})
    copy = "\n".join(deck) + "\nThe rate is 72.34%."  # a copy of one file is one source
    assert evidence(world, world, copy).own_text(copy)[0] == copy


NOTES_HONEST = [
    ["Net debt / FY2025 EBITDA leverage", "Inputs: Balance Sheet tab and FY2025 P&L"],
    ["Leverage (x)", "Net debt over FY2025 EBITDA, both from the model", "Prepared by the analyst"],
    ["Metric", "Value"],
]
NOTES_WEIGHING = [
    ["Leverage", "provisional - do not use until reviewed"],
    ["Leverage", "Not yet checked against the signed accounts"],
    ["Leverage", "12.61 may be stale; the board pack has 11.92"],
    ["Leverage", "placeholder"],
    ["Leverage", "Please disregard the figure beside this note"],
    ["Leverage", "rough number, could well be off"],
]


@pytest.mark.parametrize("notes", [*NOTES_HONEST, *NOTES_WEIGHING])
def test_text_cells_added_beside_a_checked_number_are_read_as_its_prose(
    notes: list[str], world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note the trial adds in the checked sheet weighs the figure as an answer's prose would:
    honest labels and sources pass, a note that doubts, hedges or disowns it is undecided."""
    monkeypatch.setenv("KWRL_GRADER_RECALC", "0")
    final = copy_state(world, tmp_path / "final")
    path = final / "filesystem/finance/model.xlsx"
    wb = openpyxl.load_workbook(path)
    ws = wb.create_sheet("Checks")
    ws["B1"] = 12.61
    ws["A1"] = notes[0]
    for k, note in enumerate(notes[1:]):
        ws[f"C{k + 1}"] = note
    wb.save(path)
    got = check(
        evidence(world, final), kind="xlsx_cell", path="/finance/model.xlsx", sheet="Checks",
        cell="B1", value=12.61,
    )  # fmt: skip
    if notes in NOTES_HONEST:
        assert got.passed, got.rationale
    else:
        assert not got.passed and not got.decided, got.rationale


def test_a_label_cell_in_the_tasks_words_is_no_comment_on_the_figure(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`the annual contract value` in a label the task names points at nothing; the same words
    in a note of the trial's own still weigh the figure."""
    monkeypatch.setenv("KWRL_GRADER_RECALC", "0")
    task = (
        "Add a Checks tab with the damages claimed as a multiple of the annual contract value in"
        " B1 and its label in A1."
    )
    got = {}
    for note in ("", "Do not rely on the annual contract value here"):
        final = copy_state(world, tmp_path / f"final-{len(note)}")
        path = final / "filesystem/finance/model.xlsx"
        wb = openpyxl.load_workbook(path)
        ws = wb.create_sheet("Checks")
        ws["A1"], ws["B1"] = "damages claimed as a multiple of the annual contract value", 8.66
        if note:
            ws["C1"] = note
        wb.save(path)
        ev = Evidence.collect(
            task=task, answer="", initial=StateView.of([world]), final=StateView.of([final])
        )
        spec = {"kind": "xlsx_cell", "path": "/finance/model.xlsx", "sheet": "Checks"}
        got[bool(note)] = check(ev, **spec, cell="B1", value=8.66)
    assert got[False].passed, got[False].rationale
    assert not got[True].passed and not got[True].decided, got[True].rationale
