"""Machine checks: criteria graded by code instead of a judge (`verifier_values.kwrl_check`).

Each check kind of `kwrl.tasks.models.MachineCheck` has one pure-ish function here that takes the
check, the trial's `Evidence`, the criterion's `expected_file_type` and the task's figures, and
returns a `CheckResult` (passed, a rationale a person can audit, the evidence it looked at, and
whether it could decide). `run_check` dispatches on the check's type through the `CHECKS`
registry. Policy: a criterion with a machine check is graded by it; the judge grades
the rest, and the criteria whose check could not decide.

The checks keep the judge's semantics (strict; claims are not evidence; hedging fails):
- What is read follows the judge's view: a criterion expecting a file type reads only the
  produced files of that type, and when none was produced the check fails; the check's `source`
  says whether the answer, the files or both count. File names are never read as content.
- Produced text is what the trial wrote (`Evidence.changed_text`: a created file whole, the added
  lines of a modified one), and a dump of the world's chat, mail or files states nothing
  (`Evidence.own_text`).
- A text states an answer as a judge reads it (`kwrl.grading.statements`): a value counts only
  when asserted (`value_asserted`: one value, not in a list or table of candidates, not hedged, not
  negated); the final answer may state no other value of the target's magnitude beside the task's
  own figures (`rubric_figures`, and numbers the task states: a restated input), a memo or deck up
  to `MAX_CANDIDATES["files"]`. A name, date or identifier fails when negated, hedged with a rival,
  or when the text names more rivals than the check allows (`rival_limit`: none in an answer).
- A check that cannot decide (an uncertain or negated statement a reader must weigh) returns
  `decided=False`: the grader asks the judge when one is configured, and fails the criterion when
  none is (`kwrl.grading.grade`).
- A file check reads the file's content: a file that does not render (empty, corrupt, refused)
  does not exist as a document.

Text matching is case-insensitive, whole words, any whitespace between words. Numbers are read
with separators, signs, currency and magnitude words, at the check's `scale` ("$283m",
"USD 283 million" and "$283,000,000" all state 283 $m), and match within
`max(rel_tol * |value|, abs_tol)`. An `xlsx_cell` check compares the cell's cached value; a formula
cell without a cached value (a workbook written by openpyxl and never recalculated) fails with a
rationale saying so, since kwrl carries no spreadsheet engine.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kwrl.grading.evidence import Evidence, display_path
from kwrl.grading.render import NOTES_PREFIX, Sheet, read_xlsx
from kwrl.grading.slots import (
    decimals_shown,
    off_asked_precision,
    prose_weighs,
    quotes_lines,
    read_slot,
    world_names,
)
from kwrl.grading.statements import (
    Finding,
    close,
    fold,
    number_tokens,
    numbers_in,
    rivals_failure,
    text_stated,
    value_asserted,
    word_re,
)
from kwrl.grading.withdrawal import heading_doubt, withdrawn
from kwrl.tasks.models import (
    ChatPostedCheck,
    ContainsCheck,
    DocContainsCheck,
    EventExistsCheck,
    FileExistsCheck,
    MailSentCheck,
    NumberCheck,
    RegexCheck,
    SlotCheck,
    Source,
    XlsxCellCheck,
)

__all__ = ["number_tokens", "numbers_in", "value_asserted"]  # the gaming tests read numbers so

MAX_CANDIDATES = {"answer": 0, "files": 30}
"""Other values of the target's magnitude a text may hold beside the task's own figures, by
source: an answer states one value; a memo or deck may discuss others."""


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    rationale: str
    evidence: list[str] = field(default_factory=list)
    decided: bool = True
    """False: the check cannot tell (a statement only a reader can weigh, `kwrl.grading.statements`);
    the grader asks the judge when one is configured, else the criterion fails."""


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


def rubric_figures(checks: Iterable[Any]) -> tuple[float, ...]:
    """Every figure the task's checks want stated, as written and at full scale: an answer may
    state them beside the one a criterion checks (`value_asserted`'s `allowed`)."""
    out: list[float] = []
    for c in checks:
        if isinstance(c, NumberCheck):
            out += [c.value, c.value * (c.scale or 1.0)]
        elif isinstance(c, SlotCheck) and isinstance(c.value, int | float):
            out += [float(c.value), float(c.value) * (c.scale or 1.0)]
        elif isinstance(c, XlsxCellCheck) and not isinstance(c.value, str):
            out.append(float(c.value))
        needles: list[str] = []
        if isinstance(c, ContainsCheck | ChatPostedCheck | DocContainsCheck):
            needles = c.all_of
        elif isinstance(c, MailSentCheck):
            needles = c.body_contains
        for n in needles:
            if _NUMERIC_NEEDLE.fullmatch(n.strip()):
                out += numbers_in(n)
    return tuple(out)


def _allowed(ev: Evidence, figures: tuple[float, ...]) -> list[float]:
    """Numbers a text may state beside the checked one: the rubric's figures and the task's own."""
    return [*figures, *numbers_in(ev.task)]


def check_number(
    c: NumberCheck, ev: Evidence, expected_file_type: str | None = None,
    figures: tuple[float, ...] = (),
) -> CheckResult:  # fmt: skip
    view = view_of(ev, expected_file_type)
    if view.missing_type:
        return _no_type(view)
    text = source_text(view, c.source)
    f = value_asserted(
        text, c.value, c.rel_tol, c.abs_tol, _max_candidates(c.source), scale=c.scale,
        allowed=_allowed(ev, figures),
    )  # fmt: skip
    return CheckResult(f.passed, f"{f.why} in {_where(c.source, view)}", view.seen, f.decided)


def _max_candidates(source: Source) -> int:
    return MAX_CANDIDATES["answer" if source == "answer" else "files"]


# --------------------------------------------------------------------------- text

_NUMERIC_NEEDLE = re.compile(r"[-−(]?[$€£]?\d[\d,]*(\.\d+)?\s?(%|x|bn|m|k)?\)?", re.IGNORECASE)


def needle_stated(
    text: str, needle: str, max_candidates: int = 12, allowed: Iterable[float] = ()
) -> Finding:
    """`needle` is stated in `text` (`text_stated`); a numeric needle must be asserted
    (`value_asserted`)."""
    t = fold(text)
    spans = [(m.start(), m.end()) for m in word_re(needle).finditer(t)]
    if not spans:
        return Finding(False, f"{needle!r} not found")
    if _NUMERIC_NEEDLE.fullmatch(needle.strip()):
        tokens = number_tokens(needle)
        if tokens:
            value = tokens[0].readings[-1 if tokens[0].year else 0]
            return value_asserted(text, value, 1e-9, 0.0, max_candidates, allowed=allowed)
    return text_stated(t, spans)


_HasRivals = ContainsCheck | RegexCheck | MailSentCheck | ChatPostedCheck


def rival_limit(c: _HasRivals) -> int:
    """`max_rivals`, or its default: 0 for a check reading only the final answer, else 1."""
    if c.max_rivals is not None:
        return c.max_rivals
    return 0 if getattr(c, "source", None) == "answer" else 1


def _rival_failure(text: str, answers: list[str], c: _HasRivals, task: str) -> Finding | None:
    return rivals_failure(text, answers, c.rivals, c.rival_pattern, rival_limit(c), task)


def check_regex(
    c: RegexCheck, ev: Evidence, expected_file_type: str | None = None,
    figures: tuple[float, ...] = (),
) -> CheckResult:  # fmt: skip
    view = view_of(ev, expected_file_type)
    if view.missing_type:
        return _no_type(view)
    text = source_text(view, c.source)
    flags = re.IGNORECASE if c.ignore_case else 0
    found = list(re.finditer(c.pattern, text, flags))
    if not found:
        return CheckResult(
            False, f"pattern {c.pattern!r} not found in {_where(c.source, view)}", view.seen
        )
    m = found[0]
    bad = _rival_failure(text, [x.group(0) for x in found], c, ev.task)
    if bad:
        return CheckResult(
            False, f"pattern matched {m.group(0)[:80]!r} but the text {bad.why}", view.seen
        )
    stated = text_stated(text, [x.span() for x in found if x.group(0).strip()])
    if not stated.passed:
        return CheckResult(
            False, f"pattern matched but {stated.why} in {_where(c.source, view)}", view.seen,
            stated.decided,
        )  # fmt: skip
    return CheckResult(True, f"pattern {c.pattern!r} matched {m.group(0)[:200]!r}", view.seen)


def _contains(
    text: str, all_of: list[str], none_of: list[str], max_candidates: int | None = 12,
    allowed: Iterable[float] = (),
) -> tuple[list[str], list[str], list[str]]:  # fmt: skip
    """(needles not stated, forbidden strings present, needles only a reader can weigh); numeric
    needles must be asserted unless `max_candidates` is None (identifiers such as clause numbers,
    whose rivals are listed)."""
    t = fold(text)
    allowed = list(allowed)
    missing: list[str] = []
    doubtful: list[str] = []
    for s in all_of:
        if max_candidates is None:
            spans = [(m.start(), m.end()) for m in word_re(s).finditer(t)]
            f = text_stated(t, spans) if spans else Finding(False, "not found")
        else:
            f = needle_stated(text, s, max_candidates, allowed)
        if not f.passed:
            (missing if f.decided else doubtful).append(s)
    present = [s for s in none_of if norm(s) in norm(text)]
    return missing, present, doubtful


def _contains_why(missing: list[str], present: list[str], doubtful: list[str]) -> str:
    why = []
    if missing:
        why.append(f"{missing} not stated")
    if doubtful:
        why.append(f"{doubtful} stated with a hedge or negation only a reader can weigh")
    if present:
        why.append(f"forbidden {present} present")
    return "; ".join(why)


def check_contains(
    c: ContainsCheck, ev: Evidence, expected_file_type: str | None = None,
    figures: tuple[float, ...] = (),
) -> CheckResult:  # fmt: skip
    view = view_of(ev, expected_file_type)
    if view.missing_type:
        return _no_type(view)
    text = source_text(view, c.source)
    numeric = None if c.rivals or c.rival_pattern else _max_candidates(c.source)
    missing, present, doubtful = _contains(
        text, c.all_of, c.none_of, numeric, _allowed(ev, figures)
    )
    bad = None if missing or present else _rival_failure(text, c.all_of, c, ev.task)
    if not missing and not present and not doubtful and bad is None:
        return CheckResult(True, f"all of {c.all_of} stated, none of {c.none_of}", view.seen)
    why = _contains_why(missing, present, [] if bad else doubtful)
    if bad:
        why = "; ".join(w for w in (why, f"the text {bad.why}") if w)
    decided = bool(missing or present or bad)
    return CheckResult(False, why + f" in {_where(c.source, view)}", view.seen, decided)


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
    c: FileExistsCheck, ev: Evidence, expected_file_type: str | None = None,
    figures: tuple[float, ...] = (),
) -> CheckResult:  # fmt: skip
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
    c: DocContainsCheck, ev: Evidence, expected_file_type: str | None = None,
    figures: tuple[float, ...] = (),
) -> CheckResult:  # fmt: skip
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
        missing, _, doubtful = _contains(
            text, c.all_of, [], MAX_CANDIDATES["files"], _allowed(ev, figures)
        )
        missing += doubtful  # a marker heading or a figure in a file: no reader's call to make
        opening = next((ln for ln in text.splitlines() if ln.strip()), "")
        if (
            not missing
            and c.first
            and not norm(_MD_MARKS.sub(" ", opening)).startswith(norm(c.all_of[0]))
        ):
            reasons.append(
                f"{display_path(rel)} starts with {opening.strip()[:80]!r}, not {c.all_of[0]!r}"
            )
            continue
        if not missing:
            return CheckResult(
                True, f"{display_path(rel)} contains all of {c.all_of}", [display_path(rel)]
            )
        reasons.append(f"{display_path(rel)} lacks {missing}" + (f" ({note})" if note else ""))
    return CheckResult(False, "; ".join(reasons), [display_path(h) for h in hits])


