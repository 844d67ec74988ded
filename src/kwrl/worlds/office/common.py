"""What the four office apps (word, excel, powerpoint, pdfs) share.

- Paths: `existing_file` and `new_file` confine every path argument to the filesystem root
  (`kwrl.worlds.paths.confine`), check the extension and the file's presence, and say what is wrong in a
  `ToolError` a model can act on.
- Opening: `open_file` turns any library failure on a corrupted or mis-named file into a
  `ToolError`; `cached` memoises read-only parses keyed on (path, inode, mtime_ns, ctime_ns, size),
  so a read after any write (always a new inode, see below) never sees a stale object.
- Saving: `save_atomic` serialises to memory, then writes a temp file beside the target and
  `os.replace`s it (`kwrl.io.write_bytes`); a failed save leaves the old file whole.
  Writers hold `file_lock(path)` so two concurrent edits of one file serialise.
- Rendering: `md_table` (markdown tables), `parse_color`, image helpers (`image_result`,
  `transform_image`) used by every app that embeds pictures.

Objects returned by `cached` are shared between calls: read tools must not mutate them; write
tools always open a fresh copy with `open_file`.
"""

from __future__ import annotations

import io
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from fastmcp.exceptions import ToolError
from fastmcp.utilities.types import Image as McpImage

from kwrl.io import write_bytes
from kwrl.worlds.paths import confine, rel

__all__ = [
    "IMAGE_EXTS",
    "ToolError",
    "cached",
    "delete_file",
    "edit_file",
    "existing_file",
    "file_lock",
    "image_file",
    "image_result",
    "md_table",
    "new_file",
    "open_file",
    "parse_color",
    "rel",
    "save_atomic",
    "transform_image",
    "write_atomic",
]

IMAGE_EXTS: tuple[str, ...] = (".png", ".jpg", ".jpeg", ".gif", ".bmp")


# -- paths -------------------------------------------------------------------------------------


def existing_file(root: Path, path: str, exts: Sequence[str], *, arg: str = "file_path") -> Path:
    """The confined path of an existing regular file whose name ends with one of `exts`."""
    p = confine(root, path, kind=arg)
    if p.suffix.lower() not in exts:
        raise ToolError(f"{arg} {path!r} must end with {' or '.join(exts)}")
    if not p.exists():
        raise ToolError(f"{arg} {path!r}: file not found")
    if not p.is_file():
        raise ToolError(f"{arg} {path!r} is not a regular file")
    return p


def new_file(root: Path, directory: str, file_name: str, ext: str, *, overwrite: bool) -> Path:
    """The confined target of a create tool: `<directory>/<file_name>`, parent dirs created."""
    if not file_name or "/" in file_name or "\\" in file_name or file_name in (".", ".."):
        raise ToolError(
            f"file_name {file_name!r} must be a plain name without '/', e.g. 'report{ext}'"
        )
    if not file_name.lower().endswith(ext):
        raise ToolError(f"file_name {file_name!r} must end with {ext}")
    d = confine(root, directory or "/", kind="directory")
    if d.exists() and not d.is_dir():
        raise ToolError(f"directory {directory!r} exists and is not a directory")
    target = confine(root, str(d / file_name), kind="file_name")
    if target.exists() and not overwrite:
        raise ToolError(
            f"{rel(root, target)} already exists; pass overwrite=true to replace it, or pick another file_name"
        )
    d.mkdir(parents=True, exist_ok=True)
    return target


def delete_file(root: Path, path: str, exts: Sequence[str]) -> str:
    p = existing_file(root, path, exts)
    with file_lock(p):
        p.unlink()
    return f"Deleted {rel(root, p)}"


def image_file(root: Path, path: str, *, arg: str = "image_path") -> Path:
    return existing_file(root, path, IMAGE_EXTS, arg=arg)


# -- opening, caching, saving --------------------------------------------------------------------


def open_file[T](root: Path, path: Path, loader: Callable[[Path], T], kind: str) -> T:
    """Parse `path` with `loader`; any failure means the file is not a readable `kind`."""
    try:
        return loader(path)
    except ToolError:
        raise
    except Exception as exc:  # the libraries raise a zoo of types on bad input; all mean the same
        raise ToolError(
            f"{rel(root, path)} could not be opened as a {kind} file (corrupted or not really a "
            f"{kind}): {type(exc).__name__}: {exc}"
        ) from exc


_CACHE: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 96


