"""Easy families: one fact, found with one or two tool calls.

The prompt names where to look (a file path, the mailbox, the team channel, the calendar), so the
shortest solution is a single read; the rubric checks the figure itself. A text fact's rivals are
every other value of its kind the world holds (other projects' providers, rooms, case numbers,
the firm's people), so a list of candidates is not an answer; a date is read in any spelling.
"""

from __future__ import annotations

import re
from datetime import date

from kwrl.synth.cast import Fact, Project
from kwrl.synth.domains import DATA_ROOMS
from kwrl.synth.families.base import (
    DATE_RIVALS,
    Call,
    Criterion,
    TaskDraft,
    date_pattern,
    fact_file,
    n1,
    num,
    others,
    read_call,
    shape_pattern,
    table_file,
    time_rivals,
    unit_word,
)
from kwrl.synth.rng import Rng
from kwrl.synth.world import World, chat_only_fact, mail_only_fact, meeting_fact
from kwrl.tasks.models import ChatPostedCheck, ContainsCheck, RegexCheck


def row_phrase(w: World, p: Project, row: str, period: str) -> str:
    if w.domain == "Law":
        return f"{row.lower()} on {p.code} in {period}"
    if w.domain == "Management Consulting":
        return f"{p.client.name}'s {row} revenue in {period}"
    return f"{p.client.name}'s {row} in {period}"


def value_text(v: float, unit: str) -> str:
    return f"{v:,.0f}" if unit == "hours" else n1(v)


def table_lookup(w: World, p: Project, rng: Rng) -> TaskDraft:
    row = rng.pick(list(p.table.rows))
    j = rng.randrange(1, len(p.table.periods))
    period, prev = p.table.periods[j], p.table.periods[j - 1]
    v, pv = p.table.get(row, period), p.table.get(row, prev)
    unit = p.table.units[row]
    path = table_file(w, p)
    prompt = (
        f"Open {path} and tell me {row_phrase(w, p, row, period)}, and the same figure for {prev}. "
        f"Give the figures in {unit_word(unit)}."
    )
    answer = f"{row} for {p.code}: {value_text(v, unit)} in {period} and {value_text(pv, unit)} in {prev} ({unit})."
    crits = [
        Criterion(
            f"States that {row_phrase(w, p, row, period)} was {value_text(v, unit)} ({unit})",
            num(v, unit=unit),
        ),
        Criterion(
            f"States that the {prev} figure was {value_text(pv, unit)} ({unit})",
            num(pv, unit=unit),
        ),
    ]
    return TaskDraft("table_lookup", "easy", "message_in_console", prompt, crits, [read_call(path)], answer,
                     input_files=[path])  # fmt: skip


TEXT_POOLS: dict[str, tuple[str, ...]] = {
    "data_room": (
        *DATA_ROOMS,
        "iDeals",
        "ShareFile",
        "DealRoom",
        "SecureDocs",
        "Drooms",
        "CapLinked",
    )
}
"""Values of a text fact's kind beside those the world's projects hold (what it is drawn from,
and other names a guesser would list)."""


def _fact_criterion(w: World, f: Fact, what: str) -> Criterion:
    """A fact's check: a date in any spelling, a text among its world's rivals, a number at its
    unit's scale."""
    if isinstance(f.value, str):
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", f.text):
            d = date.fromisoformat(f.text)
            return Criterion(
                f"States that {what} is {d:%B} {d.day}, {d.year} ({f.text})",
                RegexCheck(pattern=date_pattern(f.text), rival_pattern=DATE_RIVALS),
            )
        held = [q.facts[f.key].text for q in w.projects if f.key in q.facts]
        return Criterion(
            f"States that {what} is {f.text}",
            ContainsCheck(
                all_of=[f.text], rivals=others(f.text, [*held, *TEXT_POOLS.get(f.key, ())]),
                rival_pattern=shape_pattern(f.text),
            ),
        )  # fmt: skip
    return Criterion(
        f"States that {what} is {f.text}", num(f.value, pct=f.unit == "%", unit=f.unit)
    )


FILE_FACTS = {
    "Investment Banking": ("offer_ev", "net_debt", "equity_value", "advisory_fee", "shares"),
    "Law": ("damages", "filing_deadline", "contract_value", "budget", "blended_rate"),
    "Management Consulting": ("market_size", "market_cagr", "fee", "savings_target", "sites"),
}