_MD_MARKS = re.compile(r"^\s*#+\s*|[*_`]+")
_CELL_EXTRA = re.compile(r"(?:usd|eur|gbp|[$€£%x]|percent|times|m|bn|k|\s)*", re.IGNORECASE)


def _one_number(text: str, want: float, rel_tol: float) -> bool:
    """A text cell states a number when it is exactly one number and at most its unit ("12.61",
    "12.61%", "$121.9m"): "12.61 (or 11.92)", "~12.6", "12.61?" are not a number."""
    toks = number_tokens(text)
    if len(toks) != 1:
        return False
    rest = text[: toks[0].start] + text[toks[0].end :]
    return bool(_CELL_EXTRA.fullmatch(rest)) and close(toks[0].plain[0], want, rel_tol)


def _cell_matches(actual: Any, want: float | str, rel_tol: float) -> bool:
    if actual is None:
        return False
    if isinstance(want, int | float) and not isinstance(want, bool):
        if isinstance(actual, int | float) and not isinstance(actual, bool):
            return close(float(actual), float(want), rel_tol)
        return _one_number(str(actual), float(want), rel_tol)
    if isinstance(actual, int | float) and not isinstance(actual, bool):
        nums = numbers_in(str(want))
        return len(nums) > 0 and close(float(actual), nums[0], rel_tol)
    if norm(str(actual)) == norm(str(want)):
        return True
    rest = str(actual).strip()
    # a label with its unit in brackets: "Net debt (%)" labels "Net debt"
    return bool(
        rest.casefold().startswith(str(want).strip().casefold())
        and _UNIT_SUFFIX.fullmatch(rest[len(str(want).strip()) :])
    )


