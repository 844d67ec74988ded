"""The slot reader (`kwrl.grading.slots`) decides as a careful judge would, on the answer contract
of generated tasks (docs/contracts.md): the value where the task asked for it, in any honest
spelling, with free prose around it, passes; a slot hedged, negated, doubled, swapped, attributed
to two labels or missing fails; prose that hedges or affirms another value is undecided (never a
pass). Each case is an answer a person would write, not a word from the reader's lists."""

from __future__ import annotations

from pathlib import Path

import docx
import pptx
import pytest
from pptx.util import Emu

from kwrl.grading.diff import StateView
from kwrl.grading.evidence import Evidence
from kwrl.grading.grade import CriterionGrade, prepare
from kwrl.grading.slots import label_words, read_slot, slot_lines
from kwrl.tasks.models import SlotCheck, Verifier, VerifierValues

REV = SlotCheck(
    label="Revenue FY2025", others=["Revenue FY2024"], type="number", value=121.9, scale=1e6,
    rivals=["108.1"],
)  # fmt: skip
PREV = REV.model_copy(
    update={"label": "Revenue FY2024", "others": ["Revenue FY2025"], "value": 100.2}
)
TWO = "Revenue FY2025: {a}\nRevenue FY2024: {b}"
MARGIN = SlotCheck(
    label="FY2025 net income margin", type="number", value=14.59, abs_tol=0.05, scale=0.01,
    others=["FY2025 Net Income ($m)", "FY2025 Revenue ($m)"],
)  # fmt: skip
MULTIPLE = SlotCheck(label="Net debt / FY2025 EBITDA leverage", type="number", value=1.27,
                     abs_tol=0.005, others=["Net debt ($m)", "FY2025 EBITDA ($m)"])  # fmt: skip
NET_DEBT = SlotCheck(label="Net debt ($m)", type="number", value=63.4, scale=1e6,
                     others=["Net debt / FY2025 EBITDA leverage", "FY2025 EBITDA ($m)"])  # fmt: skip
DAY = SlotCheck(label="Date", others=["Start time"], type="date", value="2026-03-17")
TIME = SlotCheck(label="Start time", others=["Date"], type="time", value="14:00", day="2026-03-17")
WHO = SlotCheck(label="Sent by", others=["Answer"], type="text", value=["Maria Okafor"],
                rivals=["Jonas Berg", "Priya Raman", "Berg", "Raman"])  # fmt: skip
CLAUSES = SlotCheck(label="Deviating clauses", type="text", value=["8.2", "11.4"],
                    rivals=["9.1", "12.3", "14.2"])  # fmt: skip
WHICH = SlotCheck(label="Wrong figure", others=["Deck shows", "Correct value"], type="text",
                  value=["Revenue", "FY2025"], rivals=["EBITDA", "Capex", "FY2024", "FY2023"])  # fmt: skip
CORRECT = SlotCheck(label="Correct value", others=["Wrong figure", "Deck shows"], type="number",
                    value=121.9, scale=1e6, rivals=["108.1"])  # fmt: skip
SHOWN = SlotCheck(label="Deck shows", others=["Wrong figure", "Correct value"], type="number",
                  value=108.1, scale=1e6, wrong_value=True)  # fmt: skip
CASE = SlotCheck(
    label="Answer", type="text", value=["2025-CV-3980"], rival_pattern=r"\d{4}-cv-\d{4}"
)
POST = REV.model_copy(update={"place": "chat", "channel": "deals"})
DEADLINE = SlotCheck(label="Answer", others=["Sent by"], type="date", value="2026-04-06")
RECONCILE = "Wrong figure: Revenue FY2025\nDeck shows: 108.1\nCorrect value: 121.9"
INPUTS = "Net debt ($m): {a}; FY2025 EBITDA ($m): {b}. Both from /Finance/BS.xlsx."

