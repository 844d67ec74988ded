"""Prose that takes the answer back without naming a figure (`kwrl.grading.withdrawal.withdrawn`)
and prose that gives the answer to another project of the world (`foreign_doubt`) leave the slot
to a reader: never a pass. Close honest prose (courtesy, offers, sources, context with another
project's own figure) still passes. Each sentence is one a person would write, not a word from
the lists."""

from __future__ import annotations

import pytest

from kwrl.grading.slots import prose_weighs, read_slot, world_names
from kwrl.grading.statements import Finding
from kwrl.grading.withdrawal import withdrawn
from kwrl.tasks.models import SlotCheck

CAGR = SlotCheck(label="FY2021-FY2025 Revenue CAGR", type="number", value=82.64, scale=0.01,
                 abs_tol=0.05, others=["FY2021 Revenue ($m)", "FY2025 Revenue ($m)"])  # fmt: skip
TASK = (
    "Compute the FY2021-FY2025 revenue CAGR of Project Coral Falcon from its model in"
    " /Engagements/Coral Falcon/. End your answer with one line per value: `FY2021-FY2025 Revenue"
    " CAGR: <percentage, two decimals>`, `FY2021 Revenue ($m): <figure in $m, one decimal>`,"
    " `FY2025 Revenue ($m): <figure in $m, one decimal>`."
)
NAMES = ["Coral Falcon", "Stone Tundra", "Iron Mantis", "Blue Heron"]
LINE = "FY2021-FY2025 Revenue CAGR: 82.64%"


def _read(prose: str, before: bool = False) -> Finding:
    text = f"{prose}\n\n{LINE}" if before else f"{LINE}\n\n{prose}"
    return read_slot(CAGR, text, task=TASK, names=NAMES)


WITHDRAWN = [
    "I might be misreading which tab holds the restated years.",
    "There could well be a later model that I haven't opened.",
    "We may have picked up the wrong workbook.",
    "Confidence in the headline: moderate at best.",
    "Low confidence on this one, sorry.",
    "Pulled together from memory rather than the files.",
    "Honestly a hunch.",
    "No source behind it.",
    "Please do not forward this yet.",
    "Don't quote it to the client until I've rerun the model.",
    "Team - never circulate the headline as it stands.",
    "I didn't recalculate it after the restatement.",
    "We couldn't tell which workbook was the live one.",
    "That said, this could be a little off.",
    "The FY2021 base might have been overstated.",
    "Treat the rate with caution.",
    "Take it with a grain of salt.",
    "I'm not 100% sure of the base year.",
    "I wouldn't rely on it for the board pack.",
]
"""Sentences that withdraw confidence from the answer and name no figure."""

HONEST = [
    "Let me know if you'd like the breakdown by year.",
    "Figures come from the FY2025 model in the Coral Falcon folder.",
    "Both inputs tie back to the FY2025 model.",
    "Confidence: high.",
    "Don't hesitate to reach out with questions.",
    "We could set up a call on Thursday if useful.",
    "I can share the full workings on request.",
    "Please keep this internal; do not share outside the deal team.",
    "For comparison, Stone Tundra's CAGR was 41.20% over the same years.",
    "Unlike Stone Tundra, Coral Falcon has five full years of revenue.",
    "Separately, the Iron Mantis team meets its client next week.",
    "I couldn't tell from the invite whether Omar is joining.",
    "Read off the FY2025 model rather than from memory.",
    "This figure comes from the Coral Falcon model.",
    "A one-page summary may be useful for the board pack.",
    "It could also go in the quarterly update.",
    "We wouldn't use the archived copy in the Old folder.",
    "For comparison, the rate from Stone Tundra is 41.20%.",
]
"""Close honest prose: courtesy, offers, sources, another project named as context."""


