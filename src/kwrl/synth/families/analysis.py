"""Medium families: computations across files, reconciling documents, reviewing clauses.

Prompts name the project, not the files, and warn off stale versions; the rubric checks the
result first (the primary objective) and then the inputs the answer should quote.
"""

from __future__ import annotations

from kwrl.synth.cast import Project
from kwrl.synth.families.base import (
    Criterion,
    TaskDraft,
    n1,
    number_form,
    number_slot,
    others,
    read_call,
    slot_prompt,
    table_file,
    with_others,
)
from kwrl.synth.families.lookup import value_text
from kwrl.synth.families.metrics import metrics
from kwrl.synth.render import TABLE_HOMES, table_rows
from kwrl.synth.rng import Rng
from kwrl.synth.world import World
from kwrl.synth.writers import Slide
from kwrl.synth.writers.office import pptx_bytes
from kwrl.tasks.models import SlotCheck


def compute(w: World, p: Project, rng: Rng) -> TaskDraft:
    m = rng.pick(metrics(w, p))
    unit = "a percentage" if m.unit == "%" else "a multiple (x)"
    prompt = (
        f"For {p.code}, what is the {m.label}? Use the current files only (not archived, old or draft "
        f"versions), give it as {unit} to two decimals, and quote the inputs you used."
    ) + slot_prompt(m.prompt_lines())
    checks = with_others([m.slot(), *m.input_slots()])
    crits = [Criterion(f"States the {m.label} as {m.text}", checks[0])]
    for (label, v, _where), check in zip(m.inputs, checks[1:], strict=True):
        crits.append(Criterion(f"Quotes the input {label}: {n1(v)}", check))
    ins = "\n".join(f"{label}: {n1(v)}" for label, v, _ in m.inputs)
    answer = f"The {m.label} for {p.code}, from the current files:\n{m.label}: {m.text}\n{ins}"
    files = [wh for _, _, wh in m.inputs if wh.startswith("/")]
    return TaskDraft("compute", "medium", "message_in_console", prompt, crits, list(m.calls), answer,
                     input_files=sorted(set(files)))  # fmt: skip


def reconcile_deck(w: World, p: Project, rng: Rng) -> TaskDraft:
    role = TABLE_HOMES[w.domain][1]
    deck = p.files[role]
    model = table_file(w, p)
    row = rng.pick(list(p.table.rows))
    j = rng.randrange(len(p.table.periods))
    period = p.table.periods[j]
    v = p.table.get(row, period)
    unit = p.table.units[row]
    wrong = round(v * rng.pick((1.1, 0.9, 1.15, 0.85)), 0 if unit == "hours" else 1)
    tbl = table_rows(p)
    i = list(p.table.rows).index(row) + 1
    tbl[i][j + 1] = value_text(wrong, unit)
    name = deck.rsplit("/", 1)[-1].replace(".pptx", " (for review).pptx")
    review = deck.rsplit("/", 1)[0] + "/Review/" + name
    slides = [
        Slide("Overview", [f"Client: {p.client.name}", f"Lead: {p.lead.name}"]),
        Slide(p.table.title, table=tbl),
    ]
    overlay = {
        "filesystem" + review: (lambda: pptx_bytes(f"{p.code} (for review)", slides, w.firm.name))
    }
    form = number_form(unit)
    prompt = (
        f"{p.lead.first} asked me to check the review copy {review} against the {p.code} workbook before "
        f"it goes out. One figure in its table does not match the workbook. Which metric and period is it, "
        f"what does the deck show, and what is the correct value?"
    ) + slot_prompt(
        [("Wrong figure", "metric and period"), ("Deck shows", form), ("Correct value", form)]
    )
    correct, which, shown = with_others([
        number_slot("Correct value", v, unit, rivals=[wrong]),
        SlotCheck(label="Wrong figure", type="text", value=[row, period],
                  rivals=others(row, list(p.table.rows)) + others(period, p.table.periods)),
        number_slot("Deck shows", wrong, unit, wrong_value=True),
    ])  # fmt: skip
    crits = [
        Criterion(f"Gives the correct value {value_text(v, unit)} for {row} in {period}", correct),
        Criterion(f"Identifies the {row} figure for {period} as the wrong one", which),
        Criterion(f"States that the deck shows {value_text(wrong, unit)}", shown),
    ]
    answer = (
        f"The review deck's {row} figure for {period} does not match the workbook ({unit}).\n"
        f"Wrong figure: {row} {period}\nDeck shows: {value_text(wrong, unit)}\n"
        f"Correct value: {value_text(v, unit)}"
    )
    return TaskDraft("reconcile_deck", "medium", "message_in_console", prompt, crits,
                     [read_call(review), read_call(model)], answer, overlay=overlay,  # type: ignore[arg-type]
                     input_files=[review, model])  # fmt: skip


def clause_review(w: World, p: Project, rng: Rng) -> TaskDraft | None:
    if w.domain != "Law" or not p.clauses:
        return None
    contract = p.files["contract"]
    bad = [c for c in p.clauses if not c.compliant]
    good = [c for c in p.clauses if c.compliant]
    label = "Deviating clauses"
    prompt = (
        f"Review the executed MSA for {p.code} ({contract}) against the firm's Contract Playbook "
        f"(/Firm/Contract Playbook.pdf). List every clause that deviates from the playbook, with the "
        f"clause number and what the playbook requires."
    ) + slot_prompt([(label, "clause numbers, comma-separated")])
    rivals = [g.number for g in good]
    crits = [
        Criterion(
            "Identifies every deviating clause: " + ", ".join(f"{c.number} {c.name}" for c in bad),
            SlotCheck(label=label, type="text", value=[c.number for c in bad], rivals=rivals),
        )
    ]
    for c in bad:
        crits.append(
            Criterion(
                f"States that clause {c.number} ({c.name}) deviates: playbook requires {c.policy.lower()}",
                SlotCheck(label=label, type="text", value=[c.number], rivals=rivals),
            )
        )
    lines = [
        f'- Clause {c.number} ({c.name}): "{c.text}" The playbook requires: {c.policy}.'
        for c in bad
    ]
    answer = (
        f"Clauses of the {p.code} MSA that deviate from the playbook:\n" + "\n".join(lines)
        + f"\n\n{label}: " + ", ".join(c.number for c in bad)
    )  # fmt: skip
    return TaskDraft("clause_review", "hard" if len(bad) > 2 else "medium", "message_in_console", prompt, crits,
                     [read_call(contract), read_call("/Firm/Contract Playbook.pdf")], answer,
                     input_files=[contract, "/Firm/Contract Playbook.pdf"])  # fmt: skip
