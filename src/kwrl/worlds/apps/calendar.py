"""The calendar app: the world's events as iCalendar files (ARCH mcp_servers/calendar).

Data: `.apps_data/calendar/*.ics`, parsed with `icalendar`. Tools (upstream's parameters, each
under a `request` envelope): list_events, read_event, create_event, update_event, delete_event.

Contract:
- An event's id (`event_id`) is its UID; an event without a UID, or a second VEVENT sharing one
  (a recurrence override), is named `<file stem>:<index of the VEVENT in that file>`.
- Times are Google-Calendar-style objects, as upstream: `{"date": "2025-03-04"}` (all-day) or
  `{"dateTime": "2025-03-04T09:30:00", "timeZone": "Europe/Paris"}` (a naive dateTime is read in
  `timeZone` when given, else kept floating). Listing sorts by start, floating times as UTC.
- attendees `[{email, displayName?, responseStatus?}]` become ATTENDEE (CN, PARTSTAT), reminders
  `{useDefault, overrides: [{method, minutes}]}` VALARMs, recurrence `["RRULE:..."]` lines
  RRULE/EXDATE/RDATE, colorId the COLOR property.
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
from typing import TYPE_CHECKING, Any

from kwrl.io import write_bytes
from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps.base import ToolError, WorldApp, tool

if TYPE_CHECKING:
    from icalendar import Calendar

NEW_EVENTS_FILE = "calendar.ics"
_STATUS_IN = {
    "accepted": "ACCEPTED",
    "declined": "DECLINED",
    "tentative": "TENTATIVE",
    "needsAction": "NEEDS-ACTION",
}
_STATUS_OUT = {v: k for k, v in _STATUS_IN.items()}


def _ical_lines(ev: Any, key: str) -> list[str]:
    values = ev.get(key)
    if values is None:
        return []
    items = values if isinstance(values, list) else [values]
    return [f"{key}:{bytes(v.to_ical()).decode()}" for v in items]


def _alarm_out(alarm: Any) -> dict[str, Any]:
    trigger = alarm.get("TRIGGER")
    minutes = (
        int(-trigger.dt.total_seconds() // 60)
        if trigger is not None and isinstance(trigger.dt, timedelta)
        else 0
    )
    return {
        "method": "email" if str(alarm.get("ACTION", "")).upper() == "EMAIL" else "popup",
        "minutes": minutes,
    }


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


def _iso(d: date | datetime | None) -> dict[str, str] | None:
    """A time as upstream's event time object."""
    if d is None:
        return None
    if not isinstance(d, datetime):
        return {"date": d.isoformat()}
    tz = getattr(d.tzinfo, "key", None)
    return {"dateTime": d.isoformat(), **({"timeZone": tz} if tz else {})}


def parse_time(value: dict[str, Any] | None, field: str) -> date | datetime | None:
    """Upstream's {dateTime | date, timeZone} object as a date or datetime."""
    if value is None:
        return None
    if value.get("dateTime"):
        d = parse_when(value["dateTime"].replace("Z", "+00:00"), f"{field}.dateTime")
        if not isinstance(d, datetime):
            d = datetime(d.year, d.month, d.day)
        if d.tzinfo is None and value.get("timeZone"):
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                d = d.replace(tzinfo=ZoneInfo(value["timeZone"]))
            except (ZoneInfoNotFoundError, ValueError):
                raise ToolError(
                    f"{field}.timeZone: unknown time zone {value['timeZone']!r}"
                ) from None
        return d
    if value.get("date"):
        d = parse_when(value["date"], f"{field}.date")
        return d.date() if isinstance(d, datetime) else d
    raise ToolError(f"{field}: give dateTime (timed event) or date (all-day event)")


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
                {"email": str(a).removeprefix("mailto:").removeprefix("MAILTO:"),
                 **({"displayName": str(a.params["CN"])} if "CN" in getattr(a, "params", {}) else {}),
                 **({"responseStatus": _STATUS_OUT.get(str(a.params["PARTSTAT"]), "needsAction")}
                    if "PARTSTAT" in getattr(a, "params", {}) else {})}
                for a in items
            ]  # fmt: skip
        if ev.get("COLOR") is not None:
            out["colorId"] = str(ev["COLOR"])
        rules = [line for key in ("RRULE", "EXDATE", "RDATE") for line in _ical_lines(ev, key)]
        if rules:
            out["recurrence"] = rules
        alarms = [c for c in ev.subcomponents if c.name == "VALARM"]
        if alarms:
            out["reminders"] = {"useDefault": False, "overrides": [_alarm_out(c) for c in alarms]}
        for key in ("DESCRIPTION", "ORGANIZER", "STATUS"):
            if ev.get(key) is not None:
                out[key.lower()] = str(ev[key]).removeprefix("mailto:")
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


