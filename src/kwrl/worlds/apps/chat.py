"""The chat app: the world's team chat as JSON files (ARCH mcp_servers/chat, Slack/Google-Chat-like).

Data (`.apps_data/chat/`), UTF-8 JSON, written atomically:

    users.json                {"me": "u_ana",                         # the world's own user (optional;
                               "users": [{"id": "u_ana",              #  default: the first user)
                                          "name": "Ana Lima",
                                          "email": "ana@acme.example",   # optional
                                          "title": "Analyst",            # optional
                                          "department": "Finance"}]}     # optional; extra keys kept
    channels.json             {"channels": [{"id": "general",         # [A-Za-z0-9_.-]+, the file stem below
                                             "name": "general",
                                             "description": "...",    # optional
                                             "members": ["u_ana"]}]}  # optional user ids
    messages/<channel id>.json {"messages": [{"id": "m0001",          # unique within the channel
                                             "user": "u_ana",
                                             "text": "...",
                                             "ts": "2025-03-04T09:30:00Z",   # ISO 8601
                                             "thread_id": null,       # or the id of the thread's root
                                             "reactions": {"👍": ["u_bob"]},
                                             "deleted": false}]}      # delete_post sets true, clears text

Messages are kept in posting order. Tools (upstream's parameters under a `request` envelope:
`post_id`, `message`, `emoji_name`, `limit`/`page` paging from page 0): list_channels,
get_channel_history (root messages with reply counts; page 0 holds the newest, shown oldest first),
get_thread_replies, post_message, reply_to_thread, add_reaction, delete_post, get_users,
get_user_profile. New message ids continue the channel's `m<NNNN>` sequence. Posts are made as `me`.
"""

from __future__ import annotations

import json
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kwrl.io import write_json
from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps.base import ToolError, WorldApp, tool

CHANNEL_ID_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class ChatStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.RLock()

    def _doc(self, path: Path, key: str) -> dict[str, Any]:
        """The JSON object in `path` (empty when the file is missing), checked to hold a `key` list."""
        if not path.exists():
            return {key: []}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ToolError(f"chat file {path.name} is not valid JSON: {e}") from e
        if not isinstance(data, dict) or not isinstance(data.get(key), list):
            raise ToolError(f"chat file {path.name}: expected an object with a {key!r} list")
        return data

    def _read(self, path: Path, key: str) -> list[dict[str, Any]]:
        return self._doc(path, key)[key]

    def users_doc(self) -> tuple[str | None, list[dict[str, Any]]]:
        doc = self._doc(self.root / "users.json", "users")
        users, me = doc["users"], doc.get("me")
        return (me or (users[0]["id"] if users else None)), users

    def user(self, user_id: str) -> dict[str, Any]:
        _, users = self.users_doc()
        for u in users:
            if u.get("id") == user_id or u.get("email", "").lower() == user_id.lower():
                return u
        raise ToolError(f"no user {user_id!r}; use get_users to list user ids")

    def user_names(self) -> dict[str, str]:
        return {u["id"]: u.get("name", u["id"]) for u in self.users_doc()[1]}

    def channels(self) -> list[dict[str, Any]]:
        return self._read(self.root / "channels.json", "channels")

    def channel(self, channel_id: str) -> dict[str, Any]:
        for c in self.channels():
            if channel_id in (c.get("id"), c.get("name"), f"#{c.get('name')}"):
                return c
        raise ToolError(f"no channel {channel_id!r}; use list_channels to see channel ids")

    def _messages_path(self, channel_id: str) -> Path:
        if not CHANNEL_ID_RE.match(channel_id):
            raise ToolError(f"channel {channel_id!r} has an invalid id")
        return self.root / "messages" / f"{channel_id}.json"

    def messages(self, channel_id: str) -> list[dict[str, Any]]:
        return self._read(self._messages_path(channel_id), "messages")

    def save_messages(self, channel_id: str, messages: list[dict[str, Any]]) -> None:
        write_json(self._messages_path(channel_id), {"messages": messages})


def _find(messages: list[dict[str, Any]], message_id: str, channel: str) -> dict[str, Any]:
    for m in messages:
        if m.get("id") == message_id:
            return m
    raise ToolError(f"no message {message_id!r} in channel {channel!r}; use get_channel_history")


def _next_id(messages: list[dict[str, Any]]) -> str:
    n = 0
    for m in messages:
        digits = re.sub(r"\D", "", str(m.get("id", "")))
        if digits:
            n = max(n, int(digits))
    return f"m{n + 1:04d}"


def view(m: dict[str, Any], names: dict[str, str], replies: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "message_id": m.get("id"),
        "user": names.get(m.get("user", ""), m.get("user")),
        "user_id": m.get("user"),
        "ts": m.get("ts"),
        "text": m.get("text", ""),
    }
    if m.get("thread_id"):
        out["thread_id"] = m["thread_id"]
    if replies:
        out["reply_count"] = replies
    if m.get("reactions"):
        out["reactions"] = {k: len(v) for k, v in m["reactions"].items()}
    return out


def paged(
    rows: list[Any], limit: int | None, page: int | None, default: int
) -> tuple[list[Any], dict[str, Any]]:
    size, number = limit or default, page or 0
    if size < 1 or number < 0:
        raise ToolError("limit must be >= 1 and page >= 0")
    chunk = rows[number * size : (number + 1) * size]
    return chunk, {"total": len(rows), "page": number, "per_page": size,
                   "has_next": (number + 1) * size < len(rows)}  # fmt: skip


