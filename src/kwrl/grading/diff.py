"""Snapshot diff: which files a trial created, modified or deleted.

A world state is a `StateView`: a stack of root dirs, each holding the two subsystems
`filesystem/` and `.apps_data/` (kwrl.tasks.layout), where a later layer's file wins, minus a set
of deleted paths; a layer that does not exist is an error, never an empty layer. The initial
state of a trial is `[world seed, task overlay]` (`task_layers`; in a trial the sandbox mounts
both, an empty overlay for a task without one); the final state is
the sandbox root `/` (one layer), or, when regrading from `changes.tar.gz`, `[world seed, task
overlay, extracted changes]` minus the deletions listed in the archive. Paths are posix, relative to
the root, and always start with a subsystem: `filesystem/reports/q3.xlsx`,
`.apps_data/mail/inbox.mbox`.

`diff_states` compares two views. It is fast on a ~170-file world because unchanged files are
recognised by (size, mtime) before any byte is read (`filecmp`'s shallow signature), and a path
that resolves to the very same file in both views is skipped outright.

`write_changes_archive` / `read_changes_archive` are the trial's `changes.tar.gz` (docs/contracts.md):
every created or modified file of the final state at its relative path, plus `changes.json`
listing created, modified and deleted paths (and, when any, `omitted`: files left out past the size cap). Reading one back (`kwrl grade`, on the host) goes
through `kwrl.tasks.archive.extract_tar`: no member outside the two subsystems, no link leaving the
destination, and at most `max_bytes` written, counted on the bytes actually extracted.

Links are never followed: `_scan` lists regular files only and skips a subsystem dir that is
itself a link (the agent could point `/filesystem` at `/tests`).
"""

from __future__ import annotations

import filecmp
import fnmatch
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kwrl.errors import TaskFormatError, UnsafeArchiveError
from kwrl.grading import budget
from kwrl.grading.files import UnsafeFileError, open_regular
from kwrl.tasks.archive import ByteBudget, extract_tar
from kwrl.tasks.layout import SUBSYSTEMS

ChangeKind = Literal["created", "modified", "deleted"]
CHANGES_JSON = "changes.json"
MAX_CHANGES_BYTES = 1024**3
"""Default cap on the bytes extracted from one changes.tar.gz."""

# Editor lock files and OS litter are never evidence of work.
_IGNORED_PREFIXES = ("~$", ".~lock.")
_IGNORED_NAMES = frozenset({".DS_Store", "Thumbs.db"})


def _scan(root: Path) -> dict[str, Path]:
    """Every regular file under root's subsystems, keyed by its posix path relative to root.

    Inside a grading budget (`kwrl.grading.budget.enforced`) the walk is bounded: more than
    `max_files` files and directories (beyond the initial state's files), a directory deeper than `max_depth`, a path longer than `max_path_bytes` or
    a directory that cannot be listed raise `OverBudget` (the trial's evidence cannot be read whole,
    so nothing in it can be graded as present or absent)."""
    meter = budget.active()
    allowed = meter.budget.max_files if meter is not None else 0
    cap = allowed + meter.base_files if meter is not None else None
    found: dict[str, Path] = {}
    dirs = 0
    cut = len(str(root).rstrip("/")) + 1
    for sub in SUBSYSTEMS:
        base = root / sub
        if base.is_symlink() or not base.is_dir():
            continue
        stack = [(str(base), 0)]
        while stack:
            d, depth = stack.pop()
            if meter is not None:
                meter.check_time()
                b = meter.budget
                if depth > b.max_depth:
                    raise budget.OverBudget(f"directories nest deeper than {b.max_depth} levels")
                if len(os.fsencode(d)) - cut > b.max_path_bytes:
                    raise budget.OverBudget(f"a path is longer than {b.max_path_bytes} bytes")
            try:
                it = os.scandir(d)
            except OSError as e:
                if meter is None:
                    raise
                raise budget.OverBudget(f"cannot list a directory ({e.strerror})") from None
            with it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, depth + 1))
                        dirs += 1
                    elif entry.is_file(follow_symlinks=False):
                        name = entry.name
                        if name in _IGNORED_NAMES or name.startswith(_IGNORED_PREFIXES):
                            continue
                        rel = entry.path[cut:]
                        found[rel if os.sep == "/" else rel.replace(os.sep, "/")] = Path(entry.path)
                    if cap is not None and len(found) + dirs > cap:
                        raise budget.OverBudget(
                            f"over {allowed} files and directories more than the initial state"
                        )
    return found