def file_fact_lookup(w: World, p: Project, rng: Rng) -> TaskDraft | None:
    key = rng.pick(FILE_FACTS[w.domain])
    f = p.facts[key]
    path = fact_file(w, p, key)
    if path is None:
        return None
    what = f"the {f.label.lower()} for {p.code}"
    call = read_call(path)
    if path.endswith(".xlsx"):
        call.args["tab_name"] = "Inputs" if key == "shares" else "Summary"
    prompt = f"What is {what}? It is in {path}."
    return TaskDraft(
        "file_fact_lookup", "easy", "message_in_console", prompt, [_fact_criterion(w, f, what)],
        [call], f"The {f.label.lower()} for {p.code} is {f.text}.", input_files=[path],
    )  # fmt: skip


def mail_fact_lookup(w: World, p: Project, rng: Rng) -> TaskDraft:
    f = p.facts[mail_only_fact(w)]
    mail = next(m for m in w.mails if m.subject == f"{p.code}: latest from the other side")
    what = f"the confirmed {f.label.lower()} for {p.code}"
    prompt = (
        f"Someone on the team emailed me the confirmed {f.label.lower()} for {p.code}. "
        f"What is it, and who sent it? Ignore any preliminary figures."
    )
    calls = [
        Call("mail_search_mail", {"subject": p.code}),
        Call("mail_read_mail", {"mail_id": mail.message_id}),
    ]
    return TaskDraft(
        "mail_fact_lookup", "easy", "message_in_console", prompt,
        [_fact_criterion(w, f, what), Criterion(f"States that {p.lead.name} sent it", _who(w, p))], calls,
        f"{p.lead.name} confirmed the {f.label.lower()} for {p.code} at {f.text}.",
    )  # fmt: skip


def _who(w: World, p: Project) -> ContainsCheck:
    """The lead's name, where naming other people of the firm is a list of candidates."""
    return ContainsCheck(
        all_of=[p.lead.last], rivals=others(p.lead.last, [x.last for x in w.people])
    )


def chat_fact_lookup(w: World, p: Project, rng: Rng) -> TaskDraft:
    f = p.facts[chat_only_fact(w)]
    what = f"the {f.label.lower()} for {p.code}"
    prompt = (
        f"Someone posted {what} in the #{p.channel} chat channel. What is it, and who posted it?"
    )
    return TaskDraft(
        "chat_fact_lookup", "easy", "message_in_console", prompt,
        [_fact_criterion(w, f, what), Criterion(f"States that {p.lead.name} posted it", _who(w, p))],
        [Call("chat_get_channel_history", {"channel_id": p.channel, "limit": 100})],
        f"{p.lead.name} posted it: the {f.label.lower()} for {p.code} is {f.text}.",
    )  # fmt: skip


def calendar_lookup(w: World, p: Project, rng: Rng) -> TaskDraft:
    f = p.facts[meeting_fact(w)]
    title = f"{p.code} {f.label}"
    prompt = f"Check my calendar: on what date is the {f.label.lower()} for {p.code}, and at what time does it start?"
    d = date.fromisoformat(str(f.value))
    return TaskDraft(
        "calendar_lookup", "easy", "message_in_console", prompt,
        [
            Criterion(f"States that the {f.label.lower()} for {p.code} is on {d:%B} {d.day}, {d.year} ({f.value})", RegexCheck(pattern=date_pattern(str(f.value)), rival_pattern=DATE_RIVALS)),
            Criterion("States that it starts at 14:00 (2 pm) UTC", RegexCheck(pattern=r"(?<!\d)14[:.]00(?!\d)|\b2\s?(:00)?\s?p\.?m\b", rival_pattern=time_rivals(15))),
        ],
        [Call("calendar_list_events", {"limit": 100})],
        f"The {title} is on {d:%A} {d:%B} {d.day}, {d.year} ({f.value}), from 14:00 to 15:00 UTC.",
    )  # fmt: skip


def chat_post(w: World, p: Project, rng: Rng) -> TaskDraft:
    row = rng.pick(list(p.table.rows))
    period = p.table.periods[-1]
    v = p.table.get(row, period)
    unit = p.table.units[row]
    path = table_file(w, p)
    text = f"{row} for {p.code} in {period}: {value_text(v, unit)} ({unit}), per {path.rsplit('/', 1)[-1]}."
    prompt = (
        f"Post {row_phrase(w, p, row, period)} from {path} in the #{p.channel} channel, "
        f"so the team uses the right number."
    )
    return TaskDraft(
        "chat_post", "medium", None, prompt,
        [Criterion(f"A message in #{p.channel} states the {period} {row} of {value_text(v, unit)}", ChatPostedCheck(channel=p.channel, all_of=[value_text(v, unit)]))],
        [read_call(path), Call("chat_post_message", {"channel_id": p.channel, "message": text})],
        f"Posted in #{p.channel}: {text}", input_files=[path],
    )  # fmt: skip