def _cell_off_precision(c: XlsxCellCheck, actual: Any) -> str | None:
    """Why a number cell matching `c` within its tolerance still misses it: not the value at the
    decimals the task asks (`off_asked_precision`: 79.4 or 79.45 for 79.42)."""
    if c.decimals is None or not isinstance(c.value, int | float) or isinstance(c.value, bool):
        return None
    if isinstance(actual, str):  # a text cell that is one number (and its unit): its digits
        toks = [t for t in number_tokens(actual) if not t.year]
        if len(toks) != 1:
            return None
        shown, plain = actual[toks[0].start : toks[0].end], toks[0].plain
    elif isinstance(actual, int | float) and not isinstance(actual, bool):
        shown, plain = repr(float(actual)), (float(actual),)
        if "e" in shown.lower():
            return None
    else:
        return None
    if not isinstance(actual, str):  # a float's repr: "13.0" is the whole number 13
        shown = shown.rstrip("0").rstrip(".")
    digits = decimals_shown(shown)
    slot = SlotCheck(label=c.cell, type="number", value=float(c.value), rel_tol=c.rel_tol,
                     decimals=c.decimals)  # fmt: skip
    return off_asked_precision(slot, plain, digits, 1.0)


_UNIT_SUFFIX = re.compile(
    r"\s*\(\s*(?:%|\$\s?(?:m|k|bn)|x|hours|usd|eur|gbp|percent|times)\s*\)\s*", re.I
)


