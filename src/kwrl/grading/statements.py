"""How a text states an answer: the reading that machine checks share (`kwrl.grading.checks`).

A judge following the prompt (`kwrl.grading.judges`) fails an answer that hedges, negates or lists candidates,
and passes the same answer in other words. This module reads a text the same way, for a number
(`value_asserted`) and for a name, date or identifier (`text_stated`, `rivals_failure`); each
returns a `Finding`: passed, why, and `decided`. An undecided finding is a statement only a reader
can weigh (an uncertain word in its sentence, a negation after it, a table of figures around
it): the grader asks the judge when one is configured and fails the criterion when none is.

Numbers (`number_tokens`): thousands separators, currency signs, signs (a "- " bullet is not a
minus), accounting parentheses and magnitude words ("2.1bn", "$1,250k", "USD 283 million", "15%",
"15 percent", "150 bps", "9.4x"); dates and times ("2026-04-11", "11/04/2026", "14:00") are not
numbers. With the value's `scale` (1e6 for a value in millions) a text may state it at any scale:
"$283m", "283.0", "$283,000,000" and "$0.283bn" all state 283 ($m); "$283k" does not.

A value is asserted (`value_asserted`) when some occurrence within tolerance (a hit) is:
- one value: other values of the target's order of magnitude (rivals) are at most
  `max_candidates`, not counting the `allowed` ones (figures the task's other criteria want, numbers
  the task itself states: a restated input). Years compete only with years;
- not in a bare list of three or more such values, not joined to another by a hedge ("or",
  "possibly", "perhaps", "maybe", "might", "could", "though", "alternatively", "vs", "/", a range,
  "between ... and");
- not negated: no "not", "n't", "never", "no longer", "rather than", "instead of" ... before it in
  its clause with nothing of its kind in between ("is not $283.0m" fails; "$283.0m, not $251.2m"
  and "not $251.2m but $283.0m" assert 283.0).
Undecided: an uncertain word ("possibly", "maybe", "?" ...) in its sentence, a negation after it
("283.0 is not final"), or a table row or column holding two or more rivals.

A name, date or identifier (`text_stated`) must occur un-negated; a hedge word next to it or an
uncertain word in its sentence leaves it undecided. Its rivals (other people, providers, dates,
clause numbers; `rivals_failure`) fail it when one is joined to it by a hedge, or when more than
the check's limit are named: a rival the task itself names (restated) or one ruled out with "not"
does not count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple


class Finding(NamedTuple):
    passed: bool
    why: str
    decided: bool = True
    """False: only a reader can weigh the statement (module docstring); never a pass."""


def undecided(why: str) -> Finding:
    return Finding(False, why, decided=False)


# --------------------------------------------------------------------------- words

_HEDGE_WORDS = (
    r"\b(?:or|either|possibly|perhaps|maybe|might|could|though|although|alternatively|vs"
    r"|versus|otherwise)\b"
)
JOINER = re.compile(_HEDGE_WORDS + r"|/|\?", re.IGNORECASE)
"""What joins two candidates into a hedge when it sits between them."""
_JOINED_LEFT = re.compile(r"\b(?:or|either|vs\.?|versus)\s*[,(]?\s*$", re.IGNORECASE)
_JOINED_RIGHT = re.compile(r"\s*[,)]?\s*(?:or|vs|versus)\b", re.IGNORECASE)
_DOUBT = re.compile(
    r"\b(?:possibly|perhaps|maybe|might|could|probably|presumably|unsure|uncertain|unclear"
    r"|guess(?:ed|ing)?|not sure)\b|\?",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|never|no longer|neither|nor|cannot|rather than|instead of|other than)\b|n['’]t\b",
    re.IGNORECASE,
)
_NEGATED_AFTER = re.compile(
    r"\b(?:is|was|are|were|does|do|did|has|have|had)\s+(?:not|never|no longer)\b|n['’]t\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?;](?=\s|$)|\n")
_CLAUSE_END = re.compile(
    r"[.!?;:](?=\s|$)|,(?!\d)|\n|\||\b(?:but|however|whereas|while)\b", re.IGNORECASE
)
_WINDOW = 400
"""How far back a sentence or clause start is looked for."""


def _bounds(text: str, start: int, end: int, ends: re.Pattern[str]) -> tuple[int, int]:
    lo = max(0, start - _WINDOW)
    lo = max((m.end() for m in ends.finditer(text, lo, start)), default=lo)
    m = ends.search(text, end)
    return lo, (m.start() if m else len(text))


def sentence_of(text: str, start: int, end: int) -> tuple[int, int]:
    return _bounds(text, start, end, _SENTENCE_END)


def clause_of(text: str, start: int, end: int) -> tuple[int, int]:
    return _bounds(text, start, end, _CLAUSE_END)


def negated_before(text: str, start: int, end: int, obstacles: Iterable[int]) -> bool:
    """A negation precedes [start, end) in its clause with no obstacle (another candidate) between."""
    lo, _ = clause_of(text, start, end)
    last = None
    for m in _NEGATION.finditer(text, lo, start):
        last = m
    return last is not None and not any(last.end() <= o < start for o in obstacles)


def negated_after(text: str, start: int, end: int, obstacles: Iterable[int]) -> bool:
    """'283.0 is not ...' with no candidate after the negation in the clause (which would be the
    alternative ruled out: '283.0, not 251.2')."""
    _, hi = clause_of(text, start, end)
    m = _NEGATED_AFTER.search(text, end, hi)
    return m is not None and not any(m.end() <= o < hi for o in obstacles)


def doubt_in_sentence(text: str, start: int, end: int) -> str | None:
    lo, hi = sentence_of(text, start, end)
    m = _DOUBT.search(text, lo, hi + 1)  # with its end: a question mark
    return m.group(0) if m else None


# --------------------------------------------------------------------------- numbers

_DATE_TIME = re.compile(
    r"\b\d{4}-\d{1,2}-\d{1,2}(?:T\d{1,2}:\d{2}(?::\d{2})?)?|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b"
    r"|\b\d{4}/\d{1,2}/\d{1,2}\b|\b\d{1,2}:\d{2}(?::\d{2})?\b"
)
_UNITS = {
    "%": 0.01, "percent": 0.01, "per cent": 0.01, "pct": 0.01, "bps": 1e-4, "basis points": 1e-4,
    "bn": 1e9, "billion": 1e9, "b": 1e9, "mm": 1e6, "mn": 1e6, "million": 1e6, "m": 1e6,
    "k": 1e3, "thousand": 1e3, "x": 1.0, "times": 1.0,
}  # fmt: skip
_NUM_RE = re.compile(
    r"(?<![A-Za-z0-9_.,])(?:(?P<neg>[-−](?=[$€£]?\.?\d))|(?P<paren>\()\s?)?(?P<cur>[$€£])?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:\s?(?P<unit>%|per\s?cent\b|percent\b|pct\b|bps\b|basis points\b|bn\b|billion\b|b\b"
    r"|mm\b|mn\b|million\b|m\b|k\b|thousand\b|x\b|times\b))?(?![A-Za-z0-9])",
    re.IGNORECASE,
)
_LIST_GAP = re.compile(r"(?:[\s,;*•·]|-(?=\s))*")
_RANGE_GAPS = frozenset({"-", "–", "—", "~", "to"})


@dataclass(frozen=True)
class NumToken:
    start: int
    end: int
    plain: tuple[float, ...]
    """The digits' value, signed; an accounting '(1,200)' also unsigned (it may be a parenthesis)."""
    factor: float | None
    """The magnitude word's multiplier ('m' -> 1e6, '%' -> 0.01), None without one."""
    year: bool
    """A bare four-digit 1900-2100: a year, which competes only with years."""
    negative: bool

    @property
    def readings(self) -> tuple[float, ...]:
        """The value, and with its magnitude word applied ("2.1bn" -> 2.1, 2.1e9)."""
        if self.factor is None or self.factor == 1.0:
            return self.plain
        return (*self.plain, self.plain[-1] * self.factor)

    def meanings(self, scale: float | None) -> tuple[float, ...]:
        """What the token can mean at full scale, for a value of `scale` (None: any reading)."""
        if scale is None:
            return self.readings
        if self.factor is not None:
            return tuple(p * self.factor for p in self.plain)
        return (*(p * scale for p in self.plain), *self.plain)


