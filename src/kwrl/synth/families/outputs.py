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
    label_unit,
    num,
    read_call,
    table_file,
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
    )
    paras = [f"The {m.label} for {p.code} is {m.text}."]
    paras += [f"{label}: {v:,.1f} (source: {where})." for label, v, where in m.inputs]
    crits = [
        Criterion(
            f"The memo states the {m.label} as {m.text}",
            m.check("files"),
        ),
        Criterion(f"A Word memo exists at {path}", FileExistsCheck(path=path.lstrip("/"))),
    ]
    crits += [
        Criterion(
            f"The memo quotes {label}: {v:,.1f}", num(v, source="files", unit=label_unit(label))
        )
        for label, v, _ in m.inputs
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


def doc_paragraphs(w: World, p: Project) -> int:
    """Index of the last paragraph of the project's main memo (title + heading/paragraph blocks)."""
    return {"Investment Banking": 4, "Law": 3, "Management Consulting": 2}[w.domain]


def edit_doc(w: World, p: Project, rng: Rng) -> TaskDraft:
    m = rng.pick(metrics(w, p))
    path = p.files[DOC_ROLE[w.domain]]
    prompt = (
        f'Add a paragraph at the end of {path} that starts with "Analyst update:" and states the '
        f"{m.label} for {p.code} (two decimals) with its inputs."
    )
    ins = "; ".join(f"{label}: {v:,.1f}" for label, v, _ in m.inputs)
    text = f"Analyst update: the {m.label} is {m.text} ({ins})."
    crits = [
        Criterion(
            f"The document states the {m.label} as {m.text}",
            m.check("files"),
        ),
        Criterion(
            'The new paragraph starts with "Analyst update:"',
            DocContainsCheck(path=path.lstrip("/"), all_of=["Analyst update:"]),
        ),
    ]
    return TaskDraft("edit_doc", "hard", "edit_existing_doc", prompt, crits,
                     [*m.calls, read_call(path), append_doc(path, doc_paragraphs(w, p), text)],
                     f"Added to {path}: {text}", outputs=[path])  # fmt: skip


def new_deck(w: World, p: Project, rng: Rng) -> TaskDraft:
    row = next(iter(p.table.rows))
    unit = p.table.units[row]
    path = f"{OUT_DIR}/{p.short} Update.pptx"
    last, prev = p.table.periods[-1], p.table.periods[-2]
    vl, vp = p.table.get(row, last), p.table.get(row, prev)
    word, change = change_word((vl / vp - 1) * 100)
    prompt = (
        f'Make a short deck at {path} for {p.code}: a title slide "{p.code} update" and one slide '
        f"stating the {row} for {prev} and {last} from the current workbook and the percentage {word} between them."
    )
    bullets = [
        f"{row} {prev}: {value_text(vp, unit)}",
        f"{row} {last}: {value_text(vl, unit)}",
        f"{word.title()}: {change:.2f}%",
    ]
    crits = [
        Criterion(
            f"The deck states the {prev} to {last} {word} in {row} as {change:.2f}%",
            num(change, pct=True, source="files"),
        ),
        Criterion(
            f"The deck states the {last} {row} of {value_text(vl, unit)}",
            num(vl, source="files", unit=unit),
        ),
        Criterion(
            f"The deck states the {prev} {row} of {value_text(vp, unit)}",
            num(vp, source="files", unit=unit),
        ),
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
    )
    bullets = [f"{m.label}: {m.text}"] + [f"{label}: {v:,.1f}" for label, v, _ in m.inputs]
    crits = [
        Criterion(
            f"The new slide states the {m.label} as {m.text}",
            m.check("files"),
        ),
        Criterion(
            'The deck has a slide titled "Key metric"',
            DocContainsCheck(path=path.lstrip("/"), all_of=["Key metric"]),
        ),
    ]
    crits += [
        Criterion(
            f"The slide quotes {label}: {v:,.1f}", num(v, source="files", unit=label_unit(label))
        )
        for label, v, _ in m.inputs[:1]
    ]
    return TaskDraft("edit_deck", "hard", "edit_existing_slide_deck", prompt, crits,
                     [*m.calls, add_slide(path, 4, "Key metric", bullets)], f"Added a Key metric slide to {path}: {m.text}.", outputs=[path])  # fmt: skip
