"""Machine checks: criteria graded by code instead of a judge (`verifier_values.kwrl_check`).

Each check kind of `kwrl.tasks.models.MachineCheck` has one pure-ish function here that takes the
check, the trial's `Evidence` and the criterion's `expected_file_type`, and returns a
`CheckResult` (passed, a rationale a person can audit, and the evidence it looked at).
`run_check` dispatches on the check's type through the `CHECKS` registry. Policy (DESIGN §6): a
criterion with a machine check is graded by it; the judge grades the rest.

The checks keep the judge's semantics (DESIGN §6: strict; claims are not evidence; hedging fails):
- What is read follows the judge's view: a criterion expecting a file type reads only the
  produced files of that type, and when none was produced the check fails; the check's `source`
  says whether the answer, the files or both count. File names are never read as content.
- Produced text is what the trial wrote (`Evidence.changed_text`: a created file whole, the added
  lines of a modified one), and a dump of the world's chat, mail or files states nothing
  (`Evidence.own_text`).
- A value counts only when the text asserts it (`value_asserted`): it fails when the text offers
  more than `MAX_CANDIDATES` other values of the same magnitude (a spray such as `1 2 3 … 5000`),
  when the value sits in a bare list of numbers, or when it is joined to another value by "or",
  a range or "between … and …" (a hedge). Years only compete with years.
- A text answer fails when the text names more than `max_rivals` of the check's rivals (other
  people, periods, clauses: a list of candidates) or joins the answer and a rival by "or".
- A file check reads the file's content: a file that does not render (empty, corrupt, refused)
  does not exist as a document.

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

MAX_CANDIDATES = {"answer": 12, "files": 30}
"""Other values of the target's magnitude a text may hold before it is a spray, by source."""
MAX_OTHER_YEARS = 3
"""Other years a text may name beside the expected one."""


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    rationale: str
    evidence: list[str] = field(default_factory=list)


def norm(text: str) -> str:
    return " ".join(text.casefold().split())


@dataclass
class View:
    """What one criterion may read: the answer and/or the produced text of its artifact scope."""

    answer: str | None
    files: str | None
    seen: list[str]
    notes: list[str]
    missing_type: str | None = None


def view_of(ev: Evidence, expected_file_type: str | None) -> View:
    """What a check may read (see module docstring); a dump reads as empty.

    The file type filters the produced files as the judge's does (a type naming extensions keeps
    only those files; when none was produced the check fails); the check's own `source` says
    whether the answer, the files or both are read."""
    selected = ev.select_artifacts(expected_file_type)
    if selected is None:
        return View(None, None, [], [], missing_type=expected_file_type)
    scope, arts = selected
    if scope == "answer":  # "Final Answer Only": a check that asks for files still reads them
        arts = ev.artifacts
    notes: list[str] = []
    answer, note = ev.own_text(ev.answer)
    if note:
        notes.append(f"final answer: {note}")
    parts: list[str] = []
    seen: list[str] = []
    for a in arts:
        if a.kind == "file":
            if a.change == "deleted":
                continue
            text = ev.changed_text("filesystem" + a.path if a.path.startswith("/") else a.path)
        else:
            text = a.content
        parts.append(text)
        seen.append(a.path)
    files, note = ev.own_text("\n\n".join(parts))
    if note:
        notes.append(f"produced files: {note}")
    return View(answer, files, ["final answer", *seen], notes)


def source_text(view: View, source: Source) -> str:
    if source == "answer":
        return view.answer or ""
    if source == "files":
        return view.files or ""
    return "\n\n".join(t for t in (view.answer, view.files) if t)


def _where(source: Source, view: View) -> str:
    where = {"answer": "the final answer", "files": "the produced files"}.get(
        source, "the answer and produced files"
    )
    return where + (f" ({'; '.join(view.notes)})" if view.notes else "")


def _no_type(view: View, seen: list[str] | None = None) -> CheckResult:
    return CheckResult(
        False, f"no artifact of the expected type ({view.missing_type}) was produced", seen or []
    )


# --------------------------------------------------------------------------- numbers

