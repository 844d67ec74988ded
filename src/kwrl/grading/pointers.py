"""What a sentence says about a pointer back at the answer (docs/contracts.md, "The answer
contract of generated tasks", "Pointers back at the answer").

A pointer (`above`, `this one`, `the figure above`, `it`; `kwrl.grading.slots.BACKREF`) is a risk
only when what the sentence says about it could take the answer back or doubt it. This module
reads the sentence's structure around each pointer and names the roles it can read for certain:

- **the object of an offer or a passing-on** (`send`, `share`, `forward`, `walk you through` ...:
  `Happy to send it to Priya`, `I've shared it with Omar`), of a reader's having or needing it
  after `if`, `so` or `in case` (`so you have it to hand`, `if she needs it`), of `where I found`
  or of a reader's questions (`questions on this`); what follows it names only a recipient, a
  channel or a time (`Sent it anyway.` is not read), and the sentence weighs nothing;
- **the subject of an affirming predicate**: a subject made of the pointer, the answer's nouns
  and the labels' words, a copula, then a status that says the answer is settled (`final`,
  `signed off`, `confirmed`, `audited`, `approved`, `agreed`, `locked`, `definitive`: `This one is
  final.`, `The figure above is the signed-off one.`), with at most an agent after it (`by the
  finance team`) and nothing else;
- **an operand of a method note** (`Change computed as the difference between the two periods
  divided by the Q3 2025 figure.`, `Same method as before.`): a method word and only method words
  beside the pointers, names, values and labels;
- **a pointer at something else**: `previous`/`prior`/`earlier`/`preceding`/`last` before a
  period's noun (`the previous period`), a determiner and noun around another period or a name
  (`the Q1 numbers`, `the Project Crystal Zephyr numbers`), a pointer word before a noun that another value follows
  (`the earlier estimate of 21.8`), `it` after `none of`/`all of`... where the sentence named a
  place of the world before it (`The Q2 workbook has open items, but none of it feeds this
  metric`).

Any other predicate (a verb of retraction in any words, doubt, waiting, a qualifier such as `for
now`, `yet`, `pending`, `once ...`) is not read: the caller leaves the slot undecided.
"""

from __future__ import annotations

import re

from kwrl.grading import slots as S
from kwrl.grading.statements import number_tokens
from kwrl.tasks.models import SlotCheck