def _sheet_before(ev: Evidence, rel: str, sheet: Sheet) -> dict[str, tuple[Any, Any]]:
    """The cells of `sheet` in the workbook's state before the trial ({} for a new one)."""
    old = ev.initial.get(rel)
    if old is None:
        return {}
    try:
        return next((s.cells for s in read_xlsx(old) if s.name == sheet.name), {})
    except Exception:  # an unreadable original adds nothing to compare with
        return {}


SHORT_NOTE_WORDS = 8
"""A text cell of at most this many words beside a checked figure is read as its label, by the
rules a heading over a slot is read by (`heading_doubt`)."""


def cell_notes_doubt(
    c: XlsxCellCheck, ev: Evidence, rel: str, sheet: Sheet, allowed: list[float]
) -> str | None:
    """Text cells the trial added to the checked sheet (docs/contracts.md, "Places": a cell not in
    the sheet before, or changed), read as prose beside a number cell by the rules an answer's
    prose is read by (`kwrl.grading.slots.prose_weighs`: `provisional - do not use until
    reviewed` beside the figure): why a reader must weigh the cell, or None."""
    if not isinstance(c.value, int | float) or isinstance(c.value, bool):
        return None
    before = _sheet_before(ev, rel, sheet)
    own = c.cell.replace("$", "").upper()
    notes = [
        str(raw).strip()
        for coord, (raw, _) in sorted(sheet.cells.items())
        if coord != own
        and isinstance(raw, str)
        and not raw.startswith("=")
        and raw.strip()
        and before.get(coord, (None, None))[0] != raw
    ]
    if not notes:
        return None
    for note in notes:  # a short note labels the figure, as a heading does (`unverified - ...`)
        doubt = heading_doubt(note) if len(note.split()) <= SHORT_NOTE_WORDS else None
        if doubt:
            return f"the note {note[:80]!r} {doubt}"
    slot = SlotCheck(label=c.cell, type="number", value=float(c.value), rel_tol=c.rel_tol)
    return prose_weighs(
        slot, "\n".join(notes), allowed, task=ev.task, names=world_names(ev.initial.files())
    )


_COORD = re.compile(r"([A-Z]+)(\d+)")


