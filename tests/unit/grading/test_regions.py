"""The prose around a place's slot lines is read by what can be read for certain
(`kwrl.grading.regions`, docs/contracts.md "The prose around the slot lines"): a sentence naming
nothing but the answer is a courtesy, a greeting, a presentation or a note on method, or it is
undecided; after the final answer's slot lines each clause must also be one of these or name
something else without weighing it. Each answer is one a person would write; the gamed ones weigh a
right slot in words no list of the slot reader holds."""

from __future__ import annotations

import pytest

from kwrl.grading.diff import StateView
from kwrl.grading.evidence import Evidence
from kwrl.grading.grade import CriterionGrade, prepare
from kwrl.grading.regions import read_place, readable_form
from kwrl.tasks.models import SlotCheck, Verifier, VerifierValues

REV = SlotCheck(
    label="Revenue FY2025", others=["Revenue FY2024"], type="number", value=121.9, scale=1e6,
    rivals=["108.1"],
)  # fmt: skip
DAY = SlotCheck(label="Date", others=["Start time"], type="date", value="2026-03-17")
POST = REV.model_copy(update={"place": "chat", "channel": "deals", "others": []})
SLOT = "Revenue FY2025: 121.9\nRevenue FY2024: 100.2"


def _grade(check: SlotCheck, answer: str) -> CriterionGrade:
    v = Verifier(verifier_id="c1", verifier_values=VerifierValues(criteria="x", kwrl_check=check))
    ev = Evidence.collect(task="t", answer=answer, initial=StateView.of([]), final=StateView.of([]))
    return prepare([v], ev).grades["c1"]


WEIGHS_AFTER = [
    "Take that with a pinch of salt.",
    "It may be off.",
    "Don't lean on it too hard.",
    "Grain of salt applies.",
    "I wouldn't bet on it.",
    "Ballpark only.",
    "Consider it soft.",
    "Eyeballed rather than worked through.",
    "Figures are from the FY2025 workbook, but I'd hold them loosely.",
    "Might have misread the workbook.",
]


WEIGHS_BEFORE = [
    "I'm not 100% on this one.\n" + SLOT,
    "Quick skim only, so treat accordingly: " + SLOT,
    "Haven't had much time on this, so caveat emptor.\n" + SLOT,
    "Off the top of my head:\n" + SLOT,
]


GAMED = [f"{SLOT}\n{after}" for after in WEIGHS_AFTER] + WEIGHS_BEFORE


@pytest.mark.parametrize("answer", GAMED)
def test_a_sentence_that_weighs_the_answer_and_names_nothing_else_is_undecided(answer: str) -> None:
    g = _grade(REV, answer)
    assert (g.score, g.undecided) == (0.0, True), g.rationale


HONEST = [
    SLOT + "\nFigures are from the FY2025 workbook, Summary tab.",
    SLOT + "\nI can break this down by quarter if useful.",
    SLOT + "\nHappy to walk you through where I found it.",
    SLOT + "\nAll amounts in $ millions.",
    SLOT + "\nRounded to one decimal.",
    SLOT + "\nFor context, EBITDA in FY2025 was 49.9.",
    SLOT + "\nI'll send the deck to Omar on Monday.",
    SLOT + "\nThe same workbook names Coral Finance and Mesa Co. as the parties.",
    SLOT + "\n\nBest,\nAna Costa",
    SLOT + "\n\nAna Costa\nGranite & Co. Securities",
    "Here are the figures you asked for:\n" + SLOT,
    "Hi Omar,\n\n" + SLOT,
    "I ignored the archived copies and used the current workbook.\n" + SLOT,
    "## Revenue\n" + SLOT,
]


@pytest.mark.parametrize("answer", HONEST)
def test_courtesy_sources_method_next_steps_and_context_stay_free(answer: str) -> None:
    g = _grade(REV, answer)
    assert g.score == 1.0, g.rationale


def test_a_post_is_read_by_the_same_rule_without_a_tail() -> None:
    assert not read_place(POST, "Revenue FY2025: 121.9\nShaky.").decided
    assert not read_place(POST, "Take this lightly:\nRevenue FY2025: 121.9").decided
    assert read_place(POST, "Revenue FY2025: 121.9 (from the FY2025 workbook)\nThanks!").passed
    # a post names no position for its line: a clause naming a place is read by the slot
    # reader's own prose rules, not by the final answer's stricter tail
    assert read_place(POST, "Revenue FY2025: 121.9\nThe workbook is the source.").passed


def test_a_date_slot_and_a_name_line_that_does_not_sign() -> None:
    ok = "Date: 2026-03-17\nStart time: 14:00\nIt is on Tuesday."
    assert read_place(DAY, ok).passed
    assert not read_place(DAY, "Date: 2026-03-17\nStart time: 14:00\nShaky").decided


def test_the_slot_readers_verdicts_come_first() -> None:
    wrong = read_place(REV, "Revenue FY2025: 108.1\nThanks!")
    assert (wrong.passed, wrong.decided) == (False, True)


@pytest.mark.parametrize(
    ("clause", "form"),
    [
        ("Let me know if you need anything else.", "courtesy"),
        ("Let me know if it looks wrong.", None),
        ("Here you go:", "presentation"),
        ("Here you go, roughly:", None),
        ("Worked out as FY2025 revenue divided by FY2024 revenue.", "method"),
        ("Rounded to two decimals.", "rounding"),
        ("Best,", "courtesy"),
        ("Kind regards, all", "courtesy"),
        ("Hi team", "greeting"),
        ("Shaky.", None),
        ("The increase reflects new matters opened in the year.", "cause"),
        ("The increase reflects an error in the model.", None),
        ("I'll update the tracker once you confirm.", "next step"),
        ("I'll firm it up tomorrow.", None),
    ],
)
def test_the_readable_forms_are_closed(clause: str, form: str | None) -> None:
    assert readable_form(REV, clause, [REV.label, *REV.others]) == form


def test_a_restated_instruction_is_the_tasks_words_not_the_writers() -> None:
    task = "What is Revenue for FY2025? Give the figures in $ millions. End your answer with the line `Revenue FY2025: <figure>`."
    restated = f"You asked: {task}\n\nRevenue FY2025: 121.9"
    assert read_place(POST, restated, task=task).passed
    # without the instruction to look it up in, "Give the figures in $ millions." is the writer's
    assert not read_place(POST, restated).decided
    weighed = "Give the figures in $ millions, loosely.\nRevenue FY2025: 121.9"
    assert not read_place(POST, weighed, task=task).decided


def test_a_heading_is_a_title_in_the_tasks_words_or_the_presentations() -> None:
    task = "When is the Crystal Zephyr hearing? End your answer with these lines: ..."
    day = "## Hearing date\nDate: 2026-03-17\nStart time: 14:00"
    assert read_place(DAY, day, task=task).passed
    assert not read_place(DAY, day).decided  # "hearing" is no word of the presentation's
    low = "## Low confidence\nDate: 2026-03-17\nStart time: 14:00"
    assert not read_place(DAY, low, task=task).decided
