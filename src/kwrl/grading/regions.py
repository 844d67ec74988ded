"""Reading the prose around a place's slot lines by an allow-list (docs/contracts.md, "The answer
contract of generated tasks", "The prose around the slot lines").

The slot reader (`kwrl.grading.slots`) reads the prose by closed word classes: a sentence that
weighs the answer in words outside them (`Take that with a pinch of salt.`, `I wouldn't bet on
it.`, `Quick skim only, so treat accordingly:`) passed. This module reads it the other way round:
it names what it can read for certain and leaves the rest undecided (the judge's, else a fail).

- **A sentence that names nothing but the answer** (`_anchored` is False: no value, no place of
  the world, no other period, no name; the place's own label words do not count) can only be
  about the answer or its writer. Anywhere in a place's prose (and in a slot line's label before
  its last colon: `Quick skim only: Revenue FY2025: 121.9`) each clause of it must be a readable
  form (`readable_form`): a courtesy or offer, a greeting or sign-off (`signatures` for a name
  line), a heading, a line that presents the slot lines or their units (`Here are the figures you
  asked for:`), a note on rounding or method (`Computed as net debt divided by EBITDA.`).
  Anything else is undecided.
- **After the final answer's slot lines** (its instruction says `End your answer with these
  lines`: what follows the last of them is outside the contract) each clause must be a readable
  form, or name something else and hold no hedge, doubt, status or correction word. Posts, mails
  and files name no position for their slot lines, so only the first rule reads them.

`read_place` is the verdict of one slot: `read_slot`'s on the text with its wholly readable
sentences set aside (`set_aside`: an offer pointing back, `Happy to walk you through where I
found it.`, comments on nothing), then, on a pass, the rules above.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kwrl.grading import slots as S
from kwrl.grading.statements import Finding, number_tokens, undecided
from kwrl.tasks.models import SlotCheck

END_PLACES = frozenset(["answer"])
"""Places whose instruction puts the slot lines at the end (`End your answer with ...`)."""

_SENTENCE = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][*_]))\s+(?=[^a-z])")
"""Where sentences meet (not after `Co.` before a lower-case word)."""

OPENINGS = re.compile(
    r"^\s*(?:(?:please|do|just|and)\s+)?(?:let\s+(?:me|us)\s+know|shout|ping\s+me|reach\s+out|feel\s+free|(?:i'?m\s+|i\s+am\s+)?"
    r"(?:happy|glad)\s+to|thanks|thank\s+you|many\s+thanks|cheers|best|regards|kind\s+regards"
    r"|best\s+regards|hope\s+(?:this|that)\s+helps|any\s+questions|i\s+can|we\s+can"
    r"|if\s+you\s+(?:need|want|would\s+like|'d\s+like)|want\s+me\s+to|details|more\s+detail"
    r"|full\s+workings|workings|inputs?\s+(?:are\s+)?available)\b",
    re.I,
)
"""Openings of a courtesy or an offer (`I can break this down by quarter if useful.`)."""
NEXT_STEP = re.compile(r"^\s*(?:i['’]ll|i\s+will|we['’]ll|we\s+will|next\s+steps?:?|next,)\s", re.I)
"""Openings of a next step (`I'll update the tracker once you confirm.`): one that points back
at the answer (`I'll revisit this`, `I'll firm it up`) is no form."""
CAUSE = re.compile(
    r"^\s*(?:the|this|that)\s+(?:\w+\s+)?(?:increase|decrease|rise|fall|drop|growth|decline|"
    r"change|movement|difference|gap|uplift)\s+(?:(?:is|was)\s+)?(?:reflects|reflected|"
    r"(?:mainly\s+|largely\s+|mostly\s+)?(?:due\s+to|driven\s+by|explained\s+by|comes?\s+from|"
    r"came\s+from|follows|followed))\s+\S",
    re.I,
)
"""An explanation of a change between the answer's values by its cause (`The increase reflects
new matters opened in the year.`): the cause is free when it weighs nothing."""
GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|dear|morning|good\s+(?:morning|afternoon|evening)|afternoon)\b[^,:!]*[,:!]?",
    re.I,
)
SALUTE = frozenset(
    ["hi", "hello", "hey", "dear", "morning", "afternoon", "evening", "good", "all", "team",
     "everyone", "folks", "best", "regards", "kind", "warm", "many", "thanks", "thank", "you",
     "cheers", "sincerely", "yours"]
)  # fmt: skip
"""The words of a greeting or sign-off line (beside names)."""
PRESENT = frozenset(
    ["here", "are", "is", "you", "go", "sure", "ok", "okay", "as", "requested", "asked", "for",
     "what", "your", "the", "figure", "figures", "number", "numbers", "value", "values", "answer",
     "answers", "result", "results", "input", "inputs", "used", "summary", "below", "following",
     "key", "metric", "metrics", "update", "quick", "item", "items", "line", "lines", "done",
     "all", "amounts", "amount", "in", "units", "unit", "stated", "shown", "given", "and",
     "requested", "from", "me", "my", "our", "this", "these", "both", "each", "one", "two",
     "three", "per", "finding", "findings", "headline", "details", "detail", "date", "time",
     "start", "meeting", "clause", "clauses", "deviating", "reply", "please", "find", "it",
     "booked", "scheduled", "hour", "call", "remaining", "deviation", "deviations", "analyst",
     "see", "added", "adds", "new", "refreshed", "note", "notes", "breakdown", "found", "trend",
     "next", "steps", "overview", "today", "today's", "close", "books", "of", "about", "i", "we",
     "source", "sources", "short", "long", "find", "you'll", "it's", "was", "were", "slot",
     "one-hour", "straightforward", "simple", "easy", "memorandum", "subject", "re"]
)  # fmt: skip
"""The words of a line that presents the slot lines or states their units (`Here are the figures
you asked for:`, `All amounts in $ millions.`)."""
METHOD = frozenset(
    ["computed", "calculated", "derived", "worked", "out", "divided", "by", "over", "times",
     "multiplied", "minus", "less", "plus", "sum", "of", "ratio", "as", "using", "from", "the",
     "result", "is", "it", "this", "metric", "formula", "both", "inputs", "input", "come",
     "comes", "came", "taken", "read", "current", "files", "file", "and", "straight", "lookup",
     "method", "table", "departs", "depart", "each", "these", "playbook", "deviates", "deviate",
     "differs", "described", "below", "set", "shown"]
)  # fmt: skip
"""The words of a note on how the answer was obtained (`Computed as net debt divided by
EBITDA.`, `Each of these departs from the playbook.`) beside the place's label words."""

_TRUTH = S._words_re(
    a for a in S.AFFIRMS if a not in ("use", "keep", "leave", "go with", "stick with", "make it")
)
"""The affirming words that say what is true (`Happy to be corrected`), not the recommending
ones (`Happy to keep you posted`)."""
_WEIGHS = (
    S._NEGATION, S._CORRECTION, _TRUTH, S._HEDGE_PROSE, S._HEDGE_MARK, S._DOUBT,
    S._STATUS, S._STALE, S._CHECK_VERB, S._RETRACT, S._CHANGE, S.EXCLUDES,
)  # fmt: skip
_CAPITAL = re.compile(r"(?<![\w'’])[A-Z][\w'’.-]*")
_PATHLIKE = re.compile(r"[/#@]\w|\w\.(?:docx?|xlsx?|pptx?|pdf|csv|md|txt)\b", re.I)


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", text)


def _weighs(text: str) -> str | None:
    for rx in _WEIGHS:
        m = rx.search(text)
        if m:
            return m.group(0)
    return S.odd_marks(S._MARKS.sub(" ", text).replace("|", " ").replace("!", " "))


def _label_words(labels: Sequence[str]) -> set[str]:
    return {w for lab in labels for w in S._WORD.findall(S.norm_periods(lab).casefold())}


def _rest(clause: str, labels: Sequence[str], names: bool) -> list[str]:
    """The clause's words (lower case) once the place's label words, small words, unit words and
    (`names`) capitalised names are gone."""
    own = _label_words(labels)
    t = S.norm_periods(clause)
    if names:  # a capitalised word that does not open the clause
        lead = len(t) - len(t.lstrip(" *_`#>|-–—•·"))
        t = _CAPITAL.sub(
            lambda m: m[0] if m.start() <= lead or m[0] in ("I", "I'm", "I'd", "I'll") else " ", t
        )
    out = []
    for w in _words(S._PERIOD_WORD.sub(" ", t)):
        lw = w.casefold()
        if lw in own or lw in S._STOP or lw in S._UNIT_WORDS:
            continue
        out.append(lw)
    return out


