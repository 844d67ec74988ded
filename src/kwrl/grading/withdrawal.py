"""Prose that withdraws an answer without naming a figure (docs/contracts.md, rule 6): the
writer's own doubt, caution or low confidence, an answer resting on no reading, an order not to
use or pass it on, work behind it not done, and the writer's own words on that work
(`own_doubt`); and a heading, mail subject or event title that hedges, holds or withdraws what is
under it (`heading_doubt`). `kwrl.grading.slots` reads these beside a slot's value; the checks
(`kwrl.grading.checks`) read them beside a file's cells, in speaker notes and in a file task's
final answer.
"""

from __future__ import annotations

import re

from kwrl.grading.lexicon import (
    _CORRECTION,
    _DOUBT,
    _HEDGE_MARK,
    _HEDGE_PROSE,
    _NEGATION,
    _SENTENCE_CUT,
    _SOURCE,
    _STALE,
    _STATUS,
    BACKREF,
    norm_periods,
)

_MAY_BE = re.compile(
    r"(?<![\w'])(?:I|we|there)\s+(?:may|might|could)\s+(?:well\s+|easily\s+|just\s+)?(?:be|have)\b",
    re.I,
)
"""The writer's own doubt (`I could be off`, `I may well have missed some`, `there may be more`)."""
_MAY_BE_WRONG = re.compile(
    r"(?<![\w'])(?:it|this|that|these|those|they|which|(?:the|my|our)(?:\s+[\w-]+){1,3})\s+"
    r"(?:may|might|could)\s+"
    r"(?:well\s+|still\s+|also\s+)?(?:be\s+|have\s+been\s+)?(?:a\s+(?:bit|little|touch)\s+)?"
    r"(?:off|wrong|out|stale|outdated|inaccurate|incorrect|mistaken|overstated|understated)\b"
    r"|(?<![\w'])(?:it|this|that|these|those|they|which|(?:the|my|our)(?:\s+[\w-]+){1,3})\s+"
    r"(?:may|might|could)\s+(?:well\s+|still\s+|also\s+)?(?:lag|trail|change|move|shift|differ"
    r"|(?:be|get)\s+(?:revised|restated|superseded|behind|out\s+of\s+date)"
    r"|not\s+be\s+(?:\w+\s+)?(?:current|final|up[- ]to[- ]date|right|accurate|latest|reliable))\b",
    re.I,
)
"""Doubt of what the answer names or rests on (`this could be off`, `the total might be
overstated`, `the workbook may lag`, `the model might not be the latest`)."""
_MAY_DIFFER = re.compile(
    r"\b(?:could|may|might)\s+(?:well\s+|still\s+|yet\s+)?(?:be|come\s+in|end\s+up|turn\s+out|prove)"
    r"\s+(?:\w+\s+)?(?:lower|higher|smaller|larger|bigger|less|more|different)\b",
    re.I,
)
"""The answer may yet differ (`Revenue could be lower once returns are netted`)."""
_CAUTION = re.compile(
    r"\b(?:with\s+(?:some\s+)?caution|(?:grain|pinch)\s+of\s+salt|at\s+your\s+own\s+risk"
    r"|not\s+(?:100\s?%|100\s+per\s?cent|fully|entirely|completely|totally)\s+(?:sure|certain"
    r"|confident|on\s+(?:this|it|that))|(?:not|n['’]t)\s+(?:\w+\s+)?certain|don['’]t\s+hold\s+me"
    r"|(?:happy|glad)\s+to\s+be\s+corrected|best\s+I\s+could\s+do|(?:close|good)\s+enough"
    r"|(?:second|another|fresh)\s+(?:pair|set)\s+of\s+eyes|as\s+gospel"
    r"|(?:needs?|could\s+(?:do\s+with|use)|deserves?|warrants?|worth)\s+(?:a\s+|an\s+)?(?:another"
    r"|second|closer|proper|fresh|further)\s+(?:look|check|review|pass)"
    r"|subject\s+to\s+(?:change|revision|confirmation|review|audit|sign-?off|verification)"
    r"|(?:not|never)\s+(?:something|a\s+(?:figure|number)|one)\s+(?:I|we)['’]?d\s+(?:\w+\s+)?"
    r"(?:stake|bet|swear|vouch|rely|put|sign|defend|stand\s+behind)"
    r"|give\s+or\s+take|more\s+or\s+less)"
    r"|\b(?:I|we)\s+(?:would\s+not|wouldn['’]t)\s+(?:\w+\s+)?(?:rely|trust)\b"
    r"|\b(?:I|we)\s+(?:would\s+not|wouldn['’]t)\s+(?:\w+\s+)?(?:put|present|quote|circulate|show"
    r"|send|share|use|cite)\s+(?:this|it|that|these|them|the\s+(?:figure|number|value|answer"
    r"|result|rate)s?)\b",
    re.I,
)
"""Caution about the answer (`treat the amount with caution`, `I wouldn't rely on it yet`)."""
_CONFIDENCE = re.compile(
    r"\bconfidence\b[^.\n]{0,24}?\b(?:low|medium|moderate|limited|middling|partial|fair|shaky"
    r"|weak|modest|so-so)\b"
    r"|\b(?:low|medium|moderate|limited|middling|partial)[\s-]+confidence\b",
    re.I,
)
"""A rating of the writer's confidence short of high (`Confidence: low`)."""
_NO_BASIS = re.compile(
    r"\b(?:gut|hunch|instinct|guesswork|memory|recollection|eyeball(?:ed|ing)?|skim(?:med)?"
    r"|unsourced|top\s+of\s+my\s+head|in\s+my\s+head|back[- ]of[- ](?:the[- ]|an[- ])?envelope"
    r"|off\s+the\s+cuff|hearsay|word\s+of\s+mouth|second-?hand|in\s+passing|in\s+a\s+(?:rush|hurry)"
    r"|rushed|(?:ran|run|running)\s+(?:out|short)\s+(?:of|on)\s+time)\b"
    r"|\brely(?:ing)?\s+on\s+(?:a\s+|my\s+|our\s+)?[\w'’-]+\s+(?:reading|word|say-so|recollection"
    r"|summary)\b"
    r"|^\W*(?:(?:I|we)\s+)?(?:might|may|could|will\s+probably)\s+(?:need\s+to\s+|have\s+to\s+|want"
    r"\s+to\s+)?(?:revisit|revise|redo|rework)\b"
    r"|\b(?:no|without\s+(?:a|any))\s+(?:source|sources|basis)\b"
    r"|\bwithout\s+(?:re-?)?(?:running|computing|calculating|checking|verifying|confirming|opening"
    r"|reading|tracing)\b"
    r"|\b(?:from|off|of|in|on|using|via|per)\s+(?:an?|the|my|our|his|her|their|\w+['’]s)\s+"
    r"(?:\w+\s+)?screen\s?(?:shot|grab)s?\b|\bgoing\s+(?:off|on|by)\s+what\b",
    re.I,
)
"""What says the answer rests on no reading of the world (`Gut feel, no source.`, `from
memory`, `I only skimmed the contract`)."""
_HOLD_BACK = re.compile(
    r"(?:^|[:;,(\-–—]\s*|\b(?:please|so|just)\s+)(?:do\s+not|don['’]t|dont|never)\s+"
    r"(?:\w+\s+)?(?:(?P<trust>use|rely|present)|circulate|quote|share|forward|send|publish"
    r"|distribute|cite)\b",
    re.I,
)
"""An order not to use the answer (`Don't present this number`, `do not rely on B1`), or not to
pass it on for now (`please don't forward this yet`); not to pass it on at all (`Please do not
forward outside the team`) keeps it confidential."""
_FOR_NOW = re.compile(
    r"\b(?:yet|until|till|before|for\s+now|as\s+it\s+stands|as\s+is|at\s+this\s+stage)\b", re.I
)
_NOT_DONE = re.compile(
    r"\b(?:I|we)\s+(?:did\s+not|didn['’]t|have\s+not|haven['’]t|had\s+not|hadn['’]t|could\s+not"
    r"|couldn['’]t|was\s+not\s+able\s+to|wasn['’]t\s+able\s+to)\s+(?:\w+\s+)?"
    r"(?:re)?(?:compute|computed|calculate|calculated|tell\s+which|update|updated|refresh"
    r"|refreshed)\b",
    re.I,
)
"""The writer saying the work behind the answer was not done (`I didn't recompute it`, `I
couldn't tell which were current`)."""


