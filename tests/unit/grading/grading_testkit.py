"""Test kit of the grading tests: world builders, and the fake judge (tests/fake_judge.py).

`FakeJudge` and its prompt readers are re-exported from tests/fake_judge.py, where the one faked
seam (AGENTS.md) lives for every test; tests/conftest.py serves it as the `judge` fixture.
"""

from __future__ import annotations

import mailbox
import shutil
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from fake_judge import FakeJudge as FakeJudge  # re-exported: grading tests import it from here
from fake_judge import Fault as Fault
from fake_judge import agent_output as agent_output
from fake_judge import criterion_of as criterion_of
from fake_judge import default_decide as default_decide
from kwrl.tasks.models import Verifier

# --------------------------------------------------------------------------- worlds


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write `files` (paths relative to root, e.g. 'filesystem/a.txt') under root."""
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    (root / "filesystem").mkdir(parents=True, exist_ok=True)
    return root


def copy_state(src: Path, dest: Path) -> Path:
    """A sandbox-like final root: a full copy of a state (mtimes preserved, as populate does)."""
    shutil.copytree(src, dest, dirs_exist_ok=True)
    return dest


def add_mail(mbox_path: Path, *, to: str, subject: str, body: str, sender: str = "agent@corp.example",
             msg_id: str | None = None) -> None:  # fmt: skip
    mbox_path.parent.mkdir(parents=True, exist_ok=True)
    box = mailbox.mbox(str(mbox_path))
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Message-ID"] = msg_id or f"<{abs(hash((to, subject, body)))}@corp.example>"
    msg.set_content(body)
    box.lock()
    try:
        box.add(msg)
        box.flush()
    finally:
        box.unlock()
        box.close()


def write_calendar(path: Path, events: list[dict[str, Any]]) -> None:
    import icalendar

    cal = icalendar.Calendar()
    cal.add("prodid", "-//kwrl tests//EN")
    cal.add("version", "2.0")
    for e in events:
        ev = icalendar.Event()
        ev.add("uid", e["uid"])
        ev.add("summary", e["summary"])
        ev.add("dtstart", e["start"])
        ev.add("dtend", e["end"])
        for a in e.get("attendees", []):
            ev.add("attendee", f"mailto:{a}")
        cal.add_component(ev)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(cal.to_ical())


def verifier(vid: str, criteria: str, *, check: dict[str, Any] | None = None, file_type: str | None = None,
             index: int = 0, primary: bool = False) -> Verifier:  # fmt: skip
    values: dict[str, Any] = {"criteria": criteria, "is_primary_objective": primary}
    if check is not None:
        values["kwrl_check"] = check
    if file_type is not None:
        values["expected_file_type"] = file_type
    return Verifier.model_validate(
        {"verifier_id": vid, "verifier_values": values, "verifier_index": index, "task_id": "t"}
    )
