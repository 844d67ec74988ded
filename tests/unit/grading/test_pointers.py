"""What a sentence says about a pointer back at the answer (`kwrl.grading.pointers`,
docs/contracts.md "Pointers back at the answer"): an offer to pass it on, a settled status, a
method note or a pointer at something else is read for certain and leaves the slot to its value;
any other predicate about the answer (a retraction, a doubt, a wait, in any words) stays
undecided. The sentences are written as people write them, not from the module's lists."""

from __future__ import annotations

import pytest
from grading_testkit import POST, REV, SLOT
from grading_testkit import grade_answer as _grade

from kwrl.grading.pointers import reads
from kwrl.grading.slots import read_slot

HONEST = [
    "The inputs above are final; only the Q1 numbers are still outstanding.",
    "This one is final.",
    "The figure above is the signed-off one.",
    "These are signed off.",
    "It is final.",
    "That figure is confirmed.",
    "The number above is confirmed by the finance team.",
    "This is the audited figure.",
    "Both figures above are final.",
    "The FY2025 revenue figure is the approved one.",
    "That's the agreed number.",
    "The headline figure is locked.",
    "This one has been signed off by Omar.",
    "Happy to send it to Priya if she needs it.",
    "I can forward it to Omar.",
    "Let me know if you want me to share it with the client.",
    "I've shared it with Omar as well.",
    "Happy to walk you through it.",
    "I've attached the workbook so you have it to hand.",
    "Glad to circulate this to the wider team.",
    "Sent it to the client this morning.",
    "I can post it in the deal channel too.",
    "We can present it at Monday's meeting.",
    "Happy to email it over to Ines in case she needs it.",
    "The Q2 workbook has a few open items, but none of it feeds this metric.",
    "The deck has stray formatting, but none of it touches revenue.",
    "Same method as in the previous period.",
    "The previous period's figure is context only.",
    "Change computed as the difference between the two periods divided by the Q3 2025 figure.",
    "Computed the same way as the figure above.",
    "Growth calculated as the change over the prior year.",
    "The last quarter was quiet.",
    "The prior year numbers come from the FY2024 workbook.",
    "The 2024 figure sits in the archive tab.",
    "I left the review copy untouched; happy to fix the deck cell if you want.",
    "Both lines above come from the FY2025 workbook, Summary tab.",
    "The Q1 numbers are still being collected by the Lisbon office.",
    "Happy to share it with the wider team.",
    "I'll send it to Omar on Monday.",
    "It's final.",
    "These two are the approved figures.",
    "The number above is the audited one.",
    "The Project Crystal Zephyr numbers are still outstanding.",
    "Let me know if you have questions on this.",
    "Happy to walk you through where I found it.",
    "All of the above is signed off.",
    "This is final and signed off.",
    "Feel free to share it with the team.",
    "You're welcome to forward it.",
    "I've also copied it into the tracker.",
    "Let me know if you'd like me to circulate it more widely.",
    "If you need it in another format, let me know.",
    "Signed off.",
]