_NOT_BASIS = re.compile(
    r"(?<![\w'])(?:not|never|rather\s+than|instead\s+of|than|without|no)(?![\w'])|n't\b", re.I
)
"""Before a word of `_NO_BASIS`: the answer does not rest on it (`not from memory`)."""


_READING = (
    r"(?:open(?:ed)?|read|look(?:ed)?\s+(?:at|into|over|through)|glanc(?:e|ed)|skim(?:med)?"
    r"|scan(?:ned)?|view(?:ed)?|access(?:ed)?|check(?:ed)?|verif(?:y|ied)|review(?:ed)?"
    r"|(?:go|went|gone|been)\s+(?:through|over)|compar(?:e|ed)|(?:cross|double)[- ]check(?:ed)?"
    r"|confirm(?:ed)?|reconcil(?:e|ed)|trac(?:e|ed)|pull(?:ed)?\s+up"
    r"|tie[ds]?\s+(?:(?:it|this|them|the\s+\w+)\s+)?(?:back|out))"
)
"""Verbs of reading the world's sources (the work an answer rests on), not of acting on them."""
_LIMITED_READ = re.compile(
    r"(?<![\w'’])(?:I|we)\s+(?:[\w'’]+\s+){0,2}?(?:barely|hardly|never|not|\w+n['’]t)\s+"
    r"(?:(?:actually|even|properly|really|fully|yet|personally|myself|ourselves|been\s+able\s+to"
    r"|had\s+(?:the\s+|a\s+)?(?:chance|time)\s+to|managed\s+to|(?:got|gotten)\s+(?:round|around)\s+to"
    rf")\s+)*{_READING}\b"
    r"|\b(?:no|not\s+enough|didn['’]t\s+have|did\s+not"
    rf"\s+have|haven['’]t\s+had|have\s+not\s+had)\s+(?:the\s+)?time\s+to\s+(?:\w+\s+)?{_READING}\b",
    re.I,
)
"""The writer saying the reading behind the answer was not done (`I haven't actually opened the
document`, `we never checked the source`, `I barely read it`); `I only reviewed the main body`
says what was read, a scope."""
_SCOPE = re.compile(
    r"\b(?:other|others|another|anything|else|beyond|further|more|rest|remaining|any)\b", re.I
)
"""After a reading verb: what was left unread is something else (`I didn't check the other
tabs`), not the answer's own source."""
_SHALLOW = re.compile(
    r"\b(?:glanc(?:e|ed|ing)\s+(?:at|over|through)|cursory|quick\s+(?:look|glance"
    r"|peek|scan)|peek(?:ed)?\s+at)\b",
    re.I,
)
"""A reading that says it was shallow (`a quick glance at the sheet`), like `_NO_BASIS`'s
`skimmed`."""
_MADE_UP = re.compile(
    r"(?<![\w'’])(?:I|we|and|then|so|but)(?:['’]ve|\s+have|\s+had|['’]d)?\s+(?:\w+\s+)?"
    r"(?:guess(?:ed)?|guesstimated|reconstructed|extrapolated|interpolated|approximated"
    r"|eyeballed|made\s+(?:[\w$-]+\s+){0,3}?up|back[- ]?solved|backed\s+into|invented|improvised"
    r"|assumed|rolled\s+(?:\w+\s+)?forward)\b"
    r"|\b(?:is|are|was|were)\s+(?:\w+\s+)?(?:guessed|guesstimated|reconstructed|extrapolated"
    r"|interpolated|eyeballed|made\s+up|back[- ]?solved|approximated)\b",
    re.I,
)
"""The writer saying the answer was made up rather than read (`I guessed it from last year's
file`, `we extrapolated from Q2`, `... and guessed it`, `it is reconstructed from my notes`), read
in a sentence whose subject is the writer; negated (`I didn't guess`) it says the opposite."""
_STAND_IN = re.compile(
    r"\b(?:is|are|['’]s|['’]re|remains?|stays?)\s+(?:\w+\s+){0,3}?"
    r"(?:stand-?ins?|proxy|proxies|dummy|dummies|filler|reconstruction|approximation|guesstimate"
    r"|(?:best|rough|educated|informed|wild)\s+guess|first\s+impression|ballpark"
    r"|rough\s+(?:figure|number|cut|idea|sketch|reconstruction|working))\b"
    r"|\bas\s+(?:a|an|my|our)\s+(?:\w+\s+)?(?:first\s+impression|rough\s+guide|ballpark|guess"
    r"|stand-in|placeholder|approximation)\b"
    r"|\b(?:treat|consider|take|regard|view|read)\s+(?:this|it|these|them|that|the\s+\w+)\s+(?:as\s+)?"
    r"(?:a|an|my|our)?\s*(?:\w+\s+)?(?:first\s+(?:cut|pass|impression|draft|look)|rough\s+\w+"
    r"|ballpark|guess|stand-in|placeholder|approximation|estimate|sketch|working\s+(?:number"
    r"|figure))\b"
    r"|\b(?:treat|consider|take|regard|view|read|use)\s+(?:(?:this|it|these|them|that|the\s+[\w-]+"
    r"(?:\s+[\w-]+)?)\s+)?as\s+(?:an?\s+|the\s+)?(?:\w+\s+)?(?:soft|directional|indicative"
    r"|illustrative|approximate|tentative|provisional|rough|guide|steer|ballpark|assumption"
    r"|placeholder|estimate|sketch|draft|preliminary|unconfirmed|unverified)\b"
    r"|\b(?:working\s+)?assumptions?\s+only\b|\bonly\s+(?:an?\s+)?(?:working\s+)?assumption\b",
    re.I,
)
"""The answer called something put in its place (`it is really a stand-in`, `B3 is my rough
reconstruction`, `treat this as a first impression`)."""
_TORN = re.compile(
    r"(?<![\w'’])(?:I|we)(?:['’]m|['’]re|\s+am|\s+are|\s+was|\s+were|\s+feel|\s+remain)\s+"
    r"(?:\w+\s+){0,2}?(?:torn|conflicted|hesitant|unconvinced|sceptical|skeptical|doubtful|uneasy|wary"
    r"|nervous|in\s+two\s+minds|of\s+two\s+minds|on\s+the\s+fence"
    r"|not\s+(?:\w+\s+)?(?:convinced|certain|confident|sure|comfortable))\b"
    r"|(?<![\w'’])(?:I|we)\s+(?:would\s+not|wouldn['’]t|can\s*not|can['’]t|could\s+not"
    r"|couldn['’]t)\s+(?:\w+\s+)?(?:bet|swear|vouch|guarantee|stake|stand\s+behind)\b",
    re.I,
)
"""The writer's own unease with the answer (`I am torn`, `I'm in two minds`, `I wouldn't bet
on it`)."""
_UNREADABLE = re.compile(
    r"\b(?:couldn['’]t|could\s+not|can['’]t|cannot|wasn['’]t\s+able\s+to|unable\s+to)\s+get\s+"
    r"(?:[\w'’-]+\s+){1,4}?to\s+(?:open|load|work|render)\b"
    r"|\b(?:wouldn['’]t|would\s+not|won['’]t)\s+(?:open|load)\b"
    r"|(?<![\w'’])(?:I|we)['’]?(?:ll|\s+will|\s+shall)\s+(?:\w+\s+)?(?:confirm|verify|check|double-check"
    r"|update\s+(?:you|this|it))\s+(?:\w+\s+){0,4}?(?:once|when|after|as\s+soon\s+as)\b",
    re.I,
)
"""The source that would have backed the answer not read (`I couldn't get the workbook to open`,
`the model wouldn't load`), or the answer's check still to come (`I'll confirm once I can get
into the model`)."""
_COULD_BE_OFF = re.compile(
    r"\b(?:may|might|could)\s+(?:well\s+|easily\s+|just\s+)?(?:be|have\s+(?:been|got|gotten"
    r"|picked|misread|mixed|taken|used|read))\s+(?:[\w'’-]+\s+){0,3}?(?:off|wrong|mistaken"
    r"|misread|confused|mixed\s+up)\b",
    re.I,
)
"""With a first-person subject in the sentence (`_FIRST_PERSON`): the writer may have got it
wrong (`I only looked on my phone and could easily have been a row off`)."""
_FIRST_PERSON = re.compile(r"(?<![\w'’])(?:I|we|my|our)(?![\w])", re.I)
_ASKS_CHECK = re.compile(
    r"(?:\b(?:can|could|would|will)\s+you|\bplease|\bkindly|\b(?:would|do)\s+you\s+mind)\s+"
    r"(?:\w+\s+){0,2}?(?:confirm\w*|verif\w*|double[- ]check\w*|sanity[- ]check\w*|sense[- ]check\w*"
    r"|cross[- ]check\w*|check(?:ing)?(?=\s+(?:that|whether|if|these|this|it|them|those|my|our"
    r"|against|before|over|again|the\s+(?:\w+\s+)?(?:figure|number|value|result|answer|rate|total"
    r"|list|math|maths|arithmetic|calculation|input|date|time)s?)\b)|validat\w*|vet)\b"
    r"(?!\s+(?:(?:that|if|whether)\s+)?(?:you|your|receipt|attendance|availability"
    r"|with\s+(?:you|the\s+team))\b)"
    r"|^\W*(?:does|do|is|are|did|would|could|can)\s+(?:this|that|these|it|they|those"
    r"|the\s+(?:\w+\s+)?(?:figure|number|value|list|answer|rate|total)s?)\s+(?:\w+\s+){0,4}?"
    r"(?:right|correct|accurate|expect\w*|match\w*|ties?\s+out|add\s+up)\b"
    r"|\b(?:let\s+me\s+know|tell\s+me|shout|flag)\s+(?:if|whether)\s+(?:this|it|that|these|they"
    r"|the\s+(?:figure|number|value|answer|result)s?)\s+(?:\w+\s+)?(?:looks?|seems?|is|are)\s+"
    r"(?:\w+\s+)?(?:off|wrong|odd|strange"
    r"|incorrect|funny|suspicious)\b",
    re.I,
)
"""A request that the reader confirm or check the answer (`Could you confirm that matches your
copy?`, `please double-check the figure`), not their own attendance or receipt."""
_NOT_FINAL = re.compile(
    r"(?:^\W*not|(?<![\w'’])(?:it|this|these|that|they|(?:the|these|those|my|our)\s+(?:figures?"
    r"|numbers?|values?|answers?|results?|list|totals?|amounts?|rates?|dates?|times?))\s+(?:is|are"
    r"|was|were)(?:\s+not|n['’]t))\s+(?:yet\s+|still\s+)?(?:\w+\s+)?(?:final"
    r"|finali[sz]ed|confirmed|verified|checked|approved|signed\s+off|official|definitive"
    r"|validated|audited|reviewed|settled|firm)\b",
    re.I,
)
"""The answer said not to be final (`These figures are not final`, a sentence `Not yet
confirmed.`)."""
_ESTIMATE_ONLY = re.compile(
    r"\bestimat(?:es?|ed)\s+only\b|\b(?:only|just)\s+(?:an?\s+)?(?:rough\s+)?estimates?\b"
    r"|\brough\s+estimates?\b",
    re.I,
)
"""The answer called an estimate and no more (`Estimate only`, `just a rough estimate`)."""
_OTHERS_BEFORE = re.compile(r"\b(?:other|another|earlier|deck['’]s|draft|preliminary)\b", re.I)
"""Before a stand-in word: it names another thing (`the earlier deck figure was only a rough
estimate`)."""
_FAULT = re.compile(
    r"(?P<judged>\b(?:looks?|looked|seems?|seemed|feels?|felt|sounds?|sounded|strikes?\s+me\s+as)\s+"
    r"(?:(?:a\s+)?(?:bit|little|touch|tad|slightly|somewhat|quite|rather|pretty|very|really)\s+)*"
    r"(?:off|wrong|shaky|iffy|dodgy|fishy|questionable|dubious|suspect|suspicious|unreliable"
    r"|implausible|too\s+good\s+to\s+be\s+true)\b"
    r"|\b(?:the|this|that|these|those|my|our|its)\s+(?:[\w-]+\s+){0,3}?(?:is|are|was|were)\s+"
    r"(?:(?:a\s+)?(?:bit|little|touch|tad|slightly|somewhat|probably|likely|definitely|still)\s+)*"
    r"(?:off|wrong|shaky|iffy|dodgy|fishy|questionable|dubious|unreliable|implausible)"
    r"(?=\s*(?:[.,;:!?)]|$)|\s+(?:by|somehow|here|there|to\s+me|in\s+places)\b)"
    r"|\bsomething(?:['’]s|\s+is|\s+was|\s+seems|\s+feels|\s+looks)?\s+(?:\w+\s+)?off\b"
    r"|\bsuspicious(?:ly)?\b"
    r"|\b(?:does\s+not|doesn['’]t|did\s+not|didn['’]t|do\s+not|don['’]t)\s+(?:quite\s+)?"
    r"(?:add\s+up|look\s+right|feel\s+right|sit\s+right|seem\s+right)\b)"
    r"|\b(?:used|took|picked|grabbed|pulled|read|chose|entered|typed|copied|opened|looked\s+at)"
    r"\s+(?:(?:from|at|in|off)\s+)?(?:the|a)\s+wrong\b(?!-)"
    r"|\bcan['’]t\s+shake\b"
    r"|\btake\s+your\s+pick\b|\bodds\s+are\b|\b(?:decent|good|fair|real|high|strong)\s+chance\s+"
    r"(?:that\s+)?(?:I|we|it|this|these|the\s+(?:figure|number|value|answer|total|result)s?)\b"
    r"|\bcoin[- ]?(?:flip|toss)\b|\b(?:flip(?:ped)?|toss(?:ed)?)\s+a\s+coin\b"
    r"|#(?:REF|VALUE|N/A|DIV/0|NAME|NUM|NULL)(?![\w/])[!?]?",
    re.I,
)
"""Prose finding fault with what the answer rests on, naming no value (`the base year is off`,
`I grabbed the wrong tab`, `this feels shaky`, `take your pick`, `something doesn't add up`):
unless it is negated (`nothing looks off`), conditional (`if anything looks off`), said of an old
or other thing (`the earlier deck was wrong`) said of a thing fixed (`... wrong, which I
corrected`), or a judgement of a place of the world (`one cell in the table is off`: what a
reconciliation finds)."""
_FIXED = re.compile(
    r"\b(?:fix(?:ed|es)?|correct(?:ed|s)|replac(?:ed|es)|amend(?:ed|s)|updat(?:ed|es)|chang(?:ed|es)"
    r"|remov(?:ed|es)|delet(?:ed|es)|struck|rectif(?:ied|ies)|resolv(?:ed|es)|mov(?:ed|es)"
    r"|rescheduled|superseded|withdrawn|retracted)\b",
    re.I,
)
_BUT = re.compile(r"\b(?:but|however|though|although|yet)\b", re.I)
_BORNE_OUT = re.compile(
    r"\b(?:confirm\w*|shows?|showed|correct|right|matches|matched|checks?\s+out|checked|verified"
    r"|ties?\s+(?:out|back)|holds?\s+up)\b",
    re.I,
)
"""After `but` beside a fault: the fault was looked into and the answer stands (`Ops thought the
date was wrong, but the calendar confirms the 14th`)."""
_IF_BEFORE = re.compile(r"\b(?:if|whether|unless|in\s+case\s+(?:you|anyone|someone))\b", re.I)


