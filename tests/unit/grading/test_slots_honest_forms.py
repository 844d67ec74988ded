"""Forms of honest writing around a slot that the slot reader (`kwrl.grading.slots`) reads for
certain, each beside close hostile forms that must not pass: a currency word after a figure, a
checking word that names a place, an offer to pass the answer on, a clause calling the answer
final or unchanged, a hedge on what the reader may have seen, context a reader need not weigh.
The sentences are written for these tests, as a person would write them."""

from __future__ import annotations

import pytest

from kwrl.grading.slots import read_slot
from kwrl.tasks.models import SlotCheck

REV = SlotCheck(
    label="Revenue FY2025", others=["Revenue FY2024"], type="number", value=121.9, scale=1e6,
    rivals=["108.1"],
)  # fmt: skip
FEES = SlotCheck(label="Fees ($k)", type="number", value=1082.6, scale=1e3, others=["Budget ($k)"])
LINE = "Revenue FY2025: 121.9\n"

Case = tuple[str, SlotCheck, str, bool]
"""(what the case is, the check, the text, whether it passes)."""


def _fees(value: str, passes: bool) -> Case:
    return (f"fees {value}", FEES, f"Fees ($k): {value}", passes)


def _prose(prose: str, passes: bool, check: SlotCheck = REV, line: str = LINE) -> Case:
    return (prose, check, line + prose, passes)


CURRENCY = [
    _fees("1.08m dollars", True),
    _fees("1.0826 million US dollars", True),
    _fees("$1,082,600 dollars", True),
    _fees("1,082.6 thousand dollars", True),
    _fees("1.08m dollars, give or take", False),
    _fees("1.3m dollars", False),
    _fees("1.08m or 1.2m dollars", False),
    _fees("1.08m Canadian dollars", False),
]
"""A currency word after a figure is its unit; a hedge, another figure or another currency not."""

PLACES = [
    _prose("I have not touched the audit file.", True),
    _prose("The review copy was not edited; only the workbook was read.", True),
    _prose("I have not reviewed the deck.", False),
    _prose("The review copy has not been checked yet.", False),
    _prose("There is no confirmed version yet.", False),
]
"""A checking noun between a determiner and a place names the place: no check is pending."""

MAIL = REV.model_copy(update={"place": "mail", "to": "cfo@client.example.com"})
WHO = SlotCheck(label="Sent by", others=["Answer"], type="text", value=["Maria Okafor"],
                rivals=["Jonas Berg", "Berg"])  # fmt: skip
CLAUSES = SlotCheck(label="Deviating clauses", type="text", value=["8.2", "11.4"],
                    rivals=["9.1", "12.3", "14.2"])  # fmt: skip
LISTED = "Deviating clauses: 8.2, 11.4\n\n"

OFFERS = [
    _prose("Happy to send it across to Tomasz too.", True),
    _prose("Glad to forward this to the deal team if they need it.", True),
    _prose("Let me know if you'd like me to talk you through it.", True),
    _prose("Do you want me to populate the board tracker with this figure?", True),
    _prose("If you like, I can email you the source workbook so you have it on file.", True),
    _prose(
        "If it would be useful for Thursday, I can pull the monthly split, or we can go through"
        " it live.",
        True,
    ),
    _prose("I'm happy to share this number with the lenders' advisers.", True),
    _prose("Shall I circulate it to the steering group?", True),
    _prose(
        "Shout if you want me to walk you through it.\nBest,\nAna", True, MAIL, "Hi,\n\n" + LINE
    ),
    _prose("Happy to forward it to Jonas Berg as well.", True, WHO, "Sent by: Maria Okafor\n"),
    _prose(
        "Glad to prepare a mark-up or a cover note if you decide to push back on these.",
        True,
        CLAUSES,
        LISTED,
    ),
    _prose(
        "Happy to draft a short memo or a redline if you want to negotiate them.",
        True,
        CLAUSES,
        LISTED,
    ),
    _prose("Happy to send it across once Tomasz has looked it over.", False),
    _prose("Glad to forward this, though it could shift after audit.", False),
    _prose("Happy to circulate it unless you want another pass at it.", False),
    _prose("Want me to re-run this number first?", False),
    _prose("Happy to send it or wait for the restated one.", False),
    _prose("Shall I send the other one instead?", False),
    _prose("Happy to send it if you are comfortable that it holds up.", False),
    _prose("Happy to scrap it and start again.", False),
    _prose("I can forward it, but I would not lean on it yet.", False),
    _prose("Happy to share this figure, or we can use 108.1 for now.", False),
    _prose("Happy to draft a redline, or maybe hold off on these.", False, CLAUSES, LISTED),
    _prose(
        "Happy to draft a redline if you want to push back on these, or on 9.1 too.",
        False,
        CLAUSES,
        LISTED,
    ),
    _prose("Happy to draft a redline, though these might be acceptable.", False, CLAUSES, LISTED),
]
"""An offer to pass the answer on or walk through it says what the writer will do with it; one
that weighs the answer, waits on something, points at it in another role or offers a second
candidate does not pass."""

