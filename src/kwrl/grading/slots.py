"""Reading a value from its slot: the answer contract of generated tasks (docs/contracts.md, "The
answer contract of generated tasks").

A generated task's instruction names slot lines, `<Label>: <form>`, one per value, in a place (the
final answer, a mail, a channel, a file). `read_slot(check, text, allowed)` reads one slot of a
`SlotCheck` from the place's text and returns a `Finding`:

- the lines of the text that carry the slot's label (`slot_lines`, `carried`): none is a fail; a
  line carrying it with another of the place's labels, none holding the others, is a fail;
- each such line's value (`read_value`) must be exactly one value of the slot's kind, neither
  hedged nor negated, and all of them the same; a wrong value is a fail;
- the prose around the slots is free, except a clause (`clauses`) holding the slot's own value
  with a correction or hedge word, or a rival (a known wrong value, or one of the kind neither the
  task's nor another slot's) with a hedge or an affirming word: undecided (a reader must weigh it).

Quoted lines that a mail of the world holds word for word are that mail's, not the writer's, and
are read as neither (`drop_quoted`).

The word classes are closed and small on purpose: what they cannot settle is undecided, never a
pass. A value is read at the check's unit and scale in any spelling (`kwrl.grading.statements`
reads numbers; dates and times are read here).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from kwrl.grading.lexicon import (
    _AFFIRM,
    _AFFIRM_ELSE,
    _AFFIRM_ONLY,
    _ANSWER_NOUN,
    _CORRECTION,
    _DOUBT,
    _HEDGE,
    _HEDGE_MARK,
    _HEDGE_NEAR,
    _HEDGE_PROSE,
    _NEGATION,
    _SENTENCE_CUT,
    _SOURCE,
    _STALE,
    _STATUS,
    AFFIRMS,
    BACKREF,
    CORRECTIONS,
    HEDGES,
    NEGATIONS,
    SOURCES,
    STATUS,
    _hedge_in,
    _words_re,
    _year,
    norm_periods,
)
from kwrl.grading.statements import Finding, NumToken, close, number_tokens, undecided
from kwrl.grading.withdrawal import heading_doubt, own_doubt, withdrawn
from kwrl.tasks.models import SlotCheck

_STOP = frozenset(["the", "a", "an", "of", "for", "in", "on", "at", "per", "as", "is", "by", "to"])
_UNIT_WORDS = frozenset(
    ["m", "k", "bn", "mn", "mm", "usd", "millions", "million", "thousands", "thousand",
     "billions", "billion", "percent", "pct", "x", "utc", "gmt"]
)  # fmt: skip
_WORD = re.compile(r"[a-z0-9_]+(?:\.\d+)*")


def label_words(label: str) -> frozenset[str]:
    """A label as the set of words that identify it (docs/contracts.md: label matching)."""
    words = _WORD.findall(norm_periods(label).casefold())
    return frozenset(w for w in words if w not in _STOP and w not in _UNIT_WORDS)


_MD_LEAD = re.compile(r"^(?:\s*(?:#{1,6}|>|[-*+•·▪◦‣–—]|\d{1,2}[.)])\s+)*")
_MARKS = re.compile(r"[*_`]+")
_PAIRED = re.compile(
    r"(\*\*|__|`+)(?=\S)(.+?)(?<=\S)\1"
    r"|(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])"
    r"|(?<![\w_])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w_])"
)
"""Markdown emphasis or code around a text (`**121.9**`, `*FY2025*`, `` `121.9` ``)."""


def _strip_marks(s: str) -> str:
    return " ".join(_MARKS.sub(" ", s).split())


def unmark(s: str) -> str:
    """`s` without its paired markdown marks; a lone mark (a footnote's `*`) stays, for the slot
    reader to see (docs/contracts.md: what a slot may hold)."""
    prev = None
    while prev != s:
        prev = s
        s = _PAIRED.sub(lambda m: next(g for g in (m[2], m[3], m[4]) if g is not None), s)
    return s


@dataclass(frozen=True)
class SlotLine:
    index: int
    """Line number in the text."""
    label: str
    words: frozenset[str]
    value: str
    text: str


_COLON = re.compile(r"(?<!\d):|:(?!\d)")


def slot_lines(text: str) -> list[SlotLine]:
    """Every line shaped `<label>: <value>` (or a two-cell table row), markdown removed: one
    reading per colon that may end the label."""
    out: list[SlotLine] = []
    for i, raw in enumerate(text.splitlines()):
        line = raw.strip()
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 2 and not re.fullmatch(r"[\s:\-|]*", line):
                label, value = _strip_marks(cells[0]), " ".join(unmark(cells[1]).split())
                if label and value:
                    out.append(SlotLine(i, label, label_words(label), value, raw))
            continue
        line = _MD_LEAD.sub("", line)
        k = 0
        while k < len(line) and not (line[k].isalnum() or line[k] in "*_`$("):
            k += 1  # an emoji or symbol before the label
        line = unmark(line[k:])
        for m in _COLON.finditer(line):  # each colon may end the label ("Update: Revenue: 1")
            label, value = _strip_marks(line[: m.start()]), " ".join(line[m.end() :].split())
            label = label.strip(" -")
            if not label or not value.strip(" .") or len(label.split()) > 16:
                continue
            out.append(SlotLine(i, label, label_words(label), value.rstrip(". ").strip(), raw))
    return out


def place_lines(text: str, labels: Sequence[str]) -> list[tuple[SlotLine, list[str], str | None]]:
    """The slot lines of a place: each line read at its first colon whose label carries one of
    the place's labels, with `carried`'s (labels, owner)."""
    out: list[tuple[SlotLine, list[str], str | None]] = []
    seen: set[int] = set()
    for line in slot_lines(text):
        if line.index in seen:
            continue
        got, owner = carried(line, labels)
        if got:
            seen.add(line.index)
            out.append((line, got, owner))
    return out


def carried(line: SlotLine, labels: Sequence[str]) -> tuple[list[str], str | None]:
    """(the place's labels the line carries, the one it belongs to: the carried label whose words
    hold every other carried label's; None when several carried labels hold no such one)."""
    sets = {lab: label_words(lab) for lab in labels}
    got = [lab for lab, ws in sets.items() if ws and ws <= line.words]
    owners = [lab for lab in got if all(sets[o] <= sets[lab] for o in got)]
    return got, owners[0] if len(owners) == 1 else None


# --------------------------------------------------------------------------- values

_MONTH_NAMES = (
    "jan january", "feb february", "mar march", "apr april", "may", "jun june", "jul july",
    "aug august", "sep sept september", "oct october", "nov november", "dec december",
)  # fmt: skip
_MONTHS = {m: i + 1 for i, names in enumerate(_MONTH_NAMES) for m in names.split()}
_MON = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_RES = [
    re.compile(r"(?<![\d/.-])(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?![\d/.-])"),
    re.compile(r"(?<![\d/.-])(?P<a>\d{1,2})[/.-](?P<b>\d{1,2})[/.-](?P<y>\d{4}|\d{2})(?![\d/.-])"),
    re.compile(
        rf"(?<!\d)(?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?[\s-]+{_MON}(?:[\s,-]+(?P<y>\d{{4}}))?(?![\w])",
        re.I,
    ),
    re.compile(
        rf"(?<![\w]){_MON}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?(?!\d)(?:,?\s+(?P<y>\d{{4}}))?", re.I
    ),
]
_MON_ANY = _MON.replace("?P<mon>", "?:")
_DAY_RANGE = re.compile(
    rf"\d{{1,2}}\s*(?:-|–|—|to|and|&)\s*\d{{1,2}}(?:st|nd|rd|th)?\s+{_MON_ANY}"
    rf"|{_MON_ANY}\s+\d{{1,2}}\s*(?:-|–|—|to|and|&)\s*\d{{1,2}}\b",
    re.I,
)


_WEEKDAY_NAMES = (
    "mon monday", "tue tues tuesday", "wed weds wednesday", "thu thur thurs thursday",
    "fri friday", "sat saturday", "sun sunday",
)  # fmt: skip
_WEEKDAYS = {n: i for i, names in enumerate(_WEEKDAY_NAMES) for n in names.split()}
_WEEKDAY = re.compile(
    r"(?<![\w'])(" + "|".join(sorted(_WEEKDAYS, key=len, reverse=True)) + r")\b\.?", re.I
)


def day_clash(text: str, day: date) -> str | None:
    """A weekday or date in a slot's text that is not `day`'s (`Wednesday, 2026-03-17` when the
    17th is a Tuesday): the slot contradicts itself."""
    for m in _WEEKDAY.finditer(text):
        if _WEEKDAYS[m[1].lower()] != day.weekday():
            return f"{m[1]!r}, but {day.isoformat()} is a {day:%A}"
    for f in find_dates(text, day.year):
        if day not in f.values:
            return f"{text[f.start : f.end]!r}, not {day.isoformat()}"
    return None


def _mk(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


@dataclass(frozen=True)
class Found:
    start: int
    end: int
    values: tuple[Any, ...]
    """The readings of the occurrence (a date written 05/03/2026 has two)."""


def find_dates(text: str, year: int) -> list[Found]:
    """Dates in any common spelling; a date without a year takes `year`."""
    out: list[Found] = []
    taken: list[tuple[int, int]] = []
    for k, rx in enumerate(_DATE_RES):
        for m in rx.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            g = m.groupdict()
            y = int(_year(g["y"])) if g.get("y") else year
            if k == 1:
                a, b = int(g["a"]), int(g["b"])
                vals = {_mk(y, b, a), _mk(y, a, b)}
            elif k == 0:
                vals = {_mk(y, int(g["m"]), int(g["d"]))}
            else:
                vals = {_mk(y, _MONTHS[g["mon"].lower().rstrip(".")], int(g["d"]))}
            vals.discard(None)
            if vals:
                out.append(Found(m.start(), m.end(), tuple(vals)))
                taken.append(m.span())
    return sorted(out, key=lambda f: f.start)


_TIME_RE = re.compile(
    r"(?<![\d:.])(?:(?P<hh>[01]?\d|2[0-3])h(?P<mih>[0-5]\d)|(?P<hh2>[01]\d|2[0-3])h)(?![\w])|"
    r"(?<![\d:.])(?P<h>\d{1,2})(?:(?P<sep>[:.])(?P<mi>\d{2}))?\s?(?:(?P<ap>a\.?m\.?|p\.?m\.?)"
    r"|(?:o['’]clock\s+)?in\s+the\s+(?P<part>morning|afternoon|evening))?(?![\d])"
    r"|(?<![\d:.])(?P<h4>[01]\d|2[0-3])(?P<mi4>[0-5]\d)\s?(?=h\b|hrs\b|utc\b|gmt\b)"
    r"|\b(?P<noon>noon|midday)\b",
    re.I,
)


def find_times(text: str) -> list[Found]:
    """Times of day: 14:00, 14.00, 2 pm, 2:30pm, 1400 UTC, 14h00, 2 in the afternoon, noon (a bare
    number is not a time)."""
    out: list[Found] = []
    for m in _TIME_RE.finditer(text):
        if m["noon"]:
            out.append(Found(m.start(), m.end(), (12 * 60,)))
            continue
        if m["h4"] or m["hh"] or m["hh2"]:
            h, mi = int(m["h4"] or m["hh"] or m["hh2"]), int(m["mi4"] or m["mih"] or 0)
            out.append(Found(m.start(), m.end(), (h * 60 + mi,)))
            continue
        h, ap = int(m["h"]), (m["ap"] or "").lower()
        if m["part"]:
            ap = "am" if m["part"].lower() == "morning" else "pm"
        if not m["sep"] and not ap:
            continue
        if m["sep"] == "." and not ap:
            continue  # 14.00 is read as a figure unless it says am/pm... or in a time slot
        mi = int(m["mi"] or 0)
        if ap:
            if not 1 <= h <= 12:
                continue
            h = h % 12 + (12 if ap.startswith("p") else 0)
        if h > 23 or mi > 59:
            continue
        out.append(Found(m.start(), m.end(), (h * 60 + mi,)))
    return out


def _item_re(item: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in norm_periods(item).casefold().split()]
    return re.compile(r"(?<![\w.])" + r"\s+".join(words) + r"(?![\w]|\.\w)", re.I)


def _name_variants(item: str) -> list[str]:
    parts = item.split()
    out = [item]
    if len(parts) == 2:
        out.append(f"{parts[1]}, {parts[0]}")
    return out


def _find_items(text: str, items: Iterable[str]) -> dict[str, list[tuple[int, int]]]:
    t = norm_periods(text).casefold()
    return {
        it: [m.span() for v in _name_variants(it) for m in _item_re(v).finditer(t)] for it in items
    }


@dataclass(frozen=True)
class Reading:
    ok: bool
    why: str
    value: object = None


def _numbers(text: str) -> list[NumToken]:
    return [t for t in number_tokens(norm_periods(text)) if not t.year]


def _number_is(t: NumToken, c: SlotCheck) -> bool:
    assert isinstance(c.value, int | float)
    want = float(c.value) * (c.scale or 1.0)
    tol = c.abs_tol * (c.scale or 1.0)
    return any(close(m, want, c.rel_tol, tol) for m in t.meanings(c.scale))


_CURRENCY_BEFORE = re.compile(r"(?:[$£€]|\b(?:USD|EUR|GBP|US\$|dollars?))\s*$", re.I)
_CURRENCY_AFTER = re.compile(r"\s*(?:USD|EUR|GBP|dollars|euros|pounds)\b", re.I)


def _at_unit(t: NumToken, c: SlotCheck, text: str) -> bool:
    """The slot's figure `t` is the check's value at the magnitude its spelling fixes (docs/
    contracts.md, "number"): a magnitude word (`k`, `m`, `bn`, `thousand`, `million`, `%`) is
    read as such (`187k` hours is 187,000); a currency mark without one is an explicit unit, whole
    units or the slot's (`$1,082,600`, `$1,082.6` for a figure in $k); a bare number is in the
    slot's unit, the label's (`1,082,600.0` for a figure in $k is a billion dollars)."""
    assert isinstance(c.value, int | float)
    want = float(c.value) * (c.scale or 1.0)
    tol = c.abs_tol * (c.scale or 1.0)
    if t.factor is not None:
        means = tuple(p * t.factor for p in t.plain)
    elif (
        re.match(r"[(\s\-−]*[$£€]", text[t.start : t.end])
        or _CURRENCY_BEFORE.search(text[: t.start])
        or _CURRENCY_AFTER.match(text, t.end)
    ):
        return True  # `_number_is` read it at either scale
    else:
        means = tuple(p * (c.scale or 1.0) for p in t.plain)
    return any(close(m, want, c.rel_tol, tol) for m in means)


def read_value(c: SlotCheck, value: str) -> Reading:
    """The slot's value: exactly one value of its kind, not hedged or negated; `ok` says whether it
    is the check's value."""
    text = drop_restatements(c, norm_periods(value))
    hedge = _hedge_in(text)
    if hedge:
        return Reading(False, f"the slot is hedged ({hedge!r})")
    neg = _NEGATION.search(text) or (None if c.wrong_value else _CORRECTION.search(text))
    if neg:
        return Reading(False, f"the slot is negated ({neg.group(0)!r})")
    if c.type == "number":
        dated = [(f.start, f.end) for f in find_dates(text, 2000)]
        toks = [
            t for t in _numbers(text)
            if _comparable(t, c) and not _PLACE_NUMBER.search(text[: t.start].rstrip())
            and not any(a <= t.start < b for a, b in dated)  # "for the year to 31 Dec 2025"
        ]  # fmt: skip
        if not toks:
            return Reading(False, "the slot holds no figure")
        if re.search(r"\d\s*(?:-|–|—|to)\s*\d", text):
            return Reading(False, "the slot holds a range")
        hits = [_number_is(t, c) and _at_unit(t, c, text) for t in toks]
        shown = text[toks[0].start : toks[0].end].strip()
        if all(hits):  # one value, perhaps in two spellings ("$121.9m ($121,900,000)")
            for t in toks:
                span = text[t.start : t.end].strip()
                if off := off_asked_precision(c, t.plain, decimals_shown(span), t.factor):
                    return Reading(False, f"the slot reads {span!r}: {off}", span)
            return Reading(True, f"the slot reads {shown!r}", shown)
        if len(toks) > 1:
            return Reading(False, f"the slot holds {len(toks)} different figures, not one")
        return Reading(False, f"the slot reads {shown!r}, not {c.value}", shown)
    if c.type == "date":
        want = date.fromisoformat(str(c.value))
        if _DAY_RANGE.search(text):
            return Reading(False, "the slot holds a range of days")
        found = find_dates(text, want.year)
        if not found:
            return Reading(False, "the slot holds no date")
        shown = text[found[0].start : found[0].end]
        if all(want in f.values for f in found):
            clash = day_clash(text, want)
            if clash:
                return Reading(False, f"the slot names {clash}")
            return Reading(True, f"the slot reads {shown!r}")
        if len(found) > 1:
            return Reading(False, f"the slot holds {len(found)} different dates, not one")
        return Reading(False, f"the slot reads {shown!r}, not {want}")
    if c.type == "time":
        h, mi = (int(x) for x in str(c.value).split(":"))
        want_t = h * 60 + mi
        found = find_times(text) or _dotted_times(text)
        day = date.fromisoformat(c.day) if c.day else None
        ends = {utc_minutes(text, f, day) for f in found if _is_end_time(text, f)}
        starts = sorted({utc_minutes(text, f, day) for f in found} - ends)
        if len(starts) == 1 and ends and ends != {starts[0] + 60}:
            return Reading(False, f"the slot's end {sorted(ends)} is not an hour after its start")
        if not starts and ends:
            starts = sorted(ends)  # "until 15:00" alone is no start
        if not starts:
            return Reading(False, "the slot holds no time")
        if set(starts) == {want_t}:
            clash = day_clash(text, date.fromisoformat(c.day)) if c.day else None
            if clash:
                return Reading(False, f"the slot names {clash}")
            return Reading(True, f"the slot reads {text!r}")
        if len(set(starts)) > 1:
            return Reading(False, f"the slot holds {len(set(starts))} different times, not one")
        return Reading(False, f"the slot reads {text!r}, not {c.value}")
    return _read_items(c, text, _items(c))


ZONES = {
    "utc": "UTC", "gmt": "UTC", "z": "UTC", "et": "America/New_York", "est": "America/New_York",
    "edt": "America/New_York", "new york": "America/New_York", "ny": "America/New_York",
    "ct": "America/Chicago", "cst": "America/Chicago", "cdt": "America/Chicago",
    "pt": "America/Los_Angeles", "pst": "America/Los_Angeles", "pdt": "America/Los_Angeles",
    "cet": "Europe/Paris", "cest": "Europe/Paris", "paris": "Europe/Paris",
    "frankfurt": "Europe/Berlin", "bst": "Europe/London", "uk": "Europe/London",
    "london": "Europe/London", "ist": "Asia/Kolkata", "sgt": "Asia/Singapore",
    "singapore": "Asia/Singapore", "hkt": "Asia/Hong_Kong", "hong kong": "Asia/Hong_Kong",
    "jst": "Asia/Tokyo", "tokyo": "Asia/Tokyo", "aest": "Australia/Sydney",
    "aedt": "Australia/Sydney", "sydney": "Australia/Sydney",
}  # fmt: skip
"""Time zones a meeting's time may be given in beside UTC (`14:00 UTC (10:00 ET)`)."""
_ZONE_AFTER = re.compile(
    r"\s*(?:[-–—]\s*\d{1,2}(?:[:.]\d{2})?\s*(?:[ap]\.?m\.?)?\s*)?(?:in\s+)?(?P<z>"
    + "|".join(sorted((re.escape(z) for z in ZONES), key=len, reverse=True))
    + r")\b(?:\s+time)?",
    re.I,
)


_END_BEFORE = re.compile(
    r"(?:[-–—]|\bto|\buntil|\btill|\bends?|\bending|\bfinish(?:es|ing)?|\bthrough)\s*(?:at\s+)?$",
    re.I,
)
"""What before a time makes it the meeting's end (`14:00-15:00`, `ends 15:00`)."""


_END_AFTER = re.compile(r"\s*(?:[a-z]{2,4}\s+)?(?:finish|end|close)\b", re.I)


def _is_end_time(text: str, f: Found) -> bool:
    """The time `f` is written as the meeting's end (`14:00-15:00`, `until 15:00`, `15:00
    finish`)."""
    return bool(_END_BEFORE.search(text[: f.start]) or _END_AFTER.match(text, f.end))


def utc_minutes(text: str, f: Found, day: date | None) -> int:
    """The time `f` of `text` in UTC minutes: read in the zone written after it (`10:00 ET` on a
    day of US summer time is 14:00 UTC); as written without a zone, or without the day to
    convert on."""
    m = _ZONE_AFTER.match(text, f.end)
    local = int(f.values[0])
    if not m or day is None or ZONES[m["z"].casefold()] == "UTC":
        return local
    offset = ZoneInfo(ZONES[m["z"].casefold()]).utcoffset(
        datetime(day.year, day.month, day.day, 12)
    )
    return (local - int(offset.total_seconds() // 60)) % (24 * 60) if offset else local


def _items(c: SlotCheck) -> list[str]:
    if isinstance(c.value, list):
        return [str(i) for i in c.value]
    return [str(c.value)]


def _dotted_times(text: str) -> list[Found]:
    out = []
    for m in re.finditer(r"(?<![\d.])([01]?\d|2[0-3])\.([0-5]\d)(?![\d.])", text):
        out.append(Found(m.start(), m.end(), (int(m[1]) * 60 + int(m[2]),)))
    return out


def _read_items(c: SlotCheck, text: str, items: list[str]) -> Reading:
    found = _find_items(text, [*items, *c.rivals])
    need = [s for sp in (found[i] for i in items) for s in sp]
    missing = [i for i in items if not found[i]]
    rivals = [
        r for r in c.rivals
        if r not in items and any(not any(a <= s and e <= b for a, b in need) for s, e in found[r])
    ]  # fmt: skip
    if c.rival_pattern:
        t = norm_periods(text).casefold()
        for m in re.finditer(c.rival_pattern, t, re.I):
            if not any(a <= m.start() and m.end() <= b for a, b in need):
                rivals.append(m.group(0))
    if rivals:
        return Reading(False, f"the slot also names {sorted(set(rivals))}")
    if missing:
        return Reading(False, f"the slot lacks {missing}")
    return Reading(True, f"the slot names {items}", tuple(items))


# --------------------------------------------------------------------------- prose

_CLAUSE_CUT = re.compile(
    r"[.!?;](?=\s|$)|\n|\s[-–—]\s|—|(?=\b(?:but|though|although|however|whereas|while|yet|and|so|because|then)\b)",
    re.I,
)


def clauses(text: str) -> list[str]:
    """The prose cut into clauses (sentences, then `;`, dashes and contrast words)."""
    return [c for c in _CLAUSE_CUT.split(text) if c and c.strip()]


def _prose(text: str, skip: set[int]) -> str:
    return "\n".join(ln for i, ln in enumerate(text.splitlines()) if i not in skip)


def _occurrences(c: SlotCheck, clause: str) -> list[tuple[int, int, str]]:
    """(start, end, role) of the values of the slot's kind in a clause: role 'own' (the slot's
    value), 'rival' (a known wrong value), 'other' (another value of the kind)."""
    t = norm_periods(clause)
    out: list[tuple[int, int, str]] = []
    if c.type == "number":
        assert isinstance(c.value, int | float)
        rivals = _rival_tokens(c)
        dated = [(f.start, f.end) for f in find_dates(t, 2000)]
        for tok in _numbers(t):
            if any(a <= tok.start < b for a, b in dated):
                continue  # "on 3 March"
            if _number_is(tok, c):
                out.append((tok.start, tok.end, "own"))
            elif any(_same_number(tok, r, c) for r in rivals):
                out.append((tok.start, tok.end, "rival"))
            elif _comparable(tok, c):
                out.append((tok.start, tok.end, "other"))
    elif c.type == "date":
        want = date.fromisoformat(str(c.value))
        found = find_dates(t, want.year)
        for f in found:
            out.append((f.start, f.end, "own" if want in f.values else "other"))
        for m in _WEEKDAY.finditer(t):  # "it may slip to Thursday"
            short = m[1].islower() and len(m[1]) < 4  # "sat", "wed" as words
            dated = any(f.start - 3 <= m.start() < f.end + 3 for f in found)
            if short or dated:
                continue  # a weekday written with its date is read with it
            own = _WEEKDAYS[m[1].lower()] == want.weekday()
            out.append((m.start(), m.end(), "own" if own else "other"))
    elif c.type == "time":
        h, mi = (int(x) for x in str(c.value).split(":"))
        for f in find_times(t):
            out.append((f.start, f.end, "own" if f.values[0] == h * 60 + mi else "other"))
    else:
        items = _items(c)
        found = _find_items(t, [*items, *c.rivals])
        for it in items:
            out += [(a, b, "own") for a, b in found[it]]
        for r in c.rivals:
            if r not in items:
                out += [(a, b, "rival") for a, b in found[r]]
    return out


def _same_number(tok: NumToken, rival: NumToken, c: SlotCheck) -> bool:
    want = rival.meanings(c.scale)
    return any(close(m, w, 0.005) for m in tok.meanings(c.scale) for w in want)


_PERCENT_FACTORS = (0.01, 1e-4)


def _other_kind(tok: NumToken, c: SlotCheck) -> bool:
    """`tok` is a percentage beside a slot that is not one, or an amount or multiple beside a
    percentage slot."""
    if tok.factor is None or tok.factor == 1.0:
        return False
    return (tok.factor in _PERCENT_FACTORS) != (c.scale == 0.01)


def _comparable(tok: NumToken, c: SlotCheck) -> bool:
    """`tok` is a value of the slot's kind: a percentage for a percentage slot, an amount or a
    count for the others, within 0.1x-10x of the slot's value."""
    assert isinstance(c.value, int | float)
    pct_slot = c.scale == 0.01
    if (
        tok.factor is not None
        and tok.factor != 1.0
        and (tok.factor in _PERCENT_FACTORS) != pct_slot
    ):
        return False  # "up 21.7%" beside a figure in $m, "$12.3m" beside a percentage
    target = float(c.value) * (c.scale or 1.0)
    return any(
        (target == 0 and abs(m) < 10) or (target != 0 and 0.1 <= abs(m) / abs(target) <= 10)
        for m in tok.meanings(c.scale)
    )


_CONTRASTED = re.compile(
    r"\b(?:rather\s+than|instead\s+of)\s+(?:an?\s+|the\s+)?(?:[\w-]+\s+)?(?:estimate|estimated|guess)\b",
    re.I,
)
"""An estimate or guess the clause sets the value against (`given as confirmed (rather than an
early estimate)`): what the value is not, no hedge on it."""


def _uncontrasted(t: str) -> str:
    """`t` with its `_CONTRASTED` phrases blanked (offsets kept)."""
    return _CONTRASTED.sub(lambda m: " " * len(m.group(0)), t)


def _near(clause: str, start: int, end: int, rx: re.Pattern[str], words: int) -> str | None:
    before = " ".join(clause[:start].split()[-words:])
    after = " ".join(clause[end:].split()[:words])
    m = rx.search(before) or rx.search(after)
    return m.group(0) if m else None


MAX_LISTED = 5
"""Values of the slot's kind, neither the task's nor another slot's, that one line of prose may
list (a table row of periods); more is a list of candidates, left to a reader."""


def prose_doubt(c: SlotCheck, text: str, skip: set[int], allowed: Iterable[float]) -> str | None:
    """Why the prose (the text but its slot lines) leaves the slot for a reader, or None."""
    allowed = list(allowed)
    doubt = _DOUBT.search(_prose(text, skip))
    if doubt:
        return f"the prose doubts the answer ({doubt.group(0)!r})"
    for sent in _SENTENCE_CUT.split(_prose(text, skip)):
        occ = _occurrences(c, sent)
        named = [r for _, _, r in occ if r == "rival"]
        if (
            named
            and _numbered(c)
            and not any(rx.search(verdict(sent)) for rx in (_COMPLIES, _NEGATION, _NONE_OF))
            and not _names_every_clause(c, sent, occ)
        ):
            return f"the prose names a compliant clause without saying it complies: {sent.strip()[:160]!r}"
        pending = _pending(sent)
        if pending and not number_tokens(sent):
            return f"the prose says the answer waits ({pending!r}): {sent.strip()[:160]!r}"
    for clause in clauses(_prose(text, skip)):
        named = bool(_occurrences(c, clause) or number_tokens(clause))
        message = c.place in ("chat", "mail")
        word = (
            None
            if named or _UNCHANGED.match(clause)
            else _changes(clause) or (message and _retracts(clause))
        )
        if word:
            return f"the prose says {word!r}: {clause.strip()[:160]!r}"
        status = next(
            (
                m
                for m in _STATUS.finditer(clause)
                if not _NAMING_BEFORE.search(clause[: m.start()]) and not _status_verb(clause, m)
            ),
            None,
        )  # "the preliminary estimate", "any preliminary figures" name another thing
        named = _occurrences(c, clause) or number_tokens(clause) or find_dates(clause, 2000)
        if status and not named and not _SOURCE.search(_WAIT_TAIL.sub("", clause)):
            # a place after `pending` is what the answer waits on (`indicative pending the ledger`)
            return f"the prose calls something {status.group(0)!r}: {clause.strip()[:160]!r}"
    for line in _prose(text, skip).splitlines():
        t = norm_periods(line)
        listed = {
            t[a:b].strip().casefold()
            for a, b, role in _occurrences(c, line)
            if role != "own" and not (role == "other" and _is_allowed_number(c, t[a:b], allowed))
        }
        if len(listed) > MAX_LISTED:
            return f"the prose lists {len(listed)} other values of the kind: {line.strip()[:160]!r}"
    for clause in clauses(_prose(text, skip)):
        t = norm_periods(clause)
        for start, end, role in _occurrences(c, clause):
            shown = t[start:end].strip()
            if role == "own":
                word = (
                    (None if c.wrong_value else _word(_CORRECTION, t))
                    or _near(_uncontrasted(t), start, end, _HEDGE_NEAR, 4)
                    or _near_mark(t, start, end)
                    or (None if c.wrong_value else _negated_before(t, start))
                )
                if word:
                    return f"the prose says {word!r} of the slot's value {shown!r}: {clause.strip()[:160]!r}"
                continue
            if role == "other" and _is_allowed_number(c, t[start:end], allowed):
                continue
            word = _weighing(t, c.type != "text")
            if word:
                return f"the prose puts forward {shown!r} with {word!r}: {clause.strip()[:160]!r}"
            if role == "rival" and _check_to_make(t):
                return f"the prose checks against {shown!r}: {clause.strip()[:160]!r}"
            if c.type in ("date", "time") and _OFFERED.search(t):
                return f"the prose offers {shown!r} too: {clause.strip()[:160]!r}"
            change = _CHANGE.search(t)
            if change and c.type in ("date", "time") and not re.search(r"\bfrom\s*$", t[:start]):
                return f"the prose moves the value to {shown!r} ({change.group(0)!r}): {clause.strip()[:160]!r}"
            if role == "rival" and c.type != "text" and not _framed(t) and not _CONTACT.search(t):
                return f"the prose names {shown!r} without saying whose it is: {clause.strip()[:160]!r}"
            if c.type != "text" and _labels_another(c, t, start) and not _CONTACT.search(t):
                return f"the prose gives {c.label!r} another value, {shown!r}: {clause.strip()[:160]!r}"
            if c.type != "text" and _RESTATED_AS.search(t[:start]):
                return f"the prose says the answer should read {shown!r}: {clause.strip()[:160]!r}"
    return _sentence_doubt(c, _prose(text, skip), allowed)


def _names_every_clause(c: SlotCheck, sent: str, occ: list[tuple[int, int, str]]) -> bool:
    """A clause-review sentence naming every clause of the contract, listed and not (`Method: I read
    each clause (8.2, 9.1, 11.4, 12.3, 14.2)`): what was read, no verdict on the compliant ones."""
    every = {r: {sent[a:b] for a, b, role in occ if role == r} for r in ("own", "rival")}
    return len(every["own"]) == len(_items(c)) and len(every["rival"]) == len(set(c.rivals))


_RESTATED_AS = re.compile(
    r"(?<![\w'’])(?:that|this|it)(?:['’]s|\s+(?:should|must|ought\s+to|needs?\s+to|has\s+to)"
    r"(?:\s+(?:really|actually|instead))?\s+(?:be|read|say|show|have\s+been|reads?))"
    r"\s*(?:[:=]\s*)?(?:[$£€]\s*)?$",
    re.I,
)
"""A pronoun for the answer, an obligation and a copula right before another value (`that should
read 70.12%`, `it needs to be 61.5`): the value put in the answer's place."""


def _labels_another(c: SlotCheck, clause: str, start: int) -> bool:
    """The clause states another value (at `start`) under the slot's own label, every word of it,
    and says nothing of whose or which it is: no period, month or year, framing word, place of
    the world, status or name (`After re-checking, the share of the budget billed is 70.12%`):
    two candidates for one label. `In Q3 2025 the share ... was 61.50%` is context."""
    words = label_words(c.label)
    found = set(_WORD.findall(norm_periods(clause).casefold()))
    if not words or not words <= found:
        return False
    if _framed(_without_label_words(c, clause)):  # the label's own words frame nothing
        return False
    own = _label_word_set(c)
    names = [m for m in _CAP_WORD.finditer(clause) if m.start() > 0 and m.start() != start]
    return not any(m.group(0).casefold() not in own for m in names)


FRAMES = (
    "was", "were", "had", "been", "earlier", "first", "initially", "previously", "originally",
    "before", "prior", "old", "older", "former", "last", "from", "vs", "versus", "compared",
    "against", "than", "instead of", "rather than", "replaced", "replaces", "shows", "showed",
    "shown", "says", "said", "lists", "listed", "reads", "quoted", "floated", "estimate",
    "estimated", "estimates", "projected", "forecast", "budget", "budgeted", "plan", "planned",
    "target", "up from", "down from", "rose", "fell", "grew", "increase", "decrease", "change", "ignored",
    "ignore", "disregarded", "mentioned", "other", "another", "different",
)  # fmt: skip
"""Words that frame a known wrong value as context: where or when it comes from, what it is
compared with (`the deck shows 108.1`, `first floated 33.7`, `up from 88.0`)."""
_FRAME = _words_re(FRAMES)


COMPLIES = (
    "comply", "complies", "compliant", "conform", "conforms", "consistent", "in line", "meets",
    "meet", "matches", "match", "acceptable", "fine", "ok", "okay", "standard", "aligned",
    "within", "passes", "satisfies",
)  # fmt: skip
"""What a compliant clause named in the prose of a clause review is said to do (`Clause 9.1
complies with the playbook`); naming it otherwise (`9.1 is also questionable`) is the judge's."""
_COMPLIES = _words_re(COMPLIES)


_CHECK_VERB = re.compile(r"\b(?:check|verify|validate)\b", re.I)
"""A check still to make (`check the invite`, `cross-check with 5.5`), not one made (`checked`)."""
_CHECKED_OUT = re.compile(
    r"\b(?!(?:lets|us)\b)(?:[a-z]+s|they|both|all)\s+check\s+out"
    r"(?=\s*(?:[:.,;!]|$|\s+(?:fine|ok|okay|too|as\s+well)\b))",
    re.I,
)
"""A verdict of a check made: a plural subject that checks out, the end of its clause after it
(`The neighbouring cells check out:`)."""


def _check_to_make(t: str) -> bool:
    """A check still to make (`_CHECK_VERB`) in `t`, but not a check made (`_CHECKED_OUT`)."""
    done = [m.span() for m in _CHECKED_OUT.finditer(t)]
    return any(not any(a <= m.start() < b for a, b in done) for m in _CHECK_VERB.finditer(t))


_OFFERED = _words_re(["if", "otherwise", "else", "backup", "fallback", "works", "work"])
"""Beside another date or time: it is offered as well (`If that doesn't work, 17:00 is free too`,
`17:00 works as well`); `also` alone is context (`your calendar also has ... on April 10`)."""
_CONTACT = re.compile(
    r"\+\d[\d\s().-]{6,}|\b(?:street|st|avenue|ave|road|rd|suite|floor|tel|phone|fax|mobile)\b\.?",
    re.I,
)
"""A signature's phone number or address: its digits are not figures (`200 Market Street`)."""


def _numbered(c: SlotCheck) -> bool:
    """The check's items are clause numbers (`8.2`)."""
    return c.type == "text" and all(re.fullmatch(r"\d+(?:\.\d+)+", i) for i in _items(c))


SAYS_COMPLIES = (
    "comply", "complies", "complied", "complying", "compliant", "conform", "conforms",
    "conforming", "in line", "consistent", "meet", "meets", "acceptable", "fine", "ok", "okay",
    "aligned", "satisfies", "satisfy", "passes", "permissible", "in order", "within the playbook",
    "within the playbook's", "within playbook", "within policy", "borderline",
    "marginal", "marginally", "arguable", "arguably", "debatable", "grey area", "gray area",
    "close call", "judgment call", "judgement call", "ambiguous", "on the fence",
)  # fmt: skip
"""What a sentence of a clause review may say of a clause that leaves its deviation in doubt:
that it complies (or is fine) or that whether it deviates is a close call."""
_SAYS_COMPLIES = re.compile(r"(?<!-)" + _words_re(SAYS_COMPLIES).pattern, re.I)
_DEVIATES = re.compile(
    r"(?<![\w-])(?:deviat\w*|depart\w*|breach\w*|non-?complian\w*|non-?conform\w*"
    r"|outside|off-playbook)\b",
    re.I,
)
"""Words that say a clause deviates: negated (`does not deviate`), they say it does not."""
_NOT = re.compile(_NEGATION.pattern + r"|\bfail(?:s|ed|ing)?\s+to\b|\bfalls?\s+short\b", re.I)
_OTHERS = re.compile(r"\b(?:other|others|remaining|rest|all|every|each|any)\b", re.I)
_CLAUSE_NUMBER = re.compile(r"(?<![\w.])\d+\.\d+(?![\w]|\.\d)")


_REQUIRES = re.compile(
    r"\b(?:requires?|required|requiring|calls?\s+for|mandates?|stipulates?|specifies|sets?\s+out"
    r"|allows?|permits?|caps?\s+(?:it|this|them|liability|the\s+\w+)\s+at)\b[^;.\n]*",
    re.I,
)
"""A playbook's requirement quoted in a clause review (`the playbook requires payment within 45
days`, `which allows no more than 6 months`): its words state the rule, not the clause's verdict."""


def verdict(text: str) -> str:
    """`text` without the requirements it quotes (`_REQUIRES`): what it says of the clause itself
    (`Clause 5.3: the playbook requires payment within 45 days` says nothing of 5.3 complying)."""
    return _REQUIRES.sub(" ", text)


def _negated_within(clause: str, start: int, words: int = 3) -> bool:
    before = " ".join(clause[:start].split()[-words:])
    return bool(_NOT.search(before))


def listed_clause_doubted(c: SlotCheck, prose: str) -> str | None:
    """In a clause review, a sentence of the prose naming one of the check's own clauses (one the
    slot lists as deviating) that says it complies, is fine or is a close call, or negates its
    deviation (`Clause 8.2 does not deviate from the playbook`, `8.2 is borderline - it may
    actually comply`): the prose contradicts the list and a reader must weigh it. A clause of the
    sentence is read when it names the listed clause, or names no clause and no other ones (`the
    other clauses are in line` speaks of the rest); a complying word negated (`does not meet`,
    `fails to comply`) says it deviates."""
    if not _numbered(c):
        return None
    for sent in _SENTENCE_CUT.split(prose):
        if not any(role == "own" for _, _, role in _occurrences(c, sent)):
            continue
        for clause in clauses(sent):
            own = any(role == "own" for _, _, role in _occurrences(c, clause))
            if not own and (_CLAUSE_NUMBER.search(clause) or _OTHERS.search(clause)):
                continue
            clause = verdict(clause)
            said = [
                m for m in _SAYS_COMPLIES.finditer(clause) if not _negated_within(clause, m.start())
            ]
            denied = [m for m in _DEVIATES.finditer(clause) if _negated_within(clause, m.start())]
            for m in [*said, *denied][:1]:
                return f"the prose says a listed clause {m.group(0)!r}: {sent.strip()[:160]!r}"
    return None


_NONE_OF = re.compile(r"^\W*(?:none|neither|no\s+other|nor)\b", re.I)
"""A sentence opening by denying what it goes on to name (`None of the other clauses ... deviate`)."""


def left_out_clause_deviates(c: SlotCheck, prose: str) -> str | None:
    """In a clause review, a clause of the prose naming one of the clauses the slot leaves out (a
    compliant one: the check's rivals) and none it lists, that says it deviates (`Clause 8.2 also
    deviates from the playbook`) or negates its complying (`9.4 does not comply`): the prose
    contradicts the list, and a reader must weigh it."""
    if not _numbered(c):
        return None
    for sent in _SENTENCE_CUT.split(prose):
        for clause in clauses(sent):
            roles = {role for _, _, role in _occurrences(c, clause)}
            if "rival" not in roles or "own" in roles:
                continue
            if _NONE_OF.search(sent):
                continue  # "None of the other clauses (5.3, 15.1 and 12.4) deviate"
            clause = verdict(clause)
            said = [m for m in _DEVIATES.finditer(clause) if not _negated_within(clause, m.start())]
            denied = [
                m for m in _SAYS_COMPLIES.finditer(clause) if _negated_within(clause, m.start())
            ]
            for m in [*said, *denied][:1]:
                return (
                    f"the prose says a clause the slot leaves out {m.group(0)!r}: "
                    f"{sent.strip()[:160]!r}"
                )
    return None


def _framed(clause: str) -> bool:
    """A clause naming a known wrong value says whose or which it is: a place of the world, a
    period, a month or year, a framing word, a correction, a negation or a status. An unframed
    mention (`Honestly 108.1 feels like the one`, `108.1 holds up`) is the reader's to weigh."""
    return any(
        rx.search(clause)
        for rx in (_SOURCE, _PERIOD_WORD, _FRAME, _CORRECTION, _NEGATION, _STATUS, _YEAR_OR_MONTH)
    )


_YEAR_OR_MONTH = re.compile(
    r"\b(?:19|20)\d{2}\b|(?<![\w'])(?:"
    + "|".join(m for m in sorted(_MONTHS, key=len, reverse=True) if m != "may")
    + r")\b",
    re.I,
)


_ONTO_ANSWER = re.compile(
    rf"^\s*(?:the|this|that|my|our)\s+(?:[\w$.%-]+\s+)?{_ANSWER_NOUN}\b(?!\s*[:(]?\s*[$£€]?\d)",
    re.I,
)


def _sentence_doubt(c: SlotCheck, prose: str, allowed: list[float]) -> str | None:
    """A sentence naming another value of the kind (and not the slot's) whose other clause weighs
    something (`the deck is right and the workbook is out of date, so keep 187`): the reader
    cannot tell what the weighing word is about, unless it acts on a noun phrase that is not a
    value (`then confirmed the final one`)."""
    for sent in _SENTENCE_CUT.split(prose):
        t = norm_periods(sent)
        occ = [
            t[a:b] for a, b, role in _occurrences(c, sent)
            if role == "rival" or (role == "other" and not _is_allowed_number(c, t[a:b], allowed))
        ]  # fmt: skip
        if not occ or any(role == "own" for _, _, role in _occurrences(c, sent)):
            continue
        for clause in clauses(sent):
            if _occurrences(c, clause):
                continue  # weighed with its value, above
            word = _weighing(norm_periods(clause), c.type != "text")
            if word:
                return f"the prose says {word!r} beside {occ[0].strip()!r}: {sent.strip()[:160]!r}"
    return None


_PERCEIVED = re.compile(
    r"(?<![\w'’])(?:you|they|he|she|we|i|someone|others)\s+(?:may|might|could)\s+(?:already\s+)?"
    r"(?:have\s+(?:seen|noticed|heard|read|received|come\s+across|spotted)|recall|remember)\b",
    re.I,
)


def _perceived(t: str, m: re.Match[str]) -> bool:
    """The hedge `m` says only that someone may have seen or heard a thing (`the $28.5m figure
    you may have seen in your inbox`): it weighs the reader's memory, not the value."""
    return any(p.start() <= m.start() < p.end() for p in _PERCEIVED.finditer(t))


_CLASS_WORD = re.compile(
    "|".join(rx.pattern for rx in (_HEDGE, _AFFIRM, _CORRECTION, _STATUS, _DOUBT)), re.I
)


def _in_name(t: str, m: re.Match[str]) -> bool:
    """The word `m` stands in a run of capitalised words after the sentence's start with a word
    of no class in it (`relates to Coral Real S.A`): a name, not a weighing; a run of class
    words only (`Possibly Stale`) is no name."""
    return any(
        n.start() <= m.start() < n.end()
        and any(not _CLASS_WORD.fullmatch(w) for w in re.findall(r"[\w&'’-]+", n.group(0)))
        for n in _NAME_RUN.finditer(t)
    )


def _weighing(t: str, recommends: bool = True) -> str | None:
    """The first hedge, hedge mark or affirming word of a clause that does not act on a noun phrase
    naming the answer (`use this figure`, `confirmed the final one`), or None; `recommends`: also
    `use`, `keep`, `leave`... (of a figure; `the other projects use Datasite` is context)."""
    for rx in (_HEDGE_PROSE, _HEDGE_MARK, _AFFIRM if recommends else _AFFIRM_ONLY):
        for m in rx.finditer(t):
            if _ONTO_ANSWER.match(t[m.end() :]) or _TO_FIX.match(t[m.end() :]):
                continue
            if _in_name(t, m):
                continue
            if rx is _HEDGE_PROSE and _perceived(t, m):
                continue
            return m.group(0)
    return None


_CHECKING = re.compile(
    r"\b(?:verif\w*|check\w*|double[- ]check\w*|sanity[- ]check\w*|validat\w*|reconcil\w*"
    r"|confirm\w*|review\w*|sign(?:ed|s)?[- ]off|audit\w*)",
    re.I,
)
_WAITING = re.compile(r"\b(?:worth|needs|yet|still|pending)\b", re.I)
_PASSING_ON = re.compile(
    r"\b(?:circulate|forward|share|send|quote|use|rely|publish|distribute)\b", re.I
)
_UNTIL = re.compile(r"\b(?:yet|until|before|till)\b", re.I)


_PLACE_NOUN = re.compile(
    r"\s+(?:copy|copies|deck|decks|version|versions|file|files|folder|pack|workbook|sheet|tab"
    r"|document|doc|slide|slides|log|trail|channel|thread)\b",
    re.I,
)
_DETERMINER = re.compile(r"(?<![\w'])(?:the|this|that|our|your|their|a|an)\s+$", re.I)


_CHECK_NOUNS = frozenset(["review", "audit", "check", "reconciliation", "verification"])
"""Checking words that are nouns, which may name a place (`the review copy`); a participle (`a
confirmed version`) says what was done to it."""


def _names_place(clause: str, m: re.Match[str]) -> bool:
    """The checking word `m` is the name of a place of the world, between a determiner and a
    place noun (`the review copy`, `our audit file`): it names the place, and says nothing of a
    check made or to make (`I have not edited the review copy`)."""
    return bool(
        m.group(0).casefold() in _CHECK_NOUNS
        and _DETERMINER.search(clause[: m.start()])
        and _PLACE_NOUN.match(clause, m.end())
    )


def _pending(clause: str) -> str | None:
    """A clause saying the answer waits on a check (`Haven't had time to verify`, `Worth
    double-checking`, `Still being reviewed`) or is held back until later (`Don't circulate
    yet`): the words, or None."""
    check = next((m for m in _CHECKING.finditer(clause) if not _names_place(clause, m)), None)
    if check:
        before = " ".join(clause[: check.start()].split()[-4:])
        if _NEGATION.search(before) or _WAITING.search(clause):
            return check.group(0)
    neg = _NEGATION.search(clause)
    if neg and _PASSING_ON.search(clause, neg.end()) and _UNTIL.search(clause):
        return neg.group(0)
    return None


RETRACTS = (
    "correction", "corrections", "repost", "re-post", "resend", "re-send", "incoming", "hold off",
    "hold that", "stand by", "standby", "ignore", "disregard", "scratch", "scrap", "retract",
    "retracted", "withdraw", "withdrawn", "redo", "redoing", "rework", "reworking", "edit",
)  # fmt: skip
"""In a message (a post, a mail) read with the answer: words that take it back or announce
another (`Correction incoming`, `will repost`)."""
_RETRACT = _words_re(RETRACTS)
_WRONG_THING = re.compile(
    r"\b(?:wrong|incorrect)\s+(?:[\w-]+\s+)?(?:file|tab|sheet|quarter|period"
    r"|year|row|column|number|figure|value|version|cell|model|workbook|metric|project|channel"
    r"|post|message|line|label|unit|units|scale)s?\b",
    re.I,
)
_CHANGE = re.compile(
    r"\b(?:extension|extend(?:ed)?|move[ds]?|postpone[ds]?|reschedul\w*|push(?:ed)?\s+back|slips?"
    r"|shift(?:s|ed)?|defer(?:red)?|delay(?:ed)?|restate[ds]?|revis(?:e|ed|ion)|change[ds]?"
    r"|differ|differs|vary|varies)\b",
    re.I,
)


def _retracts(clause: str) -> str | None:
    """A message's clause, naming no value, that takes the answer back or announces another
    (`Correction incoming`, `wrong quarter, sorry`, `new number coming shortly`)."""
    m = _RETRACT.search(clause) or _WRONG_THING.search(clause)
    if m:
        return m.group(0)
    coming = _COMING.search(clause)
    if coming and _ANOTHER.search(clause) and not _SOURCE.search(clause):
        return coming.group(0)  # not "I'll send the updated deck tomorrow"
    return None


_ANOTHER = _words_re(["new", "updated", "revised", "corrected", "final", "proper", "real"])
_COMING = _words_re(["coming", "shortly", "soon", "later", "to follow", "tomorrow", "on monday"])


def _changes(clause: str) -> str | None:
    """A clause, naming no value, saying with a hedge that the answer may change (`The court may
    grant an extension`)."""
    m = _CHANGE.search(clause)
    return m.group(0) if m and _HEDGE_PROSE.search(clause) else None


_WAIT_TAIL = re.compile(r"\b(?:pending|until|till|awaiting|subject\s+to)\b.*$", re.I | re.S)
_VERB_BEFORE = re.compile(
    r"(?<![\w'])(?:to|will|'ll|can|could|would|shall|should|must|please|i|we|you|i'd|we'd)\s+$",
    re.I,
)
_OBJECT_AFTER = re.compile(
    r"\s+(?!(?:it|this|that|these|those|them|one|ones|up)\b)(?:[a-z][\w'-]*)", re.I
)


def _status_verb(clause: str, m: re.Match[str]) -> bool:
    """A status word used as a verb with its own object (`Happy to draft proposed mark-ups`, `We
    can draft the side letter`): it says what the writer offers to do, not what the answer is; a
    verb whose object points back (`happy to draft it`) is not read so."""
    return bool(
        " " not in m.group(0)
        and _VERB_BEFORE.search(clause[: m.start()])
        and _OBJECT_AFTER.match(clause, m.end())
    )


_NAMING_BEFORE = re.compile(
    r"\b(?:the|a|an|any|that|those|earlier|other|his|her|their|its|very)\s+(?:very\s+)?$", re.I
)
"""A determiner before a status word: it names another thing (`the preliminary estimate`)."""
_TO_FIX = re.compile(
    r"\s+(?:updated|corrected|fixed|changed|replaced|amended|removed|deleted|struck|taken\s+out)\b",
    re.I,
)
"""After `should be`: the value is to be fixed, not put forward (`should be updated`)."""


def _word(rx: re.Pattern[str], text: str) -> str | None:
    m = rx.search(text)
    return m.group(0) if m else None


def _near_mark(t: str, start: int, end: int) -> str | None:
    around = t[max(0, start - 3) : end + 3]
    m = _HEDGE_MARK.search(around)
    return m.group(0) if m else None


def _negated_before(t: str, start: int) -> str | None:
    before = " ".join(t[:start].split()[-3:])
    m = _NEGATION.search(before)
    return m.group(0) if m else None


def _is_allowed_number(c: SlotCheck, shown: str, allowed: list[float]) -> bool:
    if c.type != "number":
        return False
    toks = _numbers(shown)
    return bool(toks) and any(
        close(m, a, 0.005) for m in toks[0].meanings(c.scale) for a in allowed
    )


# --------------------------------------------------------------------------- what else the slot says

_PAREN = re.compile(r"\(([^()]*)\)(?!\.\w)")
"""A parenthesis, not one inside a file name (`MSA (executed).docx`)."""
_FILE_AHEAD = r"(?![^,;()\n]*?\.(?:docx?|xlsx?|pptx?|pdf|csv|md|txt)\b)"
_SEG_CUT = re.compile(r",\s|;|\s[-–—]\s" + _FILE_AHEAD + r"|(?<!\d)\.\s|(?<=\d)\.\s(?=[A-Z])")
"""Where a slot's value is cut into segments: not at a dash inside a file name (`North Kestrel
- Billing.xlsx`)."""


def decimals_shown(shown: str) -> int:
    """The decimals a written figure shows (`1,230.80` -> 2, `13` -> 0)."""
    m = re.search(r"\d+(?:\.(\d+))?", shown.replace(",", ""))
    return len(m[1]) if m and m[1] else 0


def off_asked_precision(
    c: SlotCheck, plain: tuple[float, ...], shown_decimals: int, factor: float | None
) -> str | None:
    """Why a figure of the check's value (within its tolerance) is still not the value at the
    decimals the task asks (`c.decimals`), or None where it is:
    - shown with fewer decimals than asked, a rounding that changes the figure (`13%` or `12.9%`
      for 12.95%, `$122m` for $121.9m); zeros dropped are no change (`$4m` for $4.0m);
    - shown as finely as asked or finer, more than half the asked last digit from the value
      (`13.00%` or `12.97%` for 12.95%, `$122.0m` for $121.9m): off at the precision asked, though
      within the tolerance; `12.953%` and `12.95%` are the figure, and a value halfway between two
      roundings (12.945) passes either.
    The tolerance stays for forms naming no decimals (`<percentage>`). `plain` are the digits'
    values, `factor` the magnitude word's multiplier (None: a bare figure, in the slot's unit or
    whole units)."""
    if c.decimals is None or not isinstance(c.value, int | float):
        return None
    unit = c.scale or 1.0
    value = float(c.value)
    want = round(value, c.decimals)
    asked = 10.0**-c.decimals
    half = asked / 2 + 1e-9 * max(1.0, abs(value))
    why = None
    for p in plain:
        for mult in (factor,) if factor is not None else (unit, 1.0):
            m = p * mult / unit  # in the slot's unit
            if not close(m * unit, value * unit, c.rel_tol, c.abs_tol * unit):
                continue  # not this reading of the figure
            step = 10.0**-shown_decimals * mult / unit  # its last digit, in the slot's unit
            if step <= asked * (1 + 1e-9):
                if abs(m - value) <= half:
                    return None
                why = f"not {want:.{c.decimals}f} at the {c.decimals} decimal(s) asked"
            elif close(m, want, 0.0):
                return None
            else:
                why = (
                    f"coarser than the {c.decimals} decimal(s) asked, and not {want:.{c.decimals}f}"
                )
    return why


def _restates(c: SlotCheck, seg: str) -> bool:
    """`seg` holds the slot's own value again (a rounding of it, another spelling) and no other
    value of the kind."""
    t = norm_periods(seg)
    if odd_marks(t) or _HEDGE_MARK.search(t):
        return False  # "(~122)", "(122†)": not a plain restatement
    if c.type == "number":
        assert isinstance(c.value, int | float)
        toks = [k for k in _numbers(t) if _comparable(k, c)]
        want = float(c.value) * (c.scale or 1.0)

        def rounds(k: NumToken) -> bool:
            half = 0.5 * 10 ** -decimals_shown(t[k.start : k.end]) * (c.scale or 1.0)
            return _number_is(k, c) or any(
                abs(m - want) <= half + 1e-12 for m in k.meanings(c.scale)
            )

        return bool(toks) and all(rounds(k) for k in toks)
    if c.type == "time":
        h, mi = (int(x) for x in str(c.value).split(":"))
        found = find_times(t)
        return bool(found) and all(f.values[0] == h * 60 + mi for f in found)
    if c.type == "date":
        want = date.fromisoformat(str(c.value))
        found = find_dates(t, want.year)
        return bool(found) and all(want in f.values for f in found)
    return False


def drop_restatements(c: SlotCheck, text: str) -> str:
    """The slot's text without parentheses that restate its value (`18.78% (about 19% rounded)`,
    `16:00 UTC (4 pm)`): a restatement neither hedges nor offers another value."""
    return _PAREN.sub(lambda m: " " if _restates(c, m[1]) else m[0], text)


CURRENCY_WORDS = ("dollars", "dollar", "us dollars", "usd")
"""A currency written as a word after a figure (`1.08m dollars`, `121.9 million US dollars`): the
figure's unit, read by `_at_unit` like a `$` before it, not a word about the value."""
_DECOR = _words_re(
    [*_UNIT_WORDS, "hours", "hour", "hrs", "h", "times", "eur", "gbp", "am", "pm", "a.m", "p.m",
     "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
     "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun", "bps", "and",
     "per cent", "on", "at", "one hour", "minutes", "clause", "clauses", "section", "sections",
     *_MONTHS, *ZONES, "time", "in", "a", "an", "the", "that's", "that", "is", "which", "i.e",
     "rounded", "rounding", "rounded to", "one", "two", "decimal", "decimals", "place", "places", "dp",
     "nearest", *CURRENCY_WORDS]
)  # fmt: skip
_SOURCED = re.compile(
    r"\b(?:from|per|in|on|via|according\s+to|source:?)\s+[^,;]*?(?:"
    + _SOURCE.pattern.replace("(?<![\\w'])", "(?<![\\w'])", 1)
    + ")",
    re.I,
)
"""Where a value comes from, said with a preposition (`from the FY2025 model`, `per the deck`)."""
_CITE = re.compile(
    r"\b(?:[Ff]rom|[Pp]er|[Ss]ource|[Aa]ccording to|[Vv]ia)\s+(?:the\s+)?[A-Z#/]"
    r"|\b[Ss]ource\s+(?:for|of)\s+[^:;\n]{1,60}:\s*(?:the\s+)?[A-Z#/]"
)
"""A citation by name: `per Noble Harbor`, `from #deals`, `Source for the figure above: Noble
Harbor` (a capitalised name or a path, not `from a skim`)."""
_PERIOD_WORD = re.compile(r"\b(?:fy\d{4}|q[1-4]_\d{4})\b", re.I)


def _bare(c: SlotCheck, seg: str) -> str:
    """The words of a segment of the slot once its values, units, periods and marks are gone."""
    t = norm_periods(seg)
    spans = [(f.start, f.end) for f in find_dates(t, 2000)] + [
        (f.start, f.end) for f in find_times(t)
    ]
    for a, b in sorted(spans, reverse=True):
        t = t[:a] + " " + t[b:]
    t = _PERIOD_WORD.sub(" ", t)
    t = re.sub(r"[$£€]?\d[\d,.:]*\s*(?:%|x\b)?", " ", t)
    t = _DECOR.sub(" ", t)
    return " ".join(re.findall(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", t))


def _segments(text: str) -> list[str]:
    inner = [m[1] for m in _PAREN.finditer(text)]
    outer = list(_SEG_CUT.split(_PAREN.sub(" ", text)))
    return [*outer[:1], *(s for p in [*outer[1:], *inner] for s in _SEG_CUT.split(p))]


NAMING_WORDS = frozenset(
    ["partner", "lead", "associate", "counsel", "manager", "director", "analyst", "principal",
     "head", "team", "project", "matter", "client", "firm", "engagement", "deal", "figure",
     "number", "value", "metric", "line", "item", "period", "year", "quarter", "name", "sent",
     "posted", "and", "with", "cap", "senior", "junior", "general", "finance", "legal", "docket",
     "case", "court", "ref", "reference", "id", "room", "floor", "building", "provider",
     "platform", "vdr", "virtual", "data", "first", "second", "third", "fourth", "fifth",
     "ground", "upper", "lower", "level", "wing", "main", "large", "small", "boardroom"]
)  # fmt: skip
"""Lower-case words that may stand beside a name or a metric in a text slot (a role, what the item
is); capitalised words are names and titles (`Crystal Zephyr lead`), and beside clause numbers
any title (`8.2 (liability cap)`). Any other word (`I think`, `for now`) is left to the judge."""
_ADDRESS = re.compile(r"<?[\w.+'-]+@[\w-]+(?:\.[\w-]+)+>?")


def _names_only(c: SlotCheck, seg: str) -> bool:
    """`seg` of a text slot holds its items, names and titles, and lower-case naming words only."""
    if any(rx.search(seg) for rx in (_DOUBT, _STATUS)):
        return False
    t = _ADDRESS.sub(" ", norm_periods(seg))
    found = _find_items(t, [*_items(c), *c.rivals])
    spans = sorted((sp for spans in found.values() for sp in spans), reverse=True)
    for a, b in spans:
        t = t[:a] + " " + t[b:]
    t = _PERIOD_WORD.sub(" ", _DECOR.sub(" ", t))
    # a clause's title in its own brackets ("8.2 (liability cap)"), not words about a number
    numbered = not spans and all(re.fullmatch(r"\d+(?:\.\d+)*", i) for i in _items(c))
    for w in re.findall(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", t):
        if w.casefold() in ("i", "i'm", "i'd", "i've", "i'll", "we", "we're", "you"):
            return False
        if w[0].isupper() or w.casefold() in _STOP or w.casefold() in NAMING_WORDS:
            continue
        if numbered:
            continue  # a clause's title beside its number: "8.2 (liability cap)"
        if _SOURCE.fullmatch(w):
            continue
        return False
    return True


def slot_residue(c: SlotCheck, value: str, allowed: Sequence[float] = ()) -> str | None:
    """What the slot says beyond its value (docs/contracts.md, "What else a slot may say"): its
    value once more, its unit, a period, a source (a place of the world, a path, a `#channel`) or,
    for a meeting, its end are read; any other words (`provisional`, `first pass`, `I think`,
    `TBC`) say something about the value that the reader cannot weigh: the segment, else None."""
    odd = odd_marks(value)
    if odd:
        return odd
    if c.wrong_value:
        return None
    text = drop_restatements(c, norm_periods(value))
    if c.type == "number":
        kinds = [t for t in _numbers(text) if _other_kind(t, c)]
        if kinds:  # "12.95% to 10.02x": a percentage in a multiple's slot
            return (
                f"{text.strip()} (a figure of another kind: {text[kinds[0].start : kinds[0].end]})"
            )
    own_periods = set(_PERIOD_WORD.findall(norm_periods(c.label).casefold()))
    other = [p for p in _PERIOD_WORD.findall(text.casefold()) if p not in own_periods]
    if own_periods and other and c.type != "text":
        return f"{text.strip()} (another period: {other[0]})"
    if c.type == "time" and not c.day:
        day = _WEEKDAY.search(text) or next(iter(find_dates(text, 2000)), None)
        if day:  # a day beside the time that the check cannot compare
            return text.strip()
    segs = _segments(text)
    for k, seg in enumerate(segs):
        if not seg.strip() or not _bare(c, seg):
            continue
        if c.type == "text" and _names_only(c, seg):
            continue  # the items are read by `_read_items`; words beside them name them
        if _cites(c, seg) or _excludes(c, seg) or _derives(c, seg, allowed):
            continue
        if k > 0 and _courtesy(c, seg):
            continue
        if c.type == "time" and {w.casefold() for w in _bare(c, seg).split()} <= END_WORDS:
            continue  # "14:00 to 15:00": `read_value` read the end
        if k == 0:
            return seg.strip()
        if c.type == "time" and _is_end(c, seg):
            continue
        return seg.strip()
    return None


COURTESY = re.compile(
    r"^\s*(?:let\s+me\s+know|shout|ping\s+me|reach\s+out|feel\s+free|happy\s+to|thanks|thank\s+you"
    r"|cheers|best|regards|hope\s+this\s+helps|any\s+questions|inputs?\s+available|details"
    r"|more\s+detail|full\s+workings|workings)\b",
    re.I,
)
"""A sentence after a slot's value that only offers help or more detail (`Shout if anything looks
off in your models.`, `Inputs available on request.`): an allow-list of openings."""


def _courtesy(c: SlotCheck, seg: str) -> bool:
    """`seg` is a courtesy sentence: a known opening, no value of the slot's kind, and nothing that
    weighs or points back at the answer."""
    if not COURTESY.match(seg) or _occurrences(c, seg):
        return False
    if any(
        rx.search(seg)
        for rx in (_NEGATION, _CORRECTION, _AFFIRM, _HEDGE_PROSE, _DOUBT, _STATUS, BACKREF)
    ):
        return False
    return not odd_marks(seg)


_PLACE_NUMBER = re.compile(
    r"\b(?:row|rows|column|col|line|slide|page|p|tab|cell|sheet|section|clause|note|item|no)\.?\s*#?$",
    re.I,
)


_OPINION = re.compile(
    r"(?<![\w'])(?:I|we)\s+(?:\w+\s+)?(?:think|believe|suspect|feel|reckon|guess|doubt)\b", re.I
)
"""The writer's opinion beside a place (`but I think the model itself is broken`): it weighs the
source, so the segment is no mere citation."""


def _cites(c: SlotCheck, seg: str) -> bool:
    """`seg` says only where the value comes from: it names a place of the world (a path, a
    `#channel`, a name after `per`/`from`), weighs nothing (no negation, correction, affirmation,
    hedge or doubt) and holds no other value of the slot's kind (`the invite says 15:00`)."""
    places = [
        m for m in _SOURCE.finditer(seg) if m.group(0).casefold() not in ("source", "sources")
    ]
    if not (places or _CITE.search(seg)):
        return False  # "(source: gut feel)" names no place
    weighs = (
        _NEGATION,
        _CORRECTION,
        _AFFIRM_ELSE,
        _HEDGE_PROSE,
        _DOUBT,
        _STATUS,
        _STALE,
        _CHECK_VERB,
        EXCLUDES,
        _OPINION,
    )
    if any(rx.search(seg) for rx in weighs):
        return False
    t = norm_periods(seg)
    return not any(
        role != "own" and not _PLACE_NUMBER.search(t[:a].rstrip())
        for a, _, role in _occurrences(c, seg)
    )


EXCLUDES = _words_re(
    ["excluded", "excluding", "exclude", "excludes", "ignored", "ignoring", "disregarded",
     "omitted", "left out", "set aside"]
)  # fmt: skip
"""Words that say a place was not used (`archived versions excluded`)."""


def _excludes(c: SlotCheck, seg: str) -> bool:
    """`seg` says only which places the value does not come from (`archived versions excluded`,
    `excluding the draft deck`): a place of the world with an exclusion word, no value of the
    slot's kind and nothing that weighs (a negation, correction, affirmation, hedge or doubt);
    stale and status words name the places left out."""
    places = [
        m for m in _SOURCE.finditer(seg) if m.group(0).casefold() not in ("source", "sources")
    ]
    if not places or not EXCLUDES.search(seg) or _occurrences(c, seg):
        return False
    if not (_STALE.search(seg) or _STATUS.search(seg)):
        return False  # "current version excluded" leaves the value without its source
    weighs = (_NEGATION, _CORRECTION, _AFFIRM, _HEDGE_PROSE, _HEDGE_MARK, _DOUBT, _CHECK_VERB)
    if any(rx.search(seg) for rx in weighs) or odd_marks(seg):
        return False
    rest = EXCLUDES.sub(" ", _SOURCE.sub(" ", _STALE.sub(" ", _STATUS.sub(" ", _bare(c, seg)))))
    return all(w.casefold() in _STOP or w.casefold() in ("and", "all", "any") for w in rest.split())


DERIVES = frozenset(
    ["from", "computed", "calculated", "derived", "using", "based", "on", "of", "over", "divided",
     "by", "and", "inputs", "input", "i.e", "as", "to", "up", "down", "rose", "fell", "grew"]
)  # fmt: skip
"""The words a segment naming the inputs a value is computed from may hold beside them."""


def _derives(c: SlotCheck, seg: str, allowed: Sequence[float]) -> bool:
    """`seg` names only the figures the value is computed from (`from 1,082.6 and 1,310.0`):
    every number in it is one of the task's figures (`allowed`: its other slots' values and the
    numbers of its instruction), none of the slot's kind and value, in `DERIVES` words only."""
    if c.type != "number" or not allowed or odd_marks(seg) or _HEDGE_MARK.search(seg):
        return False
    t = norm_periods(seg)
    toks = _numbers(t)
    if not toks or any(_comparable(k, c) and not _input_figure(k, c, allowed) for k in toks):
        return False
    free = sorted({round(a, 9) for a in allowed})
    for k in toks:  # each figure one of the task's own, each of those named once
        hit = next((a for a in free if any(close(p, a, 0.005) for p in k.plain)), None)
        if hit is None:
            return False
        free.remove(hit)
    words = [w.casefold() for w in _bare(c, t).split()]
    if any(_comparable(k, c) for k in toks) and not (
        len(toks) >= 2 and set(words) & _DERIVES_VERBS
    ):  # figures of the slot's size: only as the inputs of a computation named as one
        return False  # ("33.7 in FY2025" is a second value)
    return all(w in DERIVES for w in words)


_DERIVES_VERBS = frozenset(
    ["from", "computed", "calculated", "derived", "using", "based", "divided", "over"]
)


def _input_figure(k: NumToken, c: SlotCheck, allowed: Sequence[float]) -> bool:
    """A figure of the slot's size that is one of the task's other figures (an input's value:
    `51.08% (computed from 28.5 and 55.8)`), neither the slot's own value nor one of its rivals."""
    rivals = [float(r) for r in c.rivals if re.fullmatch(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", r)]
    return (
        any(close(p, a, 0.005) for p in k.plain for a in allowed)
        and not _number_is(k, c)
        and not any(close(p, r, 0.005) for p in k.plain for r in rivals)
    )


def _without_derivations(
    c: SlotCheck, lines: list[SlotLine], allowed: Sequence[float]
) -> list[SlotLine]:
    """Slot lines without the parentheses that name only the task's figures the value is computed
    from (`_derives`: `18.78% (from 442 to 525)`, the change from one of the task's figures to
    another): a derivation, not a range or a second value of the slot's kind."""
    out = []
    for ln in lines:
        value = _PAREN.sub(lambda m: " " if _derives(c, m[1], allowed) else m[0], ln.value)
        value = " ".join(value.split())
        out.append(
            ln if value == ln.value else SlotLine(ln.index, ln.label, ln.words, value, ln.text)
        )
    return out


SLOT_MARKS = frozenset(".,;:()[]'’\"“”-–—$£€%/&#@<>_×")
"""The marks a slot's value may hold beside letters, digits and spaces: those of numbers, dates,
times, units, sentences, paths and addresses. Any other mark (an emoji, `†`, `*`, `¹`, `→`, `≈`,
`±`, `~`, `?`, `!`) says something about the value the reader cannot weigh."""


def odd_marks(value: str) -> str | None:
    """The marks of a slot's value outside `SLOT_MARKS` (an allow-list, not a list of symbols to
    refuse), or None."""
    odd = [ch for ch in value if not (ch.isalpha() or ch.isdecimal() or ch.isspace())]
    odd = [ch for ch in odd if ch not in SLOT_MARKS]
    return "".join(dict.fromkeys(odd)) or None


END_WORDS = frozenset(
    ["end", "ends", "ending", "ended", "until", "till", "to", "through", "finish", "finishes",
     "finishing", "wraps", "wrapping", "runs", "running", "close", "closes", "closing", "lasts",
     "for", "an", "one", "hour", "the", "meeting", "call", "it", "we", "by", "from", "starts",
     "starting", "start"]
)  # fmt: skip
"""The words a slot's segment naming a meeting's end may hold beside the end's time."""


def _is_end(c: SlotCheck, seg: str) -> bool:
    """`seg` names the meeting's end, one hour after its start, and only that."""
    h, mi = (int(x) for x in str(c.value).split(":"))
    found = find_times(norm_periods(seg)) or _dotted_times(seg)
    words = {w.casefold() for w in _bare(c, seg).split()}
    return (
        bool(found) and all(f.values[0] == h * 60 + mi + 60 for f in found) and words <= END_WORDS
    )


ROUNDING_WORDS = frozenset(
    ["the", "this", "that", "these", "all", "result", "results", "figure", "figures", "value",
     "values", "number", "numbers", "answer", "multiple", "percentage", "share", "ratio", "metric",
     "is", "are", "was", "were", "has", "have", "been", "shown", "given", "rounded", "to", "at",
     "nearest", "one", "two", "three", "four", "decimal", "decimals", "place", "places", "dp",
     "whole", "significant", "digits", "end", "only", "a", "an", "of", "in"]
)  # fmt: skip
"""The words of a sentence that says only how the answer is rounded."""


def _rounding_note(sentence: str) -> bool:
    """A sentence saying only how the answer is rounded (`The result is rounded to two
    decimals.`): a rounding word, words of `ROUNDING_WORDS` only, no value, no mark outside the
    slot's marks."""
    words = re.findall(r"[^\W\d_]+(?:['’.-][^\W\d_]+)*", sentence)
    return (
        bool(re.search(r"\bround(?:ed|ing)?\b", sentence, re.I))
        and not number_tokens(sentence)
        and not odd_marks(_MARKS.sub(" ", sentence))
        and all(w.casefold() in ROUNDING_WORDS for w in words)
    )


_OPERAND_BEFORE = re.compile(r"\b(?:by|from|over|using|against|between|and)\s+$", re.I)


OPERAND_WORDS = frozenset(
    ["difference", "between", "period", "periods", "change", "gap", "measured", "taken",
     "relative", "growth", "base", "quarter", "quarters", "year", "years", "figures", "against",
     "minus", "less", "plus", "times", "multiplied", "subtracted", "added", "ratio", "quotient"]
)  # fmt: skip
"""Beside the place's label words, `DERIVES` and `METHOD_WORDS`, the words a line naming what
the answer is computed from may hold (`Change computed as the difference between the two periods
divided by the Q3 2025 figure`)."""


def _without_label_words(c: SlotCheck, text: str) -> str:
    """`text` with the words of the slot's label blanked: they name the answer, and weigh nothing
    (`correct` of a `Correct value` slot, `budget` of a share of the budget)."""
    own = _label_word_set(c)
    return re.sub(r"[A-Za-z]+", lambda m: " " if m.group(0).casefold() in own else m.group(0), text)


def _label_word_set(c: SlotCheck) -> set[str]:
    """Every word of the slot's label, casefolded (`label_words` leaves out stop and unit words)."""
    return set(_WORD.findall(c.label.casefold()))


def _names_input(c: SlotCheck, part: str, ref: re.Match[str], line: str) -> bool:
    """`ref` points at one of the answer's inputs as an operand, not at the answer: a figure of one
    period where the label spans several, after a preposition of a derivation (`divided by the Q3
    2025 figure` beside a Q3-to-Q4 change), or a place word after the inputs or another slot's
    label, in a noun phrase after one (`computed from the two inputs above`), the line ending
    there. What the prose says of an input itself (`the Q4 2025 figure is out of date`, `divided
    by the Q3 2025 figure, which nobody has verified`) stays a comment on the answer."""
    tail = norm_periods(line).split(ref.group(0), 1)
    if len(tail) < 2 or (re.search(r"\w", tail[1]) and not _source_only(tail[1])):
        return False  # the line goes on after the operand (`..., which nobody has verified`)
    periods = set(_PERIOD_WORD.findall(norm_periods(c.label).casefold()))
    named = set(_PERIOD_WORD.findall(ref.group(0).casefold()))
    head = part[: ref.start()]
    if named and len(periods) > 1 and named < periods:
        return bool(_OPERAND_BEFORE.search(head))  # an operand, not `the Q4 figure is stale`
    before = head.split()
    if not before or not re.fullmatch(r"above|earlier|previous|preceding", ref.group(0), re.I):
        return False
    others = {w for lab in c.others for w in label_words(lab)}
    word = before[-1].casefold().strip(".,;:()")
    return (word in ("input", "inputs") or word in others - label_words(c.label)) and bool(
        _OPERAND_OF.search(head)
    )


_SOURCE_TAIL = re.compile(
    r"^\W*(?:(?:both\s+|all\s+)?(?:taken|read|pulled|sourced|drawn|copied)\s+(?:directly\s+)?)?"
    r"(?:from|per|in|out\s+of)\s+[^,;]*$",
    re.I,
)


def _source_only(tail: str) -> bool:
    """What follows an operand says only where the inputs come from (`, taken from the current
    files.`: a source phrase weighing nothing, naming nothing old) or how the result is rounded
    (`and rounded to two decimals.`, `_rounding_note`)."""
    t = tail.strip().rstrip(".")
    if _rounding_note(re.sub(r"^\W*(?:and|then)\s+", "", t, flags=re.I)):
        return True
    return bool(
        _SOURCE_TAIL.match(t)
        and _SOURCE.search(t)
        and not any(
            rx.search(t) for rx in (_NEGATION, _CORRECTION, _HEDGE_PROSE, _DOUBT, _STALE, _STATUS)
        )
    )


_OPERAND_OF = re.compile(
    r"\b(?:by|from|over|using|against|between|and|on|of)\s+(?:\S+\s+){1,4}$", re.I
)
"""A preposition of a derivation before a noun phrase (`from the two inputs above`)."""


def _operand(c: SlotCheck, line: str, part: str, ref: str) -> bool:
    """`ref` names a figure by its period (`the Q3 2025 figure`) after a preposition of a
    derivation (`divided by the Q3 2025 figure`), in a line of method words only (no number, and
    words of `OPERAND_WORDS`, `METHOD_WORDS`, `DERIVES` and the place's labels): it says what is
    computed from the figure, nothing of its value (the caller keeps only refs whose periods are
    the label's)."""
    t = norm_periods(_strip_marks(line))
    if not _PERIOD_WORD.search(ref) or _numbers(t):
        return False
    own = {w for lab in [c.label, *c.others] for w in label_words(lab)}
    free = own | DERIVES | METHOD_WORDS | OPERAND_WORDS | _STOP
    if not all(w.casefold() in free for w in _bare(c, _PERIOD_WORD.sub(" ", t)).split()):
        return False
    p = norm_periods(part)
    k = p.find(ref)
    return k >= 0 and bool(_OPERAND_BEFORE.search(p[:k]))


_FINAL = re.compile(
    r"^\s*(?:and\s+|but\s+|so\s+)?(?:this|these|(?:this|these|the)\s+(?:one|figure|figures|number"
    r"|numbers|value|values|answer|inputs)(?:\s+above)?)\s+(?:(?:is|are|['’]s)\s+(?:now\s+)?"
    r"(?:final|confirmed|firm|definitive|current|up[- ]to[- ]date)|stands?)[\s,]*$",
    re.I,
)
"""A clause that only says the answer it points at is final or stands (`This figure is final`,
`but the inputs above are final`, `so the figures above stand`)."""
_UNCHANGED = re.compile(
    r"^\s*(?:and\s+|but\s+|so\s+)?(?:nobody|no\s+one|no-one|none\s+of\s+them)\s+(?:has\s+|had\s+)?"
    r"[a-z]+ed(?:\s*,?\s+(?:or|nor|and)\s+[a-z]+ed)?\s+(?:it|this|that\s+figure|the\s+figure)"
    r"(?:\s+(?:afterwards|since|later|after\s+that|since\s+then))?[\s,]*$",
    re.I,
)
"""A clause that only says nobody changed the answer (`nobody changed or corrected it
afterwards`): it affirms the answer, and its `or` joins what is denied."""
_CONTRAST = re.compile(
    r"^\s*(?:but|though|although|however|yet|except|unless|until|till|pending)\b(?=\W*\w)", re.I
)
"""A clause opening that turns against what came before (not a closing `yet`: `not in yet`)."""


def _without_final(sentence: str) -> str:
    """`sentence` without its clauses that only call the answer final (`_FINAL`) or unchanged
    (`_UNCHANGED`), when no later clause of the sentence turns against them (`This figure is
    final, but ...`) and no `yet` closes them (`Nobody has corrected it yet`): such a clause
    affirms the answer and weighs no other value. The caller reads it only where the prose
    names no other value of the slot's kind, so that `this` can be nothing but the answer."""
    parts = clauses(sentence)

    def affirms(k: int) -> bool:
        later = parts[k + 1 :]
        return bool(
            (_FINAL.match(parts[k]) or _UNCHANGED.match(parts[k]))
            and not any(_CONTRAST.match(q) for q in later)
            and not (later and later[0].strip(" ,;").casefold() == "yet")
        )

    keep = [p for k, p in enumerate(parts) if not affirms(k)]
    return sentence if len(keep) == len(parts) else "; ".join(p.strip(" ,;") for p in keep)


_ON_THIS = re.compile(
    r"\b(?:send|sent|say|said|write|wrote|written|post|posted|add|added|reply|replied|mail|mailed)"
    r"\s+(?:anything|nothing)(?:\s+(?:further|else|more))?\s+(?:on|about|regarding)\s+this\s*$",
    re.I,
)
"""`this` as the matter someone wrote nothing about (`did not send anything on this`): the thread's
subject, not the answer (read so only where the part names none of the slot's own values)."""


_LEFT_OUT = re.compile(
    r"\b(?:(?:is|was|are|were)\s+not\s+used|(?:isn|wasn|aren|weren)['’]t\s+used"
    r"|none\s+of\s+(?:it|this|that|them)\s+(?:feeds|goes\s+into|enters))"
    r"\s+(?:above|here|in\s+the\s+answer|(?:this|the)\s+(?:metric|figure|answer|calculation))\b",
    re.I,
)


def _left_out(c: SlotCheck, part: str) -> bool:
    """`part` only says that something else is not used for the answer (`it is a different
    measure and is not used above`, `none of it feeds this metric`): it names none of the slot's
    own values, a place only if it calls it stale or by a status (`the archived workbook`), and
    once the saying is gone it weighs nothing and points at nothing."""
    m = _LEFT_OUT.search(part)
    if not m or any(role == "own" for _, _, role in _occurrences(c, part)):
        return False
    if _SOURCE.search(part) and not (_STALE.search(part) or _STATUS.search(part)):
        return False  # "the latest workbook is not used above": the answer's source, left out
    rest = part[: m.start()] + " " + part[m.end() :]
    rest = re.sub(r"(?i)^\W*(?:and|but|so)?\s*(?:it|this|that)?\b", " ", rest)
    return not (BACKREF.search(rest) or _POINTED.search(rest) or _weighs(_MARKS.sub(" ", rest)))


_COURTESY = re.compile(
    r"\b(?:(?:just\s+)?in\s+case|hope|hopefully)\s+(?:it|this|that)\s+(?:helps?|is\s+(?:useful"
    r"|helpful|of\s+use)|comes\s+in\s+handy)\b"
    r"|\b(?:just\s+)?in\s+case\s+(?:anyone|anybody|someone|somebody|you|they|the\s+team)\s+"
    r"(?:needs?|wants?|asks?\s+for)\s+(?:it|this|them)\b",
    re.I,
)
"""A courtesy whose pointer is the help given, not a comment on the answer (`In case it helps
with the board pack`, `in case anyone needs it`)."""


_IDENTITY = re.compile(
    r"^\W*(?:(?:to\s+be\s+(?:explicit|clear)|in\s+short|for\s+(?:clarity|reference)|again"
    r"|i\.e\.|that\s+is)\s*[:,]\s*)?(?:this|that|it|(?P<value>[$£€]?\d[\d,.]*\s*[%a-z]{0,3}))"
    r"\s+(?:is|was)\s+(?:the|our|their)\s+(?P<rest>.+)$",
    re.I,
)
_IDENTITY_WORDS = frozenset(
    ["agreed", "between", "and", "as", "recorded", "stated", "shown", "listed", "given", "set",
     "taken", "directly", "from", "document", "file", "workbook", "for", "of", "with", "under",
     "per", "the", "in", "on", "to", "by"]
)  # fmt: skip
"""Beside the task's and the label's words and names, the words a clause saying what the answer is
may hold (`This is the annual contract value agreed between Granite Ltd and Noble Harbor, as
recorded in /Matters/...docx`)."""


def _identifies(c: SlotCheck, clause: str, known: frozenset[str], foreign: Sequence[str]) -> bool:
    """The whole clause says only what the answer is, in the task's own words (`known`, the
    instruction's): `this`, `that`, `it` or the slot's own value, `is the`, then the task's and the
    label's words, names (none of `foreign`, the world's projects the task does not name), paths
    and `_IDENTITY_WORDS` (`To be explicit: $4.0m is the annual contract value for Noble Harbor`):
    a restatement, no comment; one word more (`the value I guessed`, `, probably`) is read."""
    m = _IDENTITY.match(norm_periods(clause))
    if not m or not known:
        return False
    if any(re.search(re.escape(n), clause, re.I) for n in foreign):
        return False
    if m["value"] and not any(role == "own" for _, _, role in _occurrences(c, m["value"])):
        return False
    rest = _NAME_RUN.sub(" ", " " + m["rest"])
    rest = re.sub(r"\S*/\S*", " ", _CAP_WORD.sub(" ", rest))
    words = set(_WORD.findall(rest.casefold()))
    return bool(words & known) and words <= known | _label_word_set(c) | _IDENTITY_WORDS | _STOP


def comment_on_answer(
    c: SlotCheck,
    text: str,
    after: int,
    skip: set[int],
    task: str | None = None,
    names: Sequence[str] = (),
) -> str | None:
    """A clause of the prose that points back at the answer (after the slot's line; before it,
    only `this`/`these` standing alone) and says anything but where it comes from or what it is
    in the task's words (`_identifies`): the reader cannot weigh it (docs/contracts.md)."""
    if c.wrong_value:
        return None
    known = frozenset(_WORD.findall(norm_periods(task or "").casefold()))
    foreign = [n for n in names if not re.search(re.escape(n), task or "", re.I)]
    prose = [ln for i, ln in enumerate(text.splitlines()) if i != after and i not in skip]
    alone = not any(role != "own" for ln in prose for _, _, role in _occurrences(c, ln))
    for i, line in enumerate(text.splitlines()):
        if i == after or i in skip:
            continue
        sents = [
            _without_final(s) if alone else s
            for s in _SENTENCE_CUT.split(line)
            if not (_rounding_note(s) or _passes_on(c, s))
        ]
        line = " ".join(sents)
        ends = list(itertools.accumulate(len(s) + 1 for s in sents))
        other_before, place_before, at, sent_no = False, False, 0, 0
        for clause in clauses(line):
            at = max(line.find(clause, at), at)
            if (k := bisect.bisect_right(ends, at)) != sent_no:  # a new sentence: no value yet
                other_before, place_before, sent_no = False, False, k
            for part in re.split(r",\s", clause):
                named = {role for _, _, role in _occurrences(c, part)}
                # the sentence's last value so far is another one, not the answer's; a figure of
                # another kind (`Fees billed ... is 1,082.6`) is another value too
                roles = named or ({"number"} if number_tokens(norm_periods(part)) else set())
                after_other, other_before = (
                    other_before,
                    ("own" not in roles if roles else other_before),
                )
                own = set(_PERIOD_WORD.findall(norm_periods(c.label).casefold()))
                np_ = norm_periods(part)
                kept = _COURTESY.sub(lambda m: " " * len(m.group(0)), np_)
                refs = [
                    r[0]
                    for r in BACKREF.finditer(kept)
                    if not (set(_PERIOD_WORD.findall(r[0].casefold())) - own)
                    and not (_operand(c, line, part, r[0]) or _names_input(c, np_, r, line))
                ]  # "the FY2024 number" is another period's, not the answer
                if _left_out(c, part):  # "it is a different measure and is not used above"
                    refs = []
                if _ON_THIS.search(part) and "own" not in named:
                    # "Jonas was only copied and did not send anything on this"
                    refs = [r for r in refs if r.casefold() != "this"]
                if i < after:
                    refs = [r for r in refs if re.fullmatch(r"this|these", r, re.I)]
                if named - {"own"}:
                    # "the preliminary estimate was $108.1m" names another value, not the answer
                    refs = [
                        r for r in refs if re.search(r"\b(?:one|above|earlier|previous)$", r, re.I)
                    ]
                if _SOURCE.search(part):  # "before Ines sends it out": `it` is the slide
                    refs = [r for r in refs if r.casefold() != "it"]
                elif place_before and not named and not _weighs(part):
                    # "pin that message in the channel so it is easy to find": `it` is the message
                    refs = [r for r in refs if r.casefold() not in ("it", "them")]
                place_before = place_before or bool(_SOURCE.search(part))
                if after_other and not roles:
                    # "Y is 33.1; you did not ask for it": `it` is the value named just before
                    refs = [r for r in refs if r.casefold() not in ("it", "them")]
                if not refs or _identifies(c, clause, known, foreign):
                    continue
                bare = _without_label_words(c, part)  # "Source for the correct value: ..."
                if (_SOURCED.search(part) or _CITE.search(part)) and not (
                    _NEGATION.search(bare)
                    or _CORRECTION.search(bare)
                    or _HEDGE_PROSE.search(bare)
                    or _AFFIRM_ELSE.search(bare)
                    or _STALE.search(bare)
                ):
                    continue  # "This is from the FY2025 workbook."
                return f"the prose comments on the answer ({refs[0]!r}): {part.strip()[:160]!r}"
    return None


METHOD_WORDS = frozenset(
    ["method", "methodology", "approach", "calculation", "workings", "formula", "note", "basis",
     "is", "was", "are", "were", "been", "has", "have", "multiple", "ratio", "percentage",
     "share", "figure", "value", "result", "metric", "answer", "then", "with", "inputs", "input"]
)  # fmt: skip
"""Beside the place's label words and `DERIVES`, the words a note on how the answer is computed
may hold (`Method: the damages claimed as a multiple of the annual contract value is computed from
50.1 and 12.3.`)."""
_WEIGHS = (
    _NEGATION, _CORRECTION, _AFFIRM, _HEDGE_PROSE, _HEDGE_MARK, _DOUBT, _CHECK_VERB, _CHECKING,
    _RETRACT, _CHANGE, _WRONG_THING,
)  # fmt: skip


def _weighs(sentence: str) -> bool:
    """A sentence holds a word that weighs a value (a negation, correction, affirmation, hedge,
    doubt, a check, a retraction or a change), a status word not used as a verb, or a mark
    outside the slot's marks."""
    status = any(not _status_verb(sentence, m) for m in _STATUS.finditer(sentence))
    return status or any(rx.search(sentence) for rx in _WEIGHS) or bool(odd_marks(sentence))


def _task_figures_only(c: SlotCheck, toks: list[NumToken], allowed: Sequence[float]) -> bool:
    """`toks` are some figures, each one of the task's (`allowed`), none the answer's value."""
    return bool(toks) and all(
        not _number_is(k, c) and any(close(p, a, 0.005) for p in k.plain for a in allowed)
        for k in toks
    )


_COMPUTED_FROM = re.compile(r"\b(?:computed|calculated|derived)\s+from\b", re.I)


def _names_inputs(c: SlotCheck, t: str, toks: list[NumToken], allowed: Sequence[float]) -> bool:
    """`t` says what a metric is computed from (`computed from 50.1 and 5.0`), naming the slot's
    own value (an input of that metric) beside another of the task's figures, and no other
    figure: the input restated as what it feeds."""
    own = [k for k in toks if _number_is(k, c)]
    rest = [k for k in toks if not _number_is(k, c)]
    return bool(own and _COMPUTED_FROM.search(t) and _task_figures_only(c, rest, allowed))


def _method_note(c: SlotCheck, sentence: str, allowed: Sequence[float]) -> bool:
    """A sentence naming only the answer's metric (the place's label words) and the task's own
    figures it is computed from (`allowed`, none the answer's value; or, `_names_inputs`, the
    answer's value as one of them), in `DERIVES` and `METHOD_WORDS`: a note on method, not a
    comment on the answer."""
    if c.type != "number" or not allowed or _weighs(_MARKS.sub(" ", sentence)):
        return False
    t = norm_periods(sentence)
    toks = _numbers(t)
    if not (_task_figures_only(c, toks, allowed) or _names_inputs(c, t, toks, allowed)):
        return False
    own = {w for lab in [c.label, *c.others] for w in label_words(lab)}
    free = own | DERIVES | METHOD_WORDS | _STOP
    return all(w.casefold() in free for w in _bare(c, _PERIOD_WORD.sub(" ", t)).split())


def _offer(c: SlotCheck, sentence: str) -> bool:
    """A courtesy sentence (`COURTESY`'s openings) that names no value and weighs nothing, though
    it may point back at the answer (`Happy to draft proposed mark-ups for each of these.`)."""
    return (
        bool(COURTESY.match(sentence))
        and not _occurrences(c, sentence)
        and not _weighs(_MARKS.sub(" ", sentence))
        # `it` may be the answer in any role (`Feel free to bin it.`, `Happy to file it away.`):
        # such a courtesy stays with `comment_on_answer`
        and not re.search(r"(?i)(?<![\w'’])it\b", sentence)
    )


_OFFER_LEAD = re.compile(
    r"^\s*(?:if\s+you\s+(?:want|like|prefer|wish|need)"
    r"|if\s+(?:it|this)\s+(?:would\s+|will\s+)?(?:helps?|be\s+(?:useful|helpful))(?:\s+[\w'’-]+){0,4}"
    r"|if\s+(?:useful|helpful))\s*,\s*|^\s*next\s+steps?\s*:\s*(?=i\s)",
    re.I,
)
_OFFER_HEAD = re.compile(
    r"^\s*(?:(?:(?:i['’]m\s+|i\s+am\s+|i['’]d\s+be\s+|i\s+would\s+be\s+)?(?:happy|glad)\s+to"
    r"|i\s+can|i['’]ll|i\s+will|(?:do\s+you\s+)?want\s+me\s+to|would\s+you\s+like\s+me\s+to"
    r"|shall\s+i|(?:let\s+me\s+know|shout|ping\s+me)\s+if\s+you(?:['’]d\s+like|\s+want|\s+need"
    r"|\s+would\s+like)\s+me\s+to)\s"
    r"|next\s+steps?\s*:\s*(?=(?:send|forward|share|circulate|reflect|carry)\s))",
    re.I,
)
"""How an offer of a next step opens (`Happy to`, `Want me to`, `Shout if you want me to`, `Next
step:` before a verb that passes the answer on), after an optional lead-in (`If you want,`, `If
it would help your board pack,`)."""
_POINTER = r"(?:it|this|these|them|(?:this|that|the)\s+(?:figure|number|value|answer|result)s?)"
_PASSES_ON = re.compile(
    "|".join(
        [
            r"\b(?:send|forward|share|pass|circulate|e-?mail|explain|go\s+over"
            r"|(?:walk|talk|run|go)\s+(?:\w+\s+){0,3}?through)\s+" + _POINTER + r"\b",
            r"\b(?:update|populate)\s+(?:the|our|your|my)\s+(?:[\w'’-]+\s+){0,3}?with\s+"
            + _POINTER
            + r"\b",
            r"\b(?:you|they|he|she|we)\s+(?:need|needs|want|wants|have|has)\s+" + _POINTER + r"\b",
            r"\bif\s+(?:it|this)\s+(?:would\s+|will\s+)?(?:helps?|be\s+(?:useful|helpful))\b",
            r"\b(?:reflect|carry)\s+" + _POINTER + r"\s+(?:in|into|over\s+to|through\s+to)\b",
            r"\blet\s+(?:[\w'’-]+\s+){1,2}know\s+(?:it|this)(?:['’]s|\s+is)\s+ready"
            r"(?:\s+to\s+go(?:\s+out)?)?\b",
        ]
    ),
    re.I,
)
"""What an offer may do with the answer it points at: pass it on or walk through it (`send it
over to Priya`, `walk you through it`, `update the tracker with this number`), give it to one
who needs it (`if they need it`, `so you have it to hand`); `if it helps` points at nothing."""
_FIXES_PLACE = re.compile(
    r"\b(?:correct|fix|update|amend)\s+(?:the|that)\s+(?:cell|slide|deck|table|row)\b", re.I
)
"""An offer to fix the place that holds a wrong figure (`I can correct the cell`): an edit of a
place, not a value put forward."""
_CONTESTS = re.compile(
    r"\b(?:push\s+back\s+on|negotiate|contest|challenge)\s+(?:" + _POINTER + r"|those|them)\b", re.I
)
_POINTED = re.compile(r"(?<![\w'’])(?:it|this|that|these|those|them)(?![\w'’])", re.I)
_CONTINGENT = _words_re(
    ["unless", "until", "till", "once", "provided", "providing", "pending", "subject to",
     "assuming", "depending", "after", "before", "when", "whether", "except"]
)  # fmt: skip
"""Words that make an offer wait on something (`once it is signed off`, `unless you object`)."""


_NAME_RUN = re.compile(r"(?<=\S\s)[A-Z][\w&'’-]*(?:\s+[A-Z][\w&'’-]*)+")
"""Two or more capitalised words after the sentence's start: a name (`Lakeside Real LLC`), whose
words weigh nothing."""


def _passes_on(c: SlotCheck, sentence: str) -> bool:
    """An offer of a next step (`_OFFER_HEAD`) that names no figure and no value of the slot's
    kind, whose every pointer at the answer (`it`, `this`, `that number`, `above`...) is one it
    passes on (`_PASSES_ON`: `Happy to send it over to Priya as well.`, `Shout if you want me to
    walk through it.`, `Want me to update the deal tracker with this number?`), and that weighs
    nothing and waits on nothing (`_CONTINGENT`) once those are read: it says what the writer
    offers to do with the answer, not what the answer is. An alternative offer (`or we can jump
    on a call`, `a redline or a note`) is no second candidate; in a clause review, the listed
    clauses are the ones the reader may contest (`if you want to push back on these`)."""
    s = _strip_marks(unmark(sentence))
    lead = _OFFER_LEAD.match(s)
    body = s[lead.end() :] if lead else s
    if not _OFFER_HEAD.match(body) or number_tokens(s) or _occurrences(c, s):
        return False
    rest = _FIXES_PLACE.sub(" ", _PASSES_ON.sub(" ", s))
    if _numbered(c):  # a clause review: the listed clauses are the ones to push back on
        rest = _CONTESTS.sub(" ", rest)
    if _POINTED.search(rest) or BACKREF.search(rest) or _CONTINGENT.search(rest):
        return False
    rest = re.sub(r",?\s+or\s+(?=(?:(?:we|i)\s+can|an?)\s)", " ", rest, flags=re.I)
    return not _weighs(_NAME_RUN.sub(" ", rest))


def note_lines(c: SlotCheck, text: str, skip: set[int], allowed: Sequence[float]) -> set[int]:
    """The prose lines each of whose sentences is a note on method (`_method_note`), a courtesy
    (`_offer`) or a note on rounding: they say nothing about the answer a reader must weigh."""
    out = set()
    for i, line in enumerate(text.splitlines()):
        sents = [s for s in _SENTENCE_CUT.split(_strip_marks(unmark(line))) if s.strip()]
        if i in skip or not sents:
            continue
        if all(
            (_method_note(c, s, allowed) or _offer(c, s) or _passes_on(c, s) or _rounding_note(s))
            and not own_doubt(s)  # "Let me know if this looks off to you"
            for s in sents
        ):
            out.add(i)
    return out


def prose_weighs(
    c: SlotCheck,
    text: str,
    allowed: Iterable[float] = (),
    task: str | None = None,
    names: Sequence[str] = (),
) -> str | None:
    """Why prose that stands beside a value outside any slot line (the text cells a trial added
    beside a workbook's checked cell: `provisional - do not use until reviewed`) leaves `c` to a
    reader, by the rules an answer's prose is read by, every line read as after the value; else
    None. A line made only of the task's words and units (`task`: a label its instruction names,
    `damages claimed as a multiple of the annual contract value (x)`) names a thing, and is no
    comment on the answer."""
    allowed = list(allowed)
    skip = note_lines(c, text, set(), allowed)
    known = {w.casefold() for w in _WORD.findall(norm_periods(task or "").casefold())}
    named = {
        i
        for i, line in enumerate(text.splitlines())
        if task and set(_WORD.findall(norm_periods(line).casefold())) <= known | _UNIT_WORDS
    }  # a unit in brackets after the words is theirs: `... contract value (x)`
    return (
        listed_clause_doubted(c, _prose(text, skip))
        or prose_doubt(c, text, skip, allowed)
        or comment_on_answer(c, text, -1, skip | named, task, names)
        or withdrawn(_prose(text, skip))
        or foreign_doubt(c, text, task, names)
    )


# --------------------------------------------------------------------------- the slot


TEMPLATE = re.compile(r"`[^`\n]*:\s*<[^`\n]*>`")
"""A slot line's template as the instruction shows it (`Label: <form>`): not an answer."""


_NEXT_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\(?[A-Z])")


_STATED = re.compile(
    r"[A-Za-z][\w'’-]*\s+(?:[\w'’-]+\s+){0,6}?(?:was|is|were|are|of|at|came\s+to|stood\s+at|:)\s*$"
)
"""`<label> was|is|of|at ...` before a value: a statement of another figure with its own label."""


def split_aside(c: SlotCheck, value: str) -> tuple[str, str]:
    """A slot's value and, after its sentence, sentences about another value of the kind (`646.6.
    (Hours billed for Q4 2025 was 829, not needed here.)`): those are prose, read by the prose's
    rules; ('value', '') when there are none."""
    parts = _NEXT_SENTENCE.split(value)
    for k in range(1, len(parts)):
        rest = " ".join(parts[k:])
        occ = _occurrences(c, rest)
        t = norm_periods(rest)
        if c.type == "number":  # another row's figure may be of any size ("Revenue ... was 167.5")
            occ = [(n.start, n.end, "own" if _number_is(n, c) else "other") for n in _numbers(t)]
        if (
            occ
            and not any(role == "own" for _, _, role in occ)
            and all(_STATED.search(t[:a]) for a, _, _ in occ)
        ):
            return " ".join(parts[:k]).rstrip(". "), rest
    return value, ""


_RUN_SENTENCE = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][*_])|(?<=[.!?][*_]{2}))\s+(?=\S)")
"""Where a line's sentences meet (`**Inputs.** Fees ($k): 1,082.6; Budget ($k): 1,310.0. Fees
come from ...`)."""


CONTEXT_WORDS = frozenset(
    ["vs", "v", "versus", "compared", "against", "with", "up", "down", "from", "was", "were", "is",
     "has", "had", "have", "shows", "showed", "showing", "says", "said", "lists", "listed",
     "reads", "read", "carries", "carried", "holds", "held", "gives", "gave", "in", "for", "per",
     "on", "of", "at", "the", "a", "an", "and", "to", "than", "prior", "previous", "earlier",
     "last", "period", "quarter", "year"]
)  # fmt: skip
"""The words a context parenthesis may hold beside its one value, its attribution (another
period, a place of the world) and units (`vs 33.7 in Q3 2025`, `the deck has 159`)."""


_PLACE_PHRASE = re.compile(
    r"\b(?:the|our|their|its|your|client's)\s+(?:[a-z][\w'-]*\s+){0,2}(?="
    + _words_re(s for s in SOURCES if s not in ("source", "sources")).pattern
    + ")",
    re.I,
)
"""A place of the world named with up to two words before it (`the review deck`)."""


def _rival_tokens(c: SlotCheck) -> list[NumToken]:
    return [t for r in c.rivals for t in _numbers(r)]


def _context(c: SlotCheck, inner: str) -> bool:
    """A parenthesis of a number slot that names one other value of the kind as context: the
    value attributed explicitly to another period (not the label's), or a known wrong value (one
    of the check's `rivals`) to a place of the world (`the deck`, `the model`, a file), in
    `CONTEXT_WORDS` only, weighing nothing; a bare second value, `or`, a range, `/`, a hedge, a
    negation or the label's own period is not context."""
    if c.type != "number" or c.wrong_value:
        return False
    t = norm_periods(inner)
    toks = [k for k in _numbers(t) if _comparable(k, c)]
    if len(toks) != 1 or _number_is(toks[0], c) or odd_marks(t) or "/" in t:
        return False
    weighs = (_HEDGE, _HEDGE_MARK, _NEGATION, _CORRECTION, _AFFIRM, _DOUBT, _STATUS, _CHECK_VERB)
    if any(rx.search(t) for rx in weighs) or re.search(r"\d\s*(?:-|–|—|to)\s*\d", t):
        return False
    own = set(_PERIOD_WORD.findall(norm_periods(c.label).casefold()))
    periods = set(_PERIOD_WORD.findall(t.casefold()))
    places = [m for m in _SOURCE.finditer(t) if m.group(0).casefold() not in ("source", "sources")]
    if periods & own or not (periods - own or places):
        return False
    if not periods - own and not any(_same_number(toks[0], r, c) for r in _rival_tokens(c)):
        return False  # a place's value the reader knows as a wrong one (`the deck has 159`)
    named = _PLACE_PHRASE.sub(" ", t)  # "the review deck", "our billing workbook"
    rest = _SOURCE.sub(" ", _bare(c, named))
    return all(w.casefold() in CONTEXT_WORDS for w in rest.split())


def split_context(c: SlotCheck, value: str) -> tuple[str, list[str]]:
    """A slot's value without its context parentheses (`_context`: `30.0 (vs 33.7 in Q3 2025)`,
    `187 (the deck has 159)`), and those parentheses, read as prose."""
    found: list[str] = []

    def keep(m: re.Match[str]) -> str:
        if _context(c, m[1]):
            found.append(m[1])
            return " "
        return m[0]

    return _PAREN.sub(keep, value), found


def split_runs(text: str, labels: Sequence[str]) -> str:
    """A line holding several slot lines in a row, cut at `;` or ` | ` (`Net debt ($m): 63.4;
    FY2025 EBITDA ($m): 49.9`), as one line each: each piece of the sentence holding them must be
    a slot line carrying one of the place's labels. The line's text before that sentence stays
    with the first piece (a lead-in, read with its label), the text after it with the last piece
    (read with its value)."""
    out = []
    for line in text.splitlines():
        sents = _RUN_SENTENCE.split(line)
        for k, sent in enumerate(sents):
            pieces = re.split(r";\s+|\s+\|\s+", sent)
            if len(pieces) > 1 and all(
                any(carried(sl, labels)[0] for sl in slot_lines(pc)) for pc in pieces
            ):
                pieces[0] = " ".join([*sents[:k], pieces[0]])
                pieces[-1] = " ".join([pieces[-1], *sents[k + 1 :]])
                out.extend(pieces)
                break
        else:
            out.append(line)
    return "\n".join(out)


_QUOTE_LEAD = re.compile(r"^\s*>")
_WROTE = re.compile(r"^\s*(?:>\s*)*On\b.{3,200}\bwrote:\s*$", re.I)
"""A reply's attribution line before the quoted mail (`On 1 Mar 2026, Coral Finance wrote:`)."""
QUOTE_MIN_WORDS = 3
"""Words a quoted line needs to be read as another's words (`> maybe` stays the writer's)."""


def quotes_lines(text: str) -> bool:
    """`text` has quoted lines (`> ...`) or an `On ... wrote:` line."""
    return any(_QUOTE_LEAD.match(ln) or _WROTE.match(ln) for ln in text.splitlines())


def _quote_norm(s: str) -> str:
    return " ".join(_strip_marks(unmark(s)).casefold().split())


def drop_quoted(text: str, mails: Sequence[str]) -> str:
    """`text` with its quoted lines that are another's words blanked (docs/contracts.md, Places,
    "Quoted mail"): a line after `>` marks, or after an `On ... wrote:` line, whose words (markdown and
    spacing aside, at least `QUOTE_MIN_WORDS` of them) occur verbatim in a mail the world held
    (`mails`: header lines and body) is that mail's, not the writer's: neither a slot line nor
    prose. A quoted line found in no mail stays the writer's own."""
    if not mails:
        return text
    sources = [_quote_norm(m) for m in mails]
    lines = text.splitlines()
    after_wrote = False
    wrote_at: list[int] = []
    dropped = False
    for i, line in enumerate(lines):
        if _WROTE.match(line):
            after_wrote = True
            wrote_at.append(i)
            continue
        quoted = bool(_QUOTE_LEAD.match(line))
        if not (quoted or after_wrote):
            continue
        q = _quote_norm(re.sub(r"^(?:\s*>)+", "", line))
        if len(q.split()) < QUOTE_MIN_WORDS:
            continue
        rx = re.compile(r"(?<!\w)" + re.escape(q) + r"(?!\w)")
        if any(rx.search(src) for src in sources):
            lines[i] = ""
            dropped = True
    if dropped:
        for i in wrote_at:
            lines[i] = ""
    return "\n".join(lines)


def read_slot(
    c: SlotCheck,
    text: str,
    allowed: Iterable[float] = (),
    mails: Sequence[str] = (),
    task: str | None = None,
    names: Sequence[str] = (),
) -> Finding:
    """The verdict of one slot in a place's text (docs/contracts.md, the verdict order); `mails`:
    the world's mail, whose words a quoted line may repeat (`drop_quoted`); `task`: the task's
    instruction, whose names a label may hold (`label_names`); `names`: the world's projects
    (`foreign_doubt`)."""
    allowed = list(allowed)
    text = drop_quoted(text, mails)
    labels = [c.label, *c.others]
    text = split_runs(TEMPLATE.sub("", text), labels)
    mine: list[SlotLine] = []
    clash: list[SlotLine] = []
    skip: set[int] = set()
    for line, got, owner in place_lines(text, labels):
        skip.add(line.index)
        if owner is not None and owner != c.label and owner in c.others:
            # the task's other slot lines in the same place state its inputs: a derivation in
            # this slot may name them (`margin: 7.54% (computed from 28.5 and 377.9)`)
            allowed += [p for k in _numbers(line.value) for p in k.plain]
        if c.label not in got:
            continue
        if owner is None:
            clash.append(line)
        elif owner == c.label:
            mine.append(line)
    if clash:
        return Finding(False, f"the line {clash[0].text.strip()[:120]!r} carries several labels")
    valued = [ln for ln in mine if _holds_kind(c, ln.value)]
    if valued and len(valued) < len(mine):  # "Source of Net debt: <path>" is prose
        skip -= {ln.index for ln in mine if ln not in valued}
        mine = valued
    if not mine:
        return Finding(False, f"no slot line '{c.label}: ...'")
    mine = _without_derivations(c, mine, allowed)
    asides = []
    for k, ln in enumerate(mine):
        own, aside = split_aside(c, ln.value)
        own, context = split_context(c, own)
        if aside or context:
            mine[k] = SlotLine(ln.index, ln.label, ln.words, " ".join(own.split()), ln.text)
            asides.extend([aside] if aside else [])
            asides.extend(context)
    if asides:  # read as prose, after the text
        text = text + "\n" + "\n".join(asides)
    readings = [read_value(c, ln.value) for ln in mine]
    for ln, r in zip(mine, readings, strict=True):
        if not r.ok:
            return Finding(False, f"'{ln.text.strip()[:120]}': {r.why}")
    for ln in mine:
        more = label_residue(ln, labels) or slot_residue(c, ln.value, list(allowed))
        if more:
            return undecided(f"the slot says more than its value ({more[:80]!r})")
    named = next((n for ln in mine if (n := label_names(ln, labels, task))), None)
    if named:
        return undecided(named)
    skip |= note_lines(c, text, skip, allowed)
    contradicted = listed_clause_doubted(c, _prose(text, skip)) or left_out_clause_deviates(
        c, _prose(text, skip)
    )
    if contradicted:
        return undecided(contradicted)
    doubt = prose_doubt(c, text, skip, allowed) or comment_on_answer(
        c, text, min(ln.index for ln in mine), skip, task, names
    )
    doubt = (
        doubt
        or withdrawn(_prose(text, skip))
        or foreign_doubt(c, text, task, names)
        or own_project_doubt(c, _prose(text, skip), task, names)
    )
    if doubt:
        return undecided(doubt)
    over = next((h for ln in mine if (h := heading_over(text, ln.index))), None)
    # a heading that asks the task's question (`## When is the hearing?`) heads its answer
    if over and (doubt := heading_doubt(over.rstrip().removesuffix("?"))):
        return undecided(f"the heading over the slot ({over.strip()[:80]!r}) {doubt}")
    return Finding(True, readings[0].why)


_HEADING = re.compile(
    r"^\s{0,3}(?:#{1,6}\s+(?P<md>.+?)\s*#*|\*\*(?P<bold>[^*\n]+)\*\*:?|__(?P<us>[^_\n]+)__:?)\s*$"
)
"""A heading line: markdown's `## ...`, or a line that is all bold (`**Best guess**`)."""


def heading_over(text: str, index: int) -> str | None:
    """The text of the nearest heading above line `index` (a markdown heading or an all-bold line):
    what it says qualifies the lines under it, the slot's among them; None where there is none."""
    lines = text.splitlines()
    for line in reversed(lines[: max(index, 0)]):
        m = _HEADING.match(line)
        if m:
            return m["md"] or m["bold"] or m["us"]
    return None


def label_residue(line: SlotLine, labels: Sequence[str] = ()) -> str | None:
    """What a slot line's label says about its value (`[DRAFT - do not circulate] Revenue`,
    `Revenue (unverified)`): a mark outside `SLOT_MARKS`, a negation, correction, hedge, doubt or
    status word; else None. The label's other words name it and are free."""
    raw = line.text[: line.text.find(line.value)] if line.value in line.text else line.label
    raw = _MD_LEAD.sub("", raw.strip())
    raw = raw[next((k for k, ch in enumerate(raw) if ch.isalnum() or ch in "*_`$(["), 0) :]
    odd = odd_marks(_MARKS.sub(" ", raw).replace("|", " "))
    if odd:
        return f"{line.label} {odd}"
    own = {w for lab in labels for w in _WORD.findall(lab.casefold())}
    rest = " ".join(w for w in line.label.split() if w.casefold().strip("()[],.") not in own)
    for rx in (_NEGATION, _CORRECTION, _HEDGE_NEAR, _HEDGE_MARK, _DOUBT, _STATUS):
        m = rx.search(rest)
        if m:
            return f"{line.label} ({m.group(0)})"
    return None


_CAP_WORD = re.compile(r"(?<![\w'’.-])[A-Z][\w'’&-]*")
_ADDRESSEE = re.compile(
    r"\b(?:[Hh]i|[Hh]ello|[Hh]ey|[Dd]ear|[Tt]hanks|[Tt]hank\s+you)\s+(?:[A-Z][\w'’-]*\s?){1,2}"
    r"(?=\s*[,:;!–—-])"
)
_MENTION = re.compile(r"@([\w.-]+)(?:\s+([A-Z][\w'’-]*))?")
"""Whom a line speaks to (`@maria`, `Hi Maria,`): an addressee, not what the value belongs to."""


def label_names(line: SlotLine, labels: Sequence[str], task: str | None) -> str | None:
    """A name in a slot line's label that is neither the task's (a word of its instruction, the
    project, the client) nor a word of the place's labels, a unit, a period or a kind of place
    (`Iron Mantis FY2025 Revenue CAGR` in a task on another project): the label may attribute the
    value to another thing of the world, so a reader must weigh it; else None. A name is a
    capitalised word; the label's first word counts only when the next word is a name too (`Iron
    Mantis Revenue`) or a word of the place's labels (`Northwind Revenue FY2025`), unless it
    qualifies a label (`Total Revenue FY2025` is not a name, `_names_the_label`). Without the task's text (None),
    nothing is read."""
    if task is None:
        return None
    known = {w for lab in labels for w in _WORD.findall(norm_periods(lab).casefold())}
    known |= {w.casefold() for w in re.findall(r"[\w'’&-]+", norm_periods(task))}
    known |= {w.casefold() for m in _MENTION.finditer(line.text) for w in m.groups() if w}
    known |= {re.sub(r"['’]s$", "", w) for w in known}  # the task's `Coral Falcon's revenue`
    label = _ADDRESSEE.sub(" ", norm_periods(line.label))
    words = list(_CAP_WORD.finditer(label))

    def unknown(w: str) -> bool:
        k = w.casefold().strip("'’-")
        k = re.sub(r"['’]s$", "", k)
        return not (
            k in known or k in _STOP or k in _UNIT_WORDS or k in NAMING_WORDS
            or _SOURCE.fullmatch(k) or _DECOR.fullmatch(k) or _PERIOD_WORD.fullmatch(k)
        )  # fmt: skip

    flagged = [m for m in words if unknown(m.group(0))]
    first = re.match(r"\W*", label)
    for m in flagged:
        if first and m.start() == first.end():
            nxt = next((n for n in words if n.start() > m.end()), None)
            two = nxt and nxt in flagged and not label[m.end() : nxt.start()].strip()
            if not two and not _names_the_label(m, label, labels):
                continue
        return f"the label names {m.group(0)!r}, not the task's: {line.label[:120]!r}"
    return None


LABEL_QUALIFIERS = frozenset(
    ["total", "net", "gross", "adjusted", "reported", "annual", "group", "consolidated", "overall",
     "combined", "key", "headline", "final", "computed", "calculated", "resulting", "current",
     "implied", "answer", "result", "updated", "my", "our", "your"]
)  # fmt: skip
"""Words that may open a label as part of it (`Total Revenue FY2025`), not as a name."""


_ENGLISH = frozenset(
    w
    for ws in (HEDGES, AFFIRMS, CORRECTIONS, NEGATIONS, STATUS, FRAMES, COMPLIES, SOURCES,
               NAMING_WORDS, ROUNDING_WORDS, CONTEXT_WORDS, DERIVES, METHOD_WORDS, END_WORDS)
    for w in ws
    if " " not in w
)  # fmt: skip
"""The reader's own word classes: English words, never a name (`About Revenue FY2025` is a
hedge or a heading, read by the other rules)."""


def _names_the_label(m: re.Match[str], label: str, labels: Sequence[str]) -> bool:
    """The label's first word `m`, capitalised and not the task's, stands right before the slot's
    own label words (`Northwind Revenue FY2025`): a name the value is given to, unless it is a
    word that qualifies a label (`LABEL_QUALIFIERS`: `Total Revenue FY2025`) or a word of the
    reader's own classes (`_ENGLISH`: `About Revenue FY2025`)."""
    word = m.group(0).casefold().strip("'’-")
    if word in LABEL_QUALIFIERS or word in _ENGLISH:
        return False
    after = _WORD.findall(norm_periods(label[m.end() :]).casefold())
    own = {w for lab in labels for w in label_words(lab)}
    return bool(after) and after[0] in own and not label[m.end() :][:1].strip()


def _holds_kind(c: SlotCheck, value: str) -> bool:
    t = norm_periods(value)
    if c.type == "number":
        return bool(_numbers(t))
    if c.type == "date":
        return bool(find_dates(t, date.fromisoformat(str(c.value)).year))
    if c.type == "text":
        found = _find_items(t, [*_items(c), *c.rivals])
        pattern = c.rival_pattern and re.search(c.rival_pattern, t.casefold(), re.I)
        return any(found.values()) or bool(pattern)
    return bool(find_times(t) or _dotted_times(t))


# --------------------------------------------------------------------------- other projects


def world_names(paths: Iterable[str]) -> list[str]:
    """The names of the world's projects: the folders one level under a root folder of its
    filesystem (`filesystem/Matters/Noble Harbor/...` -> `Noble Harbor`)."""
    out: dict[str, None] = {}
    for rel in paths:
        parts = rel.split("/")
        if len(parts) > 3 and parts[0] == "filesystem":
            out[parts[2]] = None
    return list(out)


def _name_re(names: Iterable[str]) -> re.Pattern[str] | None:
    alts = sorted((re.escape(n).replace(r"\ ", r"\s+") for n in names if n.strip()), key=len)
    if not alts:
        return None
    return re.compile(r"(?<![\w-])(?:" + "|".join(reversed(alts)) + r")(?![\w-])", re.I)


_LACKS = re.compile(
    _NEGATION.pattern + r"|\b(?:nothing|none|blank|missing|unavailable|absent|lacks?)\b", re.I
)
"""Words that say a thing is not there (`nothing for Noble Harbor`, `its tab is blank`)."""


def foreign_doubt(c: SlotCheck, text: str, task: str | None, names: Sequence[str]) -> str | None:
    """A sentence (slot lines too) naming another project of the world (`names`: the world's
    projects; another is one the task does not name) beside the slot's own value and no other
    value of its kind in one clause (`the 4.0 in that folder belongs to Stone Tundra`), or beside
    a clause naming the task's own project with a word saying it lacks something (`I only found it
    for Stone Tundra, not for Noble Harbor`), or a clause pointing back at the answer that says it
    comes from the other project (`The figure below is the equivalent one from Stone Tundra`): the
    value may be the other project's, a reader must weigh it; else None. A rival named with the other project (`Stone Tundra shows 5.5`) is context."""
    if not task or not names:
        return None
    own = [n for n in names if (rx := _name_re([n])) and rx.search(task)]
    other_rx = _name_re(n for n in names if n not in own)
    if other_rx is None:
        return None
    own_rx = _name_re(own)
    for sent in _SENTENCE_CUT.split(text):
        hit = other_rx.search(sent)
        if not hit:
            continue
        lacking = [k for k in clauses(sent) if own_rx and own_rx.search(k) and _LACKS.search(k)]
        if lacking:
            return f"the prose names {hit.group(0)!r} and says the task's project lacks it: {sent.strip()[:160]!r}"
        for clause in clauses(sent):
            roles = [role for _, _, role in _occurrences(c, clause)]
            if other_rx.search(clause) and roles and all(r == "own" for r in roles):
                return f"the prose puts the value with {hit.group(0)!r}: {sent.strip()[:160]!r}"
            cited = re.search(
                r"\b(?:from|per|according\s+to|via)\s+(?:(?:the|project|matter|engagement|deal)\s+)"
                r"{0,2}(?:" + other_rx.pattern + ")",
                clause,
                re.I,
            )
            if cited and not roles and BACKREF.search(clause[: cited.start()]):
                return f"the prose says the answer comes {cited.group(0)!r}: {sent.strip()[:160]!r}"
    return None


_MOVED = re.compile(
    r"\b(?:been|was|were|got|gets|getting|being|is|are)\s+(?:\w+\s+)?(?:moved|postponed|rescheduled"
    r"|pushed\s+(?:back|out)|brought\s+forward|delayed|deferred|shifted|slipped|bumped)\b",
    re.I,
)
"""A change said to have happened to what the answer names (`it's been pushed back an hour`)."""


def own_project_doubt(
    c: SlotCheck, text: str, task: str | None, names: Sequence[str]
) -> str | None:
    """For a date or time slot, a clause of the prose that names the task's own project (one of the
    world's projects, `names`, that the task names) with another date or time and not the slot's,
    and no framing, correction or negation word (`The hearing for Noble Harbor is on 9 April`), or
    a clause naming no date or time that says it was moved (`it's been pushed back an hour`): the
    prose gives the answer another value, a reader must weigh it; else None."""
    if c.type not in ("date", "time"):
        return None
    for clause in clauses(text):
        occ = _occurrences(c, clause)
        moved = _MOVED.search(clause)
        if moved and not occ and not find_dates(clause, 2000) and not find_times(clause):
            return f"the prose says it was moved ({moved.group(0)!r}): {clause.strip()[:160]!r}"
    own_rx = _name_re(n for n in names if task and (rx := _name_re([n])) and rx.search(task))
    if own_rx is None:
        return None
    for clause in clauses(text):
        roles = {role for _, _, role in _occurrences(c, clause)}
        if not own_rx.search(clause) or "own" in roles or not roles:
            continue
        if not any(rx.search(clause) for rx in (_FRAME, _CORRECTION, _NEGATION)):
            return f"the prose gives the project another value: {clause.strip()[:160]!r}"
    return None
