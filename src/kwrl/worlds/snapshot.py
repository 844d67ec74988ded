"""Populate and snapshot a world's two subsystems as tar archives (ARCH environment `/data/*`).

Contract:
- `populate(fileobj, dest)` extracts a tar (plain or gzip/bz2/xz) whose members are paths *relative to
  one subsystem root* (`reports/q3.xlsx`, not `filesystem/reports/q3.xlsx`) over `dest`. Existing files
  are overwritten and nothing is deleted, so a world seed followed by a task overlay layers as ARCH does.
- `write_snapshot(roots, fileobj)` writes a gzip tar of both subsystems with top dirs `filesystem/` and
  `.apps_data/`, members sorted, so the grader diffs initial and final states from one archive.

Non-obvious choice: every member is checked *before* anything is written, and a bad archive is refused
whole (`UnsafeArchiveError` naming the member): absolute paths, `..`, links whose target leaves the
destination, hard links, devices and fifos. Extraction then runs with tarfile's `data` filter as a
second guard. A half-applied overlay would be worse than none.
"""

from __future__ import annotations

import os
import posixpath
import tarfile
from pathlib import Path
from typing import IO

from kwrl.errors import UnsafeArchiveError
from kwrl.tasks.layout import SUBSYSTEMS, WorldRoots

__all__ = ["check_member", "populate", "write_snapshot"]


def check_member(member: tarfile.TarInfo, *, source: str = "<tar>") -> None:
    """Raise `UnsafeArchiveError` unless `member` is a plain file, dir or in-tree symlink."""
    name = member.name
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchiveError(
            source, name, "absolute member path; archive paths must be relative"
        )
    norm = posixpath.normpath(name)
    if norm == ".." or norm.startswith("../") or "\x00" in name:
        raise UnsafeArchiveError(source, name, "member path escapes the destination with '..'")
    if member.isdev() or member.isfifo():
        raise UnsafeArchiveError(source, name, "device or fifo members are not allowed")
    if member.islnk():
        raise UnsafeArchiveError(source, name, "hard links are not allowed; store the file itself")
    if member.issym():
        target = member.linkname
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(norm), target))
        if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
            raise UnsafeArchiveError(
                source, name, f"symlink target {target!r} points outside the destination"
            )
    elif not (member.isfile() or member.isdir()):
        raise UnsafeArchiveError(source, name, "unsupported member type")


def populate(fileobj: IO[bytes], dest: Path, *, source: str = "<tar>") -> dict[str, int]:
    """Extract the tar in `fileobj` over `dest` after checking every member; return counts."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        tar = tarfile.open(fileobj=fileobj, mode="r:*")  # noqa: SIM115 (entered below)
    except tarfile.TarError as e:
        raise UnsafeArchiveError(source, None, f"not a readable tar archive: {e}") from e
    with tar:
        members = tar.getmembers()
        for m in members:
            check_member(m, source=source)
        dest_resolved = dest.resolve()
        for m in members:
            # A symlink already on disk inside dest may point out; refuse writing through it.
            parent = (dest_resolved / posixpath.normpath(m.name)).parent.resolve()
            if parent != dest_resolved and dest_resolved not in parent.parents:
                raise UnsafeArchiveError(source, m.name, "member would be written through a link")
        try:
            tar.extractall(dest, filter="data")
        except (tarfile.FilterError, OSError) as e:
            raise UnsafeArchiveError(source, None, f"extraction refused: {e}") from e
    files = sum(1 for m in members if m.isfile())
    return {
        "members": len(members),
        "files": files,
        "bytes": sum(m.size for m in members if m.isfile()),
    }


def _add_tree(tar: tarfile.TarFile, root: Path, arcroot: str) -> None:
    tar.add(root, arcname=arcroot, recursive=False)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(dirpath)
        rel = base.relative_to(root).as_posix()
        prefix = arcroot if rel == "." else f"{arcroot}/{rel}"
        for name in sorted(dirnames) + sorted(filenames):
            tar.add(base / name, arcname=f"{prefix}/{name}", recursive=False)


def write_snapshot(roots: WorldRoots, fileobj: IO[bytes]) -> None:
    """Write a gzip tar of both subsystems (`filesystem/`, `.apps_data/`) to `fileobj`."""
    with tarfile.open(fileobj=fileobj, mode="w:gz", compresslevel=6) as tar:
        for name in SUBSYSTEMS:
            root = roots.subsystem(name)
            if root.is_dir():
                _add_tree(tar, root, name)
