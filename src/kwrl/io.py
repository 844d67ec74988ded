"""Atomic file writes, and the one rule every verb's output follows.

Every file kwrl writes that a user or a later stage reads goes through here, so an interrupted
run never leaves a half-written file under the final name. A new file gets the mode the process's
umask gives (0644 under umask 022), as `open()` would; a file replaced keeps its mode.

Outputs (`claim_output`): a verb never deletes or changes what the user did not ask it to change.
The dir a verb writes (`--out`, `world serve`'s copy, `grade --write --out`) is claimed first:
an existing file, the verb's input itself, a dir holding the input or inside it, are refused;
an existing non-empty dir is refused unless it holds an earlier output of the same verb that the
verb continues (`kwrl eval` resumes its run dir) or the overwrite flag is given. kwrl knows its
own files: the dir's `OUTPUT_MARKER` lists the top-level entries kwrl wrote there (and those that
were there before it, which it keeps); an overwrite replaces only kwrl's, and a file kwrl would
write over one of the user's is refused. A verb that writes a whole tree builds it in a hidden
stage dir inside the target (`OutputDir.staged`) and renames its entries in once it is complete;
nothing outside the target is ever created or removed but the target's missing parents. A verb
that only adds a new entry and replaces nothing (`kwrl trial run`) checks its path alone
(`check_output_path`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kwrl.errors import OutputError


def umask() -> int:
    """This process's umask, read without changing it (Linux's /proc; else set and put back)."""
    with suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = 0o666 & ~umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)  # mkstemp makes 0600
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, obj: Any, *, indent: int | None = 2) -> None:
    write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False) + "\n")


@contextmanager
def atomic_dir(path: Path) -> Iterator[Path]:
    """Yield a temp dir beside `path`; on success it replaces `path` whole, on error it is removed.

    For dirs kwrl owns whole (a task dir it writes, a checkpoint, a cached model); a verb's
    output dir is claimed with `claim_output` instead."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    tmp.chmod(0o777 & ~umask())  # mkdtemp makes 0700
    try:
        yield tmp
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}")
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# ---------------------------------------------------------------- outputs

OUTPUT_MARKER = ".kwrl-out.json"
"""In a dir kwrl wrote as a verb's output: the verb, kwrl's top-level entries there (`entries`)
and the entries that were there before (`kept`: never kwrl's to replace)."""
_SCRATCH = (".kwrl-stage-", ".kwrl-old-")
"""Prefixes of kwrl's own scratch dirs inside a target (a run killed mid-commit leaves them)."""


def _is_scratch(name: str) -> bool:
    return name == OUTPUT_MARKER or name.startswith(_SCRATCH)


def _under(child: Path, parent: Path) -> bool:
    return child != parent and parent in child.parents


@dataclass
class OutputDir:
    """A claimed output dir (`claim_output`): where a verb may write, and what of it is kwrl's."""

    path: Path
    """The dir as the user named it (messages)."""
    root: Path
    """The same dir, absolute and resolved."""
    verb: str
    """The verb that writes it (`kwrl data pack`), recorded in the marker."""
    flag: str
    """The flag that named it (`--out`), for messages."""
    entries: set[str] = field(default_factory=set)
    """kwrl's top-level entries in the dir (an earlier output's, until this one replaces them)."""
    kept: set[str] = field(default_factory=set)
    """The entries that were there before kwrl wrote: never replaced, never removed."""
    resumed: bool = False
    """The dir holds an earlier output of this verb, which the verb continues."""
    created: bool = False
    """kwrl made the dir (removed again when a staged write fails)."""

    def _ensure(self) -> None:
        if not self.root.is_dir():
            self.root.mkdir(parents=True)
            self.created = True

    def _present(self) -> set[str]:
        return {p.name for p in self.root.iterdir() if not _is_scratch(p.name)}

    def _write_marker(self) -> None:
        write_json(
            self.root / OUTPUT_MARKER,
            {"verb": self.verb, "entries": sorted(self.entries), "kept": sorted(self.kept)},
        )

    def _refuse_clashes(self, names: Iterable[str]) -> None:
        present = self._present()
        clash = sorted(
            n for n in names if n in self.kept or (n in present and n not in self.entries)
        )
        if clash:
            raise OutputError(
                f"{self.flag} {self.path}: {', '.join(clash)} there was not written by kwrl; "
                f"`{self.verb}` would replace it: move it away or name another {self.flag}"
            )

    def _remove(self, names: Iterable[str]) -> None:
        """Remove kwrl's entries `names` (moved into one scratch dir first, then deleted)."""
        names = [
            n for n in sorted(names) if (self.root / n).exists() or (self.root / n).is_symlink()
        ]
        if not names:
            return
        trash = Path(tempfile.mkdtemp(prefix=_SCRATCH[1], dir=self.root))
        for n in names:
            os.replace(self.root / n, trash / n)
        shutil.rmtree(trash, ignore_errors=True)

    def _clear_scratch(self) -> None:
        for p in self.root.iterdir():
            if p.name.startswith(_SCRATCH) and p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)

    @contextmanager
    def staged(self) -> Iterator[Path]:
        """Yield an empty stage dir inside the target; once the body returns, its entries replace
        kwrl's earlier entries in the target (each by a rename), and the marker lists them. On an
        error nothing in the target changes (a dir kwrl made for it is removed again)."""
        self._ensure()
        self._clear_scratch()
        stage = Path(tempfile.mkdtemp(prefix=_SCRATCH[0], dir=self.root))
        stage.chmod(0o777 & ~umask())
        try:
            yield stage
            new = {p.name for p in stage.iterdir()}
            self._refuse_clashes(new)
            old, self.entries = self.entries, self.entries | new
            self._write_marker()  # a kill mid-swap leaves no entry the marker does not name
            self._remove(old)
            for n in sorted(new):
                os.replace(stage / n, self.root / n)
            self.entries = new
            self._write_marker()
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            if self.created and not self._present():
                shutil.rmtree(self.root, ignore_errors=True)
            raise
        stage.rmdir()

    def open(self, names: Iterable[str] = ()) -> OutputDir:
        """Ready the dir for a verb that writes into it as it goes: refuse when one of `names`
        (what the verb writes at the top) is the user's; on an overwrite, remove kwrl's earlier
        entries; record `names` as kwrl's. `adopt` records what else the verb made."""
        names = set(names)
        self._ensure()
        self._refuse_clashes(names)
        self._clear_scratch()
        if not self.resumed:
            self._remove(self.entries)
            self.entries = set()
        self.entries |= names
        self._write_marker()
        return self

    def adopt(self) -> None:
        """Record every entry the verb has made so far as kwrl's (all but the `kept` ones)."""
        self.entries |= self._present() - self.kept
        self._write_marker()

    @contextmanager
    def writing(self, names: Iterable[str] = ()) -> Iterator[Path]:
        """`open(names)`, yield the dir, then `adopt` what the verb made, also on an error."""
        self.open(names)
        try:
            yield self.root
        finally:
            if self.root.is_dir():
                self.adopt()


