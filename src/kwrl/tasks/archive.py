"""Safe archive extraction (zip, tar) and deterministic tar.gz packing.

Every archive kwrl unpacks (APEX world zips, bundle rows, task overlays) goes through
`extract_zip` / `extract_tar`, which refuse, with an `UnsafeArchiveError` naming the archive and
the member: absolute paths, `..` components, device files and FIFOs, links whose target leaves the
destination, and data beyond a size cap. A link is checked when it is written and again after the
whole archive is out (`recheck_links`): a link that was harmless alone can escape through a link
written after it (`x -> s/up/a/b/../../../root/f`, then `s/up -> ..`), and only the finished tree
shows that. The cap is a `ByteBudget` shared by a whole run and
counted on the bytes actually written while extracting, never on the sizes the headers claim, so a
lying header or a decompression bomb stops at the cap. For tar, Python's `tarfile.data_filter` runs
after kwrl's own checks as a second line (it also drops set-uid bits and other odd modes).

`pack_tar_gz` is the inverse: sorted members, mtime 0, uid/gid 0, no user names, modes reduced to
0o755/0o644, gzip header without name or time, so packing equal trees gives equal bytes.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import IO

from kwrl.errors import UnsafeArchiveError

DEFAULT_MAX_BYTES = 20 * 1024**3
_CHUNK = 1 << 20
_DRIVE = re.compile(r"^[A-Za-z]:")
_CORRUPT = (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile)


class ByteBudget:
    """A cap on the bytes extracted by one run, across all its archives."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.used = 0

    def take(self, n: int, source: str, member: str) -> None:
        self.used += n
        if self.used > self.max_bytes:
            raise UnsafeArchiveError(
                source,
                member,
                f"extracted data exceeds the size cap of {self.max_bytes} bytes "
                "(raise it with --max_bytes if the input is trusted)",
            )


def member_path(name: str, source: str, member: str | None = None) -> PurePosixPath:
    """The relative path `name` of an archive member, or UnsafeArchiveError if it could escape.

    `member` names the member in the error when `name` is not its own name (a hard link's target).
    """
    member = member or name
    what = "" if member == name else f" (link target {name!r})"
    if not name or "\x00" in name:
        raise UnsafeArchiveError(source, repr(member), f"empty or NUL in member name{what}")
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        raise UnsafeArchiveError(source, member, f"absolute path in archive member{what}")
    if "\\" in name:
        raise UnsafeArchiveError(source, member, f"backslash in member name (Windows path?){what}")
    parts = [p for p in PurePosixPath(name).parts if p != "."]
    if ".." in parts:
        raise UnsafeArchiveError(source, member, f"'..' in archive member path{what}")
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def _inside(dest: Path, target: Path) -> bool:
    dest_real = os.path.realpath(dest)
    real = os.path.realpath(target)
    return real == dest_real or real.startswith(dest_real + os.sep)


def _target_of(dest: Path, rel: PurePosixPath, source: str, name: str) -> Path:
    target = dest / rel
    if not _inside(dest, target.parent) or not _inside(dest, target):
        raise UnsafeArchiveError(
            source, name, "member would be written outside the destination (through a link)"
        )
    return target


def _check_link(
    dest: Path, rel: PurePosixPath, link: str, source: str, name: str, *, hard: bool
) -> None:
    if not link or link.startswith("/") or _DRIVE.match(link):
        raise UnsafeArchiveError(source, name, f"link to absolute path {link!r}")
    base = dest if hard else (dest / rel).parent
    if not _inside(dest, base / link):
        raise UnsafeArchiveError(
            source, name, f"link target {link!r} points outside the destination"
        )