@dataclass
class StateView:
    """A read-only union of layer dirs (later wins) minus `deleted` relative paths."""

    layers: tuple[Path, ...]
    deleted: frozenset[str] = frozenset()
    _files: dict[str, Path] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, layers: Iterable[Path], deleted: Iterable[str] = ()) -> StateView:
        """The view of `layers`, each an existing directory: a missing layer is an error naming
        it, never an empty one (a trial graded against an empty initial state would find every
        file of its world created). A task's own layers: `task_layers`."""
        paths = tuple(Path(p) for p in layers)
        for p in paths:
            if not p.is_dir():
                raise TaskFormatError(p, None, "state layer not found: expected a directory")
        return cls(paths, frozenset(deleted))

    def files(self) -> dict[str, Path]:
        """Relative path -> the file that holds its content in this state (scanned once)."""
        if self._files is None:
            merged: dict[str, Path] = {}
            for layer in self.layers:
                merged.update(_scan(layer))
            for rel in self.deleted:
                merged.pop(rel, None)
            self._files = merged
        return self._files

    def get(self, rel: str) -> Path | None:
        return self.files().get(rel.lstrip("/"))

    def glob(self, pattern: str, subsystem: str = "filesystem") -> list[str]:
        """Relative paths under `subsystem` matching a glob given relative to that subsystem.

        "/reports/*.xlsx", "reports/*.xlsx" and "/filesystem/reports/*.xlsx" are the same pattern;
        a pattern without a slash also matches a bare file name anywhere ("q3.xlsx").
        """
        pat = pattern.strip().lstrip("/")
        if pat.startswith(subsystem + "/"):
            pat = pat[len(subsystem) + 1 :]
        prefix = subsystem + "/"
        out = []
        for rel in self.files():
            if not rel.startswith(prefix):
                continue
            inner = rel[len(prefix) :]
            if fnmatch.fnmatchcase(inner, pat) or (
                "/" not in pat and fnmatch.fnmatchcase(inner.rsplit("/", 1)[-1], pat)
            ):
                out.append(rel)
        return sorted(out)


def task_layers(world_dir: Path, overlay_dir: Path) -> list[Path]:
    """A task's initial layers: its world seed, then its overlay where the task has one."""
    return [world_dir, *([overlay_dir] if overlay_dir.is_dir() else [])]


@dataclass(frozen=True)
class FileChange:
    """One changed file. `before` is its initial content's file, `after` its final one."""

    path: str
    change: ChangeKind
    before: Path | None
    after: Path | None

    @property
    def subsystem(self) -> str:
        return self.path.split("/", 1)[0]

    @property
    def suffix(self) -> str:
        return Path(self.path).suffix.lower()


def diff_states(initial: StateView, final: StateView) -> list[FileChange]:
    """Files created, modified or deleted from `initial` to `final`, sorted by path."""
    a, b = initial.files(), final.files()
    changes: list[FileChange] = []
    for rel in sorted(a.keys() | b.keys()):
        pa, pb = a.get(rel), b.get(rel)
        if pa is None:
            changes.append(FileChange(rel, "created", None, pb))
        elif pb is None:
            changes.append(FileChange(rel, "deleted", pa, None))
        elif pa != pb and not filecmp.cmp(pa, pb, shallow=True):
            changes.append(FileChange(rel, "modified", pa, pb))
    return changes


# --------------------------------------------------------------------------- changes.tar.gz


def write_changes_archive(
    changes: list[FileChange], path: Path, *, max_bytes: int = MAX_CHANGES_BYTES
) -> None:
    """Write `changes.tar.gz`: created/modified files at their relative paths + changes.json.

    Streamed to a temp file beside `path` and renamed into place (never held in memory); files are
    added through an fd opened without following links, and once `max_bytes` of content is in, the
    rest are left out and listed under `omitted` (a regrade sees them as absent)."""
    listing: dict[str, list[str]] = {"created": [], "modified": [], "deleted": [], "omitted": []}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".changes-", suffix=".tar.gz", dir=path.parent)
    try:
        with (
            os.fdopen(fd, "wb") as out,
            tarfile.open(fileobj=out, mode="w:gz", compresslevel=6) as tar,
        ):
            used = 0
            for ch in changes:
                listing[ch.change].append(ch.path)
                if ch.after is None:
                    continue
                try:
                    src = os.fdopen(open_regular(ch.after), "rb")
                except UnsafeFileError:
                    listing["omitted"].append(ch.path)
                    continue
                with src:
                    info = tar.gettarinfo(fileobj=src, arcname=ch.path)
                    if used + info.size > max_bytes:
                        listing["omitted"].append(ch.path)
                        continue
                    used += info.size
                    tar.addfile(info, src)
            if not listing["omitted"]:
                del listing["omitted"]
            data = json.dumps(listing, indent=2).encode()
            info = tarfile.TarInfo(CHANGES_JSON)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_changes_archive(
    archive: Path, dest: Path, *, max_bytes: int = MAX_CHANGES_BYTES
) -> dict[str, list[str]]:
    """Extract `changes.tar.gz` into `dest` (refusing unsafe members and more than `max_bytes`);
    return its changes.json. Raises TaskFormatError (UnsafeArchiveError) naming the member."""
    if archive.is_symlink() or archive.parent.is_symlink() or not archive.is_file():
        raise TaskFormatError(archive, None, "missing or not a regular file")
    try:
        members = extract_tar(archive, dest, ByteBudget(max_bytes))
    except OSError as e:
        raise TaskFormatError(archive, None, f"unreadable changes archive: {e}") from e
    for rel in members:
        if str(rel) != CHANGES_JSON and rel.parts[0] not in SUBSYSTEMS:
            raise UnsafeArchiveError(
                archive, str(rel), "member outside filesystem/ and .apps_data/"
            )
    listing_path = dest / CHANGES_JSON
    if listing_path.is_symlink() or not listing_path.is_file():
        raise TaskFormatError(
            archive, CHANGES_JSON, "missing; was it written by kwrl.grading.verify?"
        )
    listing = json.loads(listing_path.read_text(encoding="utf-8"))
    listing_path.unlink()
    return {k: list(listing.get(k, [])) for k in ("created", "modified", "deleted")}
