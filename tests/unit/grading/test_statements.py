"""Reading a statement as a judge does: what hedges, negates or lists candidates fails, the same
answer in other words passes, and what only a reader can weigh is left undecided."""

from __future__ import annotations

import re

import pytest

from kwrl.grading.statements import (
    Finding,
    fold,
    numbers_in,
    rivals_failure,
    text_stated,
    value_asserted,
    word_re,
)

REVENUE = 283.0  # $m, the criterion "States that FY2025 revenue was $283.0m"
FIGURES = [251.2, 251.2e6]  # the task's other criterion: FY2024 revenue, $251.2m


def revenue(text: str, max_candidates: int = 0) -> Finding:
    return value_asserted(text, REVENUE, 0.005, 0.0, max_candidates, scale=1e6, allowed=FIGURES)


GUESSES = " ".join(f"Revenue was ${x:.1f}m." for x in range(250, 380, 10)) + " It was $283.0m."
TABLE = "| Scenario | Revenue |\n|---|---|\n" + "\n".join(
    f"| {name} | ${x:.1f}m |"
    for name, x in zip("ABCDEFGH", (250, 265, 270, 283, 290, 300, 310, 320), strict=True)
)


@pytest.mark.parametrize(
    "answer",
    [
        GUESSES,  # thirteen guesses in separate sentences
        "FY2025 revenue is not $283.0m.",
        "It isn't 283.0.",
        "$283.0m, though it could also be $310.0m.",
        TABLE,  # a markdown table of eight candidates
        "Revenue: 250.0, 283.0, 310.0",
        "Revenue was either $283.0m or $290.0m.",
        "Revenue was $283.0m/$295.0m.",
        "Revenue was between 283.0 and 290.",
        "Revenue was $283.0k.",  # another scale is another value
    ],
)
def test_answers_that_hedge_negate_or_list_fail(answer: str) -> None:
    f = revenue(answer)
    assert not f.passed and f.decided, f


@pytest.mark.parametrize(
    "answer",
    [
        "$283m",
        "USD 283 million",
        "About $283 million",
        "$283,000,000",
        "$0.283bn",
        "283.0 ($ millions)",
        "Revenue was roughly $283.4m.",  # rounding within the tolerance
        "FY2025 revenue was $283.0m, up from $251.2m in FY2024.",  # the task's other figure
        "Revenue was $283.0m, not $251.2m.",  # an alternative ruled out
        "Not $251.2m but $283.0m.",
        "- 283.0",  # a bullet, not a minus
        "EBITDA / revenue = 141.5 / 283.0 = 50.0%",
    ],
)
def test_the_same_answer_in_other_words_passes(answer: str) -> None:
    assert revenue(answer, max_candidates=1).passed, revenue(answer, 1)
    if "141.5" not in answer:
        assert revenue(answer).passed, revenue(answer)


@pytest.mark.parametrize(
    "answer",
    ["Revenue was possibly $283.0m.", "Is it $283.0m?", "$283.0m is not final."],
)
def test_uncertain_statements_are_left_to_a_reader(answer: str) -> None:
    f = revenue(answer)
    assert not f.passed and not f.decided, f


def test_files_may_discuss_other_values_but_not_hedge_or_tabulate_candidates() -> None:
    memo = "Revenue grew from $210.3m in FY2023 to $283.0m in FY2025; capex was $31.0m."
    assert revenue(memo, max_candidates=30).passed
    assert not revenue(memo).passed  # an answer states one value
    hedged = revenue("$283.0m, though it could also be $310.0m.", max_candidates=30)
    assert not hedged.passed and hedged.decided
    table = revenue(TABLE, max_candidates=30)
    assert not table.passed and not table.decided  # a table of candidates or of figures?