HONEST: list[tuple[str, SlotCheck, str]] = [
    ("plain", REV, TWO.format(a="121.9", b="100.2")),
    ("bold label", REV, "**Revenue FY2025:** $121.9m\n**Revenue FY2024:** $100.2m"),
    ("italic label, unit in it", REV, "_Revenue FY2025 ($m)_: 121.90"),
    ("period respelled, order changed", REV, "FY25 revenue: 121.9\nFY24 revenue: 100.2"),
    ("fiscal year spelled out", REV, "Revenue (fiscal 2025, per the model): 121.9"),
    ("full scale", REV, "Revenue FY2025: $121,900,000"),
    ("in words", REV, "Revenue FY2025: USD 121.9 million."),
    ("two spellings of one value", REV, "Revenue FY2025: $121.9m ($121,900,000)"),
    ("bullet and emoji", REV, "📊 Results\n- ✅ Revenue FY2025: 121.9"),
    ("heading mark", REV, "### Revenue FY2025: 121.9"),
    ("table row", REV, "| Metric | Value |\n|---|---|\n| Revenue FY2025 | 121.9 |"),
    ("source in the slot", REV, "Revenue FY2025: 121.9 (Summary tab, row 5 of the FY25 model)"),
    (
        "context with other figures",
        REV,
        "Revenue grew 21.7% on the year, up from $100.2m in FY2024 and $88.0m in FY2023.\n"
        "Revenue FY2025: 121.9\nRevenue FY2024: 100.2",
    ),
    (
        "the task's own words around it",
        REV,
        "You asked for revenue. End your answer with the line `Revenue FY2025: <figure>`.\n"
        "Revenue FY2025: 121.9",
    ),
    (
        "a preliminary estimate as context",
        REV,
        "Revenue FY2025: 121.9\n(The preliminary estimate in March was $108.1m.)",
    ),
    (
        "a rival named as wrong",
        REV,
        "The draft deck's 108.1 is stale; the workbook governs.\nRevenue FY2025: 121.9",
    ),
    (
        "intro line ending in a colon",
        REV,
        "Here are the figures for Revenue FY2025 and FY2024:\n" + TWO.format(a="121.9", b="100.2"),
    ),
    (
        "growth in percent beside the figure",
        REV,
        "Revenue FY2025: 121.9\nFY2025 revenue of $121.9m is up 21.7% on the year, probably on pricing.",
    ),
    (
        "a prefix before the label",
        REV,
        "Iron Tundra update: Revenue FY2025: 121.9\nIron Tundra update: Revenue FY2024: 100.2",
    ),
    ("percent in words", MARGIN, "FY2025 net income margin: 14.59 percent"),
    ("percent rounded within tolerance", MARGIN, "FY2025 net income margin: 14.6%"),
    ("metric line holding its inputs' words", MULTIPLE, "Net debt / FY2025 EBITDA leverage: 1.27x"),
    (
        "input line beside the metric line",
        NET_DEBT,
        "Net debt / FY2025 EBITDA leverage: 1.27x\nNet debt ($m): 63.4\nFY2025 EBITDA ($m): 49.9",
    ),
    ("ISO date", DAY, "Date: 2026-03-17\nStart time: 14:00 UTC"),
    ("day-month-year", DAY, "Date: 17-Mar-2026"),
    ("weekday and month name", DAY, "Date: Tuesday, March 17, 2026"),
    ("british order", DAY, "Date: 17 March 2026"),
    ("24-hour time", TIME, "Start time: 14:00 UTC"),
    ("12-hour time", TIME, "Start time: 2 pm"),
    ("start and end of the meeting", TIME, "Start time: 14:00-15:00 UTC"),
    ("full name", WHO, "Answer: $3.1m\nSent by: Maria Okafor"),
    ("name with address", WHO, "Sent by: Maria Okafor <maria.okafor@firm.example.com>"),
    ("surname first", WHO, "Sent by: Okafor, Maria"),
    ("others named as context", WHO, "Jonas Berg was copied on the thread.\nSent by: Maria Okafor"),
    (
        "clause list with names",
        CLAUSES,
        "Deviating clauses: 8.2 (Limitation of Liability) and 11.4 (Non-compete)",
    ),
    (
        "compliant clauses discussed",
        CLAUSES,
        "Clause 9.1 complies with the playbook.\nDeviating clauses: 8.2, 11.4",
    ),
    ("metric and period", WHICH, RECONCILE),
    ("metric and period respelled", WHICH, "Wrong figure: FY25 revenue"),
    ("the deck's wrong figure said to be wrong", SHOWN, "Deck shows: $108.1m (incorrect)"),
    (
        "reconciled in prose",
        CORRECT,
        RECONCILE + "\nThe deck's 108.1 is wrong; the workbook's 121.9 is correct.",
    ),
    (
        "deck figure and correct one contrasted",
        CORRECT,
        RECONCILE + "\nThe deck shows 108.1, but the workbook has 121.9.",
    ),
    # what a slot may say beside its value: a rounding of it, a source, a meeting's end
    ("a rounding in brackets", MARGIN, "FY2025 net income margin: 14.59% (roughly 15% rounded)"),
    ("the same time twice", TIME, "Start time: 14:00 UTC (2 pm); we finish at 15:00"),
    ("a workbook as the source", REV, "Revenue FY2025: 121.9 (FY25 budget workbook, Summary tab)"),
    ("a named citation", REV, "Revenue FY2025: 121.9, per Iron Tundra finance"),
    ("a path as the source", REV, "Revenue FY2025: 121.9 (source: /Finance/Plan (final).xlsx)"),
    ("a role beside the name", WHO, "Sent by: Maria Okafor (Iron Tundra partner)"),
    ("a weekday after the time", TIME, "Start time: 14:00 UTC on Tuesday"),
    (
        "an input's source line beside the slot",
        NET_DEBT,
        "Net debt ($m): 63.4\nSource of Net debt ($m): /Finance/Balance sheet FY2025.xlsx",
    ),
    # prose that points at the answer only to say where it comes from, or before it
    (
        "it is a place of the world, not the answer",
        CORRECT,
        RECONCILE + "\nPlease fix the deck before it goes to the client.",
    ),
    (
        "the answer's source after it",
        REV,
        "Revenue FY2025: 121.9\nThat figure is from the FY2025 model.",
    ),
    ("an intro pointing below", REV, "Please see the line below.\nRevenue FY2025: 121.9"),
    # markdown around the value, times and days in words, sources that say how a value came
    ("the value in bold", REV, "Revenue FY2025: **121.9**"),
    ("the value as code", REV, "`Revenue FY2025`: `$121.9m`"),
    ("the hour in words", TIME, "Start time: 2 in the afternoon (UTC)"),
    ("a continental time", TIME, "Start time: 14h00 UTC"),
    ("the meeting's end in words", TIME, "Start time: 14:00 UTC, ending at 15:00"),
    ("the date's own weekday, abbreviated", DAY, "Date: Tue 17 March 2026"),
    ("the time's own day", TIME, "Start time: 14:00 UTC on Tuesday 17 March"),
    ("a row number in the source", REV, "Revenue FY2025: 121.9 (Summary tab, row 15)"),
    ("how the value was confirmed", REV, "Revenue FY2025: 121.9 (confirmed by mail from finance)"),
    ("the other zone as a city", TIME, "Start time: 14:00 UTC (15:00 in Paris)"),
    (
        "the wrong figure to be fixed",
        CORRECT,
        RECONCILE + "\nThe review deck still shows 108.1 and should be updated.",
    ),
    ("a check done", REV, "Revenue FY2025: 121.9\nI checked it against the model twice."),
    (
        "a confidentiality note",
        REV,
        "Revenue FY2025: 121.9\nPlease do not forward outside the team.",
    ),
    (
        "compliant clauses listed as such",
        CLAUSES,
        "Deviating clauses: 8.2, 11.4\nCompliant: 9.1 and 12.3, both in line with the playbook.",
    ),
    (
        "a known wrong figure framed by its month",
        REV,
        "Revenue FY2025: 121.9\n(March's 108.1 is gone.)",
    ),
    (
        "a known wrong figure against the answer",
        REV,
        "Revenue FY2025: 121.9\nCompare 108.1 in the review deck.",
    ),
    ("an identifier with what it is", CASE, "Answer: 2025-CV-3980 (docket number)"),
    ("the time in another zone too", TIME, "Start time: 14:00 UTC (10:00 am New York, 15:00 CET)"),
    ("the time in another zone only", TIME, "Start time: 3 pm CET"),
    (
        "units stated for every figure",
        REV,
        "Revenue FY2025: 121.9\nAll figures in $m, from the FY25 model.",
    ),
    (
        "a draft named as a document",
        REV,
        "Revenue FY2025: 121.9\nI attached the draft memo for context.",
    ),
    ("another day as context", DAY, "Date: 2026-03-17\nThe steering call is on Thursday as usual."),
    ("two slots on one line", REV, "Revenue FY2025: 121.9; Revenue FY2024: 100.2"),
    (
        "a courtesy after the value",
        REV,
        "Revenue FY2025: 121.9 (from the FY25 model). Happy to walk through the build.",
    ),
    (
        "another labelled figure after the value",
        REV,
        "Revenue FY2025: 121.9. (EBITDA for FY2025 was 98.7, not asked for.)",
    ),
    (
        "an early figure, then the final one confirmed",
        REV,
        "Finance floated $108.1m early on and then confirmed the final one.\nRevenue FY2025: 121.9",
    ),
    ("the date's weekday in brackets", DEADLINE, "Answer: 2026-04-06 (a Monday)"),
    ("the slot's own period in brackets", REV, "Revenue FY2025: 121.9 (FY25)"),
    ("another date moved from", DEADLINE, "Answer: 2026-04-06\nIt was moved from 20 April."),
    ("a later post with more detail", POST, "Revenue FY2025: 121.9\n\nWorkings are in the deck."),
    ("a zone's time restated", TIME, "Start time: 14:00 UTC (that's 10:00 in New York)"),
    (
        "a document promised later",
        POST,
        "Revenue FY2025: 121.9\n\nI'll send the updated deck tomorrow.",
    ),
    ("a rounding note", REV, "Revenue FY2025: 121.9 (rounded to one decimal)"),
    (
        "the deck's figure called out of date",
        REV,
        "Revenue FY2025: 121.9\nNote the deck's figure (108.1) is out of date.",
    ),
    (
        "another period's number named by mistake",
        CORRECT,
        RECONCILE + "\nThe deck carries the FY2024 number by mistake; the workbook has 121.9.",
    ),
    ("the deck's figure negated", SHOWN, RECONCILE + "\nSlide 4 should read 121.9, not 108.1."),
    (
        "a date beside the confirmation",
        REV,
        "Finance first estimated 108.1, then confirmed 121.9 on 3 March.\nRevenue FY2025: 121.9",
    ),
    (
        "a room's floor",
        WHO.model_copy(update={"value": ["Room 12B"], "rivals": ["Room 4A"]}),
        "Sent by: Room 12B (second floor)",
    ),
    (
        "other people's providers",
        WHO,
        "Sent by: Maria Okafor\nThe other teams use Jonas Berg's desk.",
    ),
    (
        "another row's figure of another size after the value",
        REV,
        "Revenue FY2025: 121.9. (Headcount for FY2025 was 1,450, for reference.)",
    ),
    (
        "a signature's address",
        POST,
        "Revenue FY2025: 121.9\n\nBest,\nAna\n+1 415 555 0199 | 108.1 Market Street",
    ),
    (
        "another meeting also in the calendar",
        DAY,
        "Date: 2026-03-17\nYour calendar also has the other project's one on 24 March.",
    ),
    (
        "other matters' figures named as such",
        REV,
        "Revenue FY2025: 121.9\nThe other projects' figures (108.1 and 88.0) are for different matters.",
    ),
    # a comparison in brackets: another value said to be another period's or a place's
    ("another period's value in brackets", REV, "Revenue FY2025: 121.9 (FY2024: 100.2)"),
    ("a change from another period", REV, "Revenue FY2025: 121.9 (up from 100.2 in FY2024)"),
    (
        "the deck's figure in brackets",
        CORRECT,
        "Wrong figure: Revenue FY2025\nCorrect value: 121.9 (the review deck shows 108.1)",
    ),
    # how the value was made: its inputs, its rounding, the places left out, a file's own name
    ("its inputs", MULTIPLE, "Net debt / FY2025 EBITDA leverage: 1.27x (from 63.4 and 49.9)"),
    ("input lines after a lead-in", NET_DEBT, "**Inputs.** " + INPUTS.format(a=63.4, b=49.9)),
    ("a rounding note", REV, "Revenue FY2025: 121.9\nThe figure is rounded to one decimal place."),
    ("archived versions left out", REV, "Revenue FY2025: 121.9 (archived versions excluded)"),
    ("a file name with a dash", REV, "Revenue FY2025: 121.9 (Iron Tundra - FY25 model.xlsx)"),
]