_NUM_RE = re.compile(
    r"(?<![A-Za-z0-9_.,])(?P<neg>[-−(])?\s?(?P<cur>[$€£])?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"\s?(?P<unit>%|bn|billion|b\b|mm|million|m\b|k\b|thousand)?",
    re.IGNORECASE,
)
_SCALE = {"%": 0.01, "bn": 1e9, "billion": 1e9, "b": 1e9, "mm": 1e6, "million": 1e6, "m": 1e6,
          "k": 1e3, "thousand": 1e3}  # fmt: skip
_LIST_GAP = re.compile(r"[\s,;]*")
_RANGE_GAPS = frozenset({"-", "–", "—", "~", "to"})


@dataclass(frozen=True)
class NumToken:
    start: int
    end: int
    readings: tuple[float, ...]
    """The value, and with its magnitude word applied ("2.1bn" -> 2.1, 2.1e9)."""
    year: bool
    """A bare four-digit 1900-2100: a year, which competes only with years."""
    negative: bool


def number_tokens(text: str) -> list[NumToken]:
    out: list[NumToken] = []
    for m in _NUM_RE.finditer(text):
        raw = m["num"]
        value = float(raw.replace(",", ""))
        readings: list[float] = []
        if m["neg"] == "(":  # accounting negative, or just a parenthesis: keep both readings
            readings.append(value)
        if m["neg"]:
            value = -value
        readings.append(value)
        unit = (m["unit"] or "").lower()
        if unit in _SCALE:
            readings.append(value * _SCALE[unit])
        year = (
            len(raw) == 4 and raw.isdigit() and 1900 <= int(raw) <= 2100
            and not m["neg"] and not m["cur"] and not unit
        )  # fmt: skip
        out.append(NumToken(m.start(), m.end(), tuple(readings), year, m["neg"] in ("-", "−")))
    return out


def numbers_in(text: str) -> list[float]:
    """Every number in the text, each also with its magnitude word applied ("2.1bn" -> 2.1, 2.1e9)."""
    return [r for t in number_tokens(text) for r in t.readings]


def close(x: float, value: float, rel_tol: float, abs_tol: float = 0.0) -> bool:
    return math.isclose(x, value, rel_tol=rel_tol, abs_tol=abs_tol)


def _comparable(t: NumToken, value: float) -> float | None:
    """The reading of `t` in the target's order of magnitude (a rival value), if any."""
    target_year = value.is_integer() and 1900 <= value <= 2100
    if t.year != target_year:
        return None
    for r in t.readings:
        if (value == 0 and abs(r) < 10) or (value != 0 and 0.1 <= abs(r) / abs(value) <= 10):
            return r
    return None


def value_asserted(
    text: str, value: float, rel_tol: float, abs_tol: float = 0.0, max_candidates: int = 12
) -> tuple[bool, str]:
    """Whether `text` states `value` as its answer (see module docstring), and why."""
    tokens = number_tokens(text)
    hits = [
        i
        for i, t in enumerate(tokens)
        if any(close(r, value, rel_tol, abs_tol) for r in t.readings)
    ]
    if not hits:
        shown = ", ".join(f"{r:g}" for t in tokens[:20] for r in t.readings[:1]) or "none"
        return False, f"no number within tolerance of {value:g}; numbers seen: {shown}"
    rivals: dict[int, float] = {}
    for i, t in enumerate(tokens):
        if i not in hits and (r := _comparable(t, value)) is not None:
            rivals[i] = r
    distinct = {f"{r:.6g}" for r in rivals.values()}
    if value.is_integer() and 1900 <= value <= 2100:  # a year: a handful of others is a list
        max_candidates = min(max_candidates, MAX_OTHER_YEARS)
    if len(distinct) > max_candidates:
        return False, (
            f"{value:g} is one of {len(distinct) + 1} values of its magnitude in the text "
            f"(at most {max_candidates} others allowed): a list of candidates, not an answer"
        )
    eligible = set(hits) | set(rivals)
    why = ""
    for i in hits:
        if _in_bare_list(text, tokens, i, eligible):
            why = f"{value:g} appears only in a bare list of numbers"
            continue
        hedge = _hedged_with(text, tokens, i, rivals)
        if hedge is not None:
            why = f"{value:g} is hedged with {hedge:g}"
            continue
        t = tokens[i]
        return True, f"states {text[t.start : t.end].strip()!r}, within tolerance of {value:g}"
    return False, why


