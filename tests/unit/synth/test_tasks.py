"""Task plans: rubric shape, machine checks everywhere, tier/output mix, unique prompts at scale."""

from __future__ import annotations

from collections import Counter

from kwrl.synth.render import plan_files
from kwrl.synth.tasks import plan_tasks
from kwrl.synth.world import plan_world
from kwrl.tasks.models import DOMAINS


def planned(n_worlds: int, n_tasks: int):
    for i in range(n_worlds):
        w = plan_world(5, i, DOMAINS[i % 3])
        plan_files(w)
        yield w, plan_tasks(w, n_tasks)


def test_no_prompt_repeats_in_a_100_world_dataset() -> None:
    prompts = [t.draft.prompt for _, ts in planned(100, 20) for t in ts]
    assert len(prompts) == 2000
    dup = [p for p, n in Counter(prompts).items() if n > 1]
    assert not dup, dup[:3]


def test_rubrics_have_1_to_10_checked_criteria_and_a_primary_first() -> None:
    tiers: Counter[str] = Counter()
    outputs: Counter[str | None] = Counter()
    for w, tasks in planned(6, 20):
        assert len(tasks) == 20
        assert len({t.task_id for t in tasks}) == 20
        for t in tasks:
            vs = t.verifiers(w.world_id)
            assert 1 <= len(vs) <= 10
            assert vs[0].verifier_values.is_primary_objective
            assert not any(v.verifier_values.is_primary_objective for v in vs[1:])
            assert all(v.verifier_values.kwrl_check is not None for v in vs)
            assert t.draft.calls, t.slug
            assert t.draft.answer
            tiers[t.draft.difficulty] += 1
            outputs[t.draft.expected_output] += 1
    assert set(tiers) == {"easy", "medium", "hard"}
    assert {"message_in_console", "make_new_doc", "make_new_sheet", "make_new_slide_deck",
            "edit_existing_doc", "edit_existing_sheet", "edit_existing_slide_deck", None} <= set(outputs)  # fmt: skip


def test_easy_tasks_need_at_most_two_calls_and_hard_ones_write_or_act() -> None:
    for _, tasks in planned(3, 20):
        for t in tasks:
            if t.draft.difficulty == "easy":
                assert len(t.draft.calls) <= 2
            if t.draft.difficulty == "hard":
                acts = any(
                    not c.tool.split("_", 1)[1].startswith(("read", "list", "search", "get"))
                    for c in t.draft.calls
                )
                assert acts or len(t.draft.calls) >= 2, t.slug


def test_law_worlds_review_clauses_against_the_playbook() -> None:
    w = plan_world(5, 1, "Law")
    plan_files(w)
    from kwrl.synth.families.analysis import clause_review
    from kwrl.synth.rng import Rng

    d = clause_review(w, w.projects[0], Rng("t"))
    assert d is not None
    bad = [c.name for c in w.projects[0].clauses if not c.compliant]
    assert bad and all(b in d.answer for b in bad)


def test_a_number_slot_asks_the_decimals_its_check_holds_it_to() -> None:
    """Each number slot's `decimals` is what the instruction's form for it names (`<figure in $
    millions, one decimal>` -> 1, `<percentage>` -> none), and each number cell's is the two
    decimals its instruction asks: a coarser figure that changes the value then fails."""
    import re

    from kwrl.synth.families.base import form_decimals
    from kwrl.tasks.models import SlotCheck, XlsxCellCheck

    seen: Counter[int | None] = Counter()
    for w, tasks in planned(6, 20):
        for t in tasks:
            for v in t.verifiers(w.world_id):
                c = v.verifier_values.kwrl_check
                if isinstance(c, SlotCheck) and c.type == "number":
                    forms = re.findall(rf"`{re.escape(c.label)}: <([^>]*)>`", t.draft.prompt)
                    assert forms, (t.slug, c.label)
                    assert c.decimals == form_decimals(forms[0]), (t.slug, c.label, forms[0])
                    seen[c.decimals] += 1
                elif isinstance(c, XlsxCellCheck) and isinstance(c.value, float):
                    assert c.decimals == 2 and "two decimals" in t.draft.prompt, t.slug
                    seen[c.decimals] += 1
    assert {None, 1, 2} <= set(seen), seen