FINAL = [
    _prose("This figure is final.", True),
    _prose("These numbers are confirmed; the FY2026 plan is a separate exercise.", True),
    _prose("The Q2 budget is still moving, but the figures above are firm.", True),
    _prose("This is now final.", True),
    _prose("This figure is final, but I would get a second pair of eyes on it.", False),
    _prose("This figure is final for the moment.", False),
    _prose("This figure is not final.", False),
    _prose("This figure is most likely final.", False),
    _prose("The deck said 108.1. This one is final.", False),
    _prose("This figure is final unless the auditors object.", False),
    _prose("The earlier figure is final.", False),
    _prose("This is final, pending sign-off.", False),
]
UNCHANGED = [
    _prose("I went through the later messages; no one revised or restated it since.", True),
    _prose("Nobody amended that figure afterwards.", True),
    _prose("Nobody has corrected it yet.", False),
    _prose("Nobody changed it, or maybe they did.", False),
    _prose("Nobody questioned it, though the auditors might.", False),
    _prose("Somebody revised or restated it afterwards.", False),
]
"""A clause that only says nobody changed the answer affirms it, as finality does."""
LEFT_OUT = [
    _prose("As background, the capex run-rate here is 9.6%; it is a separate metric and is not used"
           " above.", True),
    _prose("The March pipeline data is still moving, but none of it feeds this figure, so the"
           " numbers above stand.", True),
    _prose("The superseded workbook wasn't used here.", True),
    _prose("The current workbook is not used above.", False),
    _prose("The deck's 108.1 is not used above, though it might be right.", False),
    _prose("It is probably not used above.", False),
    _prose("The figures above stand, for now.", False),
    _prose("This figure stands, but I would check it.", False),
]  # fmt: skip
"""A part that only says something else is not used for the answer, and a clause that says the
answer stands, need no reader; the answer's own source left out, a hedge, a qualifier or a
turn after them do not pass."""

"""A clause that only calls the answer final, beside prose naming no other value, affirms it;
finality qualified, negated, hedged, turned by a later clause or beside another value does not
pass."""

SEEN = [
    _prose("The 108.1 you might have seen on the old slide belongs to another matter.", True),
    _prose("You may remember 108.1 from the March board pack.", True),
    _prose("The 108.1 you may have seen might still be right.", False),
    _prose("108.1 may be the better number.", False),
    _prose("You may have seen 108.1, which could be the one.", False),
]
"""A modal on what the reader may have seen or recall weighs their memory, not the value; a
hedge on the value itself stays undecided."""

CHANGE = SlotCheck(
    label="Hours billed increase Q3 2025 to Q4 2025", type="number", value=18.78, scale=0.01,
    others=["Hours billed Q3 2025", "Hours billed Q4 2025"],
)  # fmt: skip
HOURS_Q3 = CHANGE.model_copy(
    update={"label": "Hours billed Q3 2025", "value": 442, "scale": None,
            "others": ["Hours billed increase Q3 2025 to Q4 2025", "Hours billed Q4 2025"]}
)  # fmt: skip
DECK = "Hours billed Q3 2025: 442\nHours billed Q4 2025: 525\nHours billed increase Q3 2025 to Q4 2025: 18.78%\n"
WHICH = SlotCheck(label="Wrong figure", others=["Deck shows", "Correct value"], type="text",
                  value=["Hours billed", "Q4 2025"], rivals=["Q1 2025", "Q3 2025"])  # fmt: skip
