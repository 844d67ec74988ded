"""The calendar app: the world's events as iCalendar files (ARCH mcp_servers/calendar).

Data: `.apps_data/calendar/*.ics`, parsed with `icalendar`. Tools: list_events, read_event,
create_event, update_event, delete_event.

Contract:
- An event's id (`event_id`) is its UID; an event without a UID, or a second VEVENT sharing one
  (a recurrence override), is named `<file stem>:<index of the VEVENT in that file>`.
- Times are ISO 8601: `2025-03-04` (all-day), `2025-03-04T09:30` (floating local time) or with an
  offset / `Z`. Listing sorts by start, treating floating times as UTC.
- New events go to `calendar.ics` (created with a VCALENDAR wrapper when missing); updates and
  deletions rewrite the file that holds the event, keeping every other component (timezones, todos)
  as parsed. Writes are atomic (`kwrl.io`).

Non-obvious choice: icalendar is imported on first use, not at build time, so the gateway starts fast.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from kwrl.io import write_bytes
from kwrl.worlds.apps.base import ToolError, tool
from kwrl.worlds.layout import WorldRoots

if TYPE_CHECKING:
    from icalendar import Calendar

NEW_EVENTS_FILE = "calendar.ics"


def parse_when(value: str, field: str) -> date | datetime:
    """ISO 8601 date or datetime; a clear tool error otherwise."""
    v = value.strip()
    try:
        if len(v) == 10:
            return date.fromisoformat(v)
        return datetime.fromisoformat(v)
    except ValueError:
        raise ToolError(
            f"{field}: {value!r} is not an ISO 8601 date or datetime (e.g. 2025-03-04 or 2025-03-04T09:30)"
        ) from None


def _sort_key(d: date | datetime | None) -> datetime:
    if d is None:
        return datetime.min.replace(tzinfo=UTC)
    if not isinstance(d, datetime):
        return datetime(d.year, d.month, d.day, tzinfo=UTC)
    return d if d.tzinfo else d.replace(tzinfo=UTC)


def _iso(d: date | datetime | None) -> str | None:
    return None if d is None else d.isoformat()


@dataclass
class Located:
    event_id: str
    path: Path
    cal: Calendar
    event: Any  # icalendar.Event; its property accessors are loosely typed

    def times(self) -> tuple[date | datetime | None, date | datetime | None]:
        start = self.event.get("DTSTART")
        end = self.event.get("DTEND")
        s = start.dt if start is not None else None
        e = end.dt if end is not None else None
        if e is None and s is not None and self.event.get("DURATION") is not None:
            e = s + self.event["DURATION"].dt
        return s, e

    def summary(self) -> dict[str, Any]:
        s, e = self.times()
        out: dict[str, Any] = {
            "event_id": self.event_id,
            "summary": str(self.event.get("SUMMARY", "")),
            "start": _iso(s),
            "end": _iso(e),
            "calendar": self.path.stem,
        }
        if self.event.get("LOCATION"):
            out["location"] = str(self.event["LOCATION"])
        return out

    def detail(self) -> dict[str, Any]:
        out = self.summary()
        ev = self.event
        attendees = ev.get("ATTENDEE")
        if attendees is not None:
            items = attendees if isinstance(attendees, list) else [attendees]
            out["attendees"] = [
                str(a).removeprefix("mailto:").removeprefix("MAILTO:") for a in items
            ]
        for key in ("DESCRIPTION", "ORGANIZER", "STATUS"):
            if ev.get(key) is not None:
                out[key.lower()] = str(ev[key]).removeprefix("mailto:")
        if ev.get("RRULE") is not None:
            out["recurrence"] = bytes(ev["RRULE"].to_ical()).decode()
        return out


class CalendarStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.RLock()
        self._cache: dict[Path, tuple[tuple[int, int, int], Calendar]] = {}

    def _parse(self, path: Path) -> Calendar:
        from icalendar import Calendar

        st = path.stat()
        key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size)
        hit = self._cache.get(path)
        if hit and hit[0] == key:
            return hit[1]
        try:
            cal = Calendar.from_ical(path.read_bytes())
        except ValueError as e:
            raise ToolError(f"calendar file {path.name} is not valid iCalendar: {e}") from e
        assert not isinstance(cal, list)
        self._cache[path] = (key, cal)
        return cal

    def events(self) -> list[Located]:
        out: list[Located] = []
        seen: set[str] = set()
        if not self.root.is_dir():
            return out
        with self.lock:
            for path in sorted(self.root.glob("*.ics")):
                cal = self._parse(path)
                for i, ev in enumerate(cal.walk("VEVENT")):
                    uid = str(ev.get("UID", "")).strip()
                    eid = uid if uid and uid not in seen else f"{path.stem}:{i}"
                    seen.add(eid)
                    out.append(Located(eid, path, cal, ev))
        return out

    def get(self, event_id: str) -> Located:
        for loc in self.events():
            if loc.event_id == event_id.strip():
                return loc
        raise ToolError(f"no event with event_id {event_id!r}; use list_events to find ids")

    def save(self, path: Path, cal: Calendar) -> None:
        write_bytes(path, cal.to_ical())
        self._cache.pop(path, None)

    def new_events_calendar(self) -> tuple[Path, Calendar]:
        from icalendar import Calendar

        path = self.root / NEW_EVENTS_FILE
        if path.exists():
            return path, self._parse(path)
        cal = Calendar()
        cal.add("PRODID", "-//kwrl//world calendar//EN")
        cal.add("VERSION", "2.0")
        return path, cal


def _set_fields(
    ev: Any,
    *,
    summary: str | None,
    start: str | None,
    end: str | None,
    description: str | None,
    location: str | None,
    attendees: list[str] | None,
) -> None:
    if summary is not None:
        if not summary.strip():
            raise ToolError("summary must not be empty")
        ev.pop("SUMMARY", None)
        ev.add("SUMMARY", summary)
    new_start = parse_when(start, "start") if start is not None else None
    new_end = parse_when(end, "end") if end is not None else None
    if new_start is not None:
        ev.pop("DTSTART", None)
        ev.add("DTSTART", new_start)
    if new_end is not None:
        ev.pop("DTEND", None)
        ev.pop("DURATION", None)
        ev.add("DTEND", new_end)
    s = ev.get("DTSTART")
    e = ev.get("DTEND")
    if s is not None and e is not None:
        if isinstance(s.dt, datetime) != isinstance(e.dt, datetime):
            raise ToolError("start and end must both be dates or both be datetimes")
        if _sort_key(e.dt) < _sort_key(s.dt):
            raise ToolError(f"end {e.dt.isoformat()} is before start {s.dt.isoformat()}")
    for key, value in (("DESCRIPTION", description), ("LOCATION", location)):
        if value is not None:
            ev.pop(key, None)
            if value:
                ev.add(key, value)
    if attendees is not None:
        ev.pop("ATTENDEE", None)
        for a in attendees:
            ev.add("ATTENDEE", f"mailto:{a.strip().removeprefix('mailto:')}")
    ev.pop("LAST-MODIFIED", None)
    ev.add("LAST-MODIFIED", datetime.now(UTC).replace(microsecond=0))


def build(roots: WorldRoots) -> FastMCP:
    store = CalendarStore(roots.calendar)
    mcp = FastMCP("calendar")

    @tool(mcp)
    def list_events(
        start_date: Annotated[
            str | None, Field(description="Only events ending on/after this date (ISO 8601).")
        ] = None,
        end_date: Annotated[
            str | None, Field(description="Only events starting before this date (ISO 8601).")
        ] = None,
        query: Annotated[
            str | None, Field(description="Text to find in the title or location.")
        ] = None,
        limit: Annotated[int, Field(description="Most events to return.", ge=1, le=500)] = 50,
        offset: Annotated[int, Field(description="Events to skip, for paging.", ge=0)] = 0,
    ) -> dict[str, object]:
        """List calendar events (id, title, start, end, location), sorted by start time."""
        lo = _sort_key(parse_when(start_date, "start_date")) if start_date else None
        hi = _sort_key(parse_when(end_date, "end_date")) if end_date else None
        rows = []
        for loc in store.events():
            s, e = loc.times()
            if lo is not None and _sort_key(e or s) < lo:
                continue
            if hi is not None and _sort_key(s) >= hi:
                continue
            if query:
                hay = f"{loc.event.get('SUMMARY', '')} {loc.event.get('LOCATION', '')}".lower()
                if query.lower() not in hay:
                    continue
            rows.append((_sort_key(s), loc))
        rows.sort(key=lambda r: r[0])
        page = [loc.summary() for _, loc in rows[offset : offset + limit]]
        return {"total": len(rows), "offset": offset, "events": page}

    @tool(mcp)
    def read_event(
        event_id: Annotated[str, Field(description="An event_id from list_events.")],
    ) -> dict[str, object]:
        """Read one event in full: times, description, location, attendees, organizer, recurrence."""
        with store.lock:
            return store.get(event_id).detail()

    @tool(mcp)
    def create_event(
        summary: Annotated[str, Field(description="Event title.")],
        start: Annotated[str, Field(description="Start, ISO 8601 date or datetime.")],
        end: Annotated[
            str | None, Field(description="End, ISO 8601; default start + 1 hour (or + 1 day).")
        ] = None,
        description: Annotated[str | None, Field(description="Details.")] = None,
        location: Annotated[str | None, Field(description="Where.")] = None,
        attendees: Annotated[
            list[str] | None, Field(description="Attendee email addresses.")
        ] = None,
    ) -> dict[str, object]:
        """Create a calendar event; returns its event_id."""
        from icalendar import Event

        begin = parse_when(start, "start")
        if end is None:
            step = timedelta(hours=1) if isinstance(begin, datetime) else timedelta(days=1)
            end = (begin + step).isoformat()
        ev = Event()
        uid = f"{uuid.uuid4()}@kwrl"
        ev.add("UID", uid)
        ev.add("DTSTAMP", datetime.now(UTC).replace(microsecond=0))
        _set_fields(ev, summary=summary, start=start, end=end, description=description,
                    location=location, attendees=attendees)  # fmt: skip
        with store.lock:
            path, cal = store.new_events_calendar()
            cal.add_component(ev)
            store.save(path, cal)
        return {"event_id": uid, "message": f"created event {summary!r}", "calendar": path.stem}

    @tool(mcp)
    def update_event(
        event_id: Annotated[str, Field(description="The event to change.")],
        summary: Annotated[str | None, Field(description="New title.")] = None,
        start: Annotated[str | None, Field(description="New start, ISO 8601.")] = None,
        end: Annotated[str | None, Field(description="New end, ISO 8601.")] = None,
        description: Annotated[str | None, Field(description="New details ('' clears).")] = None,
        location: Annotated[str | None, Field(description="New location ('' clears).")] = None,
        attendees: Annotated[list[str] | None, Field(description="New attendee list.")] = None,
    ) -> dict[str, object]:
        """Change fields of an event; fields left out keep their value."""
        with store.lock:
            loc = store.get(event_id)
            from icalendar import Calendar

            # Edit a copy so a refused update leaves the cached calendar untouched.
            cal = Calendar.from_ical(loc.cal.to_ical())
            assert not isinstance(cal, list)
            idx = next(i for i, ev in enumerate(loc.cal.walk("VEVENT")) if ev is loc.event)
            ev = cal.walk("VEVENT")[idx]
            _set_fields(ev, summary=summary, start=start, end=end, description=description,
                        location=location, attendees=attendees)  # fmt: skip
            store.save(loc.path, cal)
        return {"event_id": event_id, "message": "event updated"}

    @tool(mcp)
    def delete_event(
        event_id: Annotated[str, Field(description="The event to delete.")],
    ) -> dict[str, object]:
        """Delete an event from its calendar."""
        with store.lock:
            loc = store.get(event_id)
            loc.cal.subcomponents = [c for c in loc.cal.subcomponents if c is not loc.event]
            store.save(loc.path, loc.cal)
        return {"event_id": event_id, "message": "event deleted"}

    return mcp
