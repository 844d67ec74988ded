"""The calendar app lists and edits events in the world's .ics files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from apps_testkit import data, demo_world, error
from fastmcp import Client
from icalendar import Calendar

from kwrl.worlds.apps import calendar
from kwrl.worlds.layout import WorldRoots


@pytest.fixture
def roots(tmp_path: Path) -> WorldRoots:
    return demo_world(tmp_path)


@pytest.fixture
async def client(roots: WorldRoots):
    async with Client(calendar.build(roots)) as c:
        yield c


def events_in(path: Path) -> dict[str, object]:
    cal = Calendar.from_ical(path.read_bytes())
    return {str(e["UID"]): e for e in cal.walk("VEVENT")}  # type: ignore[union-attr]


async def test_list_events_sorted_and_filtered_by_date(client: Client) -> None:
    everything = await data(client, "list_events", {"limit": 500})
    assert everything["total"] == 30
    starts = [e["start"] for e in everything["events"]]
    assert starts[0] == "2025-03-03"  # the all-day event, at midnight UTC
    week = await data(client, "list_events", {"start_date": "2025-03-10", "end_date": "2025-03-17"})
    assert 0 < week["total"] < 30
    assert all("2025-03-10" <= e["start"][:10] < "2025-03-17" for e in week["events"])
    assert (await data(client, "list_events", {"query": "board deck"}))["total"] == 4


async def test_read_event_shows_attendees_and_recurrence(client: Client) -> None:
    ev = await data(client, "read_event", {"event_id": "demo-event-001@northwind.example"})
    assert ev["recurrence"] == "FREQ=WEEKLY;COUNT=4"
    assert ev["attendees"] == [
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
            "start": "2025-04-01T10:00",
            "location": "Room 9",
            "attendees": ["ben.okafor@northwind.example"],
        },
    )
    eid = created["event_id"]
    on_disk = events_in(roots.calendar / "calendar.ics")[eid]
    assert str(on_disk["SUMMARY"]) == "Atlas IC"  # type: ignore[index]
    ev = await data(client, "read_event", {"event_id": eid})
    assert ev["start"] == "2025-04-01T10:00:00" and ev["end"] == "2025-04-01T11:00:00"
    await data(
        client,
        "update_event",
        {
            "event_id": eid,
            "summary": "Atlas IC (moved)",
            "start": "2025-04-02T09:00",
            "end": "2025-04-02T10:00",
        },
    )
    ev = await data(client, "read_event", {"event_id": eid})
    assert (
        ev["summary"] == "Atlas IC (moved)"
        and ev["start"] == "2025-04-02T09:00:00"
        and ev["location"] == "Room 9"
    )
    await data(client, "delete_event", {"event_id": eid})
    assert eid not in events_in(roots.calendar / "calendar.ics")
    assert "no event" in await error(client, "read_event", {"event_id": eid})


async def test_update_in_a_world_file_keeps_the_other_events(
    client: Client, roots: WorldRoots
) -> None:
    eid = "demo-event-005@northwind.example"
    await data(client, "update_event", {"event_id": eid, "location": ""})
    after = events_in(roots.calendar / "team.ics")
    assert len(after) == 30 and "LOCATION" not in after[eid]  # type: ignore[operator]


async def test_bad_input_is_a_tool_error_and_leaves_files_alone(
    client: Client, roots: WorldRoots
) -> None:
    before = (roots.calendar / "team.ics").read_bytes()
    assert "ISO 8601" in await error(
        client, "create_event", {"summary": "x", "start": "next tuesday"}
    )
    assert "before start" in await error(
        client,
        "update_event",
        {"event_id": "demo-event-005@northwind.example", "end": "2000-01-01T00:00"},
    )
    assert "both be dates" in await error(
        client, "create_event", {"summary": "x", "start": "2025-04-01", "end": "2025-04-01T10:00"}
    )
    assert "no event" in await error(client, "delete_event", {"event_id": "nope"})
    assert (roots.calendar / "team.ics").read_bytes() == before
    assert not (roots.calendar / "calendar.ics").exists()


async def test_real_ics_fixtures_are_listed(tmp_path: Path, office_fixtures: Path) -> None:
    roots = WorldRoots.of_dir(tmp_path / "w")
    roots.ensure()
    for f in (office_fixtures / "ics").glob("*.ics"):
        shutil.copyfile(f, roots.calendar / f.name)
    async with Client(calendar.build(roots)) as c:
        listed = await data(c, "list_events", {"limit": 500})
        assert listed["total"] >= 8
        for e in listed["events"]:
            assert (await data(c, "read_event", {"event_id": e["event_id"]}))["event_id"] == e[
                "event_id"
            ]


async def test_a_corrupt_calendar_file_is_reported_by_name(
    client: Client, roots: WorldRoots
) -> None:
    (roots.calendar / "broken.ics").write_text("BEGIN:VCALENDAR\nthis is not ical\n")
    assert "broken.ics" in await error(client, "list_events", {})
