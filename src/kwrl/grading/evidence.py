"""Evidence for grading one trial: the final answer and the rendered changes of the world.

`Evidence` bundles what every criterion is graded against: the task text, the agent's final answer,
the file changes (`diff.diff_states`), and the records those changes carry (new mail, new or
changed events, new chat posts). Office files are rendered lazily and once, so a trial graded only
by machine checks that never look at a document never parses one.

`Evidence.artifacts` is the judge's view: one `Artifact` per changed file under `filesystem/` (and
per unknown `.apps_data` file), one per new mail / changed event / new chat post. Mail, calendar and
chat files themselves are not shown whole: the records inside them are.

`select_artifacts(expected_file_type, expected_output_files)` applies Archipelago's file-type rule:
"Final Answer Only" shows no artifact; "All output" (or no type) shows all of them plus the answer;
a specific type (any string naming extensions, e.g. "Spreadsheets (.xlsx, .xls)" or ".docx") shows
only matching artifacts and not the answer, and when none match the criterion fails without a
judge call (`None` is returned).

For the machine checks (`checks.py`), `changed_text(rel)` is what the trial wrote into a file: the
whole text of a created file, only the added lines of a modified one (text a file already held is
not the agent's statement), '' for an untouched one. `own_text(text)` is '' for a dump: the
world's data comes in units (a chat post, a mail's subject and each body line, an event's fields,
each line of a rendered file, each of at least `UNIT_MIN_WORDS` words); a text that holds
`DUMP_MIN_UNITS` or more of them verbatim, from `DUMP_MIN_SOURCES` or more files and records,
pastes the world wholesale, and nothing in it counts as stated (quoting a few clauses or messages
is far below that; a copy of one world file saved under a new name is one source). Units survive any dump format (a
tool's JSON, the raw store, a rendering). The world's units are built only for long texts.

Text rendered from the final state, and new mail and chat posts, count against the grading
budget (`kwrl.grading.budget`) when one is in force.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from kwrl.grading import budget
from kwrl.grading.diff import FileChange, StateView, diff_states
from kwrl.grading.records import (
    ChatRecord,
    EventRecord,
    MailRecord,
    changed_events,
    new_chat_posts,
    new_mail,
)
from kwrl.grading.render import DEFAULT_MAX_CHARS, render_file, truncate
from kwrl.tasks.layout import app_prefix

ArtifactKind = Literal["file", "mail", "event", "chat"]
Scope = Literal["answer", "files", "both"]

_MAIL, _CALENDAR, _CHAT = app_prefix("mail"), app_prefix("calendar"), app_prefix("chat")
_APP_DIRS = (_MAIL, _CALENDAR, _CHAT)
"""The app stores whose records (`kwrl.grading.records`) are shown instead of their files."""
_ANY_TYPES = frozenset({"", "any", "any file type", "all", "all output"})
_KIND_TYPES: dict[str, ArtifactKind] = {
    "mail": "mail", "email": "mail", "emails": "mail", "calendar": "event", "event": "event",
    "events": "event", "chat": "chat", "chat messages": "chat",
}  # fmt: skip
_EXT_RE = re.compile(r"\.[A-Za-z0-9]{1,5}\b")
UNIT_MIN_WORDS = 3
"""Words a piece of world data needs to count as a unit that can be pasted."""
DUMP_MIN_UNITS = 15
"""Distinct world units a text must hold verbatim to be a dump."""
DUMP_MIN_SOURCES = 4
"""Distinct files and records those units must come from (a copy of one deck is not a dump)."""


@dataclass(frozen=True)
class Artifact:
    """One piece of changed state, as the judge sees it."""

    id: int
    kind: ArtifactKind
    change: str
    path: str
    """Model-facing name: `/reports/q3.xlsx` for filesystem files, else `mail:<subject>` etc."""
    content: str
    """Created: full text. Modified: the updated text. Deleted: the old text."""
    suffix: str = ""
    diff: str | None = None
    """Modified files: the unified diff of the rendered text (None otherwise). The judge's prompt
    shows it in `<diff>` before the content in `<updated_content>`, tags the prompt writes
    (`kwrl.grading.judges.prompt.render_artifact`), never this text, which is the agent's."""

    @property
    def label(self) -> str:
        return f"ARTIFACT {self.id} ({self.kind} {self.change}: {self.path})"


def display_path(rel: str) -> str:
    """`filesystem/a/b.docx` -> `/a/b.docx` (the agent's view); other subsystems keep their prefix."""
    return "/" + rel.removeprefix("filesystem/") if rel.startswith("filesystem/") else rel


