"""A planned world: the firm, its projects, mail, calendar and chat, before any file is written.

`plan_world(seed, index, domain)` is pure and fast (no I/O): the task families read the plan to
write prompts, rubrics and gold answers, and `kwrl.synth.render` turns the same plan into files.
The world's user ("me") is a junior member of the firm who owns the mailbox and sits in every
channel; task prompts are requests to that person.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from kwrl.synth import domains
from kwrl.synth.cast import Company, Person, Project, company, person
from kwrl.synth.names import code_names
from kwrl.synth.rng import TODAY, Rng, world_id

KIND = {"Investment Banking": "deal", "Law": "matter", "Management Consulting": "engagement"}
TITLES = {
    "Investment Banking": (
        "Managing Director",
        "Director",
        "Vice President",
        "Associate",
        "Analyst",
    ),
    "Law": ("Partner", "Counsel", "Senior Associate", "Associate", "Paralegal"),
    "Management Consulting": (
        "Partner",
        "Principal",
        "Engagement Manager",
        "Consultant",
        "Analyst",
    ),
}
ROOT_DIR = {"Investment Banking": "Deals", "Law": "Matters", "Management Consulting": "Engagements"}


@dataclass
class Mail:
    sender: str
    """'Name <address>'."""
    to: list[str]
    subject: str
    body: str
    date: datetime
    message_id: str
    in_reply_to: str | None = None


@dataclass
class Event:
    uid: str
    title: str
    start: datetime
    end: datetime
    attendees: list[str]
    """Email addresses."""
    location: str = ""
    description: str = ""


@dataclass
class ChatMessage:
    channel: str
    user: str
    """Handle of the poster."""
    text: str
    ts: datetime


@dataclass
class World:
    seed: int
    index: int
    world_id: str
    domain: str
    firm: Company
    me: Person
    people: list[Person]
    projects: list[Project]
    playbook: domains.Playbook | None = None
    mails: list[Mail] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    chats: list[ChatMessage] = field(default_factory=list)
    channels: list[str] = field(default_factory=list)
    requests: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    """project code -> (mail_id, row, period) of a client's request for a figure (reply tasks)."""
    busy_day: str = ""
    """ISO date with busy calendars used by scheduling tasks."""

    @property
    def name(self) -> str:
        return self.firm.name

    @property
    def short_name(self) -> str:
        return f"{self.firm.short.lower()}-{KIND[self.domain]}s"

    @property
    def description(self) -> str:
        kinds = KIND[self.domain] + "s"
        lines = [
            f"{self.firm.name} is a {self.domain.lower()} firm based in {self.firm.city}.",
            f"You work there as {self.me.title} {self.me.name} ({self.me.email}).",
            f"Active {kinds}: "
            + "; ".join(f"{p.code} ({p.client.name})" for p in self.projects)
            + ".",
        ]
        return " ".join(lines)

    def person_by_email(self, email: str) -> Person:
        return next(p for p in self.people if p.email == email)


def _dt(d: int, h: int, m: int = 0) -> datetime:
    base = datetime(TODAY.year, TODAY.month, TODAY.day, tzinfo=UTC)
    return base + timedelta(days=d, hours=h, minutes=m)


