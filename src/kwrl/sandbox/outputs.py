"""What leaves a trial's sandbox: capped command output and the agent's files, copied as plain files.

- `communicate(proc, stdin)`: `proc.communicate` with each output stream capped at `OUTPUT_CAP`
  bytes (`capped` keeps the head and the tail with a marker saying how much was cut), so a command
  printing gigabytes cannot grow the host process.
- `copy_out(src, dst, ours)`: the agent's `/logs/agent` and `/logs/artifacts` (private dirs on the
  trial's disk) copied into harbor's trial dir: regular files and dirs only, every open relative
  to a dir fd and refusing links, so a link planted by agent code never makes a host-side read or
  write follow it; at most `OUTPUT_MAX_ENTRIES` files and dirs and `OUTPUT_MAX_BYTES` bytes of
  one output dir land on the host, over every copy of it (`Copied`): 300,000 empty files in
  /logs/agent once all landed in the trial dir, holding the trial ~2 minutes per copy. What was
  left out is returned (sandbox.json `dropped`: the first `DROPPED_LISTED` paths, and
  `dropped_total`); `sync_out` does it for one output dir of an environment, naming what it
  left out as paths inside (`Dropped`).
- `empty_dir(d)`: the verifier's output dir emptied without following links, so the only reward
  file harbor can read afterwards is the grader's own.
- `pump_log(stream, path)`: a log the sandbox writes (the world gateway's stderr, a pipe) into a
  host file, at most `LOG_CAP` bytes of it; the rest is read and counted, never written, so
  neither a flood of tool errors nor malformed HTTP on the gateway's socket grows the host's disk
  (a file-size limit would have the kernel kill the writer with SIGXFSZ, or fail its writes).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import io
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kwrl.errors import SandboxError

OUTPUT_CAP = 16 * 2**20
"""Bytes of stdout (and of stderr) an `exec` keeps: the head and tail, with a marker between."""
LOG_CAP = 2**20
"""Bytes of a sandbox's log (the world gateway's) kept in the host's trial dir: its head."""
OUTPUT_MAX_ENTRIES = 10_000
"""Files and dirs of one agent output dir copied into the host's trial dir (the rest left out)."""
OUTPUT_MAX_BYTES = 256 * 2**20
"""Bytes of one agent output dir copied into the host's trial dir (files past it left out)."""
DROPPED_LISTED = 100
"""Paths left out that are named (sandbox.json `dropped`); the rest are counted."""
_MAX_DEPTH = 32  # dirs nested deeper in the agent's outputs are left out
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK


async def capped(stream: asyncio.StreamReader | None, cap: int) -> bytes:
    """All of `stream`, or its first and last cap/2 bytes with a marker saying how much was cut."""
    if stream is None:
        return b""
    head = bytearray()
    tail: collections.deque[bytes] = collections.deque()
    kept = cut = 0
    while chunk := await stream.read(1 << 16):
        if len(head) < cap // 2:
            n = cap // 2 - len(head)
            head += chunk[:n]
            chunk = chunk[n:]
        if chunk:
            tail.append(chunk)
            kept += len(chunk)
            while kept - len(tail[0]) >= cap - cap // 2:
                kept -= len(tail[0])
                cut += len(tail.popleft())
    excess = kept - (cap - cap // 2)
    if excess > 0:
        tail[0] = tail[0][excess:]
        cut += excess
    if cut:
        head += f"\n[kwrl: {cut} bytes of output cut]\n".encode()
    return bytes(head) + b"".join(tail)


async def communicate(proc: asyncio.subprocess.Process, stdin: bytes | None) -> tuple[bytes, bytes]:
    """`proc.communicate` with each output stream capped at OUTPUT_CAP bytes."""

    async def feed() -> None:
        if proc.stdin is None:
            return
        with contextlib.suppress(ConnectionError):
            if stdin:
                proc.stdin.write(stdin)
                await proc.stdin.drain()
            proc.stdin.close()

    _, out, err = await asyncio.gather(
        feed(), capped(proc.stdout, OUTPUT_CAP), capped(proc.stderr, OUTPUT_CAP)
    )
    await proc.wait()
    return out, err


async def read_pipe(fd: int) -> tuple[asyncio.StreamReader, asyncio.BaseTransport]:
    """A stream over the read end `fd` of a pipe (closed with the transport)."""
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0)
    )
    return reader, transport


async def pump_log(fd: int, path: Path, cap: int = LOG_CAP) -> None:
    """Append what the pipe `fd` carries to the host file `path` until `cap` bytes of it are
    written; read and count the rest. At its end (EOF, or cancelled) a last line says how many
    bytes were dropped, if any, and `fd` is closed. The writer never sees a failed write."""
    room, dropped = cap, 0
    reader, transport = await read_pipe(fd)
    with open(path, "ab", buffering=0) as f:
        try:
            while chunk := await reader.read(1 << 16):
                if room > 0:
                    f.write(chunk[:room])
                dropped += max(0, len(chunk) - room)
                room -= min(room, len(chunk))
        finally:
            transport.close()
            if dropped:
                f.write(f"\n[kwrl: log capped at {cap} bytes; {dropped} more dropped]\n".encode())


