"""Hard families: produce or edit a Word memo, a workbook or a deck that states computed figures.

Checks look at the produced files: a file at the requested path, numbers in the text of the
files the trial created or changed (so figures already in an untouched file never count), cells of
a new sheet, a marker heading in an edited document.
"""

from __future__ import annotations

from typing import Any

from kwrl.synth.cast import Project
from kwrl.synth.families.base import (
    Criterion,
    TaskDraft,
    add_slide,
    add_tab,
    append_doc,
    change_word,
    create_deck,
    create_doc,
    create_sheet,
    number_form,
    number_slot,
    read_call,
    slot_prompt,
    table_file,
    with_others,
)
from kwrl.synth.families.lookup import value_text
from kwrl.synth.families.metrics import metrics
from kwrl.synth.render import TABLE_HOMES
from kwrl.synth.rng import Rng
from kwrl.synth.world import World
from kwrl.tasks.models import DocContainsCheck, FileExistsCheck, XlsxCellCheck

OUT_DIR = "/Outputs"


def memo_doc(w: World, p: Project, rng: Rng) -> TaskDraft:
    m = rng.pick(metrics(w, p))
    path = f"{OUT_DIR}/{p.short} - {m.key.replace('_', ' ').title()} Memo.docx"
    prompt = (
        f"Write a short Word memo for {p.lead.name} at {path} on {p.code}: state the {m.label} "
        f"(to two decimals), the inputs it is computed from, and where each input comes from. "
        f"Use the current files only."
    ) + slot_prompt(m.prompt_lines(), "Give each value its own paragraph,")
    where: dict[str, Any] = {"place": "file", "path": path.lstrip("/")}
    checks = with_others([m.slot(**where), *m.input_slots(**where)])
    paras = [f"The {m.label} for {p.code}, from the current files:", f"{m.label}: {m.text}"]
    paras += [f"{label}: {v:,.1f} (source: {where_})" for label, v, where_ in m.inputs]
    crits = [
        Criterion(f"The memo states the {m.label} as {m.text}", checks[0]),
        Criterion(f"A Word memo exists at {path}", FileExistsCheck(path=path.lstrip("/"))),
    ]
    crits += [
        Criterion(f"The memo quotes {label}: {v:,.1f}", check)
        for (label, v, _), check in zip(m.inputs, checks[1:], strict=True)
    ]
    calls = [*m.calls, create_doc(path, f"{p.code}: {m.label}", paras)]
    return TaskDraft("memo_doc", "hard", "make_new_doc", prompt, crits, calls,
                     f"Wrote {path}: the {m.label} is {m.text}.", outputs=[path])  # fmt: skip


def summary_sheet(w: World, p: Project, rng: Rng) -> TaskDraft:
    ms = rng.sample(metrics(w, p), 2)
    path = f"{OUT_DIR}/{p.short} Metrics.xlsx"
    rows: list[list[Any]] = [["Metric", "Value"]] + [[m.label, round(m.value, 2)] for m in ms]
    prompt = (
        f'Create a workbook {path} with one sheet named "Summary": A1 "Metric", B1 "Value"; row 2 the '
        f"{ms[0].label} and row 3 the {ms[1].label} for {p.code}, labels in column A and values in column B "
        f"as plain numbers rounded to two decimals ({'percent values like 12.34' if '%' in (ms[0].unit, ms[1].unit) else 'multiples like 7.25'})."
    )
    crits = [
        Criterion(
            f"Summary!B2 holds the {ms[0].label}: {ms[0].value:.2f}",
            XlsxCellCheck(
                path=path.lstrip("/"),
                sheet="Summary",
                cell="B2",
                value=round(ms[0].value, 2),
                rel_tol=0.005,
                decimals=2,
            ),
        ),
        Criterion(
            f"Summary!B3 holds the {ms[1].label}: {ms[1].value:.2f}",
            XlsxCellCheck(
                path=path.lstrip("/"),
                sheet="Summary",
                cell="B3",
                value=round(ms[1].value, 2),
                rel_tol=0.005,
                decimals=2,
            ),
        ),
        Criterion(f"The workbook exists at {path}", FileExistsCheck(path=path.lstrip("/"))),
        Criterion(
            'Summary!A1 reads "Metric"',
            XlsxCellCheck(path=path.lstrip("/"), sheet="Summary", cell="A1", value="Metric"),
        ),
    ]
    calls = [c for m in ms for c in m.calls]
    calls.append(create_sheet(path, "Summary", rows))
    return TaskDraft("summary_sheet", "hard", "make_new_sheet", prompt, crits, calls,
                     f"Created {path} with {ms[0].label} {ms[0].text} and {ms[1].label} {ms[1].text}.", outputs=[path])  # fmt: skip


def edit_sheet(w: World, p: Project, rng: Rng) -> TaskDraft:
    m = rng.pick(metrics(w, p))
    path = table_file(w, p)
    prompt = (
        f'In the current {p.code} workbook ({path}), add a tab named "Checks" with the label '
        f'"{m.label}" in A1 and the value in B1 as a plain number rounded to two decimals.'
    )
    rows: list[list[Any]] = [[m.label, round(m.value, 2)]]
    crits = [
        Criterion(
            f"Checks!B1 of {path} holds {m.value:.2f}",
            XlsxCellCheck(
                path=path.lstrip("/"),
                sheet="Checks",
                cell="B1",
                value=round(m.value, 2),
                rel_tol=0.005,
                decimals=2,
            ),
        ),
        Criterion(
            f'Checks!A1 labels the figure "{m.label}"',
            XlsxCellCheck(path=path.lstrip("/"), sheet="Checks", cell="A1", value=m.label),
        ),
    ]
    return TaskDraft("edit_sheet", "medium", "edit_existing_sheet", prompt, crits, [*m.calls, *add_tab(path, "Checks", rows)],
                     f"Added tab Checks to {path}: {m.label} = {m.value:.2f}.", outputs=[path])  # fmt: skip


