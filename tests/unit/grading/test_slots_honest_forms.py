"""Forms of honest writing around a slot that the slot reader (`kwrl.grading.slots`) reads for
certain, each beside close hostile forms that must not pass: a currency word after a figure, a
checking word that names a place, an offer to pass the answer on, a clause calling the answer
final, a hedge on what the reader may have seen, an answer noun used as a verb. The sentences are
written for these tests, as a person would write them."""

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

CASES: list[Case] = [*CURRENCY, *PLACES]


@pytest.mark.parametrize("name,check,text,passes", CASES, ids=[c[0] for c in CASES])
def test_each_form_is_read_for_certain_and_its_hostile_neighbours_do_not_pass(
    name: str, check: SlotCheck, text: str, passes: bool
) -> None:
    f = read_slot(check, text)
    assert f.passed is passes, f"{name}: {f}"