def _in_bare_list(text: str, tokens: list[NumToken], i: int, eligible: set[int]) -> bool:
    """Token i sits in a run of >= 3 values of its magnitude separated only by , ; and spaces."""
    lo = hi = i
    while lo > 0 and _LIST_GAP.fullmatch(text[tokens[lo - 1].end : tokens[lo].start]):
        lo -= 1
    while hi + 1 < len(tokens) and _LIST_GAP.fullmatch(text[tokens[hi].end : tokens[hi + 1].start]):
        hi += 1
    return sum(1 for j in range(lo, hi + 1) if j in eligible) >= 3


def _hedged_with(
    text: str, tokens: list[NumToken], i: int, rivals: dict[int, float]
) -> float | None:
    """The rival value joined to token i by 'or', a range or 'between ... and', if any."""
    for j in (i - 1, i + 1):
        if j not in rivals:
            continue
        a, b = sorted((i, j))
        gap = text[tokens[a].end : tokens[b].start].casefold()
        if len(gap) > 40:
            continue
        before = text[max(0, tokens[a].start - 20) : tokens[a].start].casefold()
        if (
            re.search(r"\bor\b", gap)
            or gap.strip() in _RANGE_GAPS
            or (gap.strip() == "" and tokens[b].negative)
            or (re.search(r"\band\b", gap) and "between" in before)
        ):
            return rivals[j]
    return None


def check_number(
    c: NumberCheck, ev: Evidence, expected_file_type: str | None = None
) -> CheckResult:
    view = view_of(ev, expected_file_type)
    if view.missing_type:
        return _no_type(view)
    text = source_text(view, c.source)
    ok, why = value_asserted(text, c.value, c.rel_tol, c.abs_tol, _max_candidates(c.source))
    return CheckResult(ok, f"{why} in {_where(c.source, view)}", view.seen)


def _max_candidates(source: Source) -> int:
    return MAX_CANDIDATES["answer" if source == "answer" else "files"]


# --------------------------------------------------------------------------- text

_NUMERIC_NEEDLE = re.compile(r"[-−(]?[$€£]?\d[\d,]*(\.\d+)?\s?(%|x|bn|m|k)?\)?", re.IGNORECASE)


def needle_stated(text: str, needle: str, max_candidates: int = 12) -> tuple[bool, str]:
    """`needle` appears in `text`; a numeric needle must also be asserted (`value_asserted`)."""
    if norm(needle) not in norm(text):
        return False, f"{needle!r} not found"
    if _NUMERIC_NEEDLE.fullmatch(needle.strip()):
        tokens = number_tokens(needle)
        if tokens:
            ok, why = value_asserted(text, tokens[0].readings[-1 if tokens[0].year else 0],
                                     1e-9, 0.0, max_candidates)  # fmt: skip
            if not ok:
                return False, why
    return True, f"{needle!r} stated"


_HasRivals = ContainsCheck | RegexCheck | MailSentCheck | ChatPostedCheck


def _word_re(s: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(norm(s)) + r"(?!\w)")


def rivals_named(text: str, answers: list[str], c: _HasRivals) -> tuple[list[str], str | None]:
    """(the rivals the text names, a rival hedged with an answer by 'or' or None)."""
    t = norm(text)
    mine = {norm(a) for a in answers}
    named: dict[str, list[int]] = {}
    for r in c.rivals:
        if norm(r) in mine:
            continue
        spots = [m.start() for m in _word_re(r).finditer(t)]
        if spots:
            named[r] = spots
    if c.rival_pattern:
        for m in re.finditer(c.rival_pattern, t, re.IGNORECASE):
            got = m.group(0)
            if not got.strip() or any(a and (a in norm(got) or norm(got) in a) for a in mine):
                continue
            named.setdefault(norm(got), []).append(m.start())
    hedge = None
    for a in mine:
        for m in _word_re(a).finditer(t) if a else ():
            for r, spots in named.items():
                for s in spots:
                    lo, hi = sorted((m.start(), s))
                    between = t[lo:hi]
                    if hi - lo < 60 and re.search(r"\bor\b", between):
                        hedge = r
    return sorted(named), hedge


