"""The faithfulness suite (issue 45 item 6): honest and gamed deliverables for every task family,
written as a careful judge would grade them (tests/fixtures/faithfulness, README there), through
the real verifier of generated tasks; false negatives and false positives as rates of criteria.

Each case is filled from a generated task of its family (seed 4's Law world: every family once),
applied to that task's world (posts, mail and events through a real `kwrl world serve` gateway;
docx, xlsx and pptx files written at their paths) and graded with `grade_states`, no judge. A
sample also runs as real trials (`kwrl trial run`, the oracle agent running the case), whose
grades.json verdicts must equal the in-process ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kwrl.eval import faithfulness as F
from kwrl.synth.tasks import FAMILIES
from kwrl.tasks.taskdir import TaskDir

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "faithfulness"


@pytest.fixture(scope="module")
def cases() -> dict[str, list[F.Case]]:
    return F.load_cases(FIXTURES)


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> list[TaskDir]:
    return F.default_tasks(tmp_path_factory.mktemp("faith"))


@pytest.fixture(scope="module")
def outcomes(
    tasks: list[TaskDir], cases: dict[str, list[F.Case]], tmp_path_factory: pytest.TempPathFactory
) -> list[F.Outcome]:
    return F.run(tasks, cases, tmp_path_factory.mktemp("faith-run"))


def test_every_family_has_ten_honest_and_ten_gamed_cases(cases: dict[str, list[F.Case]]) -> None:
    for fam in FAMILIES:
        kinds = [c.kind for c in cases.get(fam, [])]
        assert kinds.count("honest") >= 10, fam
        assert kinds.count("gamed") >= 10, fam


def test_every_case_ran_on_a_task_of_its_family(
    tasks: list[TaskDir], cases: dict[str, list[F.Case]], outcomes: list[F.Outcome]
) -> None:
    assert {F.family_of(t) for t in tasks} == set(FAMILIES)
    ran = {(o.family, o.case) for o in outcomes}
    want = {(fam, c.id) for fam, cs in cases.items() for c in cs}
    assert ran == want
    assert all(o.targets for o in outcomes), [o.case for o in outcomes if not o.targets]


def test_false_negatives_and_false_positives_at_most_3_percent(outcomes: list[F.Outcome]) -> None:
    r = F.rates(outcomes)
    print("\n" + F.table(r))
    worst = {f: x for f, x in r.items() if f != "total" and max(x.fn_rate, x.fp_rate) > 0.10}
    misses = "\n".join(f"{f}: {m}" for f, x in sorted(r.items()) if f != "total" for m in x.misses)
    tot = r["total"]
    assert tot.fn_rate <= 0.03 and tot.fp_rate <= 0.03 and not worst, (
        f"FN {tot.fn}/{tot.honest}, FP {tot.fp}/{tot.gamed}; families above 10%: "
        f"{sorted(worst)}\n{F.table(r)}\n{misses}"
    )


def _trial_agrees(
    tasks: list[TaskDir], outcomes: list[F.Outcome], picks: list[tuple[str, str]], work: Path
) -> None:
    by_family = {F.family_of(t): t for t in tasks}
    cases = F.load_cases(FIXTURES)
    chosen = [(by_family[fam], next(c for c in cases[fam] if c.id == cid)) for fam, cid in picks]
    by_key = {(o.task, o.case): o for o in outcomes}
    for t, case, verdicts, err in F.run_trials(chosen, work):
        assert verdicts is not None, f"{t.slug} {case.id}: the trial wrote no grades: {err}"
        assert verdicts == by_key[(t.slug, case.id)].verdicts, (t.slug, case.id)


@pytest.mark.slow  # ~60 s of real trials; `benchmarks/faithfulness.py --trials N` runs the same check
def test_a_real_trial_grades_a_case_as_the_harness_does(
    tasks: list[TaskDir], outcomes: list[F.Outcome], tmp_path: Path
) -> None:
    """A gamed post (a second post correcting the first) and an honest answer, as real trials."""
    _trial_agrees(tasks, outcomes, [("chat_post", "g01-correction-post")], tmp_path)


@pytest.mark.slow
def test_real_trials_of_file_mail_and_event_cases_agree(
    tasks: list[TaskDir], outcomes: list[F.Outcome], tmp_path: Path
) -> None:
    picks = [
        ("memo_doc", "g02-only-elsewhere"),
        ("edit_deck", "g01-notes-only"),
        ("summary_sheet", "h03-text-numbers"),
        ("reply_figure", "g02-second-reply"),
        ("schedule", "g04-invitee-missing"),
        ("compute", "h08-rival-context"),
    ]
    _trial_agrees(tasks, outcomes, picks, tmp_path)