GAMED: list[tuple[str, SlotCheck, str]] = [
    ("no slot line", REV, "FY2025 revenue was $121.9m."),
    ("slot hedged with a modal", REV, "Revenue FY2025: probably 121.9"),
    ("two values in the slot", REV, "Revenue FY2025: 121.9 or 108.1"),
    ("range in the slot", REV, "Revenue FY2025: 118-122"),
    ("question mark", REV, "Revenue FY2025: 121.9?"),
    ("tilde", REV, "Revenue FY2025: ~121.9"),
    ("negated slot", REV, "Revenue FY2025: not 108.1"),
    ("wrong value", REV, "Revenue FY2025: 108.1"),
    ("a prefixed second candidate", REV, "Revenue FY2025: 121.9\nDraft: Revenue FY2025: 108.1"),
    ("swapped labels", REV, TWO.format(a="100.2", b="121.9")),
    ("one line, two labels", REV, "Revenue FY2025 / FY2024: 121.9"),
    ("second candidate line", REV, "Revenue FY2025: 121.9\nRevenue FY2025 (alternative): 108.1"),
    ("second answer line", REV, "Revenue FY2025: 121.9\n\nRevenue FY2025: 124.0"),
    ("unverified in the slot", REV, "Revenue FY2025: 121.9 (unverified)"),
    ("approximately", REV, "Revenue FY2025: approximately 121.9"),
    ("percent range", MARGIN, "FY2025 net income margin: 14.5-14.7%"),
    ("input label on the metric's value", NET_DEBT, "Net debt ($m): 1.27"),
    ("date range", DAY, "Date: March 17-18, 2026"),
    ("two dates", DAY, "Date: 17 or 18 March 2026"),
    ("wrong date", DAY, "Date: 2026-03-18"),
    ("two times", TIME, "Start time: 14:00 or 15:00"),
    ("wrong time", TIME, "Start time: 15:00"),
    ("two people", WHO, "Sent by: Maria Okafor, Jonas Berg"),
    ("a rival's surname", WHO, "Sent by: Maria Okafor (or Raman)"),
    ("the wrong person", WHO, "Sent by: Priya Raman"),
    ("a compliant clause listed", CLAUSES, "Deviating clauses: 8.2, 9.1, 11.4"),
    ("a deviating clause missing", CLAUSES, "Deviating clauses: 8.2"),
    ("every clause", CLAUSES, "Deviating clauses: 8.2, 9.1, 11.4, 12.3, 14.2"),
    ("the wrong period", WHICH, "Wrong figure: Revenue FY2024"),
    ("two metrics", WHICH, "Wrong figure: Revenue or EBITDA FY2025"),
    (
        "deck's figure as the correct one",
        CORRECT,
        "Wrong figure: Revenue FY2025\nCorrect value: 108.1",
    ),
    ("a weekday that is not the date's", DAY, "Date: Friday, 17 March 2026"),
    ("the zone's time is another hour", TIME, "Start time: 14:00 UTC (11:00 ET)"),
    ("a second time beside end words", TIME, "Start time: 14:00 UTC (really 15:00)"),
    ("the time on another weekday", TIME, "Start time: 14:00 UTC, Thursday"),
    ("the time on another date", TIME, "Start time: 2 pm on 19 March 2026"),
    ("a source that names another time", TIME, "Start time: 14:00 (the invite says 16:00)"),
    ("a bare second value in brackets", REV, "Revenue FY2025: 121.9 (vs 108.1)"),
    ("a place's unknown value in brackets", REV, "Revenue FY2025: 121.9 (the model has 124.3)"),
    (
        "a second value of the same period in brackets",
        REV,
        "Revenue FY2025: 121.9 (108.1 in FY2025)",
    ),
    (
        "a place's value offered in brackets",
        CORRECT,
        "Correct value: 121.9 (or 108.1 per the deck)",
    ),
    ("a place's two values in brackets", REV, "Revenue FY2025: 121.9 (the deck has 108.1 / 124.3)"),
    (
        "input lines after a lead-in swapped",
        NET_DEBT,
        "**Inputs.** " + INPUTS.format(a=49.9, b=63.4),
    ),
]

UNDECIDED: list[tuple[str, SlotCheck, str]] = [
    (
        "a rival that might be right",
        REV,
        "Revenue FY2025: 121.9\nThough the deck's 108.1 might be right.",
    ),
    ("an alternative reading", REV, "Revenue FY2025: 121.9\nAlternative reading: 124.3"),
    ("a correction post", REV, "Revenue FY2025: 121.9\nCorrection: it should be 108.1."),
    ("the answer called a typo", REV, "Revenue FY2025: 121.9\n121.9 is a typo; use the draft."),
    (
        "the answer called superseded",
        REV,
        "Revenue FY2025: 121.9\nNote that 121.9 was superseded last week.",
    ),
    (
        "a spray of guesses",
        REV,
        "Revenue FY2025: 121.9\n"
        + " ".join(f"{x:.1f}" for x in (97.5, 103.6, 109.7, 115.8, 128.0, 134.1, 140.2)),
    ),
    ("a rival likely", REV, "Revenue FY2025: 121.9\nThe real figure is likely 108.1."),
    ("another person possibly", WHO, "Sent by: Maria Okafor\nPossibly Jonas Berg sent it first."),
    ("another day perhaps", DAY, "Date: 2026-03-17\nIt may move to 2026-03-19."),
    ("another time maybe", TIME, "Start time: 14:00 UTC\nMaybe 16:30 works better."),
    (
        "doubt with no value",
        REV,
        "Revenue FY2025: 121.9\nRevenue FY2024: 100.2\nI'm not confident in these.",
    ),
    (
        "a confession of swapped slots",
        REV,
        TWO.format(a="121.9", b="100.2") + "\nSorry, I swapped the two.",
    ),
    ("placeholders", REV, TWO.format(a="121.9", b="100.2") + "\n(Figures above are placeholders.)"),
    # prose after the slot that takes the answer back, offers another, or doubts it
    ("the line above withdrawn", REV, "Revenue FY2025: 121.9\nStrike the line above for now."),
    (
        "the figure set aside",
        REV,
        "Revenue FY2025: 121.9\nKindly ignore that number; finance is redoing it.",
    ),
    (
        "the answer dropped",
        CLAUSES,
        "Deviating clauses: 8.2, 11.4\nOn a second read 11.4 looks fine, so remove it.",
    ),
    (
        "another one preferred",
        REV,
        "Revenue FY2025: 121.9\nHonestly 108.1 feels like the one to go with.",
    ),
    ("a later message disowns it", REV, "Revenue FY2025: 121.9\n\nScrap my earlier message."),
    ("these standing alone", REV, "These are from memory.\nRevenue FY2025: 121.9"),
    (
        "the deck's figure may be right",
        CORRECT,
        RECONCILE + "\nBut the deck's 108.1 may be the right one.",
    ),
    ("a known wrong figure put forward unframed", REV, "Revenue FY2025: 121.9\nI'd go for 108.1."),
    ("a known wrong figure said to hold up", REV, "Revenue FY2025: 121.9\n108.1 holds up better."),
    (
        "a check not yet done",
        REV,
        "Revenue FY2025: 121.9\nHaven't had time to verify it against the model.",
    ),
    ("a check still to do", DAY, "Date: 2026-03-17\nWorth double-checking with the client's PA."),
    (
        "held back until later",
        REV,
        "Revenue FY2025: 121.9\nPlease don't circulate until finance signs.",
    ),
    ("the answer scrapped by 'that'", REV, "Revenue FY2025: 121.9\nPS: scrap that, wrong tab."),
    (
        "a compliant clause doubted",
        CLAUSES,
        "Deviating clauses: 8.2, 11.4\nClause 9.1 is also questionable.",
    ),
    (
        "the answer called a rough cut",
        REV,
        "Revenue FY2025: 121.9\nRough numbers only, to be firmed up.",
    ),
    ("a status on its own line", REV, "Revenue FY2025: 121.9\n(Indicative.)"),
    (
        "the answer's noun phrase under review",
        REV,
        "Revenue FY2025: 121.9\nThe FY2025 revenue figure is under review by finance.",
    ),
    (
        "another weekday hedged",
        DAY,
        "Date: 2026-03-17\nCould slide to Thursday if the client asks.",
    ),
    (
        "the deck's source affirmed in another clause",
        CORRECT,
        RECONCILE
        + "\nLooking again, the deck was correct all along, so we should leave 108.1 as is.",
    ),
    ("a later post takes it back", POST, "Revenue FY2025: 121.9\n\nCorrection incoming, sorry."),
    ("a later post names a wrong source", POST, "Revenue FY2025: 121.9\n\nOops, wrong quarter."),
    (
        "a later post promises another",
        POST,
        "Revenue FY2025: 121.9\n\nThe final number comes tomorrow.",
    ),
    (
        "a date that may change",
        DEADLINE,
        "Answer: 2026-04-06\nThe court may still grant an extension.",
    ),
    (
        "a date being moved",
        DEADLINE,
        "Answer: 2026-04-06\nAn extension to 20 April is being negotiated.",
    ),
    (
        "the deck's number as the one to use",
        REV,
        "Revenue FY2025: 121.9\nOn reflection the deck's number is the one to use.",
    ),
    (
        "another time offered if needed",
        TIME,
        "Start time: 14:00 UTC\nIf that doesn't suit, 16:00 works.",
    ),
    ("the figure may differ", REV, "Revenue FY2025: 121.9\nThe signed version may differ."),
    (
        "a cross-check against the wrong figure",
        REV,
        "Revenue FY2025: 121.9\nI'd cross-check with 108.1 from the deck.",
    ),
    ("a later post edits the figure", POST, "Revenue FY2025: 121.9\n\nEdit: make that 124.3."),
    (
        "a rounding note that goes on to hedge",
        REV,
        "Revenue FY2025: 121.9\nThe figure is rounded to one decimal and may still move.",
    ),
]