def number_tokens(text: str) -> list[NumToken]:
    dates = [(m.start(), m.end()) for m in _DATE_TIME.finditer(text)]
    out: list[NumToken] = []
    for m in _NUM_RE.finditer(text):
        if any(a <= m.start("num") < b for a, b in dates):
            continue
        raw = m["num"]
        value = float(raw.replace(",", ""))
        signed = -value if m["neg"] or m["paren"] else value
        plain = (value, signed) if m["paren"] else (signed,)
        unit = " ".join((m["unit"] or "").lower().split())
        factor = _UNITS.get(unit.replace("per cent", "percent"))
        year = (
            len(raw) == 4 and raw.isdigit() and 1900 <= int(raw) <= 2100
            and not m["neg"] and not m["paren"] and not m["cur"] and not unit
        )  # fmt: skip
        out.append(NumToken(m.start(), m.end(), plain, factor, year, bool(m["neg"])))
    return out


def numbers_in(text: str) -> list[float]:
    """Every number in the text, each also with its magnitude word applied ("2.1bn" -> 2.1, 2.1e9)."""
    return [r for t in number_tokens(text) for r in t.readings]


def close(x: float, value: float, rel_tol: float, abs_tol: float = 0.0) -> bool:
    """`x` within the tolerance of `value`, its edge included: a figure rounded to the tolerance
    (1.25 written "1.2" against abs_tol 0.05) passes though 1.25 - 1.2 is 0.0500000000000000444 in
    binary floating point (the slack is 1e-9 of the larger magnitude, far below any tolerance)."""
    slack = 1e-9 * max(abs(x), abs(value), 1.0)
    return math.isclose(x, value, rel_tol=rel_tol, abs_tol=abs_tol + slack)