def readable_form(
    c: SlotCheck, clause: str, labels: Sequence[str], task: frozenset[str] = frozenset()
) -> str | None:
    """The name of the readable form `clause` is (a courtesy or offer, a next step, a change's
    cause, a greeting or sign-off, a heading, a presentation or units line, a note on rounding or
    method), or None. Forms name no value of the slot's kind; the open ones (a courtesy, a next
    step, a cause) weigh nothing (`_WEIGHS`); the others hold only their closed words, a heading
    and a presentation also the words of the task's instruction (`task`) when they weigh
    nothing (`## hearing date`)."""
    text = clause.strip().strip("*_`#>|-–—•· ").strip()
    if not _words(text):
        return "empty"
    if S._occurrences(c, text):
        return None
    if S._rounding_note(text):
        return "rounding"
    g = GREETING.match(text)
    if g:
        text = text[g.end() :].strip()
        if not _words(text):
            return "greeting"
    if OPENINGS.match(text) and not _weighs(text):
        return "courtesy"
    if NEXT_STEP.match(text) and not _weighs(text) and not S.BACKREF.search(text):
        return "next step"
    if CAUSE.match(text) and not _weighs(text):
        return "cause"
    if number_tokens(text) or S.odd_marks(S._MARKS.sub(" ", text).replace("|", " ")):
        return None
    rest = _rest(text, labels, names=True)
    if rest and all(w in SALUTE for w in rest):
        return "greeting"
    told = set() if _weighs(text) else task
    if all(w in PRESENT or w in told for w in rest):
        return "heading" if clause.lstrip().startswith("#") else "presentation"
    if all(w in METHOD for w in rest):
        return "method"
    return None