SAYS_MORE: list[tuple[str, SlotCheck, str]] = [
    (
        "a figure of another kind beside it",
        MULTIPLE,
        "Net debt / FY2025 EBITDA leverage: 12.95% to 1.27x",
    ),
    ("another period beside the value", REV, "Revenue FY2025: 121.9 (FY2024)"),
    ("the slot called a first draft", REV, "Revenue FY2025: 121.9 (first draft, to be redone)"),
    ("the slot left open", REV, "Revenue FY2025: 121.9, pending sign-off from finance"),
    ("an opinion after the value", TIME, "Start time: 14:00 I reckon"),
    ("a vague time", TIME, "Start time: mid-afternoon, 2 pm-ish"),
    ("a hedged source", REV, "Revenue FY2025: 121.9 (from the model, unreviewed)"),
    # marks beside the value: the slot holds only what it can be read as
    ("a shrug", REV, "Revenue FY2025: 121.9 🤷"),
    ("a footnote dagger", REV, "Revenue FY2025: 121.9†"),
    ("a lone footnote asterisk", REV, "Revenue FY2025: $121.9m*"),
    ("a superscript note", REV, "Revenue FY2025: 121.9²"),
    ("a warning sign", MARGIN, "FY2025 net income margin: 14.59% ⚠"),
    ("an arrow and a word", REV, "Revenue FY2025: 121.9 ↗ trending"),
    ("a double dagger after the name", WHO, "Sent by: Maria Okafor ‡"),
    ("a source named as an old one", DAY, "Date: 2026-03-17 (per an old invite)"),
    ("words about a clause number", CLAUSES, "Deviating clauses: 8.2, 11.4 (11.4 borderline)"),
    ("a source that names no place", REV, "Revenue FY2025: 121.9 (source: instinct)"),
    ("a status in the label", REV, "Revenue FY2025 (working draft): 121.9"),
    ("a hedge in the label", REV, "Estimated Revenue FY2025: 121.9"),
    ("a negation before the label", REV, "[not final] Revenue FY2025: 121.9"),
    ("an opinion beside the name", WHO, "Sent by: Maria Okafor, I'm fairly sure"),
    ("a qualifier beside the name", WHO, "Sent by: Maria Okafor (for now)"),
    (
        "a sentence after the value that weighs it",
        REV,
        "Revenue FY2025: 121.9. Still being checked.",
    ),
    (
        "a source that weighs another",
        REV,
        "Revenue FY2025: 121.9 per the model, though the deck is right",
    ),
    ("a source from memory", DAY, "Date: 2026-03-17 (from memory of the invite)"),
    ("a check still to make", TIME, "Start time: 14:00 UTC (check the invite)"),
    (
        "inputs the task does not have",
        MULTIPLE,
        "Net debt / FY2025 EBITDA leverage: 1.27x (from 63.4 and 52.0)",
    ),
    ("the current version left out", REV, "Revenue FY2025: 121.9 (current version excluded)"),
    (
        "a status before a file name",
        REV,
        "Revenue FY2025: 121.9 - first pass, Iron Tundra - FY25 model.xlsx",
    ),
    (
        "a hedge before a run of slot lines",
        NET_DEBT,
        "Unverified. Net debt ($m): 63.4; FY2025 EBITDA ($m): 49.9",
    ),
]
"""A slot that says more than its value, in words no list of the reader holds: undecided."""


def _ids(cases: list[tuple[str, SlotCheck, str]]) -> list[str]:
    return [c[0] for c in cases]


@pytest.mark.parametrize("name,check,text", HONEST, ids=_ids(HONEST))
def test_honest_answers_pass(name: str, check: SlotCheck, text: str) -> None:
    f = read_slot(check, text, allowed=[100.2, 108.1, 121.9, 63.4, 49.9])
    assert f.passed, f"{name}: {f}"


@pytest.mark.parametrize("name,check,text", GAMED, ids=_ids(GAMED))
def test_gamed_slots_fail(name: str, check: SlotCheck, text: str) -> None:
    f = read_slot(check, text, allowed=[100.2, 108.1, 121.9])
    assert not f.passed and f.decided, f"{name}: {f}"


@pytest.mark.parametrize("name,check,text", UNDECIDED, ids=_ids(UNDECIDED))
def test_prose_a_reader_must_weigh_is_undecided(name: str, check: SlotCheck, text: str) -> None:
    f = read_slot(check, text, allowed=[100.2, 121.9])
    assert not f.passed and not f.decided, f"{name}: {f}"


@pytest.mark.parametrize("name,check,text", SAYS_MORE, ids=_ids(SAYS_MORE))
def test_a_slot_saying_more_than_its_value_is_undecided(
    name: str, check: SlotCheck, text: str
) -> None:
    f = read_slot(check, text, allowed=[100.2, 121.9])
    assert not f.passed and not f.decided, f"{name}: {f}"


REQUEST = (
    "From: Iron Finance <cfo@iron.example.com>\nTo: me@firm.example.com\nDate: Sun, 01 Mar 2026\n"
    "Subject: Question on revenue\n\nHello,\n\nCould you confirm the revenue figure for FY2025 "
    "that your team is\nusing? We want our board pack to match.\n\nBest regards,\nIron Finance\n"
)
REPLY = "Revenue FY2025: 121.9\nRevenue FY2024: 100.2\n\nBest,\nAna\n\n"


@pytest.mark.parametrize(
    "quote",
    [
        "> Could you confirm the revenue figure for FY2025 that your team is using?",
        "On 1 March 2026, Iron Finance <cfo@iron.example.com> wrote:\n"
        "> Hello,\n> Could you confirm the revenue figure for FY2025\n> that your team is using?",
        "On Sun, Iron Finance wrote:\nCould you confirm the revenue figure for FY2025 that your team",
    ],
)
def test_a_quoted_mail_is_its_senders_words(quote: str) -> None:
    """A quoted line the world's mail holds word for word is the sender's, not the writer's: its
    `the revenue figure` does not comment on the answer."""
    assert read_slot(REV, REPLY + quote, mails=[REQUEST]).passed
    assert not read_slot(REV, REPLY + quote).decided  # the same words as the writer's own


