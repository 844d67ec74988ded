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
    Call,
    Criterion,
    TaskDraft,
    fact_file,
    n1,
    number_form,
    number_slot,
    others,
    read_call,
    shape_pattern,
    slot_prompt,
    table_file,
    unit_word,
    with_others,
)
from kwrl.synth.rng import Rng
from kwrl.synth.world import World, chat_only_fact, mail_only_fact, meeting_fact
from kwrl.tasks.models import SlotCheck


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
    la, lb = f"{row} {period}", f"{row} {prev}"
    prompt = (
        f"Open {path} and tell me {row_phrase(w, p, row, period)}, and the same figure for {prev}. "
        f"Give the figures in {unit_word(unit)}."
    ) + slot_prompt([(la, number_form(unit)), (lb, number_form(unit))])
    answer = (
        f"{row} for {p.code}, from {path.rsplit('/', 1)[-1]} ({unit}):\n"
        f"{la}: {value_text(v, unit)}\n{lb}: {value_text(pv, unit)}"
    )
    rest = [q for q in p.table.periods if q not in (period, prev)]
    checks = with_others([
        number_slot(la, v, unit, rivals=[p.table.get(row, q) for q in rest]),
        number_slot(lb, pv, unit, rivals=[p.table.get(row, q) for q in rest]),
    ])  # fmt: skip
    crits = [
        Criterion(f"States that {row_phrase(w, p, row, period)} was {value_text(v, unit)} ({unit})", checks[0]),
        Criterion(f"States that the {prev} figure was {value_text(pv, unit)} ({unit})", checks[1]),
    ]  # fmt: skip
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


def _fact_slot(w: World, f: Fact, label: str, rivals: list[float] | None = None) -> SlotCheck:
    """A fact in its slot: a date in any spelling, a text among its world's rivals, a number at
    its unit's scale."""
    if isinstance(f.value, str):
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", f.text):
            return SlotCheck(label=label, type="date", value=f.text)
        held = [q.facts[f.key].text for q in w.projects if f.key in q.facts]
        return SlotCheck(
            label=label, type="text", value=[f.text],
            rivals=others(f.text, [*held, *TEXT_POOLS.get(f.key, ())]),
            rival_pattern=shape_pattern(f.text),
        )  # fmt: skip
    return number_slot(label, f.value, f.unit, rivals=rivals)


def _fact_form(f: Fact) -> str:
    if isinstance(f.value, str):
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", f.text):
            return "date, YYYY-MM-DD"
        return f"the {f.label.lower()} as written"
    return number_form(f.unit)


def _fact_criterion(w: World, f: Fact, what: str, check: SlotCheck) -> Criterion:
    if check.type == "date":
        d = date.fromisoformat(f.text)
        return Criterion(f"States that {what} is {d:%B} {d.day}, {d.year} ({f.text})", check)
    return Criterion(f"States that {what} is {f.text}", check)


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
    prompt = f"What is {what}? It is in {path}." + slot_prompt([("Answer", _fact_form(f))])
    check = _fact_slot(w, f, "Answer")
    return TaskDraft(
        "file_fact_lookup", "easy", "message_in_console", prompt, [_fact_criterion(w, f, what, check)],
        [call], f"The {f.label.lower()} for {p.code} is {f.text}, per {path}.\nAnswer: {f.text}",
        input_files=[path],
    )  # fmt: skip


PERSON_FORM = "full name"


def mail_fact_lookup(w: World, p: Project, rng: Rng) -> TaskDraft:
    f = p.facts[mail_only_fact(w)]
    mail = next(m for m in w.mails if m.subject == f"{p.code}: latest from the other side")
    what = f"the confirmed {f.label.lower()} for {p.code}"
    prompt = (
        f"Someone on the team emailed me the confirmed {f.label.lower()} for {p.code}. "
        f"What is it, and who sent it? Ignore any preliminary figures."
    ) + slot_prompt([("Answer", _fact_form(f)), ("Sent by", PERSON_FORM)])
    calls = [
        Call("mail_search_mail", {"subject": p.code}),
        Call("mail_read_mail", {"mail_id": mail.message_id}),
    ]
    stale = [round(f.value * 1.2, 1)] if isinstance(f.value, float) else []  # the preliminary mail
    fact, who = with_others([_fact_slot(w, f, "Answer", stale), _who(w, p, "Sent by")])
    return TaskDraft(
        "mail_fact_lookup", "easy", "message_in_console", prompt,
        [_fact_criterion(w, f, what, fact), Criterion(f"States that {p.lead.name} sent it", who)], calls,
        f"{p.lead.name} confirmed the {f.label.lower()} for {p.code} by mail.\n"
        f"Answer: {f.text}\nSent by: {p.lead.name}",
    )  # fmt: skip