def test_percentages_multiples_and_years() -> None:
    def pct(text: str) -> bool:
        return value_asserted(text, 12.34, 0.005, 0.05, 0, scale=0.01).passed

    assert all(pct(t) for t in ("12.34%", "12.3%", "12.34 percent", "1,234 bps", "0.1234"))
    assert not pct("12.34% or 13.1%") and not pct("12.9%")
    assert value_asserted("The multiple is 9.37x.", 9.37, 0.005, 0.005, 0).passed
    assert not value_asserted("2020 2021 2022 2023 2024 2025", 2024, 0)[0]
    assert value_asserted("Filed on 2026-04-11: 42 claims.", 42, 0.005, 0, 0).passed  # no 4, 11
    assert numbers_in("(1,200) and -3.5 and 2.1bn and Room 12A") == [
        1200.0, -1200.0, -3.5, 2.1, 2.1e9
    ]  # fmt: skip


# --------------------------------------------------------------------------- names, dates, times

PEOPLE = ["Larsen", "Kim", "Novak", "Silva"]
PROVIDERS = ["Datasite", "Ansarada", "Firmex", "iDeals"]


def named(text: str, answer: str, rivals: list[str], pattern: str | None = None) -> Finding:
    t = fold(text)
    if pattern is None:
        spans = [m.span() for m in word_re(answer).finditer(t)]
        found = [answer]
    else:
        spans = [m.span() for m in re.finditer(pattern, t, re.I)]
        found = [t[a:b] for a, b in spans]
    if not spans:
        return Finding(False, "not found")
    return rivals_failure(t, found, rivals, None if pattern is None else RIVAL, 0) or text_stated(
        t, spans
    )


RIVAL = r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{4}\b|\b\d{1,2}[:.]\d{2}\b"


def test_people_and_providers() -> None:
    assert named("Anna Weber sent it.", "Weber", PEOPLE).passed
    assert named("Weber sent it, not Larsen.", "Weber", PEOPLE).passed
    for bad in ("Weber, possibly Larsen", "Weber or Kim", "It was not Weber.", "Weber (cc Kim)."):
        f = named(bad, "Weber", PEOPLE)
        assert not f.passed and f.decided, (bad, f)
    thirteen = " or ".join(["Datasite", "Intralinks", "Ansarada", "Firmex", "Box", "Egnyte",
                            "iDeals", "ShareFile", "Citrix", "Drooms", "DealRoom", "Dropbox", "Venue"])  # fmt: skip
    assert not named(thirteen, "Intralinks", PROVIDERS).passed
    unknown = named("Intralinks or Box", "Intralinks", PROVIDERS)
    assert not unknown.passed and not unknown.decided  # an unknown rival: a reader's call
    assert not named("Maybe Intralinks.", "Intralinks", PROVIDERS).decided


def test_dates_and_times_hedged_with_other_spellings_fail() -> None:
    day = r"2026-04-11|11/04/2026|april 11"
    assert named("The hearing is on April 11, 2026 (2026-04-11).", "", [], day).passed
    assert named("It is on 11/04/2026 (not 18/04/2026).", "", [], day).passed
    assert not named("2026-04-11, possibly moved to 18/04/2026", "", [], day).passed
    assert not named("14:00, possibly 16:30", "", [], r"14:00").passed
    assert not named("Restated: the task asked about 2026-04-18.", "", [], day).passed


def test_a_rival_the_task_names_is_a_restated_input() -> None:
    text = "I booked 10:00; the window was 09:00 to 17:00."
    spans = [m.span() for m in re.finditer("10:00", text)]
    assert rivals_failure(text, ["10:00"], [], RIVAL, 0) is not None
    told = "Book it between 09:00 and 17:00."
    assert rivals_failure(text, ["10:00"], [], RIVAL, 0, told) is None
    assert text_stated(text, spans).passed


def test_a_figure_rounded_to_the_tolerance_is_within_it() -> None:
    """Gold "1.2%" of 1.25 (Python rounds half to even) against abs_tol 0.05: the edge counts,
    though 1.25 - 1.2 is 0.0500000000000000444 in floating point (seed 0's
    ib-w0000-008-file-fact-lookup failed its own oracle on this)."""
    from kwrl.grading.statements import close

    assert close(1.2, 1.25, 0.0, 0.05) and close(1.3, 1.25, 0.0, 0.05)
    assert not close(1.19, 1.25, 0.0, 0.05) and not close(1.31, 1.25, 0.0, 0.05)
    assert close(283.0, 283.0, 0.0) and not close(283.0001, 283.0, 0.0)