FIXED = SlotCheck(label="Correct value", others=["Wrong figure", "Deck shows"], type="number",
                  value=525, rivals=["501"])  # fmt: skip
RECONCILE = "Wrong figure: Hours billed Q4 2025\nDeck shows: 501\nCorrect value: 525\n"
POSTED = REV.model_copy(update={"place": "chat", "channel": "deals", "label": "Revenue Q4 2025",
                                "others": [], "value": 33.7})  # fmt: skip

PERIODS = [
    _prose("Computed as the gap between the quarters over the Q3 2025 figure.", True, CHANGE, DECK),
    _prose("The change is measured against the Q3 2025 figure.", True, HOURS_Q3, DECK),
    _prose("The Q4 2025 figure is out of date.", False, CHANGE, DECK),
    _prose("Divided by the Q3 2025 figure, which nobody has verified.", False, CHANGE, DECK),
    _prose("The change is measured against the Q3 2025 figure, I think.", False, HOURS_Q3, DECK),
    _prose("", True, POSTED, "Revenue Q4 2025: 33.7 (previous quarter, Q3 2025: 30.0)"),
    _prose("The previous figure was nearer the mark.", False, POSTED, "Revenue Q4 2025: 33.7\n"),
    _prose("The neighbouring rows check out: Q1 2025 reads 399 in both.", True, WHICH, RECONCILE),
    _prose("Please check out Q1 2025 as well.", False, WHICH, RECONCILE),
    _prose("Someone should check out Q3 2025 too.", False, WHICH, RECONCILE),
]
"""A figure named by one of the label's periods as what the answer is computed from, an earlier
period, rows that check out: context a reader need not weigh; the same words beside a doubt, a
check still to make or a figure of the answer's own period do not pass."""

NEXT_STEPS = [
    _prose(
        "The deck itself is untouched. I can fix the slide and let Omar know it is ready.",
        True,
        FIXED,
        RECONCILE,
    ),
    _prose("Next step: carry this figure into the quarterly tracker.", True, FIXED, RECONCILE),
    _prose(
        "Next step: reflect this figure in the note to Harbor Real Estate Partners.",
        True,
        FIXED,
        RECONCILE,
    ),
    _prose(
        "Happy to send it to Harbor Real Estate Partners, though it may move.",
        False,
        FIXED,
        RECONCILE,
    ),
    _prose(
        "I can fix the slide and let Omar know it is ready, though the workbook may lag.",
        False,
        FIXED,
        RECONCILE,
    ),
    _prose("Next step: check this figure against the ledger.", False, FIXED, RECONCILE),
    _prose(
        "I can fix the slide and let Omar know it is ready once he signs off.",
        False,
        FIXED,
        RECONCILE,
    ),
]
"""An offer to fix the place holding the wrong figure and say it is ready, a next step that passes
the answer on; not beside a hedge, a check to make or another figure."""

CONTRACT = SlotCheck(label="Contract value ($m)", type="number", value=4.2, scale=1e6,
                     others=["Damages ($m)", "Damages as a multiple of contract value"])  # fmt: skip
MULTIPLE = "Damages as a multiple of contract value: 11.93x\nDamages ($m): 50.1\nContract value ($m): 4.2\n"
INPUTS = [
    _prose("Method: the damages as a multiple of the contract value is computed from 50.1 and 4.2.",
           True, CONTRACT, MULTIPLE),
    _prose("Note: the multiple of the contract value is calculated from 50.1 and 4.2.", True,
           CONTRACT, MULTIPLE),
    _prose("Method: the multiple of the contract value is computed from 50.1 and 4.2, or 4.6.",
           False, CONTRACT, MULTIPLE),
    _prose("Method: the multiple of the contract value is computed from 50.1 and roughly 4.2.",
           False, CONTRACT, MULTIPLE),
    _prose("Note: the contract value is computed from 50.1 and 4.2, not yet checked.", False,
           CONTRACT, MULTIPLE),
]  # fmt: skip
"""A method note may name an input slot's own value as what the metric is computed from."""

