"""A small deterministic `.apps_data` (mail, calendar, chat) for tests, benchmarks and smoke runs.

`write_demo_apps_data(roots, seed=0, mails=40, events=30, messages=60)` writes, byte-identically for a
seed: `mail/inbox.mbox` (mails to the world's user, some threaded, one with an attachment),
`calendar/team.ics` (events over a month, one all-day, one recurring) and the chat JSON state
documented in `kwrl.worlds.apps.chat` (3 channels, threads, reactions). Names are those of the
module-level `PEOPLE`; the world's user is `PEOPLE[0]`.

This is demo data in the apps' formats, not a generated world (that is `kwrl.synth`).
"""

from __future__ import annotations

import email.policy
import email.utils
import mailbox
import random
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

from kwrl.io import write_bytes, write_json
from kwrl.tasks.layout import WorldRoots

PEOPLE: list[tuple[str, str, str, str]] = [
    ("u_ana", "Ana Lima", "ana.lima@northwind.example", "Associate"),
    ("u_ben", "Ben Okafor", "ben.okafor@northwind.example", "Vice President"),
    ("u_chen", "Chen Wei", "chen.wei@northwind.example", "Analyst"),
    ("u_dana", "Dana Novak", "dana.novak@northwind.example", "Managing Director"),
    ("u_eli", "Eli Haddad", "eli.haddad@clientco.example", "CFO, ClientCo"),
]
TOPICS = [
    "Q3 revenue bridge",
    "Project Atlas diligence",
    "Board deck comments",
    "Working capital model",
    "Comparable companies update",
    "Engagement letter",
    "Site visit logistics",
    "Synergy estimates",
]
START = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def _mbox(rng: random.Random, n: int) -> bytes:
    import tempfile
    from pathlib import Path

    me = PEOPLE[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inbox.mbox"
        box = mailbox.mbox(path, create=True)
        ids: list[str] = []
        for i in range(n):
            sender = PEOPLE[1 + i % (len(PEOPLE) - 1)]
            topic = TOPICS[i % len(TOPICS)]
            msg = EmailMessage(policy=email.policy.default)
            msg["From"] = f"{sender[1]} <{sender[2]}>"
            msg["To"] = f"{me[1]} <{me[2]}>"
            if i % 3 == 0:
                msg["Cc"] = PEOPLE[1 + (i + 1) % (len(PEOPLE) - 1)][2]
            when = START + timedelta(hours=7 * i, minutes=rng.randrange(60))
            msg["Date"] = email.utils.format_datetime(when)
            msg["Message-ID"] = f"<demo-{i:04d}@northwind.example>"
            reply_to = ids[i - 3] if i >= 3 and i % 4 == 0 else None
            msg["Subject"] = f"Re: {topic}" if reply_to else topic
            if reply_to:
                msg["In-Reply-To"] = reply_to
                msg["References"] = reply_to
            amount = rng.randrange(100, 999)
            msg.set_content(
                f"Hi {me[1].split()[0]},\n\nOn {topic.lower()}: the figure to use is {amount}k "
                f"(item {i}). Please confirm by {(when + timedelta(days=2)).date().isoformat()}.\n\n"
                f"Thanks,\n{sender[1].split()[0]}\n"
            )
            if i == 5:
                msg.add_attachment(
                    b"a,b\n1,2\n", maintype="text", subtype="csv", filename="figures.csv"
                )
            boxed = mailbox.mboxMessage(msg)
            boxed.set_from(sender[2], when.utctimetuple())
            box.add(boxed)
            ids.append(msg["Message-ID"])
        box.close()
        return path.read_bytes()


def _ics(rng: random.Random, n: int) -> bytes:
    lines = ["BEGIN:VCALENDAR", "PRODID:-//kwrl//demo//EN", "VERSION:2.0"]
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        start = START + timedelta(days=i % 28, hours=rng.randrange(0, 8))
        lines += [
            "BEGIN:VEVENT",
            f"UID:demo-event-{i:03d}@northwind.example",
            "DTSTAMP:20250301T000000Z",
        ]
        if i == 0:
            lines += [
                f"DTSTART;VALUE=DATE:{start:%Y%m%d}",
                f"DTEND;VALUE=DATE:{start + timedelta(days=1):%Y%m%d}",
            ]
        else:
            lines += [
                f"DTSTART:{start:%Y%m%dT%H%M%SZ}",
                f"DTEND:{start + timedelta(minutes=30 * (1 + i % 3)):%Y%m%dT%H%M%SZ}",
            ]
        lines += [
            f"SUMMARY:{topic} sync",
            f"LOCATION:Room {100 + i % 7}",
            f"DESCRIPTION:Agenda item {i}",
        ]
        for p in PEOPLE[: 2 + i % 3]:
            lines.append(f"ATTENDEE;CN={p[1]}:mailto:{p[2]}")
        if i == 1:
            lines.append("RRULE:FREQ=WEEKLY;COUNT=4")
        lines.append("END:VEVENT")
    lines.append("END:VCALENDAR")
    return ("\r\n".join(lines) + "\r\n").encode()


def write_demo_apps_data(
    roots: WorldRoots, *, seed: int = 0, mails: int = 40, events: int = 30, messages: int = 60
) -> None:
    rng = random.Random(seed)
    roots.ensure()
    write_bytes(roots.app_dir("mail") / "inbox.mbox", _mbox(rng, mails))
    write_bytes(roots.app_dir("calendar") / "team.ics", _ics(rng, events))
    users = [
        {"id": uid, "name": name, "email": addr, "title": title, "department": "Deals"}
        for uid, name, addr, title in PEOPLE
    ]
    write_json(roots.app_dir("chat") / "users.json", {"me": PEOPLE[0][0], "users": users})
    channels = [
        {"id": "general", "name": "general", "description": "Firm-wide", "members": [p[0] for p in PEOPLE]},
        {"id": "atlas", "name": "project-atlas", "description": "Atlas deal team", "members": ["u_ana", "u_ben", "u_chen"]},
        {"id": "random", "name": "random", "description": "Anything", "members": [p[0] for p in PEOPLE[:4]]},
    ]  # fmt: skip
    write_json(roots.app_dir("chat") / "channels.json", {"channels": channels})
    for ci, ch in enumerate(channels):
        msgs: list[dict[str, object]] = []
        for i in range(messages // len(channels)):
            author = ch["members"][(i + ci) % len(ch["members"])]
            thread = (
                msgs[i - 1 - i % 3]["id"]
                if i >= 3 and i % 3 and not msgs[i - 1 - i % 3]["thread_id"]
                else None
            )
            msgs.append(
                {
                    "id": f"m{i + 1:04d}",
                    "user": author,
                    "text": f"{TOPICS[(i + ci) % len(TOPICS)]}: update {i} in #{ch['name']}",
                    "ts": (START + timedelta(hours=3 * i + ci)).isoformat().replace("+00:00", "Z"),
                    "thread_id": thread,
                    "reactions": {"👍": ["u_ben"]} if i % 5 == 0 else {},
                    "deleted": False,
                }
            )
        write_json(roots.app_dir("chat") / "messages" / f"{ch['id']}.json", {"messages": msgs})
