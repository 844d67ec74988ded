"""Reading what the agent made: never through a link, only regular files, never more than a cap.

Everything the grader reads from a trial (the final answer, the files of the final state, the app
stores, an office file's zip members) was written by the agent, inside the sandbox or, for
`kwrl grade`, in a trial dir on the host. A link there could point at the task's tests
(`final_answer.txt -> /tests/golden_responses.json`) or at a host file; a FIFO would block the
grader; a huge file or a zip bomb would take the host's disk or memory. So:

- `open_regular(path)` opens with `O_NOFOLLOW | O_NONBLOCK` and checks `fstat` says a regular file:
  a link, FIFO, socket, device or directory is refused with `UnsafeFileError`;
- `read_capped(path, max_bytes)` reads at most `max_bytes` of such a file (and says if it cut);
- `read_answer(path)` is the final answer: '' when absent or not a regular file, at most
  `MAX_ANSWER_BYTES`;
- `check_zip_budget(data)` reads an office file's zip central directory (no member is inflated)
  and refuses more than `MAX_ZIP_MEMBERS` members, `MAX_UNZIPPED_BYTES` uncompressed bytes or one
  member over `MAX_PART_BYTES` (an XML part of a docx or pptx over `MAX_TREE_PART_BYTES`);
- `check_pdf_budget(data)` inflates a PDF's Flate streams in bounded chunks, keeping nothing, and
  refuses more than `MAX_UNZIPPED_BYTES` in all (pdfminer inflates each stream whole in memory).
"""

from __future__ import annotations

import io
import os
import re
import stat
import zipfile
import zlib
from pathlib import Path

from kwrl.errors import KwrlError

MAX_FILE_BYTES = 64 * 1024**2
"""The most bytes read from one file of the final state (a larger one is named, not rendered)."""
MAX_ANSWER_BYTES = 1024**2
MAX_UNZIPPED_BYTES = 256 * 1024**2
"""The most uncompressed bytes an office file's zip may declare; python-docx & co inflate whole
parts in memory, so a 40 KB bomb declaring gigabytes is refused before it is opened."""
MAX_ZIP_MEMBERS = 10_000
MAX_PART_BYTES = 64 * 1024**2
"""The most uncompressed bytes of one zip member (openpyxl streams worksheets but loads shared
strings and styles whole)."""
MAX_TREE_PART_BYTES = 16 * 1024**2
"""The most uncompressed bytes of one XML part of a docx or pptx, which python-docx and python-pptx
parse whole into lxml trees (several times their size in memory, and slow to walk)."""


class UnsafeFileError(KwrlError):
    """A file the agent made is a link or not a regular file, or exceeds a size cap."""


def open_regular(path: Path) -> int:
    """A read-only fd of `path`, which must be a regular file and not a link (no TOCTOU: the
    check is on the opened fd)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if os.path.islink(path):
            raise UnsafeFileError(f"{path}: is a symbolic link; links are never followed") from None
        raise UnsafeFileError(f"{path}: cannot open ({e.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UnsafeFileError(f"{path}: not a regular file (mode {stat.filemode(mode)})")
    return fd


def read_capped(path: Path, max_bytes: int = MAX_FILE_BYTES) -> tuple[bytes, int]:
    """(up to `max_bytes` of the file, its full size)."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        return f.read(max_bytes), size


def read_all(path: Path, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The whole file, or UnsafeFileError when it is larger than `max_bytes`."""
    data, size = read_capped(path, max_bytes)
    if size > max_bytes or len(data) > max_bytes:
        raise UnsafeFileError(f"{path}: {size} bytes, over the grader's cap of {max_bytes}")
    return data


def read_answer(path: Path | None, max_bytes: int = MAX_ANSWER_BYTES) -> str:
    """The agent's final answer: '' when there is none or it is not a regular file (a link to
    the golden responses is no answer); longer answers are cut at `max_bytes` with a marker."""
    if path is None or not os.path.lexists(path):
        return ""
    try:
        data, size = read_capped(path, max_bytes)
    except UnsafeFileError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if size > len(data):
        text += f"\n[answer truncated: {size - len(data)} more bytes]"
    return text


def check_zip_budget(
    data: bytes,
    *,
    max_bytes: int = MAX_UNZIPPED_BYTES,
    max_members: int = MAX_ZIP_MEMBERS,
    max_part_bytes: int = MAX_PART_BYTES,
    max_xml_part_bytes: int = MAX_PART_BYTES,
) -> None:
    """Refuse a zip whose central directory declares too many members or bytes, in all or in one
    member (`max_xml_part_bytes` for its .xml and .rels parts; no inflating)."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:  # BadZipFile: unreadable, not unsafe
        infos = zf.infolist()
    if len(infos) > max_members:
        raise UnsafeFileError(f"zip holds {len(infos)} members (cap {max_members})")
    total = sum(i.file_size for i in infos)
    if total > max_bytes:
        raise UnsafeFileError(f"zip declares {total} uncompressed bytes (cap {max_bytes})")
    for i in infos:
        cap = max_xml_part_bytes if i.filename.endswith((".xml", ".rels")) else max_part_bytes
        if i.file_size > cap:
            raise UnsafeFileError(
                f"zip member {i.filename} declares {i.file_size} bytes (cap {cap})"
            )


_PDF_STREAM = re.compile(rb"stream\r?\n(.*?)endstream", re.DOTALL)
_INFLATE_CHUNK = 1 << 20


def check_pdf_budget(data: bytes, *, max_bytes: int = MAX_UNZIPPED_BYTES) -> None:
    """Refuse a PDF whose Flate streams inflate to more than `max_bytes` in all."""
    total = 0
    for m in _PDF_STREAM.finditer(data):
        d = zlib.decompressobj()
        chunk = m.group(1)
        try:
            while chunk:
                out = d.decompress(chunk, _INFLATE_CHUNK)
                total += len(out)
                if total > max_bytes:
                    raise UnsafeFileError(f"pdf streams inflate past {max_bytes} bytes (cap)")
                if not out and not d.unconsumed_tail:
                    break
                chunk = d.unconsumed_tail
        except zlib.error:  # not a Flate stream (an image, a raw stream): nothing to inflate
            continue