SENDER = SlotCheck(label="Sent by", others=["Answer"], type="text", value=["Maria Okafor"],
                   rivals=["Jonas Berg", "Berg"])  # fmt: skip
SENT = "Answer: $28.5m\nSent by: Maria Okafor\n"
ON_THIS = [
    _prose("Jonas Berg was copied on the thread but wrote nothing on this.", True, SENDER, SENT),
    _prose("Maria Okafor did not send anything on this.", False, SENDER, SENT),
    _prose("I would not lean on this.", False, SENDER, SENT),
]  # fmt: skip
CONTRASTED = [
    _prose("", True, SENDER, "The latest mail giving it as agreed (rather than a first estimate) is"
           " from Maria Okafor.\n" + SENT),
    _prose("Maria Okafor gave an estimate.", False, SENDER, SENT),
    _prose("Sent as a rough estimate by Maria Okafor.", False, SENDER, SENT),
]  # fmt: skip
"""An estimate the sentence sets the value against (`rather than a first estimate`) is what the
value is not; an estimate said of the value stays for a reader."""
"""`this` as the matter another person wrote nothing about is the thread's subject; the slot's
own person said to have sent nothing, or `this` in any other role, stays for a reader."""

CASES: list[Case] = [
    *CURRENCY, *PLACES, *OFFERS, *FINAL, *UNCHANGED, *LEFT_OUT, *SEEN, *PERIODS, *NEXT_STEPS, *INPUTS, *ON_THIS, *CONTRASTED
]  # fmt: skip
ALLOWED = [442, 525, 50.1, 11.93]
"""The task's own figures (its other slots' values)."""


@pytest.mark.parametrize("name,check,text,passes", CASES, ids=[c[0] for c in CASES])
def test_each_form_is_read_for_certain_and_its_hostile_neighbours_do_not_pass(
    name: str, check: SlotCheck, text: str, passes: bool
) -> None:
    f = read_slot(check, text, allowed=ALLOWED)
    assert f.passed is passes, f"{name}: {f}"


ACV = SlotCheck(label="Answer", type="number", value=4.0, scale=1e6)
ACV_TASK = (
    "What is the annual contract value of the Noble Harbor MSA (/Matters/Noble Harbor/MSA.docx)?"
    " End your answer with the line `Answer: <value in $m>`."
)
ACV_LINE = "Answer: $4.0m"


@pytest.mark.parametrize(
    "prose,passes",
    [
        ("This is the annual contract value agreed between Granite Ltd and Noble Harbor, as"
         " recorded in /Matters/Noble Harbor/MSA.docx.", True),
        ("To be explicit: $4.0m is the annual contract value for Noble Harbor, taken directly"
         " from the document.", True),
        ("It is the annual contract value of the MSA.", True),
        ("This is the annual contract value I guessed.", False),
        ("This is the annual contract value, probably.", False),
        ("That is the old annual contract value.", False),
        ("It is the annual contract value for Stone Tundra.", False),
        ("$4.0m is the annual contract value for now.", False),
        ("This is the annual contract value of the MSA; I never opened the MSA.", False),
    ],
)  # fmt: skip
def test_saying_what_the_answer_is_in_the_tasks_words(prose: str, passes: bool) -> None:
    """After the answer's line, and for the honest forms before it too (prose before the line is
    read for its own pointers only: `this`, `these`)."""
    texts = [f"{ACV_LINE}\n\n{prose}"] + ([f"{prose}\n\n{ACV_LINE}"] if passes else [])
    for text in texts:
        f = read_slot(ACV, text, task=ACV_TASK, names=["Noble Harbor", "Stone Tundra"])
        assert f.passed is passes and f.decided is passes, (text, f)