def _who(w: World, p: Project, label: str) -> SlotCheck:
    """The lead by name, where naming other people of the firm is naming another candidate."""
    return SlotCheck(
        label=label, type="text", value=[p.lead.name],
        rivals=others(p.lead.name, [x.name for x in w.people])
        + others(p.lead.last, [x.last for x in w.people if x is not p.lead]),
    )  # fmt: skip


def chat_fact_lookup(w: World, p: Project, rng: Rng) -> TaskDraft:
    f = p.facts[chat_only_fact(w)]
    what = f"the {f.label.lower()} for {p.code}"
    prompt = (
        f"Someone posted {what} in the #{p.channel} chat channel. What is it, and who posted it?"
    ) + slot_prompt([("Answer", _fact_form(f)), ("Posted by", PERSON_FORM)])
    fact, who = with_others([_fact_slot(w, f, "Answer"), _who(w, p, "Posted by")])
    return TaskDraft(
        "chat_fact_lookup", "easy", "message_in_console", prompt,
        [_fact_criterion(w, f, what, fact), Criterion(f"States that {p.lead.name} posted it", who)],
        [Call("chat_get_channel_history", {"channel_id": p.channel, "limit": 100})],
        f"{p.lead.name} posted it in #{p.channel}.\nAnswer: {f.text}\nPosted by: {p.lead.name}",
    )  # fmt: skip


def calendar_lookup(w: World, p: Project, rng: Rng) -> TaskDraft:
    f = p.facts[meeting_fact(w)]
    title = f"{p.code} {f.label}"
    prompt = (
        f"Check my calendar: on what date is the {f.label.lower()} for {p.code}, and at what time "
        f"does it start?"
    ) + slot_prompt([("Date", "date, YYYY-MM-DD"), ("Start time", "HH:MM UTC")])
    d = date.fromisoformat(str(f.value))
    day, start = with_others([
        SlotCheck(label="Date", type="date", value=str(f.value)),
        SlotCheck(label="Start time", type="time", value="14:00", day=str(f.value)),
    ])  # fmt: skip
    return TaskDraft(
        "calendar_lookup", "easy", "message_in_console", prompt,
        [
            Criterion(f"States that the {f.label.lower()} for {p.code} is on {d:%B} {d.day}, {d.year} ({f.value})", day),
            Criterion("States that it starts at 14:00 (2 pm) UTC", start),
        ],
        [Call("calendar_list_events", {"limit": 100})],
        f"The {title} is on {d:%A} {d:%B} {d.day}, {d.year}, from 14:00 to 15:00 UTC.\n"
        f"Date: {f.value}\nStart time: 14:00 UTC",
    )  # fmt: skip


def chat_post(w: World, p: Project, rng: Rng) -> TaskDraft:
    row = rng.pick(list(p.table.rows))
    period = p.table.periods[-1]
    v = p.table.get(row, period)
    unit = p.table.units[row]
    path = table_file(w, p)
    label = f"{row} {period}"
    text = f"{p.code}, per {path.rsplit('/', 1)[-1]} ({unit}):\n{label}: {value_text(v, unit)}"
    prompt = (
        f"Post {row_phrase(w, p, row, period)} from {path} in the #{p.channel} channel, "
        f"so the team uses the right number."
    ) + slot_prompt([(label, number_form(unit))], "Put in the post")
    check = number_slot(
        label, v, unit, place="chat", channel=p.channel,
        rivals=[p.table.get(row, q) for q in p.table.periods[:-1]],
    )  # fmt: skip
    return TaskDraft(
        "chat_post", "medium", None, prompt,
        [Criterion(f"A message in #{p.channel} states the {period} {row} of {value_text(v, unit)}", check)],
        [read_call(path), Call("chat_post_message", {"channel_id": p.channel, "message": text})],
        f"Posted in #{p.channel}: {text}", input_files=[path],
    )  # fmt: skip