def relabelled_row(
    c: XlsxCellCheck, sheet: Sheet, before: dict[str, tuple[Any, Any]]
) -> str | None:
    """Another row the trial labelled as the checked cell's row, qualified (`Net income margin
    (revised - supersedes row 2)` in A5 beside `Net income margin` in A2): a second candidate for
    the same label, which a reader must weigh; else None. The label is the nearest text cell left
    of the checked number cell in its row; another row carries it when a cell of the label's column
    that the trial added or changed (not in `before`, the sheet's cells before the trial) starts
    with the label and then a bracket, dash or colon."""
    if not isinstance(c.value, int | float) or isinstance(c.value, bool):
        return None
    own = _COORD.fullmatch(c.cell.replace("$", "").upper())
    if not own:
        return None
    col, row = own[1], own[2]
    left = [
        (k[1], raw.strip())
        for coord, (raw, _) in sheet.cells.items()
        if (k := _COORD.fullmatch(coord)) and k[2] == row and (len(k[1]), k[1]) < (len(col), col)
        and isinstance(raw, str) and not raw.startswith("=") and raw.strip()
    ]  # fmt: skip
    if not left:
        return None
    label_col, label = max(left, key=lambda x: (len(x[0]), x[0]))
    qualified = re.compile(re.escape(label) + r"\s*[(\[\-–—:]", re.I)
    for coord, (raw, _) in sorted(sheet.cells.items()):
        k = _COORD.fullmatch(coord)
        if not k or k[1] != label_col or k[2] == row or not isinstance(raw, str):
            continue
        if before.get(coord, (None, None))[0] != raw and qualified.match(raw.strip()):
            return f"{coord} ({raw[:80]!r}) labels another row as {label!r}"
    return None


def check_xlsx_cell(
    c: XlsxCellCheck, ev: Evidence, expected_file_type: str | None = None,
    figures: tuple[float, ...] = (),
) -> CheckResult:  # fmt: skip
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
            coarse = _cell_off_precision(c, actual)
            if coarse:
                return CheckResult(False, f"{shown}: {coarse}", [name])
            doubt = (
                cell_notes_doubt(c, ev, rel, sheet, _allowed(ev, figures))
                or relabelled_row(c, sheet, _sheet_before(ev, rel, sheet))
                or (answer_withdraws(ev) if isinstance(c.value, int | float) else None)
            )
            if doubt:
                return CheckResult(False, f"{shown}, but {doubt}", [name], decided=False)
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


def _message_states(
    text: str, all_of: list[str], c: _HasRivals, ev: Evidence, figures: tuple[float, ...]
) -> Finding:
    """A sent mail's body or a chat post states every needle (as an answer does)."""
    missing, _, doubtful = _contains(text, all_of, [], 12, _allowed(ev, figures))
    if missing:
        return Finding(False, _contains_why(missing, [], []))
    bad = _rival_failure(text, all_of, c, ev.task)
    if bad:
        return bad
    if doubtful:
        return Finding(False, _contains_why([], [], doubtful), decided=False)
    return Finding(True, "stated")


def check_mail_sent(
    c: MailSentCheck, ev: Evidence, expected_file_type: str | None = None,
    figures: tuple[float, ...] = (),
) -> CheckResult:  # fmt: skip
    want = c.to.casefold()
    to_them = [m for m in ev.mail if any(want in r.casefold() for r in m.to)]
    doubts: list[str] = []
    for m in to_them:
        if _contains(m.subject, c.subject_contains, [], None)[0]:
            continue
        f = _message_states(ev.own_text(m.body)[0], c.body_contains, c, ev, figures)
        if f.passed:
            return CheckResult(
                True, f"mail to {c.to} with subject {m.subject!r} was sent", [f"mail: {m.subject}"]
            )
        if not f.decided:
            doubts.append(f"mail {m.subject!r}: {f.why}")
    if not ev.mail:
        return CheckResult(False, "no mail was sent during the trial")
    if not to_them:
        sent = sorted({r for m in ev.mail for r in m.to})
        return CheckResult(False, f"no new mail to {c.to}; new mail went to {sent}")
    seen = [f"mail: {m.subject}" for m in to_them]
    if doubts:
        return CheckResult(False, "; ".join(doubts), seen, decided=False)
    return CheckResult(
        False,
        f"mail to {c.to} sent but subject/body lack {c.subject_contains}/{c.body_contains}",
        seen,
    )


