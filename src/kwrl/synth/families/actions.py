"""Families that act in the apps: reply to a mail, schedule a meeting, brief the team.

Checks read what the trial added (new mail, new events, new chat posts), so doing nothing fails
them; mail bodies and posts are checked for the figure as the files print it.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from kwrl.synth.cast import Project
from kwrl.synth.families.base import (
    Call,
    Criterion,
    TaskDraft,
    number_form,
    number_slot,
    others,
    read_call,
    slot_prompt,
    table_file,
    with_others,
)
from kwrl.synth.families.lookup import row_phrase, value_text
from kwrl.synth.families.metrics import metrics
from kwrl.synth.rng import Rng
from kwrl.synth.world import World, free_slot
from kwrl.tasks.models import EventExistsCheck, SlotCheck


def reply_figure(w: World, p: Project, rng: Rng) -> TaskDraft:
    mail_id, row, period = w.requests[p.code]
    mail = next(m for m in w.mails if m.message_id == mail_id)
    contact = mail.sender.split("<")[1].rstrip(">")
    v = p.table.get(row, period)
    unit = p.table.units[row]
    path = table_file(w, p)
    vt = value_text(v, unit)
    prompt = (
        f'The client emailed me asking to confirm a figure for {p.code} (subject "{mail.subject}"). '
        f"Reply to that email with the figure from the current workbook."
    ) + slot_prompt([(row, number_form(unit)), ("Period", "period")], "Put in the reply's body")
    body = (
        f"Hello,\n\nHere is the figure we are using for {p.code} ({unit}):\n\n{row}: {vt}\n"
        f"Period: {period}\n\nBest regards,\n{w.me.name}"
    )
    where: dict[str, Any] = {"place": "mail", "to": contact}
    value, per = with_others([
        number_slot(row, v, unit, rivals=[p.table.get(row, q) for q in p.table.periods if q != period], **where),
        SlotCheck(label="Period", type="text", value=[period], rivals=others(period, p.table.periods), **where),
    ])  # fmt: skip
    return TaskDraft(
        "reply_figure", "medium", None, prompt,
        [
            Criterion(f"A reply to {contact} states {row_phrase(w, p, row, period)} as {vt}", value),
            Criterion(f"The reply to {contact} names the period {period}", per),
        ],
        [Call("mail_read_mail", {"mail_id": mail_id}), read_call(path), Call("mail_reply_mail", {"original_mail_id": mail_id, "body": body})],
        f"Replied to {contact}: {row} for {period} is {vt} ({unit}).", input_files=[path],
    )  # fmt: skip


def schedule(w: World, p: Project, rng: Rng) -> TaskDraft | None:
    if p is not w.projects[0]:
        return None
    others = [x for x in p.team if x is not w.me]
    pick = rng.sample(others, rng.randint(1, min(3, len(others))))
    hour = free_slot(w, w.busy_day, [w.me.email, *[x.email for x in pick]])
    if hour is None:
        return None
    d = date.fromisoformat(w.busy_day)
    title = f"{p.short} working session"
    names = " and ".join(x.name for x in pick)
    prompt = (
        f'Book a one-hour meeting titled "{title}" on {d:%A} {d:%B} {d.day} ({w.busy_day}) with {names}, '
        f"at the earliest whole hour between 09:00 and 17:00 UTC when all of us, me included, are free. "
        f"Invite them and tell me the time you chose."
    ) + slot_prompt([("Start time", "HH:MM UTC")])
    start = f"{w.busy_day}T{hour:02d}:00:00"
    end = f"{w.busy_day}T{hour + 1:02d}:00:00"
    crits = [
        Criterion(
            f'An event titled "{title}" is created on {w.busy_day} starting at {hour:02d}:00',
            EventExistsCheck(title_contains=title, date=f"{w.busy_day}T{hour:02d}"),
        )
    ]
    for x in pick:
        crits.append(
            Criterion(
                f"{x.name} ({x.email}) is invited",
                EventExistsCheck(title_contains=title, attendee=x.email),
            )
        )
    crits.append(
        Criterion(
            f"The answer states the chosen start time {hour:02d}:00",
            SlotCheck(label="Start time", type="time", value=f"{hour:02d}:00", day=w.busy_day),
        )
    )
    calls = [
        Call("calendar_list_events", {"limit": 100}),
        Call(
            "calendar_create_event",
            {
                "summary": title,
                "start": {"dateTime": start},
                "end": {"dateTime": end},
                "attendees": [{"email": x.email} for x in pick],
            },
        ),
    ]
    return TaskDraft("schedule", "medium", None, prompt, crits, calls,
                     f"Booked \"{title}\" on {w.busy_day} from {hour:02d}:00 to {hour + 1:02d}:00 UTC with {names}.\n"
                     f"Start time: {hour:02d}:00 UTC")  # fmt: skip


def brief_team(w: World, p: Project, rng: Rng) -> TaskDraft:
    m = rng.pick(metrics(w, p))
    lead = p.lead
    prompt = (
        f"Work out the {m.label} for {p.code} from the current files (to two decimals), email it to "
        f"{lead.name} with the inputs you used, and post the headline number in #{p.channel}."
        + slot_prompt(m.prompt_lines(), "In the email, put")
        + slot_prompt(m.prompt_lines(0), "In the post and at the end of your answer, put")
    )
    ins = "\n".join(f"{label}: {v:,.1f}" for label, v, _ in m.inputs)
    body = (
        f"Hi {lead.first},\n\nThe {m.label} for {p.code}, from the current files:\n\n"
        f"{m.label}: {m.text}\n{ins}\n\nBest,\n{w.me.first}"
    )
    post = f"{p.code}:\n{m.label}: {m.text}"
    mail = with_others(
        [m.slot(place="mail", to=lead.email), *m.input_slots(place="mail", to=lead.email)]
    )
    crits = [
        Criterion(f"An email to {lead.name} states the {m.label} as {m.text}", mail[0]),
        Criterion(
            f"A post in #{p.channel} states {m.text}", m.slot(place="chat", channel=p.channel)
        ),
        Criterion(f"The final answer states {m.text}", m.slot()),
    ]
    for (label, v, _), check in zip(m.inputs, mail[1:], strict=True):
        crits.append(Criterion(f"The email to {lead.name} quotes {label}: {v:,.1f}", check))
    calls = [
        *m.calls,
        Call(
            "mail_send_mail",
            {
                "from_email": w.me.email,
                "to_email": lead.email,
                "subject": f"{p.code}: {m.label}",
                "body": body,
            },
        ),
        Call("chat_post_message", {"channel_id": p.channel, "message": post}),
    ]
    return TaskDraft("brief_team", "hard", None, prompt, crits, calls,
                     f"Emailed {lead.name} and posted in #{p.channel}.\n{m.label}: {m.text}")  # fmt: skip