_EMPTY = StateView.of([])
_UNITS_CACHE: dict[tuple[tuple[str, str, int, int], ...], dict[str, str]] = {}


@dataclass
class Evidence:
    task: str
    answer: str
    initial: StateView
    final: StateView
    changes: list[FileChange]
    max_chars: int = DEFAULT_MAX_CHARS
    _rendered: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def collect(
        cls,
        *,
        task: str,
        answer: str,
        initial: StateView,
        final: StateView,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> Evidence:
        return cls(task, answer, initial, final, diff_states(initial, final), max_chars)

    # ----------------------------------------------------------------- records

    @cached_property
    def mail(self) -> list[MailRecord]:
        return new_mail(self.initial, self.final, self._touched(_MAIL), bounded=True)

    @cached_property
    def events(self) -> list[EventRecord]:
        return changed_events(self.initial, self.final, self._touched(_CALENDAR), bounded=True)

    @cached_property
    def chat(self) -> list[ChatRecord]:
        return new_chat_posts(self.initial, self.final, self._touched(_CHAT), bounded=True)

    def _touched(self, prefix: str) -> list[str]:
        """Changed paths under an app's data dir."""
        return [c.path for c in self.changes if c.path.startswith(prefix)]

    # ----------------------------------------------------------------- files

    def text_of(self, rel: str, state: Literal["initial", "final"] = "final") -> str:
        """Rendered text of a file in one of the two states ('' if absent); cached."""
        view = self.final if state == "final" else self.initial
        path = view.get(rel)
        if path is None:
            return ""
        key = str(path)
        if key not in self._rendered:
            text = render_file(path, max_chars=self.max_chars)
            if state == "final":  # the agent's: bounded in all (kwrl.grading.budget)
                budget.charge_chars(len(text), "files")
            self._rendered[key] = text
        return self._rendered[key]

    def changed_text(self, rel: str) -> str:
        """What the trial wrote into a file: all of a created file, the added lines of a modified
        one, '' for a file it left unchanged or deleted."""
        change = next((c for c in self.changes if c.path == rel), None)
        if change is None or change.change == "deleted":
            return ""
        new = self.text_of(rel)
        if change.change == "created":
            return new
        key = "+" + rel
        if key not in self._rendered:
            old = self.text_of(rel, "initial").splitlines()
            lines = new.splitlines()
            sm = difflib.SequenceMatcher(None, old, lines, autojunk=False)
            added = [ln for tag, _, _, j1, j2 in sm.get_opcodes() if tag in ("replace", "insert")
                     for ln in lines[j1:j2]]  # fmt: skip
            self._rendered[key] = "\n".join(added)
        return self._rendered[key]

    @cached_property
    def world_units(self) -> dict[str, str]:
        """The world's data in pasteable units (see module docstring), normalised, each with the
        record or file it comes from; kept for a few initial states (a batch of trials of one
        world renders it once)."""
        files = self.initial.files()
        key = tuple(
            sorted(
                (rel, str(p), p.stat().st_size, p.stat().st_mtime_ns) for rel, p in files.items()
            )
        )
        if key not in _UNITS_CACHE:
            if len(_UNITS_CACHE) >= 4:
                _UNITS_CACHE.pop(next(iter(_UNITS_CACHE)))
            _UNITS_CACHE[key] = self._world_units()
        return _UNITS_CACHE[key]

    def _world_units(self) -> dict[str, str]:
        apps = [r for r in self.initial.files() if r.startswith(_APP_DIRS)]
        pieces: list[tuple[str, str]] = []
        for rel in self.initial.files():
            if not rel.startswith(_APP_DIRS):
                pieces += [(line, rel) for line in self.text_of(rel, "initial").splitlines()]
        for m in new_mail(_EMPTY, self.initial, apps):
            pieces += [(line, "mail:" + m.key) for line in (m.subject, *m.body.splitlines())]
        for e in changed_events(_EMPTY, self.initial, apps):
            pieces += [(t, "event:" + e.uid) for t in (e.summary, e.description, e.location)]
        pieces += [(p.text, "chat:" + p.key) for p in new_chat_posts(_EMPTY, self.initial, apps)]
        units: dict[str, str] = {}
        for piece, source in pieces:
            u = " ".join(piece.casefold().split())
            if len(u.split()) >= UNIT_MIN_WORDS:
                units.setdefault(u, source)
        return units

    @cached_property
    def world_mail(self) -> list[str]:
        """The mail the world held before the trial, one text per message: its header lines
        (`From: ...`, `To: ...`, `Date: ...`, `Subject: ...`) and its body, as a reply may quote
        them (`kwrl.grading.slots.drop_quoted`)."""
        apps = [r for r in self.initial.files() if r.startswith(_MAIL)]
        return [m.render() for m in new_mail(_EMPTY, self.initial, apps)]

    def own_text(self, text: str) -> tuple[str, str | None]:
        """(the text, None), or ('', a note) when it is a dump (see module docstring)."""
        if len(text.split()) < UNIT_MIN_WORDS * DUMP_MIN_UNITS:
            return text, None
        t = " ".join(text.casefold().split())
        found = [u for u in self.world_units if u in t]
        sources = {self.world_units[u] for u in found}
        if len(found) < DUMP_MIN_UNITS or len(sources) < DUMP_MIN_SOURCES:
            return text, None
        pasted = sum(len(u.split()) for u in found)
        return "", (
            f"a dump: {len(found)} pieces of the world's data from {len(sources)} files and "
            f"records ({pasted} of {len(t.split())} words) pasted verbatim; pasted data states "
            "nothing"
        )

    @property
    def file_changes(self) -> list[FileChange]:
        """Changes that are shown as file artifacts (not the app stores)."""
        return [c for c in self.changes if not c.path.startswith(_APP_DIRS)]

    @cached_property
    def artifacts(self) -> list[Artifact]:
        out: list[Artifact] = []
        for c in self.file_changes:
            diff = None
            if c.change == "created":
                content = self.text_of(c.path)
            elif c.change == "deleted":
                content = self.text_of(c.path, "initial")
            else:
                old, content = self.text_of(c.path, "initial"), self.text_of(c.path)
                lines = difflib.unified_diff(
                    old.splitlines(), content.splitlines(), "before", "after", n=1, lineterm=""
                )
                diff = truncate("\n".join(lines), self.max_chars)
            path = display_path(c.path)
            out.append(Artifact(len(out) + 1, "file", c.change, path, content, c.suffix, diff))
        for m in self.mail:
            budget.charge_chars(len(m.body), "new mail")
            out.append(
                Artifact(len(out) + 1, "mail", "created", f"mail: {m.subject}", m.render(), ".eml")
            )
        for e in self.events:
            out.append(
                Artifact(len(out) + 1, "event", e.change, f"event: {e.summary}", e.render(), ".ics")
            )
        for p in self.chat:
            budget.charge_chars(len(p.text), "new chat posts")
            where = p.channel or "/".join(p.where)
            out.append(Artifact(len(out) + 1, "chat", "created", f"chat: {where}", p.render(), ""))
        return out

    # ----------------------------------------------------------------- selection

    @staticmethod
    def expected_extensions(expected_file_type: str | None) -> frozenset[str] | None:
        """The extensions a criterion's file type accepts, or None when it names none."""
        ftype = (expected_file_type or "").strip()
        low = ftype.lower()
        exts = {e.lower() for e in _EXT_RE.findall(ftype)}
        if not exts and low.isalnum() and low not in _ANY_TYPES and low not in _KIND_TYPES:
            exts = {"." + low}
        if not exts or low.startswith("all output"):
            return None
        return frozenset(exts)

    def select_artifacts(
        self, expected_file_type: str | None, expected_output_files: list[str] | None = None
    ) -> tuple[Scope, list[Artifact]] | None:
        """(scope, artifacts) for one criterion, or None: a required file type nobody produced."""
        arts = self.artifacts
        if expected_output_files:
            names = {n.strip().lstrip("/") for n in expected_output_files if n.strip()}
            arts = [
                a
                for a in arts
                if a.path.lstrip("/") in names or any(a.path.endswith("/" + n) for n in names)
            ]
        ftype = (expected_file_type or "").strip()
        low = ftype.lower()
        if "final answer only" in low or low in ("answer", "message_in_console", "text"):
            return "answer", []
        if low in _KIND_TYPES:
            kind = _KIND_TYPES[low]
            picked = [a for a in arts if a.kind == kind]
            return ("files", picked) if picked else None
        exts = {e.lower() for e in _EXT_RE.findall(ftype)}
        if not exts and low.isalnum() and low not in _ANY_TYPES:
            exts = {"." + low}  # "xlsx"
        if not exts or low.startswith("all output"):
            return "both", arts
        picked = [a for a in arts if a.kind == "file" and a.suffix in exts]
        return ("files", picked) if picked else None