def escaping_links(root: Path) -> list[tuple[PurePosixPath, str]]:
    """Every symlink under `root` that resolves (through any chain of links) outside `root`:
    (its path relative to root, its target). Used on extracted trees and by `kwrl data validate`."""
    out: list[tuple[PurePosixPath, str]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            p = Path(dirpath) / name
            if p.is_symlink() and not _inside(root, p):
                out.append((PurePosixPath(p.relative_to(root).as_posix()), os.readlink(p)))
    return sorted(out)


def recheck_links(dest: Path, links: Iterable[PurePosixPath], source: str) -> None:
    """Refuse the archive if any link it wrote now resolves outside `dest` (a chain of links)."""
    for rel in links:
        p = dest / rel
        if p.is_symlink() and not _inside(dest, p):
            raise UnsafeArchiveError(
                source,
                str(rel),
                f"link -> {os.readlink(p)!r} resolves outside the destination through other "
                "links of the archive",
            )


def _copy_stream(src: IO[bytes], target: Path, budget: ByteBudget, source: str, name: str) -> None:
    if target.is_symlink() or target.is_dir():
        raise UnsafeArchiveError(source, name, "member would replace an existing link or directory")
    with open(target, "wb") as out:
        while chunk := src.read(_CHUNK):
            budget.take(len(chunk), source, name)
            out.write(chunk)


def extract_zip(
    archive: Path, dest: Path, budget: ByteBudget, *, skip_top: Iterable[str] = ("__MACOSX",)
) -> list[PurePosixPath]:
    """Extract a zip into `dest` (created); returns the member paths written."""
    source = str(archive)
    skip = set(skip_top)
    dest.mkdir(parents=True, exist_ok=True)
    written: list[PurePosixPath] = []
    links: list[PurePosixPath] = []
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as e:
        raise UnsafeArchiveError(source, None, f"not a zip archive: {e}") from None
    with zf:
        for info in zf.infolist():
            rel = member_path(info.filename, source)
            if rel.parts[0] in skip or rel.name == ".DS_Store":
                continue
            mode = info.external_attr >> 16
            if (
                stat.S_ISCHR(mode)
                or stat.S_ISBLK(mode)
                or stat.S_ISFIFO(mode)
                or stat.S_ISSOCK(mode)
            ):
                raise UnsafeArchiveError(
                    source, info.filename, "device file, FIFO or socket in archive"
                )
            if str(rel) == ".":
                continue
            target = _target_of(dest, rel, source, info.filename)
            if stat.S_ISLNK(mode):
                link = zf.read(info).decode("utf-8", "replace")
                _check_link(dest, rel, link, source, info.filename, hard=False)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(link, target)
                links.append(rel)
            elif info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                _target_of(dest, rel, source, info.filename)
                with zf.open(info) as src:
                    _copy_stream(src, target, budget, source, info.filename)
                if mode & 0o111:
                    target.chmod(0o755)
            written.append(rel)
    recheck_links(dest, links, source)
    return written


def extract_tar(
    archive: Path | bytes,
    dest: Path,
    budget: ByteBudget,
    *,
    source: str | None = None,
    strip: str | None = None,
) -> list[PurePosixPath]:
    """Extract a (compressed or plain) tar into `dest`; `strip` drops that leading dir from members."""
    source = source or str(archive)
    dest.mkdir(parents=True, exist_ok=True)
    written: list[PurePosixPath] = []
    links: list[PurePosixPath] = []
    with io.BytesIO(archive) if isinstance(archive, bytes) else open(archive, "rb") as fileobj:
        try:
            tf = tarfile.open(fileobj=fileobj, mode="r:*")  # noqa: SIM115 - closed by `with tf` below
        except (tarfile.TarError, EOFError, OSError) as e:
            raise UnsafeArchiveError(source, None, f"not a readable tar archive: {e}") from None
        with tf:
            for m in _members(tf, source):
                rel = _tar_member(tf, m, dest, budget, source, strip)
                if rel is not None:
                    written.append(rel)
                    if m.issym():
                        links.append(rel)
    recheck_links(dest, links, source)
    return written


def _strip(rel: PurePosixPath, strip: str | None) -> PurePosixPath:
    if strip and rel.parts and rel.parts[0] == strip:
        return PurePosixPath(*rel.parts[1:]) if len(rel.parts) > 1 else PurePosixPath(".")
    return rel


def _tar_member(
    tf: tarfile.TarFile,
    m: tarfile.TarInfo,
    dest: Path,
    budget: ByteBudget,
    source: str,
    strip: str | None,
) -> PurePosixPath | None:
    rel = _strip(member_path(m.name, source), strip)
    if m.isdev() or m.isfifo():
        raise UnsafeArchiveError(source, m.name, "device file or FIFO in archive")
    if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
        raise UnsafeArchiveError(source, m.name, f"unsupported member type {m.type!r}")
    if str(rel) == ".":
        return None
    target = _target_of(dest, rel, source, m.name)
    link = m.linkname
    if m.islnk():
        link = str(_strip(member_path(link, source, m.name), strip))
    if m.issym() or m.islnk():
        _check_link(dest, rel, link, source, m.name, hard=m.islnk())
    try:
        tarfile.data_filter(m.replace(name=str(rel), linkname=link), str(dest))
    except tarfile.FilterError as e:
        raise UnsafeArchiveError(source, m.name, f"refused by tarfile's data filter: {e}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    if m.isdir():
        target.mkdir(parents=True, exist_ok=True)
    elif m.issym():
        os.symlink(link, target)
    elif m.islnk():
        src = dest / link
        if src.is_symlink() or not src.is_file() or not _inside(dest, src):
            raise UnsafeArchiveError(
                source, m.name, f"hard link to {link!r}, which is not a regular member file"
            )
        budget.take(src.stat().st_size, source, m.name)
        shutil.copyfile(src, target)
    else:
        data = tf.extractfile(m)
        if data is None:  # pragma: no cover - isfile() members always have data
            raise UnsafeArchiveError(source, m.name, "member has no data")
        try:
            _copy_stream(data, target, budget, source, m.name)
        except _CORRUPT as e:
            raise UnsafeArchiveError(source, m.name, f"corrupt tar archive: {e}") from None
        target.chmod(0o755 if m.mode & 0o111 else 0o644)
    return rel


def _members(tf: tarfile.TarFile, source: str) -> Iterable[tarfile.TarInfo]:
    try:
        yield from tf
    except _CORRUPT as e:
        raise UnsafeArchiveError(source, None, f"corrupt tar archive: {e}") from None


# --------------------------------------------------------------------------- packing


def _entries(root: Path) -> list[tuple[PurePosixPath, Path]]:
    out: list[tuple[PurePosixPath, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(dirpath)
        for name in (*dirnames, *filenames):
            p = base / name
            out.append((PurePosixPath(p.relative_to(root).as_posix()), p))
    out.sort(key=lambda e: e[0].parts)
    return out


def pack_tar_gz(root: Path) -> bytes:
    """A deterministic gzip tar of the contents of `root` (member names relative to it)."""
    buf = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=6) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf,
    ):
        for rel, path in _entries(root):
            st = path.lstat()
            info = tarfile.TarInfo(str(rel))
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if stat.S_ISLNK(st.st_mode):
                link = os.readlink(path)
                if link.startswith("/") or not _inside(root, path.parent / link):
                    raise UnsafeArchiveError(
                        path, "symlink", f"link target {link!r} points outside {root}"
                    )
                info.type = tarfile.SYMTYPE
                info.linkname = link
                info.mode = 0o777
                tf.addfile(info)
            elif stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tf.addfile(info)
            elif stat.S_ISREG(st.st_mode):
                info.size = st.st_size
                info.mode = 0o755 if st.st_mode & 0o111 else 0o644
                with open(path, "rb") as f:
                    tf.addfile(info, f)
            else:
                raise UnsafeArchiveError(
                    path, None, "not a regular file, directory or symlink; cannot pack it"
                )
    return buf.getvalue()