def empty_dir(d: Path) -> None:
    """Remove everything in `d` without following links; `d` itself stays."""
    if d.is_symlink() or not d.is_dir():
        raise SandboxError(f"{d}: expected a directory")
    for e in os.scandir(d):
        if e.is_dir(follow_symlinks=False):
            shutil.rmtree(e.path)
        else:
            os.unlink(e.path)


@dataclass
class Copied:
    """What `copy_out` has put into one host dir so far: each copy of the same output dir goes
    into the same host dir and counts against the same caps."""

    sizes: dict[str, int] = field(default_factory=dict)
    """Relative path -> bytes of each file copied; each dir made, as `path/`, 0."""
    bytes: int = 0
    """Their sum."""


@dataclass
class Dropped:
    """Agent outputs left out of the copy (sandbox.json `dropped` and `dropped_total`)."""

    listed: list[str] = field(default_factory=list)
    """The first `DROPPED_LISTED` paths left out, as inside (`/logs/agent/x`), each once."""
    counts: dict[str, int] = field(default_factory=dict)
    """Output dir -> how many of its entries its last copy left out (a dir counts once)."""

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def copy_out(
    src: Path,
    dst: Path,
    ours: Copied,
    *,
    max_entries: int = OUTPUT_MAX_ENTRIES,
    max_bytes: int = OUTPUT_MAX_BYTES,
) -> tuple[list[str], int]:
    """Copy the regular files and dirs under `src` (written by agent code) into `dst`; returns the
    relative paths of the first `DROPPED_LISTED` entries left out (links, fifos, sockets, dirs
    nested too deep, what is past the caps) and how many were. Every open is relative to a dir fd
    and refuses links, so an entry swapped for a link while copying is left out too. A file that
    exists in `dst` and is not in `ours` (the paths copied before) was written by the host: kept.
    At most `max_entries` files and dirs and `max_bytes` bytes are in `ours` after it."""
    listed: list[str] = []
    left = 0

    def drop(r: str) -> None:
        nonlocal left
        left += 1
        if len(listed) < DROPPED_LISTED:
            listed.append(r)

    def walk(src_fd: int, dst_dir: Path, rel: str) -> None:
        for name in sorted(os.listdir(src_fd)):
            r = rel + name
            try:
                st = os.stat(name, dir_fd=src_fd, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode) and r.count("/") < _MAX_DEPTH:
                    if r + "/" not in ours.sizes and len(ours.sizes) >= max_entries:
                        drop(r)
                        continue
                    target = dst_dir / name
                    if not target.is_dir() or target.is_symlink():
                        target.mkdir()
                    ours.sizes[r + "/"] = 0
                    fd = os.open(name, _DIR_FLAGS, dir_fd=src_fd)
                    try:
                        walk(fd, target, r + "/")
                    finally:
                        os.close(fd)
                elif stat.S_ISREG(st.st_mode):
                    if r not in ours.sizes and os.path.lexists(dst_dir / name):
                        continue
                    before = ours.sizes.get(r)
                    if before is None and len(ours.sizes) >= max_entries:
                        drop(r)
                        continue
                    fd = os.open(name, _FILE_FLAGS, dir_fd=src_fd)
                    with os.fdopen(fd, "rb") as f:
                        size = os.fstat(f.fileno())
                        if not stat.S_ISREG(size.st_mode):
                            raise OSError(f"{r}: not a regular file")
                        room = max_bytes - ours.bytes + (before or 0)
                        if size.st_size > room:
                            drop(r)
                            continue
                        n = _copy_file(f, dst_dir / name, st.st_mode & 0o777, room)
                    ours.bytes += n - (before or 0)
                    ours.sizes[r] = n
                else:
                    drop(r)
            except OSError:
                drop(r)

    top = os.open(src, _DIR_FLAGS)
    try:
        walk(top, dst, "")
    finally:
        os.close(top)
    return listed, left


def sync_out(
    src: Path, dst: Path, target: str, ours: Copied, dropped: Dropped, **caps: int
) -> None:
    """`copy_out` of the agent's output dir `target` (seen by the host at `src`) into harbor's
    `dst` (`caps`: its `max_entries`, `max_bytes`); what it left out is named in `dropped` once
    each as a path inside (`target/...`; the dir itself, `target/.`, when it could not be read)
    and counted as `target`'s."""
    try:
        left, count = copy_out(src, dst, ours, **caps)
    except OSError:
        left, count = ["."], 1
    dropped.counts[target] = count
    for p in (f"{target}/{r}" for r in left):
        if p not in dropped.listed and len(dropped.listed) < DROPPED_LISTED:
            dropped.listed.append(p)


def _copy_file(f: io.BufferedReader, dest: Path, mode: int, limit: int) -> int:
    """Write `f`'s content, at most `limit` bytes (a file still growing), to `dest` atomically
    (a temp file beside it, then a rename); the bytes written."""
    with tempfile.NamedTemporaryFile(dir=dest.parent, prefix=".kwrl-", delete=False) as tmp:
        try:
            while chunk := f.read(min(1 << 20, limit - tmp.tell())):
                tmp.write(chunk)
            os.fchmod(tmp.fileno(), mode)
            n = tmp.tell()
        except BaseException:
            os.unlink(tmp.name)
            raise
    os.replace(tmp.name, dest)
    return n