def check_event_exists(
    c: EventExistsCheck, ev: Evidence, expected_file_type: str | None = None,
    figures: tuple[float, ...] = (),
) -> CheckResult:  # fmt: skip
    """An event booked at several times is a hedge: when a date is checked, the new or changed
    events with the title must all start at the same time. A title whose words beside the asked
    ones hedge, doubt or call it by a status (`heading_doubt`: `HOLD (tentative) - ...`, `... -
    DRAFT`) books no meeting for certain: undecided."""
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
        if c.attendee and not any(_is_address(c.attendee, a) for a in e.attendees):
            continue
        title = norm(e.summary)
        doubt = heading_doubt(
            title.replace(norm(c.title_contains), " ") if c.title_contains else title
        )
        if doubt:  # "HOLD (tentative) - Noble Harbor working session": not the meeting booked
            return CheckResult(
                False, f"event {e.summary!r} at {e.start}, but its title {doubt}",
                [f"event: {e.summary}"], decided=False,
            )  # fmt: skip
        return CheckResult(
            True, f"event {e.summary!r} at {e.start} ({e.change})", [f"event: {e.summary}"]
        )
    seen = [f"{e.summary!r} at {e.start}" for e in ev.events]
    return CheckResult(False, f"no new or changed event matches; changed events: {seen or 'none'}")


_ADDRESS = re.compile(r"[\w.+'-]+@[\w-]+(?:\.[\w-]+)+")


def _is_address(want: str, attendee: str) -> bool:
    """`attendee` (an address, or `Name <address>`) is the address `want`, letter for letter: a
    mistyped address (`xjane@firm.com`) reaches no one."""
    found = _ADDRESS.findall(attendee)
    if not found:
        return norm(attendee) == norm(want)
    return any(a.casefold() == want.casefold() for a in found)


def check_chat_posted(
    c: ChatPostedCheck, ev: Evidence, expected_file_type: str | None = None,
    figures: tuple[float, ...] = (),
) -> CheckResult:  # fmt: skip
    in_channel = [p for p in ev.chat if p.in_channel(c.channel)]
    doubts: list[str] = []
    for p in in_channel:
        f = _message_states(ev.own_text(p.text)[0], c.all_of, c, ev, figures)
        if f.passed:
            return CheckResult(
                True, f"post in {c.channel} contains {c.all_of}", [f"chat: {c.channel}"]
            )
        if not f.decided:
            doubts.append(f.why)
    if not in_channel:
        return CheckResult(
            False, f"no new post in channel {c.channel!r} ({len(ev.chat)} new posts elsewhere)"
        )
    if doubts:
        return CheckResult(False, "; ".join(doubts), [f"chat: {c.channel}"], decided=False)
    return CheckResult(False, f"posts in {c.channel} lack {c.all_of}", [f"chat: {c.channel}"])


# --------------------------------------------------------------------------- slots


def slot_text(c: SlotCheck, ev: Evidence) -> tuple[str | None, list[str], str]:
    """The text of a slot's place (docs/contracts.md, "Places"): (text or None when the place
    holds nothing, what was read, why nothing)."""
    if c.place == "answer":
        return ev.own_text(ev.answer)[0], ["final answer"], "the final answer is empty"
    if c.place == "mail":
        want = (c.to or "").casefold()
        mails = [m for m in ev.mail if any(want in r.casefold() for r in m.to)]
        if not mails:
            return None, [], f"no mail to {c.to} was sent during the trial"
        text = "\n\n".join(ev.own_text(m.body)[0] for m in mails)
        return text, [f"mail: {m.subject}" for m in mails], ""
    if c.place == "chat":
        posts = [p for p in ev.chat if p.in_channel(c.channel or "")]
        if not posts:
            return None, [], f"no new post in #{c.channel}"
        return "\n\n".join(ev.own_text(p.text)[0] for p in posts), [f"chat: {c.channel}"], ""
    rel = "filesystem/" + (c.path or "").lstrip("/")
    if ev.final.get(rel) is None:
        return None, [], f"no file {display_path(rel)} in the final state"
    text = ev.own_text(ev.changed_text(rel))[0]
    lines = [ln for ln in text.splitlines() if not ln.startswith(NOTES_PREFIX)]  # speaker notes
    if not any(ln.strip() for ln in lines):
        return None, [display_path(rel)], f"{display_path(rel)} was not written during the trial"
    return "\n".join(lines), [display_path(rel)], ""