_OFFER_VERB = re.compile(
    r"\b(?:send|sends|sent|sending|share|shares|shared|sharing|forward|forwards|forwarded|"
    r"forwarding|circulate|circulated|circulating|pass|passed|passing|email|emailed|e-mail|"
    r"e-mailed|mailed|attach|attached|attaching|post|posted|upload|uploaded|present|presented|"
    r"copy|copied|add|added|save|saved|file|filed|put|log|logged|enter|entered|"
    r"walk\s+\w+\s+through|talk\s+\w+\s+through|take\s+\w+\s+through)"
    r"(?:\s+(?:you|them|him|her|us|me))?\s*$",
    re.I,
)
"""A verb whose object a pointer may be in an offer or a passing-on (`send it`, `share this`)."""
_OFFERING = re.compile(
    r"^\W*(?:(?:and|so|also|just)\s+)*(?:(?:i['’]?m\s+|i\s+am\s+|we['’]re\s+)?(?:happy|glad)\s+to"
    r"|please|(?:please\s+)?feel\s+free\s+to|you['’]re\s+welcome\s+to|you\s+are\s+welcome\s+to"
    r"|(?:i|we)\s+can|can|shall\s+(?:i|we)|want\s+me\s+to|let\s+me\s+know\s+if"
    r"|if\s+you\s+(?:want|need|would\s+like|['’]d\s+like)|(?:i|we)['’]ll|(?:i|we)\s+will"
    r"|(?:i|we)['’]ve\s+(?:also\s+|already\s+)?|(?:i|we)\s+have\s+(?:also\s+|already\s+)?"
    r"|(?:also\s+|already\s+)?(?:sent|shared|forwarded|circulated|emailed|attached|posted|uploaded)"
    r"|(?:i|we)\s+(?:also\s+|already\s+)?(?:sent|shared|forwarded|circulated|emailed|attached|posted|uploaded))",
    re.I,
)
"""How an offer or a passing-on opens (`Happy to send it`, `I've shared it`, `Sent it to Omar`)."""
_SENT_BACK = re.compile(r"\b(?:back|again|fix\w*|redo\w*|rework\w*|instead|replac\w*|rid)\b", re.I)
"""Words after an offer that send the answer back to be redone (`send it back`)."""
_HAVING = re.compile(
    r"\b(?:if|so|in\s+case|whenever|should)\b.*\b(?:you|she|he|they|we|[A-Z][a-z]+)\s+"
    r"(?:need|needs|needed|want|wants|wanted|have|has|had|would\s+like|'d\s+like|can\s+use)\s*$",
    re.I,
)
"""A reader having or needing the answer (`so you have it to hand`, `if she needs it`)."""
_FOUND = re.compile(
    r"\b(?:where|how)\s+(?:i|we)\s+(?:found|got|pulled|sourced|took|read|computed|calculated|"
    r"derived|worked)\s*$",
    re.I,
)
"""Where or how the answer was found (`walk you through where I found it`)."""
_ASKING = re.compile(
    r"\b(?:questions?|queries|anything(?:\s+else)?|help|more|details?|thoughts|comments)\s+"
    r"(?:\w+\s+)?(?:on|about|with|regarding|re)\s*$",
    re.I,
)
"""A reader's questions about the answer (`Let me know if you have questions on this`)."""
_COPULA = re.compile(
    r"\s(?:is|are|was|were|has\s+been|have\s+been)\b|['’]s\b|\s(?:is|are)\s+now\b", re.I
)
_SETTLED = re.compile(
    r"^\s*(?:now\s+)?(?:the\s+|a\s+|an\s+)?(?:fully\s+)?(?:final|signed[- ]off|confirmed|audited|"
    r"approved|agreed|locked|locked[- ]in|definitive|authoritative)"
    r"(?:\s+(?:one|ones|figure|figures|number|numbers|value|values|version|answer|answers|"
    r"result|results|input|inputs|metric))?"
    r"(?:\s+(?:by|with|per)\s+(?P<agent>[^,;]*))?\s*[.!]?\s*$",
    re.I,
)
"""A status that says the answer is settled, with at most an agent after it (`by Omar`)."""
_SUBJECT_WORDS = frozenset(
    ["the", "this", "that", "these", "those", "my", "our", "both", "all", "two", "three", "each", "of",
     "one", "ones", "it", "above", "earlier", "headline", "figure", "figures", "number", "numbers",
     "value", "values", "answer", "answers", "result", "results", "input", "inputs", "metric",
     "line", "lines", "and", "here"]
)  # fmt: skip
"""The words a subject pointing back at the answer may hold beside the labels' words."""
_QUALIFIER = re.compile(
    r"\b(?:now|yet|still|pending|until|till|unless|once|subject|except|provided|for\s+the\s+"
    r"moment|time\s+being|so\s+far|meantime|hopefully|presumably|supposedly|think|believe|"
    r"suspect|expect|hope|guess|reckon|assume|should|would|will|must|only|if|when|after|before|"
    r"as\s+soon\s+as)\b",
    re.I,
)
"""A qualifier that makes a settled status or an offer wait on something (`final for now`,
`signed off, pending Omar`, `happy to send it once checked`)."""
_METHOD_VERB = re.compile(
    r"\b(?:computed|calculated|derived|worked\s+out|measured|method|approach|formula|basis)\b",
    re.I,
)
METHOD = frozenset(
    ["computed", "calculated", "derived", "worked", "out", "measured", "method", "approach",
     "formula", "basis", "same", "as", "in", "the", "a", "an", "of", "by", "over", "divided",
     "times", "multiplied", "minus", "less", "plus", "sum", "difference", "between", "ratio",
     "change", "using", "from", "and", "to", "two", "both", "each", "period", "periods", "figure",
     "figures", "number", "numbers", "value", "values", "input", "inputs", "result", "it", "this",
     "that", "these", "is", "was", "for", "above", "previous", "prior", "earlier", "preceding",
     "last", "percentage", "percent", "share", "growth", "then", "with", "one", "rate", "year",
     "quarter", "month", "base", "starting", "ending", "opening", "closing", "average", "total",
     "way", "metric", "metrics", "multiple"]
)  # fmt: skip
"""The words of a method note whose operands may be pointers (`Change computed as the difference
between the two periods divided by the Q3 2025 figure.`)."""
_PERIOD_NOUN = re.compile(
    r"\s*(?:[\w-]+\s+)?(?:period|periods|quarter|quarters|year|years|month|months|week|weeks|"
    r"half|halves|cycle|round|close|fy\d{4}|q[1-4]_\d{4}|period['’]s|quarter['’]s|year['’]s|"
    r"month['’]s)\b",
    re.I,
)
OTHER_PERIOD = re.compile(
    r"\b(?:(?:previous|prior|last|preceding|earlier|next|following)\s+(?:period|quarter|year|"
    r"month|week|half|cycle|round)|q[1-4]|h[12]|(?:19|20)\d{2})\b",
    re.I,
)
"""Another period named without a label's spelling (`the previous period`, `the Q1 numbers`)."""
_NEVER = re.compile(r"(?!)")
_MERIT = re.compile(
    r"\b(?:better|worse|best|worst|prefer\w*|rather|safer|sounder|stronger|weaker|reliable|"
    r"trustworthy|guide|closer|nearer)\b",
    re.I,
)
"""Words weighing one thing against another (`the previous period's figure may be the better
guide`): a pointer at another thing beside one is the reader's."""
_OF_IT = re.compile(r"\b(?:none|all|some|any|most|part|much|each|rest|bits?)\s+of\s+$", re.I)
_NAMED_VALUE = re.compile(r"^\s*[\w-]+\s+(?:of|at|was|is|were|came\s+to|showed|shows|:)\s*$", re.I)


