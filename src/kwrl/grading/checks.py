"""Machine checks: criteria graded by code instead of a judge (`verifier_values.kwrl_check`).

Each check kind of `kwrl.tasks.models.MachineCheck` has one pure-ish function here that takes the
check and the trial's `Evidence` and returns a `CheckResult` (passed, a rationale a person can
audit, and the evidence it looked at). `run_check` dispatches on the check's type through the
`CHECKS` registry. Policy (DESIGN §6): a criterion with a machine check is graded by it; the judge
grades the rest.

Text matching is case-insensitive over whitespace-collapsed text. Numbers are read with thousands
separators, currency signs and magnitude words ("2.1bn", "$1,250k", "15%"), and match within
`max(rel_tol * |value|, abs_tol)`. An `xlsx_cell` check compares the cell's cached value; a formula
cell without a cached value (a workbook written by openpyxl and never recalculated) fails with a
rationale saying so, since kwrl carries no spreadsheet engine.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kwrl.grading.evidence import Evidence, display_path
from kwrl.grading.render import read_xlsx
from kwrl.tasks.models import (
    ChatPostedCheck,
    ContainsCheck,
    DocContainsCheck,
    EventExistsCheck,
    FileExistsCheck,
    MailSentCheck,
    NumberCheck,
    RegexCheck,
    Source,
    XlsxCellCheck,
)


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    rationale: str
    evidence: list[str] = field(default_factory=list)


def norm(text: str) -> str:
    return " ".join(text.casefold().split())


def source_text(ev: Evidence, source: Source) -> tuple[str, list[str]]:
    if source == "answer":
        return ev.answer, ["final answer"]
    files = ev.produced_text()
    seen = [display_path(c.path) for c in ev.file_changes if c.change != "deleted"]
    if source == "files":
        return files, seen
    return ev.answer + "\n\n" + files, ["final answer", *seen]


# --------------------------------------------------------------------------- numbers

_NUM_RE = re.compile(
    r"(?P<neg>[-−(])?\s?[$€£]?\s?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"\s?(?P<unit>%|bn|billion|b\b|mm|million|m\b|k\b|thousand)?",
    re.IGNORECASE,
)
_SCALE = {"%": 0.01, "bn": 1e9, "billion": 1e9, "b": 1e9, "mm": 1e6, "million": 1e6, "m": 1e6,
          "k": 1e3, "thousand": 1e3}  # fmt: skip


def numbers_in(text: str) -> list[float]:
    """Every number in the text, each also with its magnitude word applied ("2.1bn" -> 2.1, 2.1e9)."""
    out: list[float] = []
    for m in _NUM_RE.finditer(text):
        value = float(m["num"].replace(",", ""))
        if m["neg"] == "(":  # accounting negative, or just a parenthesis: keep both readings
            out.append(value)
        if m["neg"]:
            value = -value
        out.append(value)
        unit = (m["unit"] or "").lower()
        if unit in _SCALE:
            out.append(value * _SCALE[unit])
    return out


def close(x: float, value: float, rel_tol: float, abs_tol: float = 0.0) -> bool:
    return math.isclose(x, value, rel_tol=rel_tol, abs_tol=abs_tol)


def check_number(c: NumberCheck, ev: Evidence) -> CheckResult:
    text, seen = source_text(ev, c.source)
    found = numbers_in(text)
    hits = [x for x in found if close(x, c.value, c.rel_tol, c.abs_tol)]
    if hits:
        return CheckResult(True, f"found {hits[0]:g}, within tolerance of {c.value:g}", seen)
    shown = ", ".join(f"{x:g}" for x in found[:20]) or "none"
    return CheckResult(
        False,
        f"no number within tolerance of {c.value:g} in {c.source}; numbers seen: {shown}",
        seen,
    )


# --------------------------------------------------------------------------- text


def check_regex(c: RegexCheck, ev: Evidence) -> CheckResult:
    text, seen = source_text(ev, c.source)
    m = re.search(c.pattern, text, re.IGNORECASE if c.ignore_case else 0)
    if m:
        return CheckResult(True, f"pattern {c.pattern!r} matched {m.group(0)[:200]!r}", seen)
    return CheckResult(False, f"pattern {c.pattern!r} not found in {c.source}", seen)


def _contains(text: str, all_of: list[str], none_of: list[str]) -> tuple[list[str], list[str]]:
    t = norm(text)
    missing = [s for s in all_of if norm(s) not in t]
    present = [s for s in none_of if norm(s) in t]
    return missing, present


def check_contains(c: ContainsCheck, ev: Evidence) -> CheckResult:
    text, seen = source_text(ev, c.source)
    missing, present = _contains(text, c.all_of, c.none_of)
    if not missing and not present:
        return CheckResult(True, f"all of {c.all_of} present, none of {c.none_of}", seen)
    why = []
    if missing:
        why.append(f"missing {missing}")
    if present:
        why.append(f"forbidden {present} present")
    return CheckResult(False, "; ".join(why) + f" in {c.source}", seen)


# --------------------------------------------------------------------------- files


def check_file_exists(c: FileExistsCheck, ev: Evidence) -> CheckResult:
    hits = ev.final.glob(c.path)
    if hits:
        return CheckResult(True, f"{display_path(hits[0])} exists", [display_path(h) for h in hits])
    return CheckResult(False, f"no file matching {c.path!r} in the final state")


def check_doc_contains(c: DocContainsCheck, ev: Evidence) -> CheckResult:
    hits = ev.final.glob(c.path)
    if not hits:
        return CheckResult(False, f"no file matching {c.path!r} in the final state")
    reasons = []
    for rel in hits:
        missing, _ = _contains(ev.text_of(rel), c.all_of, [])
        if not missing:
            return CheckResult(
                True, f"{display_path(rel)} contains all of {c.all_of}", [display_path(rel)]
            )
        reasons.append(f"{display_path(rel)} lacks {missing}")
    return CheckResult(False, "; ".join(reasons), [display_path(h) for h in hits])


def _cell_matches(actual: Any, want: float | str, rel_tol: float) -> bool:
    if actual is None:
        return False
    if isinstance(want, int | float) and not isinstance(want, bool):
        if isinstance(actual, int | float) and not isinstance(actual, bool):
            return close(float(actual), float(want), rel_tol)
        nums = numbers_in(str(actual))
        return len(nums) > 0 and close(nums[0], float(want), rel_tol)
    if isinstance(actual, int | float) and not isinstance(actual, bool):
        nums = numbers_in(str(want))
        return len(nums) > 0 and close(float(actual), nums[0], rel_tol)
    return norm(str(actual)) == norm(str(want))


def check_xlsx_cell(c: XlsxCellCheck, ev: Evidence) -> CheckResult:
    """The cached value decides; the formula explains a miss (or matches an expected '=...')."""
    hits = [h for h in ev.final.glob(c.path) if h.lower().endswith((".xlsx", ".xlsm"))]
    if not hits:
        return CheckResult(False, f"no workbook matching {c.path!r} in the final state")
    reasons = []
    for rel in hits:
        path = ev.final.get(rel)
        assert path is not None
        name = display_path(rel)
        try:
            sheets = read_xlsx(path)
        except Exception as e:  # a corrupt agent-written workbook fails the check, not the grader
            reasons.append(f"{name}: unreadable ({type(e).__name__}: {e})")
            continue
        by_name = {s.name: s for s in sheets if s.grid}
        sheet = by_name.get(c.sheet) if c.sheet else next(iter(by_name.values()), None)
        if sheet is None:
            reasons.append(f"{name}: no sheet {c.sheet!r} (sheets: {[s.name for s in sheets]})")
            continue
        formula, actual = sheet.value(c.cell)
        shown = f"{name}!{sheet.name}!{c.cell} = {actual!r}"
        if _cell_matches(actual, c.value, c.rel_tol):
            return CheckResult(True, shown + f", matches {c.value!r}", [name])
        if isinstance(formula, str) and formula.startswith("="):
            shown += f" (formula {formula})"
            if isinstance(c.value, str) and norm(c.value) == norm(formula):
                return CheckResult(True, shown + " equals the expected formula", [name])
            if actual is None:
                reasons.append(
                    shown + ": formula has no cached value (workbook never recalculated)"
                )
                continue
        reasons.append(shown + f", expected {c.value!r}")
    return CheckResult(False, "; ".join(reasons), [display_path(h) for h in hits])


# --------------------------------------------------------------------------- apps


def check_mail_sent(c: MailSentCheck, ev: Evidence) -> CheckResult:
    want = c.to.casefold()
    to_them = [m for m in ev.mail if any(want in r.casefold() for r in m.to)]
    for m in to_them:
        if (
            not _contains(m.subject, c.subject_contains, [])[0]
            and not _contains(m.body, c.body_contains, [])[0]
        ):
            return CheckResult(
                True, f"mail to {c.to} with subject {m.subject!r} was sent", [f"mail: {m.subject}"]
            )
    if not ev.mail:
        return CheckResult(False, "no mail was sent during the trial")
    if not to_them:
        sent = sorted({r for m in ev.mail for r in m.to})
        return CheckResult(False, f"no new mail to {c.to}; new mail went to {sent}")
    return CheckResult(
        False,
        f"mail to {c.to} sent but subject/body lack {c.subject_contains}/{c.body_contains}",
        [f"mail: {m.subject}" for m in to_them],
    )


def check_event_exists(c: EventExistsCheck, ev: Evidence) -> CheckResult:
    for e in ev.events:
        if norm(c.title_contains) not in norm(e.summary):
            continue
        if c.date and not e.start.startswith(c.date):
            continue
        if c.attendee and not any(c.attendee.casefold() in a.casefold() for a in e.attendees):
            continue
        return CheckResult(
            True, f"event {e.summary!r} at {e.start} ({e.change})", [f"event: {e.summary}"]
        )
    seen = [f"{e.summary!r} at {e.start}" for e in ev.events]
    return CheckResult(False, f"no new or changed event matches; changed events: {seen or 'none'}")


def check_chat_posted(c: ChatPostedCheck, ev: Evidence) -> CheckResult:
    in_channel = [p for p in ev.chat if p.in_channel(c.channel)]
    for p in in_channel:
        if not _contains(p.text, c.all_of, [])[0]:
            return CheckResult(
                True, f"post in {c.channel} contains {c.all_of}", [f"chat: {c.channel}"]
            )
    if not in_channel:
        return CheckResult(
            False, f"no new post in channel {c.channel!r} ({len(ev.chat)} new posts elsewhere)"
        )
    return CheckResult(False, f"posts in {c.channel} lack {c.all_of}", [f"chat: {c.channel}"])


CHECKS: dict[type, Callable[[Any, Evidence], CheckResult]] = {
    NumberCheck: check_number,
    RegexCheck: check_regex,
    ContainsCheck: check_contains,
    FileExistsCheck: check_file_exists,
    DocContainsCheck: check_doc_contains,
    XlsxCellCheck: check_xlsx_cell,
    MailSentCheck: check_mail_sent,
    EventExistsCheck: check_event_exists,
    ChatPostedCheck: check_chat_posted,
}


def run_check(check: Any, ev: Evidence) -> CheckResult:
    return CHECKS[type(check)](check, ev)