def read_marker(root: Path) -> dict[str, Any] | None:
    """The output marker of dir `root` (`verb`, `entries`, `kept`), or None without a readable one."""
    path = root / OUTPUT_MARKER
    if path.is_symlink() or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("verb"), str):
        return None
    for key in ("entries", "kept"):
        if not isinstance(data.get(key), list) or not all(isinstance(x, str) for x in data[key]):
            return None
    return data


def check_output_path(
    path: Path, verb: str, *, flag: str = "--out", inputs: Iterable[Path] = ()
) -> Path:
    """`path` resolved, or `OutputError` when it is an existing file, or one of `inputs`, holds
    one or sits inside one. All a verb that only adds new entries needs (`kwrl trial run`)."""
    path = Path(path)
    shown = f"{flag} {path}"
    if path.exists() and not path.is_dir():
        raise OutputError(f"{shown}: is an existing file, not a dir; name a dir for `{verb}`")
    root = path.resolve()
    for given in inputs:
        src = Path(given).resolve()
        if root == src:
            raise OutputError(f"{shown}: is the input {given} itself; name another dir")
        if _under(src, root):
            raise OutputError(
                f"{shown}: holds the input {given}; `{verb}` writes only outside its input"
            )
        if _under(root, src):
            raise OutputError(
                f"{shown}: is inside the input {given}; `{verb}` writes only outside its input"
            )
    return root


def claim_output(
    path: Path,
    verb: str,
    *,
    flag: str = "--out",
    overwrite: bool = False,
    overwrite_flag: str = "--overwrite",
    inputs: Iterable[Path] = (),
    resume: bool = False,
    signature: str | None = None,
) -> OutputDir:
    """Check that `verb` may write the dir `path` (module doc); raise `OutputError`, one line
    naming the flag, when it may not. Nothing is written until the verb writes.

    `inputs`: what the verb reads (`check_output_path`).
    `resume`: an earlier output of `verb` there is continued (`OutputDir.resumed`) rather than
    refused. `signature`: a file an earlier kwrl's output of `verb` always holds, taking a dir
    without a marker for one (a run dir made before markers existed). `overwrite` allows a
    non-empty dir: kwrl's earlier entries there are replaced, the others kept."""
    path = Path(path)
    shown = f"{flag} {path}"
    root = check_output_path(path, verb, flag=flag, inputs=inputs)
    out = OutputDir(path=path, root=root, verb=verb, flag=flag)
    if not root.is_dir():
        return out  # made when the verb writes (`staged`, `open`)
    present = {p.name for p in root.iterdir() if not _is_scratch(p.name)}
    marker = read_marker(root)
    if marker is None and signature is not None and resume and (root / signature).is_file():
        marker = {"verb": verb, "entries": sorted(present), "kept": []}  # an older kwrl's run
    if marker is not None:
        out.kept = set(marker["kept"]) & present
        out.entries = set(marker["entries"]) & present
        mine = present - out.kept
        if marker["verb"] == verb and resume and not overwrite:
            out.entries |= mine
            out.resumed = True
            return out
        if out.entries and not overwrite:
            raise OutputError(
                f"{shown}: holds the output of an earlier `{marker['verb']}`; pass "
                f"{overwrite_flag} to replace it (only what kwrl wrote there), or name a new dir"
            )
        out.kept |= mine - out.entries
        return out
    if present and not overwrite:
        raise OutputError(
            f"{shown}: is not empty and kwrl did not write what it holds; pass {overwrite_flag} "
            "to write beside it (nothing there is removed), or name a new dir"
        )
    out.kept = present
    return out