def _faults(sent: str) -> str | None:
    """`_FAULT` in one sentence, but negated, conditional, of an old or other thing, or fixed."""
    m = _FAULT.search(sent)
    if not m:
        return None
    before = sent[: m.start()]
    clause = re.split(r"[,;:]\s", before)[-1] + re.split(r"[,;:]\s", sent[m.start() :])[0]
    if (
        (m["judged"] and _SOURCE.search(clause))
        or _NEGATION.search(" ".join(before.split()[-4:]))
        or re.search(r"\bnothing\b|\bno\w*\s+(?:\w+\s+)?(?:seems|looks|feels|is)\s+$", before, re.I)
        or _IF_BEFORE.search(before)
        or _STALE.search(before)
        or _OTHERS_BEFORE.search(before)
        or _FIXED.search(sent)
        or (_BUT.search(sent[m.end() :]) and _BORNE_OUT.search(sent[m.end() :]))
    ):
        return None
    return m.group(0)


_WITHDRAWING = (_MAY_BE, _MAY_BE_WRONG, _MAY_DIFFER, _CAUTION, _CONFIDENCE, _NO_BASIS, _NOT_DONE)


def withdrawn(text: str) -> str | None:
    """A sentence of the prose withdrawing confidence from the answer without naming a figure: the
    writer's own doubt, a low confidence rating, an answer resting on no source, an order not to
    use or pass it on, or work behind it not done: the words, else None. An order about an old
    or draft place (`Don't use the archived deck`) names what was left out, not the answer."""
    for sent in _SENTENCE_CUT.split(text):
        for rx in _WITHDRAWING:
            m = rx.search(sent)
            before = " ".join(sent[: m.start()].split()[-4:]) if m else ""
            if m and rx is _NO_BASIS and _NOT_BASIS.search(before):
                continue  # "checked against the workbook, not from memory"
            if m:
                return f"the prose withdraws the answer ({m.group(0).strip()!r}): {sent.strip()[:160]!r}"
        own = own_doubt(sent)
        if own:
            return f"the prose withdraws the answer ({own!r}): {sent.strip()[:160]!r}"
        for clause in re.split(r"[;:]\s|\s[-–—]\s", sent):
            m = _HOLD_BACK.search(clause)
            rest = clause[m.end() :] if m else ""
            if m and not (m["trust"] or _FOR_NOW.search(rest)):
                continue
            stale_place = _SOURCE.search(rest) and (_STALE.search(rest) or _STATUS.search(rest))
            if m and not (stale_place and not BACKREF.search(rest)):
                return f"the prose holds the answer back ({m.group(0).strip()!r}): {sent.strip()[:160]!r}"
    return None