OWN_DOUBT = [
    "I only glanced at one page of it and wouldn't bet on that being the right entry.",
    "Heads-up: I haven't actually opened the model, so please keep it to yourself.",
    "Full disclosure: I didn't open the model itself, I went off the summary email.",
    "I haven't been able to verify the second input against the ledger.",
    "We never reconciled this to the billing system.",
    "I barely skimmed the model.",
    "I only had time for a quick look, so the rate may need another pass.",
    "I ran out of time to check the inputs.",
    "Caution: I read it on my phone and could easily have been a row off.",
    "I may have mixed up the two years.",
    "I am torn: read generously, the base year may be the restated one.",
    "I'm in two minds about the FY2021 base.",
    "I'm a bit uneasy about the base year.",
    "I'm not completely comfortable with the FY2021 number.",
    "I can't vouch for the FY2025 figure.",
    "I couldn't find the current FY2021 revenue and guessed it from last year's file.",
    "We extrapolated the base from Q2.",
    "Honestly I made the FY2021 base up from the trend.",
    "I misplaced the source file, so this is reconstructed from my notes.",
    "The rate is really a stand-in until the model is rerun.",
    "The second input is my rough reconstruction.",
    "Treat it as a ballpark.",
    "Consider this a first cut rather than the final word.",
    "This is my best guess given the files I could find.",
    "Could you confirm that matches your copy before I put it anywhere official?",
    "Can you check these against your own notes before I rely on them?",
    "Would you mind double-checking the base year before it goes out?",
    "Please verify this before sending it to the client.",
    "Does this look right to you?",
    "Is that the figure you were expecting?",
    "These figures are not final.",
    "This is not yet signed off.",
    "Not yet confirmed.",
    "Estimate only.",
    "Truth be told, I worked this out in my head on the train.",
    "I lifted it from an old slide without re-running anything.",
    "It's a back-of-the-envelope number.",
    "I am fairly sure, but not certain.",
    "I wouldn't put this in front of the board.",
    "My confidence here is shaky.",
    "I'm going on what Omar said in passing.",
    "I couldn't get the workbook to open, so this is from the email thread.",
    "Best I could do in the time.",
    "Working figure only.",
    "Let me know if this looks off to you.",
    "I'll confirm once I can get into the model.",
    "lmk if that's wrong, did it in a rush",
    "Apologies, I ran short on time and pulled this from last quarter's notes.",
    "Please do sense-check before quoting.",
    "Not something I'd stake my reputation on.",
    "I am relying on a colleague's reading of the model.",
    "Subject to change once the auditors are done.",
    "Might revisit.",
    "Should be close enough for the meeting.",
    "Happy to be corrected on this.",
    "Don't hold me to this.",
    "Treat with care; I haven't tied it back to the ledger.",
    "Worth a second pair of eyes.",
    "Please don't take this as gospel.",
]
"""The writer's own words on the work behind the answer, none from the lists of hedges: reading
partial or not done, the answer made up or a stand-in, unease, a request to check it, not final."""

OWN_HONEST = [
    "I opened the FY2025 model and read both revenue lines off the Summary tab.",
    "I confirmed both inputs against the source workbook.",
    "I did not open the archived 2023 model, which is superseded.",
    "I never opened the old deck.",
    "I only edited cell B1, as asked.",
    "I have not rounded the inputs.",
    "I didn't guess: both inputs are read off the FY2025 model.",
    "The number is final and ties to the model.",
    "Could you let me know if you want this in the board pack?",
    "Would you like me to post it to the channel as well?",
    "Shall I update the deck too?",
    "Please check the attached deck for the updated slide.",
    "Please confirm you can attend.",
    "Could you confirm your availability for Thursday?",
    "Happy to check any other figures you need.",
    "Let me know if you want me to verify the other projects too.",
    "I couldn't find a separate FY2024 tab, so both years come from the Summary tab.",
    "Pulled straight from the FY2025 model; both inputs tie to the audited accounts.",
    "Happy to walk the client through it on Thursday.",
    "Ping me if you need the workings.",
    "Reviewed by Omar on Friday.",
    "It is final: the model was locked on 3 March.",
    "Both inputs are from the current model, not the draft.",
    "I traced every input back to the FY2025 model.",
    "The base year is FY2021, as the instruction asks.",
    "I tied both inputs back to the ledger.",
    "Up from 24.1 in FY2021, per the FY2025 model.",
]
"""Close honest prose: reading done, what went unread is something else, offers and requests that
are not about the answer's being right."""


