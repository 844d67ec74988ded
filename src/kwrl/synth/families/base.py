"""What a task draft holds, and helpers shared by the families.

A draft is everything a task needs before it has ids: prompt, rubric (criteria with machine
checks, the first the primary objective), the gold tool calls and final answer, and any overlay
files. Gold calls name tools as the gateway exposes them (`<server>_<tool>`, docs/contracts.md) with the
argument names of the app modules in `kwrl.worlds.apps`; `kwrl.synth.gold` renders them as
solution/gold_calls.json and solution/solve.sh.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from kwrl.synth.cast import Project
from kwrl.synth.render import FACT_HOME, TABLE_HOMES
from kwrl.synth.rng import Rng
from kwrl.synth.world import World
from kwrl.tasks.models import MachineCheck, SlotCheck

Difficulty = Literal["easy", "medium", "hard"]


@dataclass
class Criterion:
    text: str
    check: MachineCheck | None


@dataclass
class Call:
    tool: str
    args: dict[str, Any]


@dataclass
class TaskDraft:
    family: str
    difficulty: Difficulty
    expected_output: str | None
    prompt: str
    criteria: list[Criterion]
    calls: list[Call]
    answer: str
    """The gold final answer (written to /logs/agent/final_answer.txt by solve.sh)."""
    overlay: dict[str, bytes] = field(default_factory=dict)
    """Task files by path under the overlay root ('filesystem/...', '.apps_data/...')."""
    input_files: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    """Model-facing paths of files the gold solution creates or edits."""


Family = Callable[[World, Project, Rng], TaskDraft | None]


# --------------------------------------------------------------------------- tool calls


def read_call(path: str) -> Call:
    """The one read tool for a file of the world, by extension."""
    if path.endswith(".xlsx"):
        return Call("excel_read_tab", {"file_path": path, "tab_index": 0})  # Inputs, the first tab
    if path.endswith(".docx"):
        return Call("word_read_document_content", {"file_path": path})
    if path.endswith(".pdf"):
        return Call("pdfs_read_pdf_pages", {"file_path": path})
    if path.endswith(".pptx"):
        return Call("powerpoint_read_completedeck", {"file_path": path})
    return Call("filesystem_read_text_file", {"file_path": path})


def read_tab(path: str, tab_index: int) -> Call:
    return Call("excel_read_tab", {"file_path": path, "tab_index": tab_index})


def search_files(pattern: str) -> Call:
    return Call("filesystem_search_files", {"pattern": pattern})


# --------------------------------------------------------------------------- facts


def table_file(w: World, p: Project) -> str:
    return p.files[TABLE_HOMES[w.domain][0]]


def fact_file(w: World, p: Project, key: str) -> str | None:
    role = FACT_HOME[w.domain][key]
    return p.files.get(role)


def n1(v: float) -> str:
    return f"{v:,.1f}"


def n2(v: float) -> str:
    return f"{v:,.2f}"


def cagr(a: float, b: float, years: int) -> float:
    return (math.pow(b / a, 1 / years) - 1) * 100


UNIT_SCALE = {"$m": 1e6, "m": 1e6, "$bn": 1e9, "$k": 1e3, "%": 0.01}
"""A figure's unit (`kwrl.synth.cast.Fact.unit`, table units) -> its number check's `scale`."""


def label_unit(label: str) -> str:
    """The unit a metric input's label ends with: 'Net debt ($m)' -> '$m' ('' without one)."""
    m = re.search(r"\(([^()]+)\)\s*$", label)
    return m.group(1) if m else ""


def shape_pattern(text: str) -> str | None:
    """A regex for strings shaped like `text` (a case number 2025-CV-3980 -> any \\d+-[a-z]+-\\d+):
    the rivals of an identifier answer. None for a text without digits."""
    if not any(ch.isdigit() for ch in text):
        return None
    out = []
    for m in re.finditer(r"\d+|[A-Za-z]+|.", text):
        run = m.group(0)
        if run.isdigit():
            out.append(r"\d+")
        elif run.isalpha():
            out.append(r"[a-z]+")
        else:
            out.append(re.escape(run))
    return r"(?<![\w-])" + "".join(out) + r"(?![\w-])"


def others(chosen: str, pool: list[str]) -> list[str]:
    """The distinct entries of `pool` other than `chosen`: the rivals of a text answer."""
    return sorted({x for x in pool if x.casefold() != chosen.casefold()})


def change_word(change_pct: float) -> tuple[str, float]:
    """('increase', x) or ('decrease', |x|): a fall is asked and checked as a positive decrease,
    since answers say "down 12.3%" as often as "-12.3%" and a number check cannot read both."""
    return ("increase", change_pct) if change_pct >= 0 else ("decrease", -change_pct)


def unit_word(unit: str) -> str:
    return {"$m": "$ millions", "$k": "$ thousands", "hours": "hours", "$bn": "$ billions"}.get(
        unit, unit
    )