def _anchored(c: SlotCheck, clause: str, labels: Sequence[str]) -> bool:
    """`clause` names something besides the answer: a value of the slot's kind or any date or
    time, a place of the world (a kind of place, a path, a file name, a `#channel`, an address),
    another period than the labels', or a name (a capitalised word that does not open it)."""
    t = S.norm_periods(clause)
    if S._occurrences(c, clause) or S.find_dates(t, 2000) or S.find_times(t):
        return True
    if any(not (100.0 in k.plain and k.factor == 0.01) for k in S._numbers(t)):
        return True
    if S._WEEKDAY.search(t):
        return True
    places = [m for m in S._SOURCE.finditer(t) if m[0].casefold() not in ("source", "sources")]
    if places or S._CITE.search(t) or _PATHLIKE.search(t):
        return True
    own = {p.casefold() for lab in labels for p in S._PERIOD_WORD.findall(S.norm_periods(lab))}
    if {p.casefold() for p in S._PERIOD_WORD.findall(t)} - own:
        return True
    body = t.strip().lstrip("*_`#>|-–—•· ")
    caps = [m[0] for m in _CAPITAL.finditer(body) if m.start() > 0]
    own_words = _label_words(labels)
    return any(
        w not in ("I", "I'm", "I'd", "I'll") and w.casefold().strip(".") not in own_words
        for w in caps
    )


_TAIL_CUT = re.compile(
    r"[;]|\s[-–—]\s|—|(?=\b(?:but|though|although|however|whereas|yet|so)\b)", re.I
)
"""Where a sentence after the slot lines is cut into clauses (not at `and`: `names A and B as the
parties` is one clause)."""
_TAIL_WEIGHS = re.compile(
    "|".join(rx.pattern for rx in (S._HEDGE_PROSE, S._DOUBT, S._STATUS, S._CORRECTION)), re.I
)
"""After the slot lines, a clause naming something else still may not hedge, doubt, call
something by a status or correct (`Might have misread the invite.`)."""


def _names_line(line: str) -> bool:
    """A line of at most four capitalised words and nothing else (`Ana Costa`, `Omar,`)."""
    t = line.strip().strip("*_`>-–—• ").rstrip(",")
    words = t.split()
    return 0 < len(words) <= 4 and all(re.fullmatch(r"[A-Z][\w'’.-]*", w) for w in words)


def signatures(
    lines: Sequence[str], c: SlotCheck, labels: Sequence[str], task: frozenset[str] = frozenset()
) -> set[int]:
    """The lines that greet or sign by name: a name line that opens the text and ends with `,`
    (`Omar,`), or that follows a greeting or sign-off line (`Best,` then `Ana Costa`)."""
    out: set[int] = set()
    prev: str | None = None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        if _names_line(line) and (
            (prev is None and line.rstrip().endswith(","))
            or (
                prev is not None
                and readable_form(c, prev, labels, task) in ("greeting", "courtesy")
            )
        ):
            out.add(i)
        prev = line
    return out