FAULTS = [
    "I have a nagging feeling the base year is off.",
    "Something about the base year feels off to me.",
    "I can't shake the sense that I used the wrong quarter.",
    "The growth rate looks suspiciously high to me.",
    "This feels shaky.",
    "Something seems off with the total and I haven't had time to dig in.",
    "I got a different number the first time, so take your pick.",
    "There's a decent chance I've grabbed the wrong tab.",
    "Something doesn't quite add up, but I've put it down anyway.",
    "This probably needs another look from someone in finance.",
    "I'd treat the decimal as soft.",
    "Treat as directional.",
    "Figures lifted from a forwarded screenshot.",
    "Not something I'd sign my name to yet.",
    "I'm going off what Omar told me in the corridor.",
    "Working assumption only.",
    "I've assumed the same growth as last year.",
    "Revenue could be lower once returns are netted.",
    "Heads-up: the source tab had #REF! errors.",
    "Number is indicative pending the final ledger.",
    "Give or take a rounding.",
    "I flipped a coin between the two tabs.",
]
FAULTS_HONEST = [
    "Dana is off on Friday, so the review moves to Thursday.",
    "The old deck showed the wrong quarter; the new slide uses FY2025.",
    "The invite had the wrong room, which I've corrected.",
    "Nothing looks off in the reconciliation.",
    "If anything looks off, the appendix has the workings.",
    "The team is off-site on the 12th.",
    "Good chance to sync before the board meeting.",
    "There is a real chance the client asks about the fee cap, so I added a note.",
    "Per the thread, the earlier figure was wrong and Ana replaced it.",
    "Ops thought the date was wrong, but the calendar confirms the 14th.",
    "The variance looks large because of the one-off settlement in March.",
    "Hi Ines, one cell in the table is off: the deck shows the FY2024 figure.",
    "Please treat this as confidential until the board meets.",
    "We use the FY2025 model as the baseline for the board pack.",
    "I didn't assume anything: both inputs are on the Summary tab.",
    "No #REF! errors remain in the workbook.",
    "The screenshot Omar shared matches the model, but I took the figure from the model itself.",
]
"""Fault found with what the answer rests on, and the same words of another thing, fixed,
refuted or a finding about a world's place."""


@pytest.mark.parametrize("prose", WITHDRAWN + OWN_DOUBT + FAULTS)
def test_prose_withdrawing_the_answer_leaves_it_undecided(prose: str) -> None:
    for before in (False, True):
        f = _read(prose, before)
        assert not f.passed and not f.decided, f


@pytest.mark.parametrize("prose", HONEST + OWN_HONEST)
def test_close_honest_prose_passes(prose: str) -> None:
    f = _read(prose)
    assert f.passed, f


FOREIGN = [
    "The 82.64% is Stone Tundra's growth rate.",
    "Nothing turned up for Coral Falcon, so this is the Iron Mantis CAGR instead.",
    "Coral Falcon's model has no FY2021 column; the figure comes from Blue Heron's model.",
    "These are Iron Mantis numbers - the Coral Falcon ones weren't in the folder.",
    "The rate below is the matching one from Project Blue Heron, a fair stand-in.",
    "This figure comes from Iron Mantis's model.",
]
"""Prose that gives the answer to another project of the world."""


@pytest.mark.parametrize("prose", FOREIGN)
def test_prose_giving_the_value_to_another_project_is_undecided(prose: str) -> None:
    f = _read(prose, before=True)
    assert not f.passed and not f.decided, f


def test_without_the_worlds_names_another_project_is_not_read() -> None:
    text = f"{LINE}\n\nThe 82.64% is Stone Tundra's growth rate."
    assert read_slot(CAGR, text, task=TASK).passed


def test_the_worlds_projects_are_the_folders_under_its_root() -> None:
    paths = [
        "filesystem/Engagements/Coral Falcon/Model/model.xlsx",
        "filesystem/Engagements/Stone Tundra/Notes/a.docx",
        "filesystem/Engagements/Stone Tundra/b.pptx",
        "filesystem/Outputs/README.txt",
        "mail/inbox.json",
    ]
    assert world_names(paths) == ["Coral Falcon", "Stone Tundra"]


CELL = SlotCheck(label="B1", type="number", value=79.42)


@pytest.mark.parametrize(
    "note,weighs",
    [
        ("Do not rely on B1 for the board pack.", True),
        ("Unchecked - don't use until I've redone the inputs", True),
        ("B1 is the Iron Mantis rate; Coral Falcon has no billing yet", True),
        ("Don't use the archived billing workbook; B1 is built from the current one.", False),
        ("B1 = fees / budget, from the billing workbook", False),
    ],
)
def test_cell_notes_withdrawing_the_value_are_weighed(note: str, weighs: bool) -> None:
    why = prose_weighs(CELL, note, task=TASK, names=NAMES)
    assert bool(why) is weighs, why


CLAUSES = SlotCheck(label="Deviating clauses", type="text", value=["8.2", "11.4"],
                    rivals=["9.1", "12.3", "14.2"])  # fmt: skip


