"""What a task draft holds, and helpers shared by the families.

A draft is everything a task needs before it has ids: prompt, rubric (criteria with machine
checks, the first the primary objective), the gold tool calls and final answer, and any overlay
files. Gold calls name tools as the gateway exposes them (`<server>_<tool>`, DESIGN §4) with the
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
from kwrl.tasks.models import MachineCheck, NumberCheck, Source

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


def num(value: float, *, pct: bool = False, source: Source = "answer") -> NumberCheck:
    """A number check: 0.5% relative, and for percentages also 0.05 points absolute."""
    return NumberCheck(
        value=round(value, 6), rel_tol=0.005, abs_tol=0.05 if pct else 0.0, source=source
    )


DATE_RIVALS = (
    r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}(st|nd|rd|th)?\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
    r"[a-z]*\b|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(st|nd|rd|th)?\b"
)
"""Any date (ISO, '5 March', 'March 5'): rivals of a date answer (checks' `rival_pattern`)."""
TIME_RIVALS = r"\b\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s?(am|pm|a\.m\.|p\.m\.)"
"""Any time of day: rivals of a time answer."""


def shape_pattern(text: str) -> str | None:
    """A regex for strings shaped like `text` (a case number 2025-CV-3980 -> any \\d{4}-[a-z]{2}-\\d{4}):
    the rivals of an identifier answer. None for a text without digits."""
    if not any(ch.isdigit() for ch in text):
        return None
    out = []
    for m in re.finditer(r"\d+|[A-Za-z]+|.", text):
        run = m.group(0)
        if run.isdigit():
            out.append(rf"\d{{{len(run)}}}")
        elif run.isalpha():
            out.append(rf"[a-z]{{{len(run)}}}")
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


def append_doc(path: str, last_paragraph: int, text: str) -> Call:
    return Call(
        "word_add_content_text",
        {
            "file_path": path,
            "identifier": f"body.p.{last_paragraph}",
            "text": text,
            "position": "after",
        },
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