def _set_fields(ev: Any, f: dict[str, Any]) -> None:
    """Apply the given (non-None) fields of a create/update request to a VEVENT."""
    from icalendar import Alarm, vCalAddress

    if f.get("summary") is not None:
        if not f["summary"].strip():
            raise ToolError("summary must not be empty")
        ev.pop("SUMMARY", None)
        ev.add("SUMMARY", f["summary"])
    new_start, new_end = parse_time(f.get("start"), "start"), parse_time(f.get("end"), "end")
    if new_start is not None:
        ev.pop("DTSTART", None)
        ev.add("DTSTART", new_start)
    if new_end is not None:
        ev.pop("DTEND", None)
        ev.pop("DURATION", None)
        ev.add("DTEND", new_end)
    s, e = ev.get("DTSTART"), ev.get("DTEND")
    if s is not None and e is not None:
        if isinstance(s.dt, datetime) != isinstance(e.dt, datetime):
            raise ToolError("start and end must both be dates or both be dateTimes")
        if _sort_key(e.dt) < _sort_key(s.dt):
            raise ToolError(f"end {e.dt.isoformat()} is before start {s.dt.isoformat()}")
    for key, name in (
        ("DESCRIPTION", "description"),
        ("LOCATION", "location"),
        ("COLOR", "colorId"),
    ):
        if f.get(name) is not None:
            ev.pop(key, None)
            if f[name]:
                ev.add(key, f[name])
    if f.get("attendees") is not None:
        ev.pop("ATTENDEE", None)
        for a in f["attendees"]:
            addr = vCalAddress(f"mailto:{a['email'].strip().removeprefix('mailto:')}")
            if a.get("displayName"):
                addr.params["CN"] = a["displayName"]
            if a.get("responseStatus"):
                addr.params["PARTSTAT"] = _STATUS_IN.get(
                    a["responseStatus"], a["responseStatus"].upper()
                )
            ev.add("ATTENDEE", addr)
    if f.get("recurrence") is not None:
        for key in ("RRULE", "EXDATE", "RDATE"):
            ev.pop(key, None)
        for line in f["recurrence"]:
            key, _, value = line.partition(":")
            if key.upper() not in ("RRULE", "EXDATE", "RDATE") or not value:
                raise ToolError(
                    f"recurrence: {line!r} is not an RRULE/EXDATE/RDATE line (e.g. 'RRULE:FREQ=WEEKLY;COUNT=4')"
                )
            try:
                if key.upper() == "RRULE":
                    ev.add("RRULE", _rrule(value))
                else:
                    ev.add(key.upper(), [parse_when(v, "recurrence") for v in value.split(",")])
            except (ValueError, TypeError):
                raise ToolError(f"recurrence: cannot parse {line!r}") from None
    if f.get("reminders") is not None:
        ev.subcomponents = [c for c in ev.subcomponents if c.name != "VALARM"]
        for o in f["reminders"].get("overrides") or []:
            alarm = Alarm()
            alarm.add("ACTION", "EMAIL" if o["method"] == "email" else "DISPLAY")
            alarm.add("TRIGGER", timedelta(minutes=-o["minutes"]))
            alarm.add("DESCRIPTION", "Reminder")
            ev.add_component(alarm)
    ev.pop("LAST-MODIFIED", None)
    ev.add("LAST-MODIFIED", datetime.now(UTC).replace(microsecond=0))


def _rrule(value: str) -> Any:
    from icalendar import vRecur

    return vRecur.from_ical(value)


class CalendarApp(WorldApp):
    """The calendar app: its tools over the world's iCalendar files (module docstring)."""

    def __init__(self, roots: WorldRoots) -> None:
        super().__init__(roots)
        self.store = CalendarStore(roots.app_dir("calendar"))

    @tool
    def list_events(self, limit: int, offset: int) -> dict[str, object]:
        rows = sorted(
            ((_sort_key(loc.times()[0]), loc) for loc in self.store.events()), key=lambda r: r[0]
        )
        page = [loc.summary() for _, loc in rows[offset : offset + limit]]
        return {"events": page, "total": len(rows), "offset": offset, "limit": limit,
                "has_more": offset + len(page) < len(rows)}  # fmt: skip

    @tool
    def read_event(self, event_id: str) -> dict[str, object]:
        with self.store.lock:
            return self.store.get(event_id).detail()

    @tool
    def create_event(self, **f: Any) -> dict[str, object]:
        from icalendar import Event

        ev = Event()
        uid = f"{uuid.uuid4()}@kwrl"
        ev.add("UID", uid)
        ev.add("DTSTAMP", datetime.now(UTC).replace(microsecond=0))
        _set_fields(ev, f)
        with self.store.lock:
            path, cal = self.store.new_events_calendar()
            cal.add_component(ev)
            self.store.save(path, cal)
        return {"success": True, "event_id": uid, "message": "Event created successfully"}

    @tool
    def update_event(self, event_id: str, **f: Any) -> dict[str, object]:
        with self.store.lock:
            loc = self.store.get(event_id)
            from icalendar import Calendar

            # Edit a copy so a refused update leaves the cached calendar untouched.
            cal = Calendar.from_ical(loc.cal.to_ical())
            assert not isinstance(cal, list)
            idx = next(i for i, ev in enumerate(loc.cal.walk("VEVENT")) if ev is loc.event)
            ev = cal.walk("VEVENT")[idx]
            _set_fields(ev, f)
            self.store.save(loc.path, cal)
        return {"success": True, "event_id": event_id, "message": "Event updated successfully"}

    @tool
    def delete_event(self, event_id: str) -> dict[str, object]:
        with self.store.lock:
            loc = self.store.get(event_id)
            loc.cal.subcomponents = [c for c in loc.cal.subcomponents if c is not loc.event]
            self.store.save(loc.path, loc.cal)
        return {"success": True, "event_id": event_id, "message": "Event deleted successfully"}