def _is_year(value: float, scale: float | None) -> bool:
    return scale in (None, 1.0) and value.is_integer() and 1900 <= value <= 2100


def _comparable(t: NumToken, target: float, scale: float | None) -> float | None:
    """The meaning of `t` in the target's order of magnitude (a rival value), if any."""
    if t.year != _is_year(target, scale):
        return None
    for r in t.meanings(scale):
        if (target == 0 and abs(r) < 10) or (target != 0 and 0.1 <= abs(r) / abs(target) <= 10):
            return r
    return None


def _is_allowed(t: NumToken, allowed: Iterable[float], scale: float | None) -> bool:
    return any(close(m, a, 0.005) for m in t.meanings(scale) for a in allowed)


MAX_OTHER_YEARS = 3
"""Other years a text may name beside the expected one."""


def value_asserted(
    text: str,
    value: float,
    rel_tol: float,
    abs_tol: float = 0.0,
    max_candidates: int = 12,
    *,
    scale: float | None = None,
    allowed: Iterable[float] = (),
) -> Finding:
    """Whether `text` states `value` (in units of `scale`) as its answer (module docstring)."""
    tokens = number_tokens(text)
    unit = scale or 1.0
    target, atol = value * unit, abs_tol * unit
    hits = [
        i
        for i, t in enumerate(tokens)
        if any(close(m, target, rel_tol, atol) for m in t.meanings(scale))
    ]
    if not hits:
        shown = ", ".join(f"{r:g}" for t in tokens[:20] for r in t.readings[:1]) or "none"
        return Finding(False, f"no number within tolerance of {value:g}; numbers seen: {shown}")
    others: dict[int, float] = {}
    for i, t in enumerate(tokens):
        if i not in hits and (r := _comparable(t, target, scale)) is not None:
            others[i] = r
    allowed = list(allowed)
    rivals = {i: r for i, r in others.items() if not _is_allowed(tokens[i], allowed, scale)}
    distinct = {
        f"{r:.6g}": text[tokens[i].start : tokens[i].end].strip() for i, r in rivals.items()
    }
    if _is_year(value, scale):  # a year: a handful of others is a list
        max_candidates = min(max_candidates, MAX_OTHER_YEARS)
    if len(distinct) > max_candidates:
        shown = ", ".join(distinct[k] for k in sorted(distinct, key=float)[:8])
        return Finding(False, (
            f"{value:g} is one of {len(distinct) + 1} values of its magnitude in the text ({shown}"
            f"{', ...' if len(distinct) > 8 else ''}; at most {max_candidates} others allowed "
            "beside the task's own figures): a list of candidates, not an answer"
        ))  # fmt: skip
    why, doubt = "", ""
    starts = [t.start for t in tokens]
    for i in hits:
        t = tokens[i]
        shown = repr(text[t.start : t.end].strip())
        obstacles = [s for j, s in enumerate(starts) if j != i]
        if _in_bare_list(text, tokens, i, set(hits) | set(rivals)):
            why = f"{shown} appears only in a bare list of numbers"
        elif (j := _hedged_with(text, tokens, i, others)) is not None:
            why = f"{shown} is hedged with {text[tokens[j].start : tokens[j].end].strip()!r}"
        elif negated_before(text, t.start, t.end, obstacles):
            why = f"{shown} is negated"
        elif (n := _table_rivals(text, tokens, i, rivals)) >= 2:
            doubt = f"{shown} sits in a table beside {n} other values of its magnitude"
        elif (word := doubt_in_sentence(text, t.start, t.end)) is not None:
            doubt = f"{shown} is stated with {word!r} in its sentence"
        elif negated_after(text, t.start, t.end, obstacles):
            doubt = f"{shown} is followed by a negation in its clause"
        else:
            return Finding(True, f"states {shown}, within tolerance of {value:g}")
    if doubt:
        return undecided(doubt)
    return Finding(False, why)


