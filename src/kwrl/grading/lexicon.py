"""The word classes the grader's readers share (`kwrl.grading.slots`, `kwrl.grading.withdrawal`):
hedges, corrections, affirmations, negations, doubts, status words, the kinds of place a world keeps
facts in, stale places, the words that point back at an answer, and period spellings made one word
(`norm_periods`). Each class is closed and small on purpose (docs/contracts.md): what the readers
cannot settle with them is undecided, never a pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

HEDGES = (
    "might", "may", "could", "possibly", "possible", "perhaps", "maybe", "likely", "unlikely",
    "probably", "probable", "plausible", "unverified", "unconfirmed", "uncertain", "unclear",
    "unsure", "alternatively", "alternative", "approximately", "approx", "roughly", "around",
    "about", "circa", "thereabouts", "give or take", "or so", "estimated", "estimate", "guess",
    "seems", "appears", "assume", "assuming", "either", "or", "tentative", "tentatively",
    "candidate", "candidates", "options", "alternatives", "possibility", "possibilities",
)  # fmt: skip
"""Modal and uncertain words: a value near one is not stated for certain."""
CORRECTIONS = (
    "incorrect", "wrong", "stale", "superseded", "typo", "error", "erroneous", "mistaken",
    "mistake", "outdated", "obsolete", "invalid", "inaccurate", "false", "retracted", "void",
)  # fmt: skip
"""Words that say a value is not the answer."""
AFFIRMS = (
    "correct", "corrected", "correction", "right", "actual", "actually", "true", "real", "instead",
    "should be", "revised", "confirmed", "accurate", "valid", "use", "keep", "go with",
    "stick with", "leave", "make that", "make it",
)  # fmt: skip
"""Words that put a value forward as the answer."""
NEGATIONS = ("not", "no", "never", "isn't", "wasn't", "aren't", "n't", "nor")


def _words_re(words: Iterable[str]) -> re.Pattern[str]:
    alts = sorted((re.escape(w).replace(r"\ ", r"\s+") for w in words), key=len, reverse=True)
    return re.compile(r"(?<![\w'])(?:" + "|".join(alts) + r")(?![\w'])", re.IGNORECASE)


_HEDGE = _words_re(HEDGES)
_HEDGE_PROSE = _words_re(h for h in HEDGES if h not in ("about", "around", "estimate", "estimated"))
"""In prose, 'about' and 'around' are mostly prepositions ("the memo about FY2025"), and calling
another value an estimate ("the preliminary estimate was 21.8") does not put it forward."""
_HEDGE_NEAR = _words_re(h for h in HEDGES if h not in ("about", "around", "or", "either"))
_HEDGE_MARK = re.compile(r"\?|~|≈|±|\+/-")
_CORRECTION = _words_re(CORRECTIONS)
_AFFIRM = _words_re(AFFIRMS)
_AFFIRM_ONLY = _words_re(
    a for a in AFFIRMS if a not in ("use", "keep", "go with", "stick with", "leave")
)
_AFFIRM_ELSE = _words_re(a for a in AFFIRMS if a not in ("confirmed", "revised", "corrected"))
"""Affirming words but those that say how a value came to be (`confirmed by mail`)."""
_NEGATION = re.compile(r"(?<![\w'])(?:not|no|never|nor)(?![\w'])|n't\b", re.IGNORECASE)


def _hedge_in(text: str) -> str | None:
    m = _HEDGE.search(text) or _HEDGE_MARK.search(text)
    return m.group(0) if m else None


# --------------------------------------------------------------------------- periods, labels

_FY = re.compile(r"\b(?:FY|fiscal(?:\s+year)?|financial\s+year)\s?['’]?(\d{4}|\d{2})\b", re.I)
_QN = re.compile(r"\bQ([1-4])(?:\s*[-/ ]\s*|\s*)(?:FY)?\s?['’]?(\d{4}|\d{2})\b", re.I)
_NQ = re.compile(r"\b([1-4])Q\s?(?:FY)?\s?['’]?(\d{4}|\d{2})\b", re.I)


def _year(y: str) -> str:
    return y if len(y) == 4 else "20" + y


def norm_periods(text: str) -> str:
    """Period spellings made one word: FY2025 = FY25 = fiscal 2025 -> 'fy2025'; Q4 2025 =
    Q4-2025 = 4Q25 -> 'q4_2025' (so a period is one label word, and never read as a number)."""
    text = _QN.sub(lambda m: f"q{m[1]}_{_year(m[2])}", text)
    text = _NQ.sub(lambda m: f"q{m[1]}_{_year(m[2])}", text)
    return _FY.sub(lambda m: f"fy{_year(m[1])}", text)


DOUBTS = (
    "not sure", "not confident", "unsure", "cannot confirm", "can't confirm", "could not confirm",
    "couldn't confirm", "cannot verify", "can't verify", "could not verify", "couldn't verify",
    "placeholder", "placeholders", "tbc", "tbd", "to be confirmed", "swapped", "mixed up",
    "the other way round", "the other way around",
)  # fmt: skip
"""Words that doubt the answer itself wherever they stand in the prose (they name no value)."""
_DOUBT = _words_re(DOUBTS)


_ANSWER_NOUN = (
    r"(?:figure|figures|number|numbers|value|values|answer|answers|result|results|estimate|"
    r"estimates|one|line|lines|post|message|list|headline)"
)

_SENTENCE_CUT = re.compile(r"[.!?](?=\s|$)|\n")


SOURCES = (
    "source", "sources", "file", "files", "folder", "workbook", "spreadsheet", "sheet", "tab",
    "deck", "slide", "slides", "memo", "document", "doc", "mail", "email", "e-mail", "inbox",
    "message", "thread", "chat", "channel", "post", "model", "table", "report", "statement",
    "invoice", "calendar", "invite", "contract", "agreement", "filing", "ledger", "page", "row",
    "column", "cell", "pleading", "pleadings", "claim", "msa", "copy", "copies", "version",
    "versions",
)  # fmt: skip
"""The kinds of place a world keeps facts in: a segment naming one cites where the value comes
from (a path, a file name, a `#channel` or an address does too)."""
_SOURCE = re.compile(
    _words_re(SOURCES).pattern.replace("(?![\\w'])", "(?!\\w)(?!['’](?!s\\b))")
    + r"|/|#\w|@\w|\.(?:docx?|xlsx?|pptx?|pdf|csv|md|txt)\b"
    r"|\b(?:current|latest|newest|updated|final)\s+(?:one|version)\b",
    re.I,
)


_STALE = _words_re(
    ["old", "older", "earlier", "previous", "prior", "archived", "former", "last", "memory",
     "recollection", "recall", "screenshot", "hearsay", "skim", "glance", "gut"]
)  # fmt: skip
"""A place named as an old one (`per an old invite`): a value from it is not the current one."""


_SPAN = r"(?:period|quarter|year|month|week|day|fy\d{4}|q[1-4]_\d{4})s?\b"
"""A span of time after `previous`, `earlier`...: `the previous period` is another period, not a
place before the answer."""
BACKREF = re.compile(
    r"\b(?:above|earlier|previous|preceding|aforementioned|headline)\b(?!\s+" + _SPAN + r")"
    rf"|\b(?:this|that|these|those|the|my|our)\s+(?:[\w$.%()-]+\s+){{0,3}}{_ANSWER_NOUN}\b"
    r"|\b(?:that|those)\b(?=\s*(?:[.;:!?,)]|$))"
    r"|\b(?:this|these)\b(?=\s*(?:[.;:!?,]|$|\s+(?:is|are|was|were|comes?|came|looks?|seems?|"
    r"should|will|would|may|might|can|could|needs?|has|have)\b))"
    r"|(?<=\w\s)it\b",
    re.I,
)
"""Words that point back at the answer: a place before (`above`, `the first line`), the answer's
own nouns with a determiner (`that figure`, `the real one`), `this`/`these` standing alone, and
`it` as an object (`drop it`)."""


STATUS = (
    "draft", "provisional", "preliminary", "interim", "placeholder", "wip", "pending", "rough",
    "ballpark", "indicative", "unreviewed", "unchecked", "first cut", "first pass",
    "work in progress", "working figure", "working number", "prelim",
)  # fmt: skip
"""Words that say a value is not final: in a slot's label they qualify the value."""
_STATUS = _words_re(STATUS)