DOC_ROLE = {"Investment Banking": "memo", "Law": "advice", "Management Consulting": "proposal"}


def edit_doc(w: World, p: Project, rng: Rng) -> TaskDraft:
    m = rng.pick(metrics(w, p))
    path = p.files[DOC_ROLE[w.domain]]
    prompt = (
        f'Add at the end of {path} a paragraph "Analyst update" followed by paragraphs stating the '
        f"{m.label} for {p.code} (two decimals) and its inputs."
    ) + slot_prompt(m.prompt_lines(), "Write them as their own paragraphs,")
    where: dict[str, Any] = {"place": "file", "path": path.lstrip("/")}
    checks = with_others([m.slot(**where), *m.input_slots(**where)])
    paras = ["Analyst update", f"{m.label}: {m.text}"] + [
        f"{label}: {v:,.1f}" for label, v, _ in m.inputs
    ]
    crits = [
        Criterion(f"The document states the {m.label} as {m.text}", checks[0]),
        Criterion(
            'The new paragraphs start with "Analyst update"',
            DocContainsCheck(path=path.lstrip("/"), all_of=["Analyst update"], first=True),
        ),
    ]
    calls = [*m.calls, read_call(path)]
    calls.append(append_doc(path, paras))
    return TaskDraft("edit_doc", "hard", "edit_existing_doc", prompt, crits, calls,
                     f"Added to {path}: {m.label}: {m.text}", outputs=[path])  # fmt: skip


def new_deck(w: World, p: Project, rng: Rng) -> TaskDraft:
    row = next(iter(p.table.rows))
    unit = p.table.units[row]
    path = f"{OUT_DIR}/{p.short} Update.pptx"
    last, prev = p.table.periods[-1], p.table.periods[-2]
    vl, vp = p.table.get(row, last), p.table.get(row, prev)
    word, change = change_word((vl / vp - 1) * 100)
    lp, ll, lc = f"{row} {prev}", f"{row} {last}", f"{row} {word} {prev} to {last}"
    prompt = (
        f'Make a short deck at {path} for {p.code}: a title slide "{p.code} update" and one slide '
        f"stating the {row} for {prev} and {last} from the current workbook and the percentage {word} between them."
    ) + slot_prompt(
        [(lp, number_form(unit)), (ll, number_form(unit)), (lc, "percentage, two decimals")],
        "In the slide's text (not its speaker notes), write",
    )
    bullets = [
        f"{lp}: {value_text(vp, unit)}",
        f"{ll}: {value_text(vl, unit)}",
        f"{lc}: {change:.2f}%",
    ]
    where: dict[str, Any] = {"place": "file", "path": path.lstrip("/")}
    sc, sl, sp = with_others([
        number_slot(lc, change, "%", form="percentage, two decimals", **where),
        number_slot(ll, vl, unit, **where),
        number_slot(lp, vp, unit, **where),
    ])  # fmt: skip
    crits = [
        Criterion(f"The deck states the {prev} to {last} {word} in {row} as {change:.2f}%", sc),
        Criterion(f"The deck states the {last} {row} of {value_text(vl, unit)}", sl),
        Criterion(f"The deck states the {prev} {row} of {value_text(vp, unit)}", sp),
        Criterion(
            f'A deck exists at {path} titled "{p.code} update"',
            DocContainsCheck(path=path.lstrip("/"), all_of=[f"{p.code} update"]),
        ),
    ]
    calls = [
        read_call(table_file(w, p)),
        create_deck(
            path,
            f"{p.code} update",
            [{"layout": "title_and_content", "title": f"{row}", "bullets": bullets}],
        ),
    ]
    return TaskDraft("new_deck", "hard", "make_new_slide_deck", prompt, crits, calls,
                     f"Created {path}: {row} {prev} {value_text(vp, unit)}, {last} {value_text(vl, unit)}, {word} {change:.2f}%.", outputs=[path])  # fmt: skip


def edit_deck(w: World, p: Project, rng: Rng) -> TaskDraft:
    m = rng.pick(metrics(w, p))
    path = p.files[TABLE_HOMES[w.domain][1]]
    prompt = (
        f'Add a slide at the end of {path} titled "Key metric" that states the {m.label} for {p.code} '
        f"(two decimals) and its inputs."
    ) + slot_prompt(m.prompt_lines(), "In the slide's text (not its speaker notes), write")
    bullets = [f"{m.label}: {m.text}"] + [f"{label}: {v:,.1f}" for label, v, _ in m.inputs]
    where: dict[str, Any] = {"place": "file", "path": path.lstrip("/")}
    checks = with_others([m.slot(**where), *m.input_slots(**where)])
    crits = [
        Criterion(f"The new slide states the {m.label} as {m.text}", checks[0]),
        Criterion(
            'The deck has a slide titled "Key metric"',
            DocContainsCheck(path=path.lstrip("/"), all_of=["Key metric"]),
        ),
    ]
    crits += [
        Criterion(f"The slide quotes {label}: {v:,.1f}", check)
        for (label, v, _), check in zip(m.inputs[:1], checks[1:2], strict=True)
    ]
    return TaskDraft("edit_deck", "hard", "edit_existing_slide_deck", prompt, crits,
                     [*m.calls, add_slide(path, 4, "Key metric", bullets)], f"Added a Key metric slide to {path}: {m.text}.", outputs=[path])  # fmt: skip