_WAITS = re.compile(
    r"\b(?:yet|still|pending|until|till|unless|once|subject\s+to|provided|for\s+now|for\s+the\s+"
    r"moment|time\s+being|after|before|as\s+soon\s+as)\b",
    re.I,
)
"""A condition that makes an offer wait on something (`happy to send it once checked`)."""


def _weighs(text: str, qualifier: re.Pattern[str] = _QUALIFIER) -> str | None:
    """A word of the closed weighing classes in `text` (pointer words already gone), or of
    `qualifier`."""
    for rx in (
        S._NEGATION, S._CORRECTION, S._HEDGE_PROSE, S._HEDGE_MARK, S._DOUBT, S._STATUS,
        S._RETRACT, S._CHANGE, S.EXCLUDES, qualifier,
    ):  # fmt: skip
        m = rx.search(text)
        if m:
            return m.group(0)
    return None


def other_period(c: SlotCheck, text: str) -> str | None:
    """A period `text` names (`OTHER_PERIOD`) that is not the slot label's own (`Q4`, `2025` of
    `Revenue Q4 2025`), or None."""
    own = set(re.findall(r"q[1-4]|(?:19|20)\d{2}", S.norm_periods(c.label).casefold()))
    return next((p for p in OTHER_PERIOD.findall(text) if p.casefold() not in own), None)


def _labels(c: SlotCheck) -> set[str]:
    """The words of the place's labels (lower case, periods normalised)."""
    return {
        w for lab in (c.label, *c.others) for w in S._WORD.findall(S.norm_periods(lab).casefold())
    }