def cached[T](root: Path, path: Path, loader: Callable[[Path], T], kind: str, tag: str = "") -> T:
    """`open_file`, memoised on the file's identity and stat; the result is shared: never mutate it."""
    st = path.stat()
    key = (str(path), tag, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
    with _CACHE_LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    value = open_file(root, path, loader, kind)
    with _CACHE_LOCK:
        _CACHE[key] = value
        while len(_CACHE) > _CACHE_MAX:
            _CACHE.popitem(last=False)
    return value


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Serialise writers of one file (tools run in a thread pool)."""
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(str(path), threading.Lock())
    with lock:
        yield


def write_atomic(path: Path, data: bytes) -> None:
    """Temp file beside `path`, then rename; keeps an existing file's mode (new files: 0644,
    not mkstemp's 0600, so other users of the world, e.g. the grader, can read them)."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    write_bytes(path, data)
    os.chmod(path, mode)


def save_atomic(obj: Any, path: Path) -> None:
    """Save a python-docx / openpyxl / python-pptx object: to memory, then `write_atomic`."""
    buf = io.BytesIO()
    obj.save(buf)
    write_atomic(path, buf.getvalue())


def edit_file[T](
    root: Path,
    file_path: str,
    exts: Sequence[str],
    loader: Callable[[Path], T],
    kind: str,
    fn: Callable[[T], str],
) -> str:
    """Load, edit with `fn` (returns a message), save atomically, all under the file's lock."""
    p = existing_file(root, file_path, exts)
    with file_lock(p):
        obj = open_file(root, p, loader, kind)
        msg = fn(obj)
        save_atomic(obj, p)
    return f"{msg} in {rel(root, p)}"


# -- rendering -----------------------------------------------------------------------------------


def _cell_text(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def md_table(rows: Sequence[Sequence[Any]], header: Sequence[Any] | None = None) -> str:
    """A markdown table; without `header`, the first row is the header."""
    rows = [list(r) for r in rows]
    if header is None:
        if not rows:
            return "(empty table)"
        header, rows = rows[0], rows[1:]
    width = max([len(header), *(len(r) for r in rows)]) if rows or header else 0
    head = [_cell_text(h) for h in header] + [""] * (width - len(header))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * width]
    for r in rows:
        cells = [_cell_text(c) for c in r] + [""] * (width - len(r))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_color(value: str, *, arg: str = "color") -> str:
    """'FF0000' or '#ff0000' -> 'FF0000'."""
    s = value.strip().lstrip("#").upper()
    if len(s) != 6 or any(c not in "0123456789ABCDEF" for c in s):
        raise ToolError(
            f"{arg} {value!r} must be a 6-digit hex RGB colour like 'FF0000' or '#1F4E79'"
        )
    return s


# -- images --------------------------------------------------------------------------------------


def image_result(data: bytes) -> McpImage:
    """Image bytes as an MCP image content block (mime type from the bytes themselves)."""
    from PIL import Image as PILImage

    try:
        with PILImage.open(io.BytesIO(data)) as im:
            fmt = (im.format or "png").lower()
            if fmt not in ("png", "jpeg", "gif", "webp"):
                out = io.BytesIO()
                im.convert("RGBA").save(out, format="PNG")
                return McpImage(data=out.getvalue(), format="png")
    except Exception as exc:
        raise ToolError(
            f"embedded image could not be decoded: {type(exc).__name__}: {exc}"
        ) from exc
    return McpImage(data=data, format=fmt)


Operation = Literal["rotate", "flip", "brightness", "contrast", "crop"]


def transform_image(
    data: bytes,
    operation: str,
    *,
    rotation: float | None = None,
    flip: str | None = None,
    brightness: float | None = None,
    contrast: float | None = None,
    crop_left: int | None = None,
    crop_top: int | None = None,
    crop_right: int | None = None,
    crop_bottom: int | None = None,
) -> bytes:
    """Apply one PIL operation to encoded image bytes; the result keeps the original format."""
    from PIL import Image as PILImage
    from PIL import ImageEnhance, ImageOps

    im = PILImage.open(io.BytesIO(data))
    fmt = im.format or "PNG"
    im.load()
    if operation == "rotate":
        if rotation is None:
            raise ToolError("operation 'rotate' needs rotation (degrees clockwise, 0-360)")
        im = im.rotate(-float(rotation), expand=True)
    elif operation == "flip":
        if flip not in ("horizontal", "vertical"):
            raise ToolError("operation 'flip' needs flip='horizontal' or flip='vertical'")
        im = ImageOps.mirror(im) if flip == "horizontal" else ImageOps.flip(im)
    elif operation in ("brightness", "contrast"):
        factor = brightness if operation == "brightness" else contrast
        if factor is None or factor <= 0:
            raise ToolError(f"operation {operation!r} needs {operation} > 0 (1.0 = unchanged)")
        base = im.convert("RGBA") if im.mode in ("P", "LA", "RGBA") else im.convert("RGB")
        enh = (
            ImageEnhance.Brightness(base)
            if operation == "brightness"
            else ImageEnhance.Contrast(base)
        )
        im = enh.enhance(float(factor))
    elif operation == "crop":
        box = (crop_left, crop_top, crop_right, crop_bottom)
        if any(v is None for v in box):
            raise ToolError(
                "operation 'crop' needs crop_left, crop_top, crop_right, crop_bottom (pixels)"
            )
        left, top, right, bottom = (int(v) for v in box if v is not None)
        if not (0 <= left < right <= im.width and 0 <= top < bottom <= im.height):
            raise ToolError(
                f"crop box ({left}, {top}, {right}, {bottom}) must lie inside the {im.width}x{im.height} image"
            )
        im = im.crop((left, top, right, bottom))
    else:
        raise ToolError(
            f"unknown operation {operation!r}; use rotate, flip, brightness, contrast or crop"
        )
    if fmt.upper() == "JPEG" and im.mode not in ("RGB", "L"):
        im = im.convert("RGB")
    out = io.BytesIO()
    im.save(out, format=fmt)
    return out.getvalue()