_ABBREV = re.compile(r"\b(?:Co|Inc|Ltd|Corp|Bros|Mr|Mrs|Ms|Dr|St|No|vs|Jr|Sr|e\.g|i\.e)\.$")
"""An abbreviation's period, which ends no sentence."""


def _sentences(line: str, task: str = "") -> list[str]:
    """The line's sentences, less those the task's instruction holds word for word (`task`: its
    text, as `_norm` makes it): a restated instruction is the task's words, not the writer's."""
    out: list[str] = []
    for piece in _SENTENCE.split(line):
        if out and _ABBREV.search(out[-1]):
            out[-1] += " " + piece  # "Granite & Co. Securities" is one name
        elif piece.strip():
            out.append(piece)
    if not task:
        return out
    return [s for s in out if len(_norm(s).split()) < 3 or _norm(s) not in task]


def _norm(text: str) -> str:
    """Words only, lower case, single-spaced: how a restated sentence is looked up."""
    return " ".join(
        re.findall(r"[\w$%.'’/-]+", S._strip_marks(S.TEMPLATE.sub(" ", text)).casefold())
    )


def weighing(c: SlotCheck, text: str, task: str = "") -> str | None:
    """The first sentence or clause of the place's prose the rules above cannot read
    (docs/contracts.md), as a reason, or None. `text` is the place's text as `read_slot` reads
    it."""
    labels = [c.label, *c.others]
    placed = S.place_lines(text, labels)
    if not placed:
        return None
    last = max(ln.index for ln, _, _ in placed)
    at = {ln.index: ln for ln, _, _ in placed}
    lines = text.splitlines()
    vocab = frozenset(_words(task))
    signed = signatures(lines, c, labels, vocab)
    for i, line in enumerate(lines):
        if i in signed:
            continue
        tail = c.place in END_PLACES and i > last
        if i in at:
            if ":" not in at[i].label:
                continue
            line = at[i].label.rsplit(":", 1)[0]  # "Quick skim only: Revenue FY2025"
        for sent in _sentences(line, task):
            parts = S.clauses(sent)
            if all(readable_form(c, p, labels, vocab) for p in parts):
                continue
            if tail:  # each clause is a form, or names something else and weighs nothing
                bad = [
                    p
                    for p in _TAIL_CUT.split(sent)
                    if p.strip()
                    and not readable_form(c, p, labels, vocab)
                    and not (_anchored(c, p, labels) and not _TAIL_WEIGHS.search(p))
                ]
            elif _anchored(c, sent, labels):
                continue
            else:
                bad = [p for p in parts if not readable_form(c, p, labels, vocab)]
            if bad:
                where = "after the slot lines" if tail else "around the slot lines"
                return f"the prose {where} names nothing but the answer: {bad[0].strip()[:120]!r}"
    return None


def set_aside(c: SlotCheck, text: str, task: str = "") -> str:
    """`text` with the sentences of its prose lines that are wholly readable forms blanked (line
    count kept): they say nothing about the answer for the slot reader's prose rules to weigh."""
    labels = [c.label, *c.others]
    at = {ln.index for ln, _, _ in S.place_lines(text, labels)}
    out = []
    lines = text.splitlines()
    vocab = frozenset(_words(task))
    signed = signatures(lines, c, labels, vocab)
    for i, line in enumerate(lines):
        if i in at or i in signed:
            out.append(line)
            continue
        told = _sentences(line, task)
        kept = [
            s
            for s in _sentences(line)
            if s in told and not all(readable_form(c, cl, labels, vocab) for cl in S.clauses(s))
        ]
        out.append(" ".join(kept))
    return "\n".join(out)


def read_place(
    c: SlotCheck,
    text: str,
    allowed: Iterable[float] = (),
    mails: Sequence[str] = (),
    task: str = "",
) -> Finding:
    """The verdict of one slot in its place's text: `read_slot`'s on the text with its readable
    forms (and the sentences restating the task's instruction, `task`) set aside, then, on a
    pass, the prose rules above (undecided when one holds)."""
    allowed = list(allowed)
    prepared = S.split_runs(S.TEMPLATE.sub("", S.drop_quoted(text, mails)), [c.label, *c.others])
    told = _norm(task)
    f = S.read_slot(c, set_aside(c, prepared, told), allowed)
    if not f.passed:
        return f
    why = weighing(c, prepared, told)
    return undecided(why) if why else f