def _refers_elsewhere(c: SlotCheck, part: str, sentence: str, m: re.Match[str]) -> bool:
    """The pointer `m` of `part` names something other than the answer: a period (`the previous
    quarter`), another value after its noun (`the earlier estimate of 21.8`), or (`it` after
    `none of`) a place of the world the sentence named before it."""
    word = m[0].casefold()
    after = part[m.end() :]
    labels = _labels(c)
    names = [
        n for n in re.findall(r"(?<=\s)[A-Z][\w'’&.-]*(?=\s)", m[0]) if n.casefold() not in labels
    ]
    if other_period(c, m[0]) or names:
        return True  # "the Q1 numbers", "the 2024 figure", "the Project Crystal Zephyr numbers"
    if word in ("previous", "prior", "earlier", "preceding", "last") and _PERIOD_NOUN.match(after):
        return True
    if word in ("previous", "prior", "earlier", "preceding"):
        head = re.match(r"\s*[\w-]+\s+(?:of|at|was|is|were|came\s+to|showed|shows|:)\s*", after)
        if head and S._occurrences(c, after[head.end() : head.end() + 40]):
            return True  # "the earlier estimate of 21.8"
    if word == "it" and _OF_IT.search(part[: m.start()]):
        at = sentence.find(part.strip()[:40])
        before = sentence[: max(at, 0)] + part[: m.start()]
        return bool([p for p in S._SOURCE.finditer(before) if p[0].casefold() != "source"])
    return False


