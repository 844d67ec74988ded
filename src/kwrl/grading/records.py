"""App records that changed during a trial: new mail, new or changed events, new chat posts.

The apps keep their state in `.apps_data` (kwrl.tasks.layout): `mail/*.mbox`, `calendar/*.ics`,
`chat/*.json`. A file-level diff says only "inbox.mbox was modified"; the judge and the machine
checks need the records inside. Each function here reads all of one app's files in two states and
returns the records present in the final state and absent (or different) in the initial one.

Only the app files that changed are read. Identity: a mail is its Message-ID (else a hash of its bytes); an event is its UID (a changed
event keeps its UID); a chat post is its `id` field where it has one, else its canonical JSON.

The chat app's JSON schema belongs to the apps, so posts are found structurally: any JSON object
with a text field (`text`, `message`, `content`, `body`) is a post, and its channel is its own
`channel`/`channel_id`/`channel_name` field or, failing that, the names of the objects and keys
that enclose it. Being schema-tolerant is deliberate: the grader must not break when the app's
storage layout changes.

App stores are written by the agent's tools, so they are read like any agent-made file
(`kwrl.grading.files`): never through a link, at most `MAX_STORE_BYTES` each; a store over the cap
is left unread (its records count as absent, so checks on them fail), and so is one that does
not parse (a corrupt calendar, JSON nested past the recursion limit).
"""

from __future__ import annotations

import email
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from email.header import decode_header, make_header
from email.message import Message
from email.utils import getaddresses
from pathlib import Path
from typing import Any

from kwrl.grading import budget
from kwrl.grading.diff import StateView
from kwrl.grading.files import UnsafeFileError, read_all

MAX_STORE_BYTES = 64 * 1024**2

_TEXT_KEYS = ("text", "message", "content", "body")
_CHANNEL_KEYS = ("channel", "channel_id", "channel_name")
_NAME_KEYS = ("name", "id", "channel", "title")


@dataclass(frozen=True)
class MailRecord:
    key: str
    sender: str
    to: tuple[str, ...]
    subject: str
    body: str
    date: str
    mailbox: str

    def render(self) -> str:
        return (
            f"From: {self.sender}\nTo: {', '.join(self.to)}\nDate: {self.date}\n"
            f"Subject: {self.subject}\n\n{self.body}"
        )


@dataclass(frozen=True)
class EventRecord:
    uid: str
    summary: str
    start: str
    end: str
    attendees: tuple[str, ...]
    description: str
    location: str
    change: str = "created"

    def render(self) -> str:
        return (
            f"Summary: {self.summary}\nStart: {self.start}\nEnd: {self.end}\n"
            f"Location: {self.location}\nAttendees: {', '.join(self.attendees)}\n"
            f"Description: {self.description}"
        )


@dataclass(frozen=True)
class ChatRecord:
    key: str
    channel: str
    author: str
    text: str
    where: tuple[str, ...] = field(default=())
    """Names of the enclosing objects/keys, used to match a channel when the post has no field."""

    def render(self) -> str:
        return (
            f"Channel: {self.channel or '/'.join(self.where)}\nAuthor: {self.author}\n\n{self.text}"
        )

    def in_channel(self, channel: str) -> bool:
        want = channel.strip().lstrip("#").lower()
        names = [self.channel, *self.where]
        return any(n.strip().lstrip("#").lower() == want for n in names if n)


def _files(state: StateView, rels: Iterable[str], suffix: str) -> list[Path]:
    """The files of `rels` (relative paths) that exist in `state` and end with `suffix`."""
    return [p for rel in sorted(rels) if rel.endswith(suffix) and (p := state.get(rel)) is not None]


def _store_bytes(path: Path) -> bytes | None:
    """An app store's bytes, or None when it is a link, not a regular file, or over the cap."""
    try:
        return read_all(path, MAX_STORE_BYTES)
    except UnsafeFileError:
        return None


# --------------------------------------------------------------------------- mail


def _header(msg: Message, name: str) -> str:
    raw = msg.get(name)
    if raw is None:
        return ""
    try:
        return str(make_header(decode_header(str(raw))))
    except Exception:  # malformed encoded-words: keep the raw header rather than fail
        return str(raw)