def _rival_failure(text: str, answers: list[str], c: _HasRivals) -> str | None:
    named, hedge = rivals_named(text, answers, c)
    if hedge is not None:
        return f"hedges between the answer and {hedge!r}"
    if len(named) > c.max_rivals:
        return (
            f"names {len(named)} other candidates ({named[:6]}...; at most {c.max_rivals} allowed)"
        )
    return None


def check_regex(c: RegexCheck, ev: Evidence, expected_file_type: str | None = None) -> CheckResult:
    view = view_of(ev, expected_file_type)
    if view.missing_type:
        return _no_type(view)
    text = source_text(view, c.source)
    flags = re.IGNORECASE if c.ignore_case else 0
    m = re.search(c.pattern, text, flags)
    if not m:
        return CheckResult(
            False, f"pattern {c.pattern!r} not found in {_where(c.source, view)}", view.seen
        )
    answers = [x.group(0) for x in re.finditer(c.pattern, text, flags)]
    bad = _rival_failure(text, answers, c)
    if bad:
        return CheckResult(
            False, f"pattern matched {m.group(0)[:80]!r} but the text {bad}", view.seen
        )
    return CheckResult(True, f"pattern {c.pattern!r} matched {m.group(0)[:200]!r}", view.seen)


def _contains(
    text: str, all_of: list[str], none_of: list[str], max_candidates: int | None = 12
) -> tuple[list[str], list[str]]:
    """(needles not stated, forbidden strings present); numeric needles must be asserted unless
    `max_candidates` is None (identifiers such as clause numbers, whose rivals are listed)."""
    t = norm(text)
    if max_candidates is None:
        missing = [s for s in all_of if norm(s) not in t]
    else:
        missing = [s for s in all_of if not needle_stated(text, s, max_candidates)[0]]
    present = [s for s in none_of if norm(s) in t]
    return missing, present


def check_contains(
    c: ContainsCheck, ev: Evidence, expected_file_type: str | None = None
) -> CheckResult:
    view = view_of(ev, expected_file_type)
    if view.missing_type:
        return _no_type(view)
    text = source_text(view, c.source)
    numeric = None if c.rivals or c.rival_pattern else _max_candidates(c.source)
    missing, present = _contains(text, c.all_of, c.none_of, numeric)
    bad = None if missing or present else _rival_failure(text, c.all_of, c)
    if not missing and not present and bad is None:
        return CheckResult(True, f"all of {c.all_of} stated, none of {c.none_of}", view.seen)
    why = []
    if missing:
        why.append(f"{missing} not stated")
    if present:
        why.append(f"forbidden {present} present")
    if bad:
        why.append(f"the text {bad}")
    return CheckResult(False, "; ".join(why) + f" in {_where(c.source, view)}", view.seen)


# --------------------------------------------------------------------------- files

_MARKERS = ("[unreadable ", "[refused ", "[binary file: ")


def _typed_hits(ev: Evidence, pattern: str, expected_file_type: str | None) -> list[str]:
    """Final-state files matching the glob whose type the criterion accepts."""
    hits = ev.final.glob(pattern)
    exts = ev.expected_extensions(expected_file_type)
    return [h for h in hits if exts is None or "." + h.rsplit(".", 1)[-1].lower() in exts]


def _renders(ev: Evidence, rel: str) -> bool:
    text = ev.text_of(rel)
    return bool(text.strip()) and not text.startswith(_MARKERS)


