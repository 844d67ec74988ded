"""Machine checks see what the real mail, calendar and chat apps write (driven over MCP in memory).

The world is kwrl's demo apps data; the "agent" calls the apps' tools through a fastmcp client on a
copy of it (the trial's final state); the grader then finds the sent mail, the new event and the new
chat post, and ignores reactions, deletions and everything that was there before.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from fastmcp import Client

from kwrl.grading.diff import StateView
from kwrl.grading.evidence import Evidence
from kwrl.grading.grade import grade_trial
from kwrl.tasks.layout import WorldRoots
from kwrl.tasks.models import Verifier
from kwrl.worlds.apps import build
from kwrl.worlds.demo import write_demo_apps_data


def v(i: int, check: dict[str, Any]) -> Verifier:
    return Verifier.model_validate(
        {
            "verifier_id": f"v{i}",
            "verifier_index": i,
            "verifier_values": {"criteria": str(check), "kwrl_check": check},
        }
    )


async def call(server: Any, tool: str, args: dict[str, Any]) -> None:
    async with Client(server) as c:
        result = await c.call_tool(tool, args)
        assert not result.is_error


async def test_apps_output_is_graded(tmp_path: Path) -> None:
    world = WorldRoots.of_dir(tmp_path / "world")
    write_demo_apps_data(world, mails=10, events=5, messages=12)
    shutil.copytree(tmp_path / "world", tmp_path / "final")
    final = WorldRoots.of_dir(tmp_path / "final")

    # the calls as Archipelago's tools take them (input/request envelopes)
    await call(build("mail", final), "send_mail", {"input": {
        "from_email": "ana.lima@northwind.example", "to_email": "cfo@acme.example",
        "subject": "Atlas model v2", "body": "EV is $1.2bn; details attached.", "cc": []}})  # fmt: skip
    await call(build("calendar", final), "create_event", {"request": {
        "summary": "Atlas IC meeting", "start": {"dateTime": "2025-04-02T15:00:00"},
        "end": {"dateTime": "2025-04-02T16:00:00"}, "attendees": [{"email": "cfo@acme.example"}]}})  # fmt: skip
    chat_app = build("chat", final)
    await call(
        chat_app,
        "post_message",
        {"request": {"channel_id": "atlas", "message": "IC memo is ready for review"}},
    )
    await call(
        chat_app,
        "add_reaction",
        {"request": {"channel_id": "general", "post_id": "m0001", "emoji_name": "🎉"}},
    )
    await call(chat_app, "delete_post", {"request": {"channel_id": "general", "post_id": "m0002"}})

    ev = Evidence.collect(task="t", answer="", initial=StateView.of([tmp_path / "world"]),
                          final=StateView.of([tmp_path / "final"]))  # fmt: skip
    assert [m.subject for m in ev.mail] == ["Atlas model v2"]
    assert [e.summary for e in ev.events] == ["Atlas IC meeting"]
    assert [p.text for p in ev.chat] == [
        "IC memo is ready for review"
    ]  # not the reaction, not the deletion

    checks = [
        {"kind": "mail_sent", "to": "cfo@acme.example", "subject_contains": ["atlas"], "body_contains": ["$1.2bn"]},
        {"kind": "event_exists", "title_contains": "IC meeting", "date": "2025-04-02", "attendee": "cfo@acme.example"},
        {"kind": "chat_posted", "channel": "#project-atlas", "all_of": ["IC memo"]},  # the channel's name
        {"kind": "chat_posted", "channel": "atlas", "all_of": ["ready for review"]},  # its id
        {"kind": "chat_posted", "channel": "general", "all_of": ["IC memo"]},
        {"kind": "mail_sent", "to": "ceo@acme.example"},
    ]  # fmt: skip
    grades = await grade_trial([v(i, c) for i, c in enumerate(checks)], ev, None)
    assert [g.score for g in grades.grades] == [1, 1, 1, 1, 0, 0], [
        g.rationale for g in grades.grades
    ]
    # the judge's view: one artifact per record, none for the raw mbox/ics/json files
    assert [a.kind for a in ev.artifacts] == ["mail", "event", "chat"]