def _in_bare_list(text: str, tokens: list[NumToken], i: int, eligible: set[int]) -> bool:
    """Token i sits in a run of >= 3 values of its magnitude separated only by , ; spaces and
    bullets."""
    lo = hi = i
    while lo > 0 and _LIST_GAP.fullmatch(text[tokens[lo - 1].end : tokens[lo].start]):
        lo -= 1
    while hi + 1 < len(tokens) and _LIST_GAP.fullmatch(text[tokens[hi].end : tokens[hi + 1].start]):
        hi += 1
    return sum(1 for j in range(lo, hi + 1) if j in eligible) >= 3


def _hedged_with(text: str, tokens: list[NumToken], i: int, others: dict[int, float]) -> int | None:
    """The other value (its token) joined to token i by a hedge word, a range or 'between ...
    and', if any."""
    for j in (i - 1, i + 1):
        if j not in others:
            continue
        a, b = sorted((i, j))
        gap = text[tokens[a].end : tokens[b].start].casefold()
        if len(gap) > 60:
            continue
        before = text[max(0, tokens[a].start - 20) : tokens[a].start].casefold()
        after = text[tokens[b].end : tokens[b].end + 20]
        joined = JOINER.search(gap)
        if joined and joined.group(0) == "/" and "=" in before + gap + after:
            joined = None  # arithmetic: 141.5 / 283.0 = 50%
        if (
            joined
            or (gap.strip() in _RANGE_GAPS and not (gap.strip() == "to" and "from" in before))
            or (gap.strip() == "" and tokens[b].negative)
            or (re.search(r"\band\b", gap) and "between" in before)
        ):
            return j
    return None


def _line_at(text: str, pos: int) -> tuple[int, int]:
    lo = text.rfind("\n", 0, pos) + 1
    hi = text.find("\n", pos)
    return lo, (len(text) if hi < 0 else hi)