def plan_world(seed: int, index: int, domain: str, *, projects: int = 5) -> World:
    rng = Rng("world", seed, index)
    used_people: set[str] = set()
    used_cos: set[str] = set()
    firm = company(rng, domain, used_cos, firm=True)
    firm_domain = firm.email_domain
    titles = TITLES[domain]
    people = [person(rng, titles[min(i // 2, 4)], firm_domain, used_people) for i in range(10)]
    me = person(rng, titles[3], firm_domain, used_people)
    people.append(me)
    playbook = domains.law_playbook(rng) if domain == "Law" else None
    codes = code_names(seed, index, projects)
    plist: list[Project] = []
    for j, code in enumerate(codes):
        prng = rng.child("project", j)
        client = company(prng, domain, used_cos)
        counter = company(prng, domain, used_cos)
        lead = people[prng.randrange(0, 4)]
        team = [lead, *prng.sample(people[4:10], 2), me]
        clauses = []
        if domain == "Investment Banking":
            table, facts = domains.ib_deal(prng)
        elif domain == "Law":
            assert playbook is not None
            table, facts, clauses = domains.law_matter(prng, playbook)
        else:
            table, facts = domains.mc_engagement(prng)
        p = Project(
            f"Project {code}", KIND[domain], client, counter, lead, team, table, facts, clauses
        )
        p.channel = code.lower().replace(" ", "-")
        plist.append(p)
    w = World(seed, index, world_id(seed, index), domain, firm, me, people, plist, playbook)
    _plan_comms(w, rng.child("comms"))
    return w


def _contact(p: Project) -> Person:
    first, last = p.client.short, "Finance"
    return Person(
        first,
        last,
        "Client contact",
        f"cfo@{p.client.email_domain}",
        f"cfo.{p.client.short.lower()}",
    )


def mail_only_fact(w: World) -> str:
    return {
        "Investment Banking": "break_fee",
        "Law": "settlement_offer",
        "Management Consulting": "budget_ceiling",
    }[w.domain]


def chat_only_fact(w: World) -> str:
    return {
        "Investment Banking": "data_room",
        "Law": "case_number",
        "Management Consulting": "workshop_room",
    }[w.domain]


def meeting_fact(w: World) -> str:
    return {
        "Investment Banking": "bid_deadline",
        "Law": "hearing_date",
        "Management Consulting": "steerco_date",
    }[w.domain]


def _plan_comms(w: World, rng: Rng) -> None:
    me = w.me
    n = 0

    def mid() -> str:
        nonlocal n
        n += 1
        return f"<{w.world_id[6:18]}.{n}@{w.firm.email_domain}>"

    w.channels = ["general", "random"] + [p.channel for p in w.projects]
    for i, p in enumerate(w.projects):
        lead = p.lead
        mf = p.facts[mail_only_fact(w)]
        w.mails.append(
            Mail(
                f"{lead.name} <{lead.email}>",
                [me.email],
                f"{p.code}: latest from the other side",
                f"Hi {me.first},\n\nQuick update on {p.code} ({p.client.name}): we now have the "
                f"{mf.label.lower()} confirmed at {mf.text}. Please keep this in mind for the "
                f"next turn of the documents.\n\nThanks,\n{lead.first}",
                _dt(-6 + i % 3, 9 + i),
                mid(),
            )
        )
        stale = p.facts[mail_only_fact(w)]
        if isinstance(stale.value, float):
            w.mails.append(
                Mail(
                    f"{lead.name} <{lead.email}>",
                    [me.email],
                    f"{p.code}: preliminary numbers",
                    f"{me.first},\n\nVery preliminary: the {stale.label.lower()} could land around "
                    f"{replace(stale, value=round(stale.value * 1.2, 1)).text}. "
                    f"Not confirmed yet; I will send the final figure.\n\n{lead.first}",
                    _dt(-20 + i, 15),
                    mid(),
                )
            )
        contact = _contact(p)
        row = rng.pick(list(p.table.rows))
        period = p.table.periods[-1]
        rid = mid()
        w.requests[p.code] = (rid, row, period)
        w.mails.append(
            Mail(
                f"{contact.first} {contact.last} <{contact.email}>",
                [me.email],
                f"Question on {row} ({p.code})",
                f"Hello {me.first},\n\nCould you confirm the {row} figure for {period} that your team is "
                f"using for {p.code}? We want to make sure our board pack matches.\n\nBest regards,\n"
                f"{contact.first} {contact.last}, {p.client.name}",
                _dt(-1, 8 + i),
                rid,
            )
        )
        cf = p.facts[chat_only_fact(w)]
        w.chats.append(
            ChatMessage(
                p.channel,
                lead.handle,
                f"FYI team: {cf.label.lower()} for {p.code} is {cf.text}.",
                _dt(-3, 10 + i),
            )
        )
        w.chats.append(ChatMessage(p.channel, p.team[1].handle, "Thanks, noted.", _dt(-3, 11 + i)))
        w.chats.append(
            ChatMessage(
                p.channel,
                p.team[2].handle,
                f"Working on the {p.code} materials today.",
                _dt(-2, 9 + i),
            )
        )
        mfact = p.facts[meeting_fact(w)]
        d = datetime.fromisoformat(str(mfact.value)).replace(hour=14, tzinfo=UTC)
        w.events.append(
            Event(
                f"{w.world_id[6:18]}-m{i}@{w.firm.email_domain}",
                f"{p.code} {mfact.label}",
                d,
                d + timedelta(hours=1),
                [x.email for x in p.team],
                w.firm.city,
                f"{p.code} for {p.client.name}.",
            )
        )
    for k, subject in enumerate(
        (
            "IT maintenance this weekend",
            "Holiday schedule",
            "Expense policy reminder",
            "Coffee machine on floor 3",
            "Quarterly town hall",
        )
    ):
        sender = w.people[(k + 5) % 10]
        w.mails.append(
            Mail(
                f"{sender.name} <{sender.email}>",
                [me.email],
                subject,
                f"Hi all,\n\n{subject}. Details to follow.\n\n{sender.first}",
                _dt(-10 + k, 16),
                mid(),
            )
        )
    for k in range(4):
        who = w.people[k + 4]
        w.chats.append(
            ChatMessage(
                "general",
                who.handle,
                rng.pick(
                    (
                        "Morning all!",
                        "Lunch at 12:30?",
                        "Printer on 4 is fixed.",
                        "Reminder: timesheets due Friday.",
                    )
                ),
                _dt(-4 + k, 9),
            )
        )
    # Busy day for scheduling: everyone in project 0's team has meetings at random hours.
    w.busy_day = (TODAY + timedelta(days=rng.randint(2, 4))).isoformat()
    bd = datetime.fromisoformat(w.busy_day).replace(tzinfo=UTC)
    for j, who in enumerate([*w.projects[0].team, *w.people[:4]]):
        for h in sorted(rng.sample(range(9, 17), 3)):
            start = bd.replace(hour=h)
            w.events.append(
                Event(
                    f"{w.world_id[6:18]}-b{j}-{h}@{w.firm.email_domain}",
                    rng.pick(("Client call", "Internal review", "Model review", "1:1", "Training")),
                    start,
                    start + timedelta(hours=1),
                    [who.email],
                    "",
                    "",
                )
            )
    w.mails.sort(key=lambda m: (m.date, m.message_id))


def free_slot(w: World, day: str, emails: list[str]) -> int | None:
    """First hour in 9..16 on `day` when none of `emails` has an event."""
    busy: set[int] = set()
    for e in w.events:
        if e.start.date().isoformat() == day and set(e.attendees) & set(emails):
            busy.update(range(e.start.hour, max(e.end.hour, e.start.hour + 1)))
    return next((h for h in range(9, 17) if h not in busy), None)