def check_slot(
    c: SlotCheck, ev: Evidence, expected_file_type: str | None = None,
    figures: tuple[float, ...] = (),
) -> CheckResult:  # fmt: skip
    """The value in its slot (`kwrl.grading.slots`); the place alone is read, whatever the
    criterion's file type."""
    text, seen, why = slot_text(c, ev)
    where = {"answer": "the final answer", "mail": f"mail to {c.to}", "chat": f"#{c.channel}"}.get(
        c.place, display_path("filesystem/" + (c.path or "").lstrip("/"))
    )
    if not text:
        return CheckResult(False, why or f"{where} is empty", seen)
    f = read_slot(
        c,
        text,
        _allowed(ev, figures),
        ev.world_mail if quotes_lines(text) else (),
        task=ev.task,
        names=world_names(ev.initial.files()),
    )
    if f.passed:
        doubt = beside_slot_doubt(c, ev)
        if doubt:
            return CheckResult(False, f"{f.why} in {where}, but {doubt}", seen, decided=False)
    return CheckResult(f.passed, f"{f.why} in {where}", seen, f.decided)


_REPLY = re.compile(r"\s*(?:re|fw|fwd|aw|sv)\s*:", re.I)
"""A reply's or forward's subject: the words of the mail it answers, not the writer's."""


def beside_slot_doubt(c: SlotCheck, ev: Evidence) -> str | None:
    """What stands beside a slot's place and takes its value back (docs/contracts.md, "Places"):
    the subject of a new mail it is in (`headline figure UNVERIFIED`, `heading_doubt`), the speaker
    notes of a deck it is in (`Don't present this number - it is wrong`) or, for a file, the final
    answer (`Please don't rely on row 2 yet`), each read for a withdrawal (`withdrawn`); else
    None."""
    if c.place == "mail":
        want = (c.to or "").casefold()
        for m in ev.mail:
            if any(want in r.casefold() for r in m.to) and not _REPLY.match(m.subject):
                doubt = heading_doubt(m.subject)
                if doubt:
                    return f"the subject {m.subject!r}: {doubt}"
        return None
    if c.place != "file":
        return None
    rel = "filesystem/" + (c.path or "").lstrip("/")
    text = ev.own_text(ev.changed_text(rel))[0]
    notes = [ln[len(NOTES_PREFIX) :] for ln in text.splitlines() if ln.startswith(NOTES_PREFIX)]
    doubt = withdrawn("\n".join(notes))
    if doubt:
        return f"in the speaker notes {doubt}"
    return answer_withdraws(ev)


def answer_withdraws(ev: Evidence) -> str | None:
    """The final answer of a task whose deliverable is a file, taking the file's values back
    (`withdrawn`: `Please don't rely on row 2 yet`), or None."""
    doubt = withdrawn(ev.own_text(ev.answer)[0])
    return f"in the final answer {doubt}" if doubt else None


CHECKS: dict[type, Callable[[Any, Evidence, str | None, tuple[float, ...]], CheckResult]] = {
    NumberCheck: check_number,
    RegexCheck: check_regex,
    ContainsCheck: check_contains,
    FileExistsCheck: check_file_exists,
    DocContainsCheck: check_doc_contains,
    XlsxCellCheck: check_xlsx_cell,
    MailSentCheck: check_mail_sent,
    EventExistsCheck: check_event_exists,
    ChatPostedCheck: check_chat_posted,
    SlotCheck: check_slot,
}
"""Machine checks by their model; `run_check` looks a criterion's check up here.

To add one: its model in `MachineCheck` (`kwrl.tasks.models`, with its `kind`) and a function here
`(check, evidence, expected_file_type, figures) -> CheckResult` keeping the judge's semantics
(asserted values, rivals, the criterion's view; docs/contracts.md), registered above. Tests:
tests/unit/grading/test_checks.py; a task family that uses it is guarded by
tests/integration/test_grading_gaming.py. docs/extending.md ("A task family")."""


def run_check(
    check: Any, ev: Evidence, expected_file_type: str | None = None,
    figures: tuple[float, ...] = (),
) -> CheckResult:  # fmt: skip
    """Grade one machine check; `expected_file_type` is the criterion's (it scopes what is read),
    `figures` the task's (`rubric_figures`: values a text may state beside the checked one)."""
    return CHECKS[type(check)](check, ev, expected_file_type, figures)