def _body(msg: Message) -> str:
    parts = msg.walk() if msg.is_multipart() else iter([msg])
    texts: list[str] = []
    for part in parts:
        if part.get_content_maintype() != "text" or part.get_filename():
            continue
        payload = part.get_payload(decode=True)
        if isinstance(payload, bytes):
            try:
                texts.append(payload.decode(part.get_content_charset() or "utf-8", "replace"))
            except LookupError:  # a charset Python does not know
                texts.append(payload.decode("utf-8", errors="replace"))
    return "\n".join(texts).strip()


_MSGID = re.compile(rb"^message-id:[ \t]*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_FROM_LINE = re.compile(rb"^From .*\r?\n", re.MULTILINE)


def _raw_messages(path: Path) -> Iterator[tuple[str, bytes]]:
    """(identity, raw bytes) of each message; identities come from the header block, unparsed.

    The mbox is split on its `From ` lines, as `mailbox.mbox` does, from bytes read safely."""
    data = _store_bytes(path)
    if not data:
        return
    for raw in _FROM_LINE.split(data):
        if not raw.strip():
            continue
        raw = raw.replace(b"\r\n", b"\n")
        m = _MSGID.search(raw.split(b"\n\n", 1)[0])
        yield (
            (m.group(1).decode(errors="replace") if m else hashlib.sha256(raw).hexdigest()),
            raw,
        )


def _mail_record(key: str, raw: bytes, mailbox_name: str) -> MailRecord:
    msg = email.message_from_bytes(raw)
    # Empty headers must not reach getaddresses: since 3.12.3 its strict mode turns the whole list
    # into [("", "")] when an empty entry is present.
    heads = [h for h in (_header(msg, "To"), _header(msg, "Cc"), _header(msg, "Bcc")) if h.strip()]
    rcpts = getaddresses(heads)
    return MailRecord(
        key=key,
        sender=_header(msg, "From"),
        to=tuple(addr or name for name, addr in rcpts if addr or name),
        subject=_header(msg, "Subject"),
        body=_body(msg),
        date=_header(msg, "Date"),
        mailbox=mailbox_name,
    )


def new_mail(
    initial: StateView, final: StateView, rels: Iterable[str], *, bounded: bool = False
) -> list[MailRecord]:
    """Messages of the changed mailboxes `rels` in the final state that none of them held before.

    Only changed files are read: a message can only appear in a file that changed, and a message
    moved between mailboxes changes both. Only new messages are parsed; `bounded`: each counts
    against the grading budget's records.
    """
    rels = [r for r in rels if r.endswith(".mbox")]
    before: set[str] = set()
    for rel in rels:
        if (p := initial.get(rel)) is not None:
            before.update(k for k, _ in _raw_messages(p))
    out: dict[str, MailRecord] = {}
    for rel in rels:
        if (p := final.get(rel)) is not None:
            for key, raw in _raw_messages(p):
                if key not in before and key not in out:
                    if bounded:
                        budget.charge_records(1, "new mail")
                    out[key] = _mail_record(key, raw, p.name)
    return list(out.values())


# --------------------------------------------------------------------------- calendar


def read_events(
    state: StateView, rels: Iterable[str], *, bounded: bool = False
) -> dict[str, EventRecord]:
    """Events of the calendar files `rels`; `bounded`: counted against the grading budget's records
    before parsing."""
    import icalendar

    out: dict[str, EventRecord] = {}
    for path in _files(state, rels, ".ics"):
        data = _store_bytes(path)
        if data is None:
            continue
        if bounded:
            budget.charge_records(data.count(b"BEGIN:VEVENT"), "calendar events")
        try:
            cal = icalendar.Calendar.from_ical(data)
            vevents = cal.walk("VEVENT")
        except Exception:  # a calendar the agent corrupted holds no events (evidence, not a crash)
            continue
        for ev in vevents:
            uid = str(ev.get("UID") or f"{path.name}:{ev.get('SUMMARY')}:{ev.get('DTSTART')}")
            if ev.get("RECURRENCE-ID") is not None:  # an override of one occurrence shares the UID
                uid += "@" + _dt(ev.get("RECURRENCE-ID"))
            attendees = ev.get("ATTENDEE") or []
            if not isinstance(attendees, list):
                attendees = [attendees]
            out[uid] = EventRecord(
                uid=uid,
                summary=str(ev.get("SUMMARY") or ""),
                start=_dt(ev.get("DTSTART")),
                end=_dt(ev.get("DTEND")),
                attendees=tuple(
                    str(a).removeprefix("mailto:").removeprefix("MAILTO:") for a in attendees
                ),
                description=str(ev.get("DESCRIPTION") or ""),
                location=str(ev.get("LOCATION") or ""),
            )
    return out


def _dt(prop: Any) -> str:
    if prop is None:
        return ""
    value = getattr(prop, "dt", prop)
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def changed_events(
    initial: StateView, final: StateView, rels: Iterable[str], *, bounded: bool = False
) -> list[EventRecord]:
    """Events created, or whose fields changed, in the changed calendar files `rels` (`bounded`:
    the final state's events count against the grading budget)."""
    rels = list(rels)
    before = read_events(initial, rels)
    out: list[EventRecord] = []
    for uid, ev in read_events(final, rels, bounded=bounded).items():
        old = before.get(uid)
        if old is None:
            out.append(ev)
        elif old != ev:
            out.append(EventRecord(**{**ev.__dict__, "change": "modified"}))
    return out


# --------------------------------------------------------------------------- chat


def _walk_posts(
    node: Any, where: tuple[str, ...]
) -> Iterator[tuple[dict[str, Any], tuple[str, ...]]]:
    if isinstance(node, dict):
        text = next((node[k] for k in _TEXT_KEYS if isinstance(node.get(k), str)), None)
        if text is not None:
            yield node, where
        here = where
        name = next((node[k] for k in _NAME_KEYS if isinstance(node.get(k), str)), None)
        if name is not None and text is None:
            here = (*where, name)
        for k, v in node.items():
            if isinstance(v, dict | list):
                yield from _walk_posts(v, (*here, str(k)))
    elif isinstance(node, list):
        for v in node:
            yield from _walk_posts(v, where)


def _channel_names(state: StateView) -> dict[str, str]:
    """Channel id -> name from `chat/channels.json` when the app keeps one (a post file is named by
    the channel's id, while a check may name the channel by either)."""
    path = state.get(".apps_data/chat/channels.json")
    raw = _store_bytes(path) if path is not None else None
    if raw is None:
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return {}
    chans = data.get("channels") if isinstance(data, dict) else data
    return {
        str(c["id"]): str(c["name"])
        for c in chans or []
        if isinstance(c, dict) and c.get("id") is not None and c.get("name") is not None
    }


def read_chat(
    state: StateView, rels: Iterable[str], *, bounded: bool = False
) -> dict[str, ChatRecord]:
    """Posts of the chat files `rels`; deleted posts are skipped; ids are scoped by file, since
    the chat app numbers messages per channel file (`messages/<channel>.json`). `bounded`: each
    file's JSON objects count against the grading budget's records before it is parsed."""
    out: dict[str, ChatRecord] = {}
    aliases = _channel_names(state)

    def aliases_of(stem: str) -> list[str]:
        return [aliases[stem]] if stem in aliases else []

    for rel in sorted(rels):
        path = state.get(rel)
        raw = _store_bytes(path) if path is not None and rel.endswith(".json") else None
        if path is None or raw is None:
            continue
        if bounded:
            budget.charge_records(raw.count(b"{"), "chat objects")
        try:
            data = json.loads(raw.decode("utf-8"))
            posts = list(_walk_posts(data, (path.stem, *aliases_of(path.stem))))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            continue  # unreadable, or nested past Python's recursion limit: no posts
        for post, where in posts:
            if post.get("deleted"):
                continue
            text = next(str(post[k]) for k in _TEXT_KEYS if isinstance(post.get(k), str))
            ident = post.get("id") or post.get("post_id") or post.get("message_id")
            body = (
                f"id:{ident}" if ident is not None else "json:" + json.dumps(post, sort_keys=True)
            )
            key = f"{rel}#{body}"
            channel = next((str(post[k]) for k in _CHANNEL_KEYS if post.get(k) is not None), "")
            author = next(
                (
                    str(post[k])
                    for k in ("user", "user_id", "author", "sender", "from")
                    if post.get(k)
                ),
                "",
            )
            out[key] = ChatRecord(key=key, channel=channel, author=author, text=text, where=where)
    return out


def new_chat_posts(
    initial: StateView, final: StateView, rels: Iterable[str], *, bounded: bool = False
) -> list[ChatRecord]:
    """Posts in the changed chat files `rels` that are new or whose text changed (`bounded`: the
    final state's count against the grading budget)."""
    rels = list(rels)
    before = read_chat(initial, rels)
    after = read_chat(final, rels, bounded=bounded)
    return [p for k, p in after.items() if k not in before or before[k].text != p.text]