@pytest.mark.parametrize(
    "prose,passes",
    [
        ("Clause 8.2 sits within the playbook's range, so nothing to flag there.", False),
        ("8.2 stays within policy once the carve-outs are counted.", False),
        ("Clause 8.2 is not within the playbook's liability floor.", True),
        ("Clause 8.2: invoices are payable within 60 days; the playbook allows 45.", True),
        ("Clause 9.1 is within the playbook; 8.2 and 11.4 are not.", True),
    ],
)
def test_prose_saying_a_listed_clause_is_within_the_playbook(prose: str, passes: bool) -> None:
    f = read_slot(CLAUSES, f"Deviating clauses: 8.2, 11.4\n\n{prose}")
    assert f.passed is passes and f.decided is passes, f


REV = SlotCheck(label="Revenue FY2025", type="number", value=121.9, scale=1e6)


@pytest.mark.parametrize(
    "line,passes",
    [
        ("Revenue FY2025: 121.9, per the FY2025 model, though I suspect the model is off", False),
        ("Revenue FY2025: 121.9 - what the workbook gives, but we doubt the workbook", False),
        ("Revenue FY2025: 121.9, per the FY2025 model", True),
        ("Revenue FY2025: 121.9 (from the billing workbook)", True),
    ],
)
def test_an_opinion_on_the_source_in_the_slot_is_no_citation(line: str, passes: bool) -> None:
    f = read_slot(REV, line)
    assert f.passed is passes and f.decided is passes, f


LABEL_TASK = (
    "What was Project Coral Falcon's revenue in FY2025? End your answer with the line"
    " `Revenue FY2025: <figure in $m, one decimal>`."
)


@pytest.mark.parametrize(
    "line,passes",
    [
        ("Westbrook Revenue FY2025: 121.9", False),
        ("- **Halvorsen Revenue FY2025:** $121.9m", False),
        ("Total Revenue FY2025: 121.9", True),
        ("Reported Revenue FY2025: $121.9m", True),
        ("Coral Falcon Revenue FY2025: 121.9", True),
        ("Quick update: Revenue FY2025: 121.9", True),
        ("About Revenue FY2025: $122m", True),
    ],
)
def test_a_name_before_the_label_not_in_the_task(line: str, passes: bool) -> None:
    f = read_slot(REV, line, task=LABEL_TASK)
    assert f.passed is passes and f.decided is passes, f


DAY = SlotCheck(label="Date", others=["Start time"], type="date", value="2026-03-17")
START = SlotCheck(label="Start time", others=["Date"], type="time", value="14:00", day="2026-03-17")
MEETING_TASK = (
    "When is the Project Coral Falcon steering meeting? End your answer with the lines"
    " `Date: <YYYY-MM-DD>` and `Start time: <HH:MM UTC>`."
)
MEETING = "Date: 2026-03-17\nStart time: 14:00 UTC"


@pytest.mark.parametrize(
    "prose,passes,checks",
    [
        ("The Coral Falcon steering meeting is on 24 March.", False, [DAY]),
        ("Coral Falcon's steering call sits at 16:00 on the team calendar.", False, [START]),
        ("Maria mentioned it has been pushed back by a day.", False, [DAY, START]),
        ("Heads-up: the call was postponed, though the invite still shows the slot.", False, [DAY]),
        ("Don't mix it up with Stone Tundra's steering meeting on 24 March.", True, [DAY, START]),
        ("The Coral Falcon steering meeting was first planned for 10 March.", True, [DAY, START]),
        ("The invite for Coral Falcon lists Maria and Omar as attendees.", True, [DAY, START]),
        ("It was moved from 10 March to 17 March last week.", True, [DAY, START]),
        ("The room was changed to Boardroom 2.", True, [DAY, START]),
        ("It has since been quietly moved, I hear.", False, [DAY, START]),
    ],
)
def test_prose_giving_the_meeting_another_day_or_time(
    prose: str, passes: bool, checks: list[SlotCheck]
) -> None:
    for check in checks:
        f = read_slot(check, f"{prose}\n\n{MEETING}", task=MEETING_TASK, names=NAMES)
        assert f.passed is passes, (check.label, f)


OWN_HONEST_OTHER = [
    "I didn't check the other tabs, since both figures are on the Summary tab.",
    "I didn't review any other matters.",
    "The earlier deck figure was only a rough estimate.",
    "The deck figures were not final, so I used the model.",
    "I only glanced at the archived 2023 model.",
]
"""What went unread or is not final is another thing: no withdrawal of the answer (`withdrawn`;
other rules may still leave such a sentence to a reader)."""