def _affirms(c: SlotCheck, part: str, labels: set[str]) -> bool:
    """`part` is `<subject pointing back> <copula> <settled status> [by <agent>]`."""
    t = part.strip().strip("*_`>-–—•·( )").strip()
    cop = _COPULA.search(t)
    if not cop:
        return False
    subject = S.norm_periods(t[: cop.start()]).casefold()
    words = re.findall(r"[\w-]+", subject)
    if not words or not all(w in _SUBJECT_WORDS or w in labels for w in words):
        return False
    if not (S.BACKREF.search(t[: cop.start()] + " ") or words[0] in ("it", "this", "these")):
        return False
    m = _SETTLED.match(t[cop.end() :])
    if not m:
        return False
    agent = m.group("agent") or ""
    plain = re.sub(r"(?<![\w'’])[A-Z][\w'’&.-]*", " ", agent)  # names
    words = [w.casefold() for w in re.findall(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", plain)]
    if not all(w in PLACE_WORDS or w in S.NAMING_WORDS or w in labels for w in words):
        return False  # "confirmed by hearsay"
    return not (_weighs(agent) or S._occurrences(c, agent))


def _method(c: SlotCheck, part: str, labels: set[str]) -> bool:
    """`part` is a method note: a method word and method words only beside values, periods,
    names and the labels' words."""
    if not _METHOD_VERB.search(part) or _weighs(part):
        return False
    t = S._PERIOD_WORD.sub(" ", S.norm_periods(part))
    t = re.sub(r"(?<![\w'’])[A-Z][\w'’.-]*", " ", t[1:])  # names (not the opening word)
    words = re.findall(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", part[:1] + t)
    return all(
        w.casefold() in METHOD or w.casefold() in labels or w.casefold() in S._UNIT_WORDS
        for w in words
    )


def reads(c: SlotCheck, part: str, clause: str = "", context: str = "") -> str | None:
    """The role every pointer back at the answer in `part` plays, when each is one that can be
    read for certain (module doc): `settled`, `method`, `offer` or `elsewhere`; None when a
    pointer plays any other role, or when `part` weighs anything besides the settled status.
    `clause`: the clause `part` was cut from (a settled status qualified in it, `final, for
    now`, is not read); `context`: the sentence or line, where `it` may find a place it stands
    for."""
    labels = _labels(c)
    t = S.norm_periods(part)
    found = list(S.BACKREF.finditer(t))
    spans = {m.start() for m in found}
    found += [m for m in re.finditer(r"(?i)(?<![\w'’])it\b", t) if m.start() not in spans]
    found.sort(key=lambda m: m.start())  # `it` after a mark too: "questions on this, it's rushed"
    if not found:  # "... and signed off", "Signed off.": the status again, its subject implied
        return "settled" if _SETTLED.match(re.sub(r"^\W*and\b", "", t)) else None
    sentence = _sentence_of(part, context or clause or part)
    if _affirms(c, t, labels):
        rest = _said_of_it(c, sentence, part)
        return None if _weighs(rest) or S._CHECKING.search(rest) else "settled"
    if _method(c, t, labels):  # the rest of the sentence may not weigh: "..., not yet checked"
        rest = _said_of_it(c, sentence, part)
        return None if _weighs(rest) or S._CHECKING.search(rest) else "method"
    roles = set()
    for m in found:
        before = t[: m.start()]
        if _refers_elsewhere(c, t, context or clause or t, m):
            roles.add("elsewhere")
        elif _HAVING.search(before) or _FOUND.search(before) or _ASKING.search(before):
            roles.add("asked")
        elif _OFFER_VERB.search(before) and _OFFERING.match(t):
            roles.add("offer")
        else:
            return None
    if not roles & {"offer", "asked"}:  # weighing beside it: which thing it weighs is unclear
        weighs = _weighs(t, _NEVER) or _MERIT.search(t) or S._AFFIRM.search(t)
        return None if weighs else "elsewhere"  # what it says of another thing, rule 6 reads
    if re.search(
        r"\b(?:it|its|this|that|these|those|above)\b", _said_of_it(c, sentence, part), re.I
    ):
        return None  # "questions on this, it's rushed", "through it and its flaws": more of it
    rest = S.BACKREF.sub(" ", _said_of_it(c, sentence, part) + " " + part)
    if _weighs(rest, _WAITS) or S._CHECKING.search(rest) or S._AFFIRM.search(rest):
        return None
    passed = [
        m for m in found if _OFFER_VERB.search(t[: m.start()]) or _HAVING.search(t[: m.start()])
    ]
    if _SENT_BACK.search(rest) or (passed and not _plain_after(c, t[passed[0].end() :], labels)):
        return None  # what follows the object passed on or had: a recipient, a channel, a time
    return "offer"


def _said_of_it(c: SlotCheck, sentence: str, part: str) -> str:
    """The sentence's other clauses that may still say something of the answer: not `part`'s,
    and not one naming another thing (a value, a place, another period, a name: `only the Q1
    numbers are still outstanding`), which rule 6 reads as any prose."""
    own = part.strip().rstrip(".!?;")
    key = own[:40]
    out = []
    for cl in S.clauses(sentence):
        named = (
            S._occurrences(c, cl) or number_tokens(cl) or S._SOURCE.search(cl)
            or other_period(c, cl) or re.search(r"(?<=\w\s)(?!I\b|I['’])[A-Z][\w'’&.-]*", cl)
        )  # fmt: skip
        if key and key in cl:
            out.append(cl.replace(own, " "))  # "final, except for the FX piece"
            continue
        if named or _SETTLED.match(re.sub(r"^\s*and\b", "", cl)):
            continue  # "... and signed off" settles it once more
        out.append(cl)
    return " ".join(out)


def _sentence_of(part: str, context: str) -> str:
    """The sentence of `context` that holds `part` (else `part`)."""
    key = part.strip()[:40]
    return next((x for x in re.split(r"(?<=[.!?])\s+", context) if key and key in x), part)


OFFER_TAIL = frozenset(
    ["to", "with", "over", "along", "across", "on", "in", "into", "via", "by", "for", "as",
     "well", "too", "also", "and", "the", "a", "an", "your", "their", "our", "his", "her", "them",
     "you", "him", "us", "team", "wider", "whole", "rest", "anyone", "else", "everyone", "today",
     "tomorrow", "morning", "afternoon", "evening", "now", "this", "week", "later", "it",
     "reference", "records", "hand", "convenience", "file", "files", "information", "info",
     "other", "others", "other's", "at", "meeting", "call", "next", "update", "pack", "tracker",
     "weekly", "monthly", "more", "widely", "further", "format", "formats", "another",
     "different", "form", "layout"]
)  # fmt: skip
"""Besides names, places, roles and the labels' words: what may follow an offer's object (a
recipient, a channel, a time: `to Priya`, `with the wider team`, `in #deals this morning`)."""


def _plain_after(c: SlotCheck, after: str, labels: set[str]) -> bool:
    """What follows an offer's first pointer, up to a condition (`if`, `in case`, `whenever`,
    `should`), names only a recipient, a channel or a time (`Sent it anyway.` is not read)."""
    head = re.split(
        r"\b(?:if|in\s+case|whenever|should|so)\b|,\s*(?:let\s+me\s+know|shout|thanks|cheers|just\s+ask)",
        after,
        maxsplit=1,
        flags=re.I,
    )[0]
    head = re.sub(r"\S*[/#@.]\w\S*|(?<![\w'’])[A-Z][\w'’&.-]*", " ", head)  # paths, names
    return all(
        w.casefold() in OFFER_TAIL or w.casefold() in PLACE_WORDS or w.casefold() in labels
        or w.casefold() in S.NAMING_WORDS or S._WEEKDAY.fullmatch(w)
        for w in re.findall(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", head)
    )  # fmt: skip


PLACE_WORDS = frozenset(
    ["the", "a", "an", "our", "their", "its", "your", "my", "his", "her", "this", "that", "same",
     "auditors", "auditor", "cfo", "controller", "treasury", "partners", "client's", "firm's", "team's", "project's", "current", "latest", "final", "signed",
     "executed", "audited", "master", "main", "shared", "summary", "project", "finance",
     "financial", "billing", "management", "monthly", "quarterly", "annual", "year-end",
     "board", "budget", "data", "source", "live", "official", "approved", "published", "new",
     "attached", "original", "underlying", "engagement", "matter", "deal", "case", "client",
     "q", "fy", "of", "in", "on", "and", "tab", "sheet", "row", "column", "cell", "file",
     "folder", "workbook", "deck", "slide", "memo", "mail", "email", "thread", "channel",
     "model", "table", "report", "statement", "ledger", "page", "contract", "agreement",
     "calendar", "invite", "document", "doc", "version", "copy", "post", "message", "filing"]
)  # fmt: skip
"""The words a plain source may name its place with besides names, periods, numbers, paths and
the labels' words (`from the FY2025 Billing workbook, Summary tab`)."""


def plain_source(c: SlotCheck, part: str) -> bool:
    """Each place `part` cites (`from`, `per`, `in` ... a kind of place), and what follows it in
    `part`, is named in plain words only (`PLACE_WORDS`, names, periods, numbers, paths, the
    labels' words): `The figure above came from a half-finished tab`, `This one is from a tab I
    only half trust` say something of the place the reader cannot weigh."""
    labels = _labels(c)
    t = S.norm_periods(part)
    for m in S._SOURCED.finditer(t):
        body = t[m.start() :].split(None, 1)[1] if len(m[0].split()) > 1 else ""
        body = re.sub(r"\S*[/#@.]\S*|(?<![\w'’])[A-Z][\w'’&.-]*", " ", body)  # paths, names
        for w in re.findall(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", body):
            lw = w.casefold()
            if lw not in PLACE_WORDS and lw not in labels and not S._PERIOD_WORD.fullmatch(lw):
                return False
    return True
