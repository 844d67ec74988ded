"""The calendar app lists and edits events in the world's .ics files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from apps_testkit import data, demo_world, error
from fastmcp import Client
from icalendar import Calendar

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps import build


@pytest.fixture
def roots(tmp_path: Path) -> WorldRoots:
    return demo_world(tmp_path)


@pytest.fixture
async def client(roots: WorldRoots):
    async with Client(build("calendar", roots)) as c:
        yield c


def events_in(path: Path) -> dict[str, object]:
    cal = Calendar.from_ical(path.read_bytes())
    return {str(e["UID"]): e for e in cal.walk("VEVENT")}  # type: ignore[union-attr]


async def test_list_events_sorted_and_paged(client: Client) -> None:
    first = await data(client, "list_events", {"limit": 20})
    assert first["total"] == 30 and first["has_more"] is True and len(first["events"]) == 20
    assert first["events"][0]["start"] == {
        "date": "2025-03-03"
    }  # the all-day event, at midnight UTC
    rest = await data(client, "list_events", {"limit": 20, "offset": 20})
    assert len(rest["events"]) == 10 and rest["has_more"] is False
    starts = [
        e["start"].get("dateTime") or e["start"]["date"] for e in first["events"] + rest["events"]
    ]
    assert [s[:10] for s in starts] == sorted(s[:10] for s in starts)
    assert "limit: Input should be less than or equal to 100" in await error(
        client, "list_events", {"limit": 500}
    )


async def test_read_event_shows_attendees_and_recurrence(client: Client) -> None:
    ev = await data(client, "read_event", {"event_id": "demo-event-001@northwind.example"})
    assert ev["recurrence"] == ["RRULE:FREQ=WEEKLY;COUNT=4"]
    assert [a["email"] for a in ev["attendees"]] == [
        "ana.lima@northwind.example",
        "ben.okafor@northwind.example",
        "chen.wei@northwind.example",
    ]
    assert ev["description"] == "Agenda item 1"


async def test_create_then_read_update_delete(client: Client, roots: WorldRoots) -> None:
    created = await data(
        client,
        "create_event",
        {
            "summary": "Atlas IC",
            "start": {"dateTime": "2025-04-01T10:00:00", "timeZone": "Europe/Paris"},
            "end": {"dateTime": "2025-04-01T11:00:00", "timeZone": "Europe/Paris"},
            "location": "Room 9",
            "attendees": [
                {
                    "email": "ben.okafor@northwind.example",
                    "displayName": "Ben",
                    "responseStatus": "accepted",
                }
            ],
            "reminders": {"useDefault": False, "overrides": [{"method": "email", "minutes": 30}]},
            "recurrence": ["RRULE:FREQ=DAILY;COUNT=2"],
            "colorId": "7",
        },
    )
    assert created["success"] is True
    eid = created["event_id"]
    on_disk = events_in(roots.app_dir("calendar") / "calendar.ics")[eid]
    assert str(on_disk["SUMMARY"]) == "Atlas IC"  # type: ignore[index]
    ev = await data(client, "read_event", {"event_id": eid})
    assert ev["start"] == {"dateTime": "2025-04-01T10:00:00+02:00", "timeZone": "Europe/Paris"}
    assert ev["attendees"] == [
        {
            "email": "ben.okafor@northwind.example",
            "displayName": "Ben",
            "responseStatus": "accepted",
        }
    ]
    assert ev["reminders"] == {
        "useDefault": False,
        "overrides": [{"method": "email", "minutes": 30}],
    }
    assert ev["recurrence"] == ["RRULE:FREQ=DAILY;COUNT=2"] and ev["colorId"] == "7"
    await data(
        client,
        "update_event",
        {
            "event_id": eid,
            "summary": "Atlas IC (moved)",
            "start": {"date": "2025-04-02"},
            "end": {"date": "2025-04-03"},
        },
    )
    ev = await data(client, "read_event", {"event_id": eid})
    assert ev["summary"] == "Atlas IC (moved)" and ev["start"] == {"date": "2025-04-02"}
    assert ev["location"] == "Room 9"
    await data(client, "delete_event", {"event_id": eid})
    assert eid not in events_in(roots.app_dir("calendar") / "calendar.ics")
    assert "no event" in await error(client, "read_event", {"event_id": eid})


async def test_update_in_a_world_file_keeps_the_other_events(
    client: Client, roots: WorldRoots
) -> None:
    eid = "demo-event-005@northwind.example"
    await data(client, "update_event", {"event_id": eid, "location": ""})
    after = events_in(roots.app_dir("calendar") / "team.ics")
    assert len(after) == 30 and "LOCATION" not in after[eid]  # type: ignore[operator]


async def test_bad_input_is_a_tool_error_and_leaves_files_alone(
    client: Client, roots: WorldRoots
) -> None:
    before = (roots.app_dir("calendar") / "team.ics").read_bytes()
    day = {"date": "2025-04-01"}
    assert "ISO 8601" in await error(
        client, "create_event", {"summary": "x", "start": {"dateTime": "next tuesday"}, "end": day}
    )
    assert "give dateTime" in await error(
        client, "create_event", {"summary": "x", "start": {}, "end": day}
    )
    assert "input" not in (
        msg := await error(client, "create_event", {"summary": "x", "start": day})
    )
    assert msg == "Error calling tool 'create_event': Validation error: request.end: Field required"
    assert "before start" in await error(
        client,
        "update_event",
        {
            "event_id": "demo-event-005@northwind.example",
            "end": {"dateTime": "2000-01-01T00:00:00"},
        },
    )
    assert "both be dates" in await error(
        client,
        "create_event",
        {"summary": "x", "start": day, "end": {"dateTime": "2025-04-01T10:00:00"}},
    )
    assert "recurrence" in await error(
        client, "create_event", {"summary": "x", "start": day, "end": day, "recurrence": ["weekly"]}
    )
    assert "unknown time zone" in await error(
        client,
        "create_event",
        {
            "summary": "x",
            "start": {"dateTime": "2025-04-01T10:00:00", "timeZone": "Mars/Base"},
            "end": day,
        },
    )
    assert "no event" in await error(client, "delete_event", {"event_id": "nope"})
    assert (roots.app_dir("calendar") / "team.ics").read_bytes() == before
    assert not (roots.app_dir("calendar") / "calendar.ics").exists()


async def test_real_ics_fixtures_are_listed(tmp_path: Path, office_fixtures: Path) -> None:
    roots = WorldRoots.of_dir(tmp_path / "w")
    roots.ensure()
    for f in (office_fixtures / "ics").glob("*.ics"):
        shutil.copyfile(f, roots.app_dir("calendar") / f.name)
    async with Client(build("calendar", roots)) as c:
        listed = await data(c, "list_events", {"limit": 100})
        assert listed["total"] >= 8
        for e in listed["events"]:
            assert (await data(c, "read_event", {"event_id": e["event_id"]}))["event_id"] == e[
                "event_id"
            ]


async def test_a_corrupt_calendar_file_is_reported_by_name(
    client: Client, roots: WorldRoots
) -> None:
    (roots.app_dir("calendar") / "broken.ics").write_text("BEGIN:VCALENDAR\nthis is not ical\n")
    assert "broken.ics" in await error(client, "list_events", {})
