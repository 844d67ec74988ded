"""Pick task families for a world and turn drafts into tasks with ids, slugs and a rubric.

Selection is a seeded rotation: families in a shuffled order, projects in turn, skipping a family
that does not apply (e.g. clause review outside Law) or a prompt already used, so a world's tasks
mix tiers, output types and apps. Prompts repeat neither within a world nor (through the world's
code names, unique per dataset) across worlds.
"""

from __future__ import annotations

from dataclasses import dataclass

from kwrl.synth.families import actions, analysis, lookup, outputs
from kwrl.synth.families.base import Family, TaskDraft
from kwrl.synth.rng import Rng, task_id
from kwrl.synth.world import World
from kwrl.tasks.models import Verifier, VerifierValues, expected_file_type_for

FAMILIES: dict[str, Family] = {
    "table_lookup": lookup.table_lookup,
    "file_fact_lookup": lookup.file_fact_lookup,
    "mail_fact_lookup": lookup.mail_fact_lookup,
    "chat_fact_lookup": lookup.chat_fact_lookup,
    "calendar_lookup": lookup.calendar_lookup,
    "chat_post": lookup.chat_post,
    "compute": analysis.compute,
    "reconcile_deck": analysis.reconcile_deck,
    "clause_review": analysis.clause_review,
    "reply_figure": actions.reply_figure,
    "schedule": actions.schedule,
    "brief_team": actions.brief_team,
    "memo_doc": outputs.memo_doc,
    "summary_sheet": outputs.summary_sheet,
    "edit_sheet": outputs.edit_sheet,
    "edit_doc": outputs.edit_doc,
    "new_deck": outputs.new_deck,
    "edit_deck": outputs.edit_deck,
}
"""Task families by name: each a `Family` (`families/base.py`), `(world, project, rng) -> TaskDraft
| None`.

To add one: the function in `families/<group>.py` (prompt, criteria with machine checks, the
first the primary objective, gold calls and answer, overlay) and its name here. Tests:
tests/integration/test_grading_gaming.py (its attacks score 0, gold 1.0),
tests/integration/test_synth_oracle.py, tests/unit/synth/test_tasks.py. docs/extending.md
("A task family")."""

DOMAIN_ABBR = {"Investment Banking": "ib", "Law": "law", "Management Consulting": "mc"}


@dataclass
class Task:
    task_id: str
    slug: str
    name: str
    draft: TaskDraft

    def verifiers(self, world_id: str) -> list[Verifier]:
        ftype = expected_file_type_for(self.draft.expected_output)
        out = []
        for i, c in enumerate(self.draft.criteria):
            vals = VerifierValues(
                criteria=c.text,
                is_primary_objective=i == 0,
                expected_file_type=ftype,
                expected_output_files=list(self.draft.outputs) or None,
                kwrl_check=c.check,
            )
            out.append(Verifier(verifier_id=f"{self.task_id}-c{i + 1}", world_id=world_id, task_id=self.task_id,
                                verifier_values=vals, verifier_index=i))  # fmt: skip
        return out


def plan_tasks(w: World, n: int) -> list[Task]:
    rng = Rng("tasks", w.seed, w.index)
    names = list(FAMILIES)
    rng.shuffle(names)
    tasks: list[Task] = []
    prompts: set[str] = set()
    k = 0
    attempts = 0
    while len(tasks) < n and attempts < n * 20:
        fam = names[attempts % len(names)]
        proj = w.projects[(attempts // len(names) + attempts) % len(w.projects)]
        attempts += 1
        draft = FAMILIES[fam](w, proj, rng.child(fam, attempts))
        if draft is None or draft.prompt in prompts:
            continue
        prompts.add(draft.prompt)
        tid = task_id(w.world_id, k)
        slug = f"{DOMAIN_ABBR[w.domain]}-w{w.index:04d}-{k:03d}-{fam.replace('_', '-')}"
        name = f"{proj.code}: {fam.replace('_', ' ')}"
        tasks.append(Task(tid, slug, name, draft))
        k += 1
    return tasks