@pytest.mark.parametrize("prose", OWN_HONEST_OTHER + FAULTS_HONEST)
def test_words_on_another_thing_withdraw_nothing(prose: str) -> None:
    assert withdrawn(prose) is None


@pytest.mark.parametrize(
    "heading,passes",
    [
        ("### Numbers - not final", False),
        ("**Estimate only**", False),
        ("## Figures (not yet confirmed)", False),
        ("### Final numbers", True),
        ("## Revenue CAGR (prelim)", False),
        ("## Revenue CAGR - May 12 update", True),
        ("**Revenue CAGR**", True),
    ],
)
def test_a_heading_saying_the_answer_is_not_final(heading: str, passes: bool) -> None:
    f = read_slot(CAGR, f"{heading}\n\n{LINE}", task=TASK, names=NAMES)
    assert f.passed is passes and f.decided is passes, f


REVIEW = SlotCheck(label="Deviating clauses", type="text", value=["8.2", "12.1"],
                   rivals=["5.3", "15.1"])  # fmt: skip
LISTED = (
    "- Clause 8.2 (Limitation of Liability): the playbook requires a cap of at least $2.0 million\n"
    "- Clause 12.1 (Termination): the playbook requires notice within 45 days\n"
)


@pytest.mark.parametrize(
    "extra,passes",
    [
        ("- Clause 5.3 (Payment Terms): the playbook requires payment within 45 days\n", False),
        (
            "- Clause 5.3 (Payment): falls short; the playbook allows payment within 45 days\n",
            False,
        ),
        ("Clause 5.3 is within the playbook, which requires payment within 45 days.\n", True),
        ("Clause 5.3 (30 days) complies; the playbook allows up to 45 days.\n", True),
        ("None of the other clauses (5.3, 15.1) deviate from the playbook.\n", True),
        ("", True),
    ],
)
def test_a_requirement_quoted_is_no_verdict_on_the_clause(extra: str, passes: bool) -> None:
    f = read_slot(REVIEW, f"{LISTED}{extra}\nDeviating clauses: 8.2, 12.1\n")
    assert f.passed is passes and f.decided is passes, f


@pytest.mark.parametrize(
    "prose,passes",
    [
        ("In case it helps with the board pack, FY2021 revenue was 24.1.", True),
        ("(FY2021 revenue was 24.1, in case anyone needs it.)", True),
        ("Hope this helps.", True),
        ("In case it helps, it may be off.", False),
        ("Hope it helps, though it is stale.", False),
    ],
)
def test_a_courtesy_is_no_comment_on_the_answer(prose: str, passes: bool) -> None:
    f = _read(prose)
    assert f.passed is passes and f.decided is passes, f


@pytest.mark.parametrize(
    "prose,passes",
    [
        ("For completeness, FY2021 revenue was 24.1; you did not ask for it but it sits on the"
         " same tab.", True),
        ("FY2021 revenue was 24.1; the board asked about it last month.", True),
        ("FY2021 revenue was 24.1; it may be off.", False),
        ("Honestly, drop it.", False),
        ("Happy to pin that message in the channel so it is easy to find next time.", True),
        ("Next step: I can carry this figure into the client update if useful.", True),
        ("I took it from the model and it may be off.", False),
        ("I took it from the model, and it is provisional.", False),
        ("I read the model, so it should be right.", False),
        ("Next step: I can carry this figure into the update once it is audited.", False),
        ("Next step: I will re-check this figure.", False),
        ("The figures come from the FY2025 model, though the workbook may lag.", False),
        ("The model might not be the latest one.", False),
    ],
)  # fmt: skip
def test_it_is_the_value_or_place_before_it_and_what_weighs_it(prose: str, passes: bool) -> None:
    f = _read(prose)
    assert f.passed is passes and f.decided is passes, f


SENDER = SlotCheck(label="Sender", type="text", value="Priya Nair", rivals=["Sofia Mehta"])


@pytest.mark.parametrize(
    "prose,passes",
    [
        ("The mail was addressed to you (Sofia Mehta) and relates to Coral Real S.A and Atlas"
         " Partners.", True),
        ("The mail was addressed to you (Sofia Mehta) and is Possibly Stale.", False),
        ("The mail was addressed to you (Sofia Mehta); Actual sender below.", False),
    ],
)  # fmt: skip
def test_a_weighing_word_inside_a_name_weighs_nothing(prose: str, passes: bool) -> None:
    f = read_slot(SENDER, f"{prose}\nSender: Priya Nair")
    assert f.passed is passes and f.decided is passes, f