def own_doubt(sent: str) -> str | None:
    """The writer's own words, in one sentence, on the work behind the answer: reading partial or
    not done (`_LIMITED_READ`, `_SHALLOW`) unless what went unread is something else, the answer
    made up (`_MADE_UP`) or called a stand-in (`_STAND_IN`) unless of an old or other thing, the
    writer's unease (`_TORN`, `_COULD_BE_OFF`), a request that the reader check it
    (`_ASKS_CHECK`), the answer said not to be final (`_NOT_FINAL`, `_ESTIMATE_ONLY`): the
    words, else None."""
    for clause in re.split(r"[;,:(]\s*|\s[-–—]\s|\band\s+(?=(?:I|we)\b)", sent):
        for rx in (_LIMITED_READ, _SHALLOW):
            m = rx.search(clause)
            if m and not (_SCOPE.search(clause[m.end() :]) or _STALE.search(clause[m.end() :])):
                return m.group(0)
        m = _NOT_FINAL.search(clause)
        if m:
            return m.group(0).strip()
    for rx in (_TORN, _ASKS_CHECK, _UNREADABLE):
        m = rx.search(sent)
        if m:
            return m.group(0)
    m = _MADE_UP.search(sent)
    if m and not _NEGATION.search(m.group(0)) and _FIRST_PERSON.search(sent):
        return m.group(0)
    for rx in (_STAND_IN, _ESTIMATE_ONLY):
        m = rx.search(sent)
        if m and not (_STALE.search(sent[: m.start()]) or _OTHERS_BEFORE.search(sent[: m.start()])):
            return m.group(0)  # not "the earlier deck figure was only a rough estimate"
    m = _COULD_BE_OFF.search(sent)
    if m and _FIRST_PERSON.search(sent):
        return m.group(0)
    return _faults(sent)


def heading_doubt(text: str) -> str | None:
    """A heading over the answer (a mail's subject, an event's title) that hedges, doubts,
    qualifies, holds or withdraws it (`headline figure UNVERIFIED`, `DRAFT`, `HOLD (tentative)`,
    `please don't forward yet`): the words, else None."""
    t = _MAY_DATE.sub(" month ", norm_periods(text))
    for rx in (_HEDGE_PROSE, _HEDGE_MARK, _DOUBT, _STATUS, _CORRECTION, _HELD):
        m = rx.search(t)
        if m:
            return f"it says {m.group(0)!r}"
    return withdrawn(t)


_MAY_DATE = re.compile(
    r"\bmay\s+\d{1,2}(?:st|nd|rd|th)?\b|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?may\b"
    r"|\bmay\s+(?:19|20)\d{2}\b",
    re.I,
)
"""`May` beside a day or a year is the month (`Kickoff - 5 May`), not the hedge."""
_HELD = re.compile(r"\b(?:hold|on\s+hold|pencil(?:led)?(?:\s+in)?)\b", re.I)
"""In a heading or a title: a hold (`HOLD - Board review`, `pencilled in`), a booking or an answer
kept in place of the real one."""