class ChatApp(WorldApp):
    """The chat app: its tools over the world's chat files (module docstring)."""

    def __init__(self, roots: WorldRoots) -> None:
        super().__init__(roots)
        self.store = ChatStore(roots.app_dir("chat"))

    def _post(
        self, channel_id: str, text: str, user_id: str | None, thread_id: str | None
    ) -> dict[str, Any]:
        if not text.strip():
            raise ToolError("message must not be empty")
        with self.store.lock:
            cid = self.store.channel(channel_id)["id"]
            me, _ = self.store.users_doc()
            author = self.store.user(user_id)["id"] if user_id else me
            if author is None:
                raise ToolError("no users in this chat; pass user_id")
            messages = self.store.messages(cid)
            if thread_id is not None:
                root = _find(messages, thread_id, cid)
                thread_id = root.get("thread_id") or root["id"]
            msg = {
                "id": _next_id(messages),
                "user": author,
                "text": text,
                "ts": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
                "thread_id": thread_id,
                "reactions": {},
                "deleted": False,
            }
            messages.append(msg)
            self.store.save_messages(cid, messages)
        return {"message_id": msg["id"], "channel_id": cid, "thread_id": thread_id, "ts": msg["ts"]}

    @tool
    def list_channels(self, limit: int | None, page: int | None) -> dict[str, object]:
        rows = [
            {
                "channel_id": c.get("id"),
                "name": c.get("name", c.get("id")),
                "description": c.get("description", ""),
                "members": len(c.get("members", [])),
            }
            for c in self.store.channels()
        ]
        chunk, meta = paged(rows, limit, page, 100)
        return {"channels": chunk, **meta}

    @tool
    def get_channel_history(
        self, channel_id: str, limit: int | None, page: int | None
    ) -> dict[str, object]:
        cid = self.store.channel(channel_id)["id"]
        names = self.store.user_names()
        messages = [m for m in self.store.messages(cid) if not m.get("deleted")]
        counts: dict[str, int] = {}
        for m in messages:
            if m.get("thread_id"):
                counts[m["thread_id"]] = counts.get(m["thread_id"], 0) + 1
        newest_first = [m for m in messages if not m.get("thread_id")][::-1]
        chunk, meta = paged(newest_first, limit, page, 30)
        return {"channel_id": cid, **meta,
                "messages": [view(m, names, counts.get(m["id"])) for m in chunk[::-1]]}  # fmt: skip

    @tool
    def get_thread_replies(self, channel_id: str, post_id: str) -> dict[str, object]:
        cid = self.store.channel(channel_id)["id"]
        names = self.store.user_names()
        messages = self.store.messages(cid)
        root = _find(messages, post_id, cid)
        tid = root.get("thread_id") or root["id"]
        thread = [m for m in messages if (m["id"] == tid or m.get("thread_id") == tid)]
        return {"channel_id": cid, "thread_id": tid,
                "messages": [view(m, names) for m in thread if not m.get("deleted")]}  # fmt: skip

    @tool
    def post_message(self, channel_id: str, message: str) -> dict[str, object]:
        return self._post(channel_id, message, None, None)

    @tool
    def reply_to_thread(self, channel_id: str, post_id: str, message: str) -> dict[str, object]:
        return self._post(channel_id, message, None, post_id)

    @tool
    def add_reaction(self, channel_id: str, post_id: str, emoji_name: str) -> dict[str, object]:
        if not emoji_name.strip():
            raise ToolError("emoji_name must not be empty")
        with self.store.lock:
            cid = self.store.channel(channel_id)["id"]
            who = self.store.users_doc()[0]
            messages = self.store.messages(cid)
            m = _find(messages, post_id, cid)
            reactors = m.setdefault("reactions", {}).setdefault(emoji_name.strip(), [])
            if who not in reactors:
                reactors.append(who)
            self.store.save_messages(cid, messages)
        return {
            "message_id": post_id,
            "reactions": {k: len(v) for k, v in m["reactions"].items()},
        }

    @tool
    def delete_post(self, channel_id: str, post_id: str) -> dict[str, object]:
        with self.store.lock:
            cid = self.store.channel(channel_id)["id"]
            messages = self.store.messages(cid)
            m = _find(messages, post_id, cid)
            if m.get("deleted"):
                raise ToolError(f"message {post_id!r} is already deleted")
            m["deleted"] = True
            m["text"] = ""
            self.store.save_messages(cid, messages)
        return {"message_id": post_id, "message": "deleted"}

    @tool
    def get_users(self, limit: int | None, page: int | None) -> dict[str, object]:
        me, users = self.store.users_doc()
        rows = [
            {"user_id": u.get("id"), "name": u.get("name"), "title": u.get("title", ""),
             **({"is_me": True} if u.get("id") == me else {})}
            for u in users
        ]  # fmt: skip
        chunk, meta = paged(rows, limit, page, 100)
        return {"users": chunk, **meta}

    @tool
    def get_user_profile(self, user_id: str) -> dict[str, object]:
        u = dict(self.store.user(user_id))
        u["user_id"] = u.pop("id")
        return u