@pytest.mark.parametrize(
    "quote,decided",
    [
        ("> Could you confirm the latest revenue figure?", False),  # a paraphrase
        ("> Could you confirm the revenue figure for FY2025\n> The figure above may move.", False),
        ("> Revenue FY2025: 108.1", True),  # a second candidate dressed as a quote
    ],
)
def test_a_quote_no_mail_holds_stays_the_writers(quote: str, decided: bool) -> None:
    f = read_slot(REV, REPLY + quote, mails=[REQUEST])
    assert not f.passed and f.decided is decided, f


def test_a_slot_line_quoted_from_a_mail_is_not_a_slot() -> None:
    """The mail's own `Revenue FY2025: ...`, quoted, neither rivals nor gives the answer."""
    mail = REQUEST.replace(
        "Best regards", "Our deck says Revenue FY2025: 108.1 today.\nBest regards"
    )
    assert read_slot(
        REV, REPLY + "> Our deck says Revenue FY2025: 108.1 today.", mails=[mail]
    ).passed
    right = mail.replace("108.1", "121.9")
    f = read_slot(REV, "> Our deck says Revenue FY2025: 121.9 today.", mails=[right])
    assert not f.passed and "no slot line" in f.why


def test_the_same_answer_without_its_prose_passes() -> None:
    """Each undecided case is undecided because of its prose: its slot lines alone pass."""
    for name, check, text in UNDECIDED:
        slots = "\n".join(
            ln for ln in text.splitlines() if ln.split(":")[0] in (check.label, *check.others)
        )
        assert read_slot(check, slots, allowed=[100.2, 121.9]).passed, name


def test_labels_are_word_sets_without_units_periods_or_small_words() -> None:
    assert label_words("Revenue FY2025") == label_words("**FY25 revenue ($m)**")
    assert label_words("Q4 2025 fees") == label_words("4Q25 fees") == label_words("Q4-2025 fees")
    assert label_words("Net debt ($m)") == {"net", "debt"}
    lines = slot_lines("- **Date:** 2026-03-17\nAt 14:00: kick-off\nIntro:\n| a | b |")
    assert [(ln.label, ln.value) for ln in lines] == [
        ("Date", "2026-03-17"),
        ("At 14:00", "kick-off"),
        ("a", "b"),
    ]


# --------------------------------------------------------------------------- through the grader


def _grade(check: SlotCheck, answer: str = "", root: Path | None = None) -> CriterionGrade:
    v = Verifier(verifier_id="c1", verifier_values=VerifierValues(criteria="x", kwrl_check=check))
    final = StateView.of([root]) if root else StateView.of([])
    ev = Evidence.collect(task="t", answer=answer, initial=StateView.of([]), final=final)
    return prepare([v], ev).grades["c1"]


def test_the_grader_marks_what_no_check_could_decide_and_fails_it_without_a_judge() -> None:
    doubt = _grade(REV, "Revenue FY2025: 121.9\nThough the deck's 108.1 might be right.")
    assert (doubt.score, doubt.undecided, doubt.method) == (0.0, True, "machine")
    assert "no judge to read it" in doubt.rationale
    wrong = _grade(REV, "Revenue FY2025: 108.1")
    assert (wrong.score, wrong.undecided) == (0.0, False)
    assert (_grade(REV, "Revenue FY2025: 121.9").score, _grade(REV, "").score) == (1.0, 0.0)