HOSTILE = [
    "Bin that.",
    "Park the number above for now.",
    "Treat it as a placeholder.",
    "Keep it internal, it hasn't been through review.",
    "This one is final for now.",
    "It is final, pending Omar.",
    "The figure above is final unless the auditors push back.",
    "That figure is confirmed, I think.",
    "This one is final once Omar signs it off.",
    "These are signed off, hopefully.",
    "The number above is the draft one.",
    "That one isn't signed off.",
    "The figure above is superseded.",
    "This is the old figure.",
    "Happy to send it once I've double-checked it.",
    "I can forward it after a second look.",
    "Happy to send it back to Priya to redo.",
    "I'll share it when it holds up.",
    "Don't share it yet.",
    "I'd pass on it.",
    "Shelve it.",
    "Toss the number above.",
    "Set that one aside.",
    "I'd sit on it a day before anyone leans on it.",
    "Let's not lean on the figure above.",
    "I'm second-guessing the number above.",
    "The figure above needs another pass.",
    "Nobody has looked at it but me.",
    "Hold that thought, the number above is under discussion.",
    "Consider the line above withdrawn.",
    "The earlier figure stands, not this one.",
    "Swap the figure above for something firmer.",
    "Take it with a grain of salt.",
    "The figure above came from a half-finished tab.",
    "This one is from a tab I only half trust.",
    "Computed as the difference, though I may have flipped it.",
    "I need to send it back for fixing.",
    "This one is final, except for the FX piece.",
    "It is the signed-off one until the restatement lands.",
    "The number above won't survive the audit.",
    "Chuck this one.",
    "Drop the FY2025 Revenue figure.",
    "Scrap the 2025 revenue figure.",
    # found by probing after the first rules: an agent, a contrast, a purpose, a tail
    "Happy to send it to Priya but I wouldn't.",
    "I can forward it to whoever will fix it.",
    "Happy to walk you through it and its flaws.",
    "Sent it anyway.",
    "The figure above is final-ish.",
    "Feel free to bin it.",
    "Please ignore it.",
    "Feel free to send it back.",
    "I've saved it over the old one.",
    "Copied it in, but it's shaky.",
    "Please file it under maybe.",
    "Please post it with a health warning.",
    "Let me know if you have questions on this, it's rushed.",
    "The previous period's figure may be the better guide.",
    "Feel free to file it away.",
    "The Revenue figure above is final for the moment.",
]

KNOWN_GAPS = [
    "It's from a stale tab, I suspect.",
    "It is not final.",
    "Final for now.",
    "2025 feels shaky to me.",
    "It's confirmed by hearsay.",
    "It is final as far as I know.",
]
"""Hostile sentences the grader still passes (a known open class: doubt that names no value; an
opening `It`, a bare status or a bare period is no pointer `comment_on_answer` reads, and no
doubt rule reads a hedge that names no value). reward7 caught them only through the reverted
regions reader. Asserted as passing today, so that the test fails when someone closes the gap:
then move the sentence to HOSTILE."""


@pytest.mark.parametrize(
    ("after", "score"), [(h, 1.0) for h in HONEST] + [(h, 0.0) for h in HOSTILE]
)
def test_a_pointer_is_read_only_in_a_role_read_for_certain(after: str, score: float) -> None:
    """Honest: the slot passes on its value; hostile: undecided (no judge: a fail)."""
    g = _grade(REV, f"{SLOT}\n{after}")
    assert g.score == score, g.rationale


@pytest.mark.parametrize("after", KNOWN_GAPS)
def test_known_gaps_still_pass(after: str) -> None:
    """A known gap (KNOWN_GAPS) passes today; once it fails, the gap is closed: move it."""
    g = _grade(REV, f"{SLOT}\n{after}")
    assert g.score == 1.0, f"gap closed, move {after!r} to HOSTILE: {g.rationale}"


@pytest.mark.parametrize(
    ("after", "score"),
    [("This one is final.", 1.0), ("This one is final for now.", 0.0),
     ("Happy to share it with the team.", 1.0), ("Happy to share it once reviewed.", 0.0),
     ("Happy to send it to Priya but I wouldn't.", 0.0),
     ("Please post it with a health warning.", 0.0), ("Please file it under maybe.", 0.0)],
)  # fmt: skip
def test_a_post_reads_pointers_the_same_way(after: str, score: float) -> None:
    f = read_slot(POST, f"Revenue FY2025: 121.9\n{after}")
    assert (1.0 if f.passed else 0.0) == score, f


@pytest.mark.parametrize(
    ("part", "role"),
    [
        ("This one is final", "settled"),
        ("The figure above is the signed-off one", "settled"),
        ("This one is final for now", None),
        ("Happy to send it to Priya", "offer"),
        ("Happy to send it once checked", None),
        ("Drop it", None),
        ("Same method as in the previous period", "method"),
        ("the previous period's figure is context only", "elsewhere"),
        ("the Q1 numbers are still outstanding", "elsewhere"),
        ("Park the number above", None),
    ],
)
def test_the_roles_are_read_from_the_structure_around_the_pointer(
    part: str, role: str | None
) -> None:
    assert reads(REV, part, part) == role