def check_file_exists(
    c: FileExistsCheck, ev: Evidence, expected_file_type: str | None = None
) -> CheckResult:
    hits = _typed_hits(ev, c.path, expected_file_type)
    if not hits:
        return CheckResult(
            False, f"no file of the expected type matching {c.path!r} in the final state"
        )
    real = [h for h in hits if _renders(ev, h)]
    if real:
        return CheckResult(
            True, f"{display_path(real[0])} exists and has content", [display_path(h) for h in real]
        )
    return CheckResult(
        False,
        f"{display_path(hits[0])} exists but holds no readable content ({ev.text_of(hits[0])[:120]!r})",
        [display_path(h) for h in hits],
    )


def check_doc_contains(
    c: DocContainsCheck, ev: Evidence, expected_file_type: str | None = None
) -> CheckResult:
    """Reads what the trial wrote into the document (`Evidence.changed_text`), not its name."""
    hits = _typed_hits(ev, c.path, expected_file_type)
    if not hits:
        return CheckResult(
            False, f"no file of the expected type matching {c.path!r} in the final state"
        )
    reasons = []
    for rel in hits:
        text, note = ev.own_text(ev.changed_text(rel))
        if not text:
            reasons.append(f"{display_path(rel)} was not changed during the trial")
            continue
        missing, _ = _contains(text, c.all_of, [], MAX_CANDIDATES["files"])
        if not missing:
            return CheckResult(
                True, f"{display_path(rel)} contains all of {c.all_of}", [display_path(rel)]
            )
        reasons.append(f"{display_path(rel)} lacks {missing}" + (f" ({note})" if note else ""))
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


def check_xlsx_cell(
    c: XlsxCellCheck, ev: Evidence, expected_file_type: str | None = None
) -> CheckResult:
    """The cached value decides; the formula explains a miss (or matches an expected '=...')."""
    hits = [
        h
        for h in _typed_hits(ev, c.path, expected_file_type)
        if h.lower().endswith((".xlsx", ".xlsm"))
    ]
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


def check_mail_sent(
    c: MailSentCheck, ev: Evidence, expected_file_type: str | None = None
) -> CheckResult:
    want = c.to.casefold()
    to_them = [m for m in ev.mail if any(want in r.casefold() for r in m.to)]
    for m in to_them:
        if (
            not _contains(m.subject, c.subject_contains, [])[0]
            and not _contains(body := ev.own_text(m.body)[0], c.body_contains, [])[0]
            and _rival_failure(body, c.body_contains, c) is None
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


def check_event_exists(
    c: EventExistsCheck, ev: Evidence, expected_file_type: str | None = None
) -> CheckResult:
    """An event booked at several times is a hedge: when a date is checked, the new or changed
    events with the title must all start at the same time."""
    titled = [e for e in ev.events if norm(c.title_contains) in norm(e.summary)]
    starts = sorted({e.start for e in titled})
    if c.date and len(starts) > 1:
        return CheckResult(
            False,
            f"{len(titled)} events titled {c.title_contains!r} at {len(starts)} different times "
            f"({starts[:5]}): a spread of bookings, not a booking",
            [f"event: {e.summary}" for e in titled],
        )
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


def check_chat_posted(
    c: ChatPostedCheck, ev: Evidence, expected_file_type: str | None = None
) -> CheckResult:
    in_channel = [p for p in ev.chat if p.in_channel(c.channel)]
    for p in in_channel:
        text = ev.own_text(p.text)[0]
        if not _contains(text, c.all_of, [])[0] and _rival_failure(text, c.all_of, c) is None:
            return CheckResult(
                True, f"post in {c.channel} contains {c.all_of}", [f"chat: {c.channel}"]
            )
    if not in_channel:
        return CheckResult(
            False, f"no new post in channel {c.channel!r} ({len(ev.chat)} new posts elsewhere)"
        )
    return CheckResult(False, f"posts in {c.channel} lack {c.all_of}", [f"chat: {c.channel}"])


CHECKS: dict[type, Callable[[Any, Evidence, str | None], CheckResult]] = {
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


def run_check(check: Any, ev: Evidence, expected_file_type: str | None = None) -> CheckResult:
    """Grade one machine check; `expected_file_type` is the criterion's (it scopes what is read)."""
    return CHECKS[type(check)](check, ev, expected_file_type)