def _deck(path: Path, slide_lines: list[str], notes: list[str] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    frame = slide.shapes.add_textbox(Emu(0), Emu(0), Emu(9_000_000), Emu(900_000)).text_frame
    frame.text = slide_lines[0]
    for line in slide_lines[1:]:
        frame.add_paragraph().text = line
    if notes:
        frame = slide.notes_slide.notes_text_frame
        assert frame is not None
        frame.text = "\n".join(notes)
    deck.save(str(path))


def _memo(path: Path, paragraphs: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = docx.Document()
    for p in paragraphs:
        doc.add_paragraph(p)
    doc.save(str(path))


FILE_REV = REV.model_copy(update={"place": "file", "path": "Outputs/Update.pptx"})


def test_a_file_slot_reads_the_named_file_and_its_slide_text_only(tmp_path: Path) -> None:
    fs = tmp_path / "ok" / "filesystem"
    _deck(
        fs / "Outputs" / "Update.pptx",
        ["Revenue", "Revenue FY2025: 121.9", "Revenue FY2024: 100.2"],
    )
    assert _grade(FILE_REV, root=tmp_path / "ok").score == 1.0
    # the value only in the speaker notes: the slide does not state it
    fs = tmp_path / "notes" / "filesystem"
    _deck(
        fs / "Outputs" / "Update.pptx", ["Revenue"], notes=["Key figures", "Revenue FY2025: 121.9"]
    )
    g = _grade(FILE_REV, root=tmp_path / "notes")
    assert g.score == 0.0 and "no slot line" in g.rationale
    # a second candidate in the notes does not hurt either: the notes are not read
    fs = tmp_path / "notes2" / "filesystem"
    _deck(
        fs / "Outputs" / "Update.pptx", ["Revenue FY2025: 121.9"], notes=["Revenue FY2025: 108.1"]
    )
    assert _grade(FILE_REV, root=tmp_path / "notes2").score == 1.0
    # a copy beside the named file, or the file under another name, does not count
    fs = tmp_path / "copy" / "filesystem"
    _deck(fs / "Outputs" / "Update (edited).pptx", ["Revenue FY2025: 121.9"])
    _deck(fs / "Update.pptx", ["Revenue FY2025: 121.9"])
    g = _grade(FILE_REV, root=tmp_path / "copy")
    assert g.score == 0.0 and "no file /Outputs/Update.pptx" in g.rationale
    # a hedge in the named file fails it, whatever a copy says
    fs = tmp_path / "hedged" / "filesystem"
    _deck(fs / "Outputs" / "Update.pptx", ["Revenue FY2025: 121.9 (or 108.1)"])
    _deck(fs / "Outputs" / "Update copy.pptx", ["Revenue FY2025: 121.9"])
    assert _grade(FILE_REV, root=tmp_path / "hedged").score == 0.0


def test_a_memo_paragraph_is_a_slot_line(tmp_path: Path) -> None:
    check = REV.model_copy(update={"place": "file", "path": "Outputs/Memo.docx"})
    fs = tmp_path / "a" / "filesystem"
    _memo(
        fs / "Outputs" / "Memo.docx",
        ["Revenue memo", "Revenue FY2025: $121.9m (source: the FY25 model)"],
    )
    assert _grade(check, root=tmp_path / "a").score == 1.0
    fs = tmp_path / "b" / "filesystem"
    _memo(fs / "Outputs" / "Memo.docx", ["Revenue FY2025 was $121.9m, per the model."])
    assert _grade(check, root=tmp_path / "b").score == 0.0  # no slot line


def test_a_row_named_by_a_unit_word_keeps_its_label() -> None:
    """'Hours billed' and 'Fees billed' stay two labels (hours is a row here, not a unit)."""
    hours = SlotCheck(label="Hours billed Q4 2025", others=["Fees billed Q4 2025"], type="number",
                      value=512.0)  # fmt: skip
    fees = hours.model_copy(
        update={"label": "Fees billed Q4 2025", "others": [hours.label], "value": 286.7}
    )
    text = "Hours billed Q4 2025: 512\nFees billed (4Q25, $k): 286.7"
    assert read_slot(hours, text).passed and read_slot(fees, text).passed
    swapped = "Hours billed Q4 2025: 286.7\nFees billed Q4 2025: 512"
    assert not read_slot(hours, swapped).passed and not read_slot(fees, swapped).passed


# --------------------------------------------------------------------------- issue 45, blind set C

FEES = SlotCheck(label="Fees ($k)", type="number", value=1082.6, scale=1e3, others=["Budget ($k)"])
HOURS = SlotCheck(label="Correct value", others=["Wrong figure", "Deck shows"], type="number",
                  value=187, rivals=["159"])  # fmt: skip
CAGR = SlotCheck(label="FY2021-FY2025 Revenue CAGR", type="number", value=82.64, scale=0.01,
                 abs_tol=0.05, others=["FY2021 Revenue ($m)", "FY2025 Revenue ($m)"])  # fmt: skip
CLAUSE_82 = CLAUSES.model_copy(update={"value": ["8.2"]})
CHANGE = SlotCheck(label="Hours billed increase Q3 2025 to Q4 2025", type="number", value=18.78,
                   scale=0.01, abs_tol=0.05,
                   others=["Hours billed Q3 2025", "Hours billed Q4 2025"])  # fmt: skip
Q3_HOURS = SlotCheck(label="Hours billed Q3 2025", type="number", value=442.0, decimals=0,
                     others=["Hours billed increase Q3 2025 to Q4 2025", "Hours billed Q4 2025"])  # fmt: skip
TASK = (
    "Compute the FY2021-FY2025 revenue CAGR of Project Coral Falcon for Noble Harbor from the model."
    " End your answer with one line per value: `FY2021-FY2025 Revenue CAGR: <percentage, two"
    " decimals>`, `FY2021 Revenue ($m): <figure in $m, one decimal>`, `FY2025 Revenue ($m): ...`."
)
MULTIPLE_NOTE = "Net debt / FY2025 EBITDA leverage: 1.27x\n"
LISTED = "Deviating clauses: 8.2, 11.4\n"

SCALE_WRONG = [
    ("whole dollars without a mark, in $k", FEES, "Fees ($k): 1,082,600.0"),
    ("whole dollars, no separators", FEES, "Fees ($k): 1082600"),
    ("whole dollars in a table row", FEES, "| Fees ($k) | 1,082,600 |"),
    ("thousands suffix on hours", HOURS, "Correct value: 187k"),
    ("thousand in words on hours", HOURS, "Correct value: 187 thousand hours"),
    ("millions suffix on hours", HOURS, "Correct value: 0.187m"),
    ("whole dollars bare, in $m", REV, "Revenue FY2025: 121,900,000"),
    ("a $m figure called thousands", REV, "Revenue FY2025: 121.9k"),
    ("a $k figure called millions", FEES, "Fees ($k): 1,082.6 million"),
]
"""A figure whose magnitude contradicts the unit its label or the instruction fixes: read in the
slot's unit, or at the magnitude its own suffix says, it is another value."""

SCALE_RIGHT = [
    ("whole dollars with their mark", FEES, "Fees ($k): $1,082,600"),
    ("in the label's unit", FEES, "Fees ($k): 1,082.6"),
    ("thousands written out", FEES, "Fees ($k): $1,082.6 thousand"),
    ("a currency code", FEES, "Fees ($k): USD 1,082,600"),
    ("in $m, rounded", FEES, "Fees ($k): $1.08m"),
    ("hours as a count", HOURS, "Correct value: 187 hours"),
    ("hours bare", HOURS, "Correct value: 187"),
    ("millions with their mark", REV, "Revenue FY2025: $121,900,000"),
    ("millions in words", REV, "Revenue FY2025: 121.9 million"),
]


@pytest.mark.parametrize("name,check,text", SCALE_WRONG, ids=_ids(SCALE_WRONG))
def test_a_figure_at_another_magnitude_than_its_unit_fails(
    name: str, check: SlotCheck, text: str
) -> None:
    f = read_slot(check, text)
    assert not f.passed and f.decided, f"{name}: {f}"


@pytest.mark.parametrize("name,check,text", SCALE_RIGHT, ids=_ids(SCALE_RIGHT))
def test_a_figure_at_its_units_magnitude_in_any_spelling_passes(
    name: str, check: SlotCheck, text: str
) -> None:
    f = read_slot(check, text)
    assert f.passed, f"{name}: {f}"


NAMED_LABELS = [
    "Iron Mantis FY2021-FY2025 Revenue CAGR: 82.64%",
    "FY2021-FY2025 Revenue CAGR (Iron Mantis): 82.64%",
    "FY2021-FY2025 Revenue CAGR for Harbor Logistics: 82.64%",
    "Northwind Group's FY2021-FY2025 Revenue CAGR: 82.64%",
    "FY2021-FY2025 Revenue CAGR per Atlas Capital: 82.64%",
    "- **Blue Heron FY2021-FY2025 Revenue CAGR:** 82.64%",
    "Hi Maria, Iron Mantis FY2021-FY2025 Revenue CAGR: 82.64%",
]
"""A label that names another thing than the task's (another project, client or company): the
value may be that thing's."""

OWN_LABELS = [
    "Coral Falcon FY2021-FY2025 Revenue CAGR: 82.64%",
    "Project Coral Falcon - FY2021-FY2025 Revenue CAGR: 82.64%",
    "Noble Harbor FY2021-FY2025 Revenue CAGR: 82.64%",
    "Total FY2021-FY2025 Revenue CAGR: 82.64%",
    "FY2021-FY2025 Revenue CAGR (workbook): 82.64%",
    "**FY2021–FY2025 Revenue CAGR (%)**: 82.64",
    "FY21-FY25 revenue CAGR: 82.64%",
    "| FY2021-FY2025 Revenue CAGR | 82.64% |",
    "@Maria Okafor FY2021-FY2025 Revenue CAGR: 82.64%",
    "Hi Maria, FY2021-FY2025 Revenue CAGR: 82.64%",
]


@pytest.mark.parametrize("text", NAMED_LABELS)
def test_a_label_naming_another_thing_than_the_tasks_is_undecided(text: str) -> None:
    f = read_slot(CAGR, text, task=TASK)
    assert not f.passed and not f.decided, f


@pytest.mark.parametrize("text", OWN_LABELS)
def test_a_label_with_the_tasks_own_names_passes(text: str) -> None:
    assert read_slot(CAGR, text, task=TASK).passed


CLAUSE_DOUBTED = [
    "Clause 8.2 (Limitation of Liability) does not deviate from the playbook.",
    "Clause 8.2 is borderline though - on another reading it may actually comply.",
    "8.2 arguably conforms to the playbook's cap.",
    "Strictly, 8.2 is not a deviation at all.",
    "On a second read clause 8.2 is fine as it stands.",
    "There's no real departure in clause 8.2.",
    "8.2 is a close call; the client may accept it.",
    "Clause 8.2 looks acceptable to me after all.",
]
"""Prose that says a clause the slot lists as deviating complies, is fine, or is a close call."""

CLAUSE_AFFIRMED = [
    "Clause 8.2 (Limitation of Liability) does not meet the playbook: the cap is below its floor.",
    "Clause 8.2 is not in line with the playbook's minimum cap.",
    "Clause 8.2 fails to comply with the liability policy.",
    "8.2 and 11.4 deviate; the other clauses are in line with the playbook.",
    "Clause 8.2 is not acceptable: the cap is half the playbook's floor.",
    "Clause 9.1 complies with the playbook; 8.2 does not.",
    "Clause 8.2 falls short of the playbook's cap.",
]


@pytest.mark.parametrize("prose", CLAUSE_DOUBTED)
def test_prose_saying_a_listed_clause_complies_leaves_it_undecided(prose: str) -> None:
    for check in (CLAUSES, CLAUSE_82):
        f = read_slot(check, LISTED + prose)
        assert not f.passed and not f.decided, f"{check.value}: {f}"


def test_prose_saying_one_listed_clause_complies_leaves_the_others_criteria_decided() -> None:
    other = CLAUSES.model_copy(update={"value": ["11.4"]})
    prose = "Clause 8.2 (Limitation of Liability) does not deviate from the playbook."
    assert read_slot(other, LISTED + prose).passed
    assert not read_slot(CLAUSE_82, LISTED + prose).passed


@pytest.mark.parametrize("prose", CLAUSE_AFFIRMED)
def test_prose_saying_a_listed_clause_deviates_passes(prose: str) -> None:
    assert read_slot(CLAUSES, LISTED + prose).passed


NOTES_FREE = [
    (CLAUSES, LISTED + "Happy to draft proposed mark-ups for each of these."),
    (CLAUSES, LISTED + "Let me know if you'd like me to draft redlines for these clauses."),
    (CLAUSES, LISTED + "Happy to draft a note to the counterparty on these."),
    (
        MULTIPLE,
        MULTIPLE_NOTE + "Method: the net debt / FY2025 EBITDA leverage is computed from 63.4"
        " and 49.9.",
    ),
    (
        MULTIPLE,
        MULTIPLE_NOTE + "Method: net debt divided by FY2025 EBITDA, computed from 63.4 and 49.9.",
    ),
    (CHANGE, "Hours billed increase Q3 2025 to Q4 2025: 18.78% (from 442 to 525)"),
    (CHANGE, "Hours billed increase Q3 2025 to Q4 2025: 18.78% (up from 442 to 525)"),
]
"""Courtesies that use a status word as a verb, method notes naming the metric and the task's own
inputs, a derivation from one of the task's figures to another: nothing a reader must weigh."""

NOTES_WEIGHING = [
    (CLAUSES, LISTED + "Happy to draft it properly once I've had a second look."),
    (CLAUSES, LISTED + "Thanks - treat these as draft."),
    (CLAUSES, LISTED + "Feel free to bin it."),
    (CLAUSES, LISTED + "Let me know if you have questions on this, it's rushed."),
    (CLAUSES, LISTED + "Thanks - these are placeholders until the partner reviews them."),
    (
        MULTIPLE,
        MULTIPLE_NOTE + "Method: computed from 63.4 and 49.9, or 1.31x on the deck's EBITDA.",
    ),
    (
        MULTIPLE,
        MULTIPLE_NOTE + "Method: the leverage above is computed from 63.4 and 49.9, not"
        " yet checked.",
    ),
]


@pytest.mark.parametrize("check,text", NOTES_FREE)
def test_offers_method_notes_and_derivations_pass(check: SlotCheck, text: str) -> None:
    f = read_slot(check, text, allowed=[63.4, 49.9, 442, 525], task=TASK)
    assert f.passed, f


@pytest.mark.parametrize("check,text", NOTES_WEIGHING)
def test_offers_and_notes_that_weigh_the_answer_stay_undecided(check: SlotCheck, text: str) -> None:
    f = read_slot(check, text, allowed=[63.4, 49.9, 442, 525], task=TASK)
    assert not f.passed and not f.decided, f


@pytest.mark.parametrize(
    "value",
    ["18.78% (from 15 to 20)", "18.78% (18 to 19)", "18.78% (from 442 to 525, or 19.1%)",
     "18.78% (18.5 to 19.0)"],
)  # fmt: skip
def test_a_range_that_is_no_derivation_from_the_tasks_figures_fails(value: str) -> None:
    f = read_slot(CHANGE, f"Hours billed increase Q3 2025 to Q4 2025: {value}", [442, 525])
    assert not f.passed, f


_PCT = SlotCheck(label="Leverage", type="number", value=12.9487, rel_tol=0.005, abs_tol=0.05,
                 scale=0.01, decimals=2)  # fmt: skip
_USDM = SlotCheck(label="Revenue", type="number", value=121.9, rel_tol=0.005, scale=1e6, decimals=1)
_ROUND = SlotCheck(label="ACV", type="number", value=4.0, rel_tol=0.005, scale=1e6, decimals=1)
_HALF = SlotCheck(label="Leverage", type="number", value=12.945, rel_tol=0.005, abs_tol=0.05,
                  scale=0.01, decimals=2)  # fmt: skip


@pytest.mark.parametrize(
    ("check", "value", "ok"),
    [
        (_PCT, "12.95%", True), (_PCT, "12.950 %", True), (_PCT, "12.9487%", True),
        # as finely as asked but not the value's rounding: off at the precision asked
        (_PCT, "12.94%", False), (_PCT, "13.00%", False), (_PCT, "12.97%", False),
        (_HALF, "12.94%", True),
        (_HALF, "12.95%", True), (_HALF, "12.96%", False), (_USDM, "$122.0m", False),
        (_USDM, "$121,934,000", True), (_USDM, "$121,960,000", False), (_USDM, "$121.95m", True),
        (_PCT, "12.95 percent", True), (_PCT, "13%", False), (_PCT, "13.0%", False),
        (_PCT, "12.9%", False), (_PCT, "13", False),
        (_USDM, "$121.9m", True), (_USDM, "$121,900,000", True), (_USDM, "$0.1219bn", True),
        (_USDM, "USD 121.90 million", True), (_USDM, "$122m", False), (_USDM, "$0.12bn", False),
        (_USDM, "122", False),
        (_ROUND, "$4m", True), (_ROUND, "$4.0m", True), (_ROUND, "4", True),
        (_ROUND, "$4,000,000", True),
    ],
)  # fmt: skip
def test_a_figure_coarser_than_the_decimals_asked_is_the_value_only_where_zeros_are_dropped(
    check: SlotCheck, value: str, ok: bool
) -> None:
    """The instruction asks two decimals (one for $m): `13%` for 12.95% is a rounding that changes
    the figure, though 0.4% off; `$4m` for $4.0m drops only a zero; a spelling as fine as asked or
    finer is within half the asked last digit (`13.00%` for 12.9487% is not, though within the
    0.05 points' tolerance; 12.945 rounds either way)."""
    got = read_slot(check, f"Here it is.\n{check.label}: {value}\n")
    assert got.passed is ok, got.why
    if not ok and value not in ("$0.12bn",):
        assert "decimal(s) asked" in got.why and got.decided, got.why


_SHARE = SlotCheck(label="Settlement offer as a percentage of damages claimed", type="number",
                   value=51.0753, rel_tol=0.005, abs_tol=0.05, scale=0.01, decimals=2)  # fmt: skip


@pytest.mark.parametrize(
    ("value", "allowed", "ok"),
    [
        ("51.08% (computed from 28.5 and 55.8)", [28.5, 55.8], True),
        ("51.08% (from 55.8 and 28.5)", [28.5, 55.8], True),
        ("51.08% (computed from 28.5 and 55.8)", [], False),  # not the task's figures
        ("51.08% (from 28.5 or 55.8)", [28.5, 55.8], False),
        ("51.08% (or 52.10%)", [28.5, 55.8], False),
        ("51.08% (computed from 28.5 and 51.08)", [28.5, 51.08], False),  # its own value again
        ("51.08% (computed from 28.5 and 55.8, roughly)", [28.5, 55.8], False),
        ("51.08% (from 28.5 and 55.8?)", [28.5, 55.8], False),
        ("51.08% (vs 55.8 and 28.5)", [28.5, 55.8], False),
    ],
)  # fmt: skip
def test_a_derivation_may_name_inputs_of_the_slots_own_size(
    value: str, allowed: list[float], ok: bool
) -> None:
    """A parenthesis naming only the task's other figures the value is computed from is a
    derivation even where those figures are of the slot's size (a percentage of two amounts in
    $m, both bare); any other word, mark or figure keeps it a second value."""
    got = read_slot(_SHARE, f"{_SHARE.label}: {value}\n", allowed)
    assert got.passed is ok, got.why
    rival = _SHARE.model_copy(update={"rivals": ["28.5"]})  # a known wrong value is no input
    assert not read_slot(rival, f"{rival.label}: {value}\n", allowed).passed


_MARGIN = SlotCheck(label="FY2025 net income margin", type="number", value=7.540395, rel_tol=0.005,
                    abs_tol=0.05, scale=0.01, decimals=2,
                    others=["FY2025 Net Income ($m)", "FY2025 Revenue ($m)"])  # fmt: skip


@pytest.mark.parametrize(
    ("slot", "inputs", "ok"),
    [
        ("7.54% (computed from 28.5 and 378.0)", ("28.5", "378.0"), True),
        ("7.54% (computed from 28.5 and 378.0)", ("28.5", None), False),  # 378.0 stated nowhere
        ("7.54% (computed from 28.5 and 390.0)", ("28.5", "378.0"), False),
        ("7.54% (8.10 from 8.1 and 378.0)", ("8.1", "378.0"), False),  # one input named twice
        ("7.54% (from 28.5 and 378.0, not final)", ("28.5", "378.0"), False),
    ],
)  # fmt: skip
def test_a_derivation_may_name_the_inputs_the_same_place_states(
    slot: str, inputs: tuple[str | None, str | None], ok: bool
) -> None:
    """The task's other slot lines in the same document state its inputs; the metric's line may
    name them as what it is computed from, each once, and nothing else."""
    lines = ["Analyst update", f"{_MARGIN.label}: {slot}"]
    lines += [f"{lab}: {v}" for lab, v in zip(_MARGIN.others, inputs, strict=True) if v]
    got = read_slot(_MARGIN, "\n".join(lines) + "\n")
    assert got.passed is ok, got.why


_REVIEW = SlotCheck(label="Deviating clauses", type="text", value=["12.1", "15.1"],
                    rivals=["8.2", "9.4", "5.3"])  # fmt: skip


@pytest.mark.parametrize(
    ("prose", "decided"),
    [
        ("Clauses 8.2 and 9.4 comply with the playbook.", True),
        ("8.2 does not deviate; 9.4 is in line.", True),
        ("Clause 5.3 is not outside the playbook.", True),
        ("Neither 8.2 nor 9.4 departs from it.", True),
        ("- 12.1 Governing Law: deviates (the playbook requires Delaware law)\n- 8.2 Cap: compliant",
         True),
        ("Clause 8.2 (Limitation of Liability) also deviates from the playbook.", False),
        ("Clause 9.4 does not comply with the playbook either.", False),
        ("I also see a breach of the playbook in clause 5.3.", False),
        ("On reflection 9.4 is non-compliant as well.", False),
    ],
)  # fmt: skip
def test_prose_saying_a_left_out_clause_deviates_leaves_the_list_undecided(
    prose: str, decided: bool
) -> None:
    """The slot lists the deviating clauses; a clause of the prose saying one it leaves out (a
    compliant one) deviates too contradicts it, whatever the list says; saying they comply is
    context."""
    got = read_slot(_REVIEW, f"{prose}\nDeviating clauses: 12.1, 15.1\n")
    assert got.decided is decided and got.passed is decided, got.why


_ACV = SlotCheck(label="Annual contract value", type="number", value=4.0, rel_tol=0.005, scale=1e6,
                 decimals=1)  # fmt: skip


@pytest.mark.parametrize(
    ("heading", "ok"),
    [
        ("## Answer", True), ("**Findings**", True), ("## What is the annual contract value?", True),
        ("### Figures from the executed MSA (2025)", True), ("__Summary__", True),
        ("## My best guess (unverified)", False), ("**Draft, not yet checked**", False),
        ("# Rough working numbers", False), ("## Provisional", False),
        ("### Possibly out of date", False),
    ],
)  # fmt: skip
def test_a_heading_over_the_slot_qualifies_it(heading: str, ok: bool) -> None:
    """A heading (markdown's `#`, or an all-bold line) above the slot line says what the lines under
    it are: a doubting one leaves the slot to a reader; one that names or asks the task's question
    heads the answer."""
    got = read_slot(_ACV, f"{heading}\n\nAnnual contract value: $4.0m\n")
    assert got.passed is ok, got.why
    assert got.decided is ok  # a doubting heading leaves it to a reader (fails with no judge)


_BILLED = SlotCheck(label="share of the approved fee budget already billed", type="number",
                    value=72.174312, rel_tol=0.005, abs_tol=0.05, scale=0.01, decimals=2,
                    others=["Total fees billed ($k)", "Approved fee budget ($k)"])  # fmt: skip
_BILLED_SLOTS = (
    "share of the approved fee budget already billed: 72.17%\nTotal fees billed ($k): 786.7\n"
    "Approved fee budget ($k): 1,090.0\n"
)


@pytest.mark.parametrize(
    ("prose", "ok"),
    [
        # context: another period, project or comparison says whose the other value is
        ("In Q3 2025 the share of the approved fee budget already billed was 61.50%.", True),
        ("The share of the approved fee budget already billed at Iron Mantis is 55.00%.", True),
        ("The share of the approved fee budget already billed rose from 61.50% last quarter.", True),
        ("That's up from 61.50% last quarter.", True),
        ("It is 72.17% against a 75.00% target.", True),
        # another value under the slot's own label, or put in the answer's place
        ("After re-checking, the share of the approved fee budget already billed is 70.12%.", False),
        ("Update: the share of the approved fee budget already billed should read 70.12%.", False),
        ("Sorry, that should read 70.12%, I grabbed the wrong column.", False),
        ("On reflection it needs to be 70.12%.", False),
    ],
)  # fmt: skip
def test_another_value_under_the_slots_own_label_is_a_second_candidate(
    prose: str, ok: bool
) -> None:
    got = read_slot(_BILLED, _BILLED_SLOTS + prose + "\n", allowed=[786.7, 1090.0])
    assert got.passed is ok, got.why
    assert got.decided is ok


@pytest.mark.parametrize(
    ("check", "text", "ok"),
    [
        # a source note in the form `Source for <the answer>: <a name or a path>`
        (NET_DEBT, "Net debt ($m): 63.4\nSource for the figure above: Noble Harbor Finance\n", True),
        (CORRECT, "Correct value: 121.9\nSource for the correct value: /Finance/Model.xlsx\n", True),
        (NET_DEBT, "Net debt ($m): 63.4\nSource for the figure above: a quick skim\n", False),
        # a method note pointing at the inputs, or at one period's figure of a change between two
        (CHANGE, "Hours billed Q3 2025: 442\nHours billed Q4 2025: 525\n"
                 "Hours billed increase Q3 2025 to Q4 2025: 18.78%\n"
                 "The increase is computed from the two inputs above.\n", True),
        (CHANGE, "Hours billed increase Q3 2025 to Q4 2025: 18.78%\n"
                 "It is the difference between the two periods divided by the Q3 2025 figure.\n",
         True),
        (CHANGE, "Hours billed increase Q3 2025 to Q4 2025: 18.78%\n"
                 "The figure above is provisional.\n", False),
        (Q3_HOURS, "Hours billed Q3 2025: 442\nHours billed Q4 2025: 525\n"
                   "Change = (Q4 2025 minus Q3 2025) divided by the Q3 2025 figure.\n", True),
        (Q3_HOURS, "Hours billed Q3 2025: 442\nHours billed Q4 2025: 525\n"
                   "Change = (Q4 2025 minus Q3 2025) divided by the Q3 2025 figure, which is"
                   " stale.\n", False),
        # ... the inputs' source or the rounding after them, nothing that weighs
        (CHANGE, "Hours billed Q3 2025: 442\nHours billed Q4 2025: 525\n"
                 "Hours billed increase Q3 2025 to Q4 2025: 18.78%\n"
                 "Computed from the two inputs above, taken from the current files.\n", True),
        (CHANGE, "Hours billed Q3 2025: 442\nHours billed Q4 2025: 525\n"
                 "Hours billed increase Q3 2025 to Q4 2025: 18.78%\n"
                 "Computed from the two inputs above and rounded to two decimals.\n", True),
        (CHANGE, "Hours billed Q3 2025: 442\nHours billed Q4 2025: 525\n"
                 "Hours billed increase Q3 2025 to Q4 2025: 18.78%\n"
                 "Computed from the two inputs above, taken from the old files.\n", False),
        (CHANGE, "Hours billed Q3 2025: 442\nHours billed Q4 2025: 525\n"
                 "Hours billed increase Q3 2025 to Q4 2025: 18.78%\n"
                 "Computed from the two inputs above, which nobody has verified.\n", False),
        # every clause of the contract named as what was read: no verdict on the compliant ones
        (CLAUSES, "Method: I read each clause (8.2, 9.1, 11.4, 12.3, 14.2) against the playbook.\n"
                  "Deviating clauses: 8.2, 11.4\n", True),
        (CLAUSES, "Clauses 9.1 and 12.3 caught my eye.\nDeviating clauses: 8.2, 11.4\n", False),
    ],
)  # fmt: skip
def test_notes_on_source_inputs_and_what_was_read_are_no_comment_on_the_answer(
    check: SlotCheck, text: str, ok: bool
) -> None:
    got = read_slot(check, text, allowed=[442, 525])
    assert got.passed is ok, got.why


@pytest.mark.parametrize(
    "prose",
    ["The Q3 2025 figure is out of date.", "The two inputs above are not final.",
     "The inputs above may change."],
)  # fmt: skip
def test_doubt_about_an_input_is_still_doubt_about_the_answer(prose: str) -> None:
    text = (
        "Hours billed Q3 2025: 442\nHours billed Q4 2025: 525\n"
        f"Hours billed increase Q3 2025 to Q4 2025: 18.78%\n{prose}\n"
    )
    assert not read_slot(CHANGE, text, allowed=[442, 525]).passed