def kind_word(w: World) -> str:
    return {"Investment Banking": "deal", "Law": "matter", "Management Consulting": "engagement"}[
        w.domain
    ]


# --------------------------------------------------------------------------- write calls
# Argument shapes are Archipelago's (kwrl.worlds.apps.contract), as the agent sends them: an
# `input`/`request` envelope's fields flat (the agent and `kwrl world call` re-wrap them); keep
# them here so a contract change is a one-place fix.


def split_path(path: str) -> tuple[str, str]:
    d, _, name = path.rpartition("/")
    return d or "/", name


def create_doc(path: str, title: str, paragraphs: list[str]) -> Call:
    d, name = split_path(path)
    content = [{"type": "heading", "text": title, "level": 1}] + [
        {"type": "paragraph", "text": t} for t in paragraphs
    ]
    return Call("word_create_document", {"directory": d, "file_name": name, "content": content})


def append_doc(path: str, paragraphs: list[str]) -> Call:
    """New paragraphs at the end of a document's body (one per line)."""
    return Call(
        "word_add_content_text",
        {"file_path": path, "identifier": "body", "text": "\n".join(paragraphs), "position": "end"},
    )


def create_sheet(path: str, sheet: str, rows: list[list[Any]]) -> Call:
    d, name = split_path(path)
    return Call(
        "excel_create_spreadsheet",
        {"directory": d, "file_name": name, "sheets": [{"name": sheet, "rows": rows}]},
    )


def add_tab(path: str, tab: str, rows: list[list[Any]]) -> list[Call]:
    return [
        Call("excel_add_tab", {"file_path": path, "tab_name": tab, "sheet_data": {"rows": rows}})
    ]


def create_deck(path: str, title: str, slides: list[dict[str, Any]]) -> Call:
    d, name = split_path(path)
    return Call(
        "powerpoint_create_deck",
        {
            "directory": d,
            "file_name": name,
            "slides": [
                {"layout": "title", "title": title},
                *(
                    {**s, "bullets": {"items": s["bullets"]}} if "bullets" in s else s
                    for s in slides
                ),
            ],
        },
    )


def add_slide(path: str, index: int, title: str, bullets: list[str]) -> Call:
    return Call(
        "powerpoint_add_slide",
        {
            "file_path": path,
            "index": index,
            "layout": "title_and_content",
            "title": title,
            "bullets": bullets,
        },
    )


# --------------------------------------------------------------------------- answer slots
# The answer contract of generated tasks (docs/contracts.md): every value a criterion checks sits
# in a slot line `<Label>: <value>` that the instruction names, in a place (the final answer, a
# mail, a channel, a file); the check reads the slot (`kwrl.grading.slots`).

_FORMS = {
    "$m": "figure in $ millions, one decimal", "$bn": "figure in $ billions, two decimals",
    "$k": "figure in $ thousands, one decimal", "$": "dollar amount", "%": "percentage",
    "m": "number in millions, one decimal", "hours": "hours, a whole number", "x": "multiple",
}  # fmt: skip


def number_form(unit: str) -> str:
    """How the instruction asks for a figure of `unit` (the form of its slot)."""
    return _FORMS.get(unit, "number")


_FORM_DECIMALS = {"a whole number": 0, "one decimal": 1, "two decimals": 2}


def form_decimals(form: str) -> int | None:
    """The decimals a slot's form asks for ("figure in $ millions, one decimal" -> 1), None where
    it names none ("percentage")."""
    got = [d for words, d in _FORM_DECIMALS.items() if re.search(rf"\b{words}\b", form)]
    return got[0] if got else None


def number_slot(
    label: str, value: float, unit: str, *, pct: bool = False, rivals: list[float] | None = None,
    form: str | None = None, **kw: Any,
) -> SlotCheck:  # fmt: skip
    """A figure in its slot: 0.5% relative (a percentage also 0.05 points), at `unit`'s scale, at
    the decimals its form asks for (`form`, default `number_form(unit)`)."""
    pct = pct or unit == "%"
    return SlotCheck(
        label=label, type="number", value=round(value, 6), rel_tol=0.005,
        abs_tol=0.05 if pct else 0.0, scale=UNIT_SCALE.get("%" if pct else unit),
        decimals=form_decimals(form if form is not None else number_form(unit)),
        rivals=[f"{r:.6g}" for r in rivals or []], **kw,
    )  # fmt: skip


def slot_prompt(lines: list[tuple[str, str]], where: str = "End your answer with") -> str:
    """The instruction's closing words naming each slot line: `<Label>: <form>`."""
    if len(lines) == 1:
        label, form = lines[0]
        return f" {where} the line `{label}: <{form}>`."
    shown = ", ".join(f"`{label}: <{form}>`" for label, form in lines)
    return f" {where} one line per value: {shown}."


def with_others(checks: list[SlotCheck]) -> list[SlotCheck]:
    """Each slot of one place told the place's other labels (a line carrying two fails)."""
    labels = [c.label for c in checks]
    return [c.model_copy(update={"others": [x for x in labels if x != c.label]}) for c in checks]