def _table_rivals(text: str, tokens: list[NumToken], i: int, rivals: dict[int, float]) -> int:
    """Rivals in token i's row and column of a '|' table (0 outside a table)."""
    t = tokens[i]
    lo, hi = _line_at(text, t.start)
    if text.count("|", lo, hi) < 2:
        return 0
    col = text.count("|", lo, t.start)
    spots = [(tokens[j].start, j) for j in rivals]
    n = sum(1 for s, _ in spots if lo <= s < hi)
    for step in (-1, 1):
        a, b = lo, hi
        while True:
            if step < 0:
                if a == 0:
                    break
                a, b = _line_at(text, a - 1)
            else:
                if b >= len(text):
                    break
                a, b = _line_at(text, b + 1)
            if text.count("|", a, b) < 2:
                break
            n += sum(1 for s, _ in spots if a <= s < b and text.count("|", a, s) == col)
    return n


# --------------------------------------------------------------------------- names, dates, ids


def fold(text: str) -> str:
    """Case-folded, each line's whitespace collapsed; lines kept (they end sentences)."""
    return "\n".join(" ".join(line.split()) for line in text.casefold().splitlines())


def word_re(s: str) -> re.Pattern[str]:
    """`s` as a whole word or phrase, any whitespace between its words."""
    words = [re.escape(w) for w in s.casefold().split()]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)")


def text_stated(text: str, spans: list[tuple[int, int]], obstacles: Iterable[int] = ()) -> Finding:
    """Whether one of `spans` (occurrences of the answer in `text`) is stated: un-negated, and
    neither a hedge word next to it nor an uncertain word in its sentence (module docstring)."""
    obstacles = list(obstacles)
    why, doubt = "", ""
    for s, e in spans:
        shown = repr(text[s:e])
        if negated_before(text, s, e, obstacles):
            why = f"{shown} is negated"
        elif _JOINED_LEFT.search(text, max(0, s - 12), s) or _JOINED_RIGHT.match(text, e):
            doubt = f"{shown} is joined to something else by 'or'"
        elif (word := doubt_in_sentence(text, s, e)) is not None:
            doubt = f"{shown} is stated with {word!r} in its sentence"
        else:
            return Finding(True, f"states {shown}")
    if doubt:
        return undecided(doubt)
    return Finding(False, why or "not stated")


def rivals_failure(
    text: str,
    answers: list[str],
    rivals: list[str],
    rival_pattern: str | None,
    limit: int,
    restated: str = "",
) -> Finding | None:
    """Why the rivals the text names fail it (module docstring), or None. `answers` are the
    answer's own strings (needles or pattern matches); `restated` is the task's text."""
    t = fold(text)
    mine = {fold(a) for a in answers if a.strip()}
    spots_of_answer = [(m.start(), m.end()) for a in mine for m in word_re(a).finditer(t)]
    named: dict[str, list[tuple[int, int]]] = {}
    for r in rivals:
        if fold(r) in mine or not r.strip():
            continue
        spots = [(m.start(), m.end()) for m in word_re(r).finditer(t)]
        if spots:
            named[r] = spots
    if rival_pattern:
        for m in re.finditer(rival_pattern, t, re.IGNORECASE):
            got = m.group(0)
            if not got.strip() or any(a and (a in got or got in a) for a in mine):
                continue
            named.setdefault(got.strip(), []).append((m.start(), m.end()))
    for a0, a1 in spots_of_answer:
        for r, spots in named.items():
            for s0, s1 in spots:
                lo, hi = (a1, s0) if a1 <= s0 else (s1, a0)
                gap = t[lo:hi]
                if 0 <= hi - lo <= 60 and (JOINER.search(gap) or gap.strip() in _RANGE_GAPS):
                    return Finding(False, f"hedges between the answer and {r!r}")
    told = fold(restated)
    answer_starts = [s for s, _ in spots_of_answer]
    counted = sorted(
        r
        for r, spots in named.items()
        if not word_re(r).search(told)
        and not all(negated_before(t, s0, s1, answer_starts) for s0, s1 in spots)
    )
    if len(counted) > limit:
        return Finding(False, (
            f"names {len(counted)} other candidates ({counted[:6]}"
            f"{'...' if len(counted) > 6 else ''}; at most {limit} allowed)"
        ))  # fmt: skip
    return None
