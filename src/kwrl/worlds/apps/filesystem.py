"""The filesystem app: browse and read the world's office files (ARCH mcp_servers/filesystem).

Tools: list_files, read_text_file, read_image_file, search_files, get_file_metadata,
get_directory_tree, with upstream's parameters and result texts (`'name' (folder)` lines,
`Found N file(s) matching ...`, `[not found: /x]` answers for a bad path, box-drawing trees). Paths are model-facing (`/reports/q3.xlsx`, relative to the filesystem root) and
go through `confine`; results name files by the same model-facing paths. The app only reads: files are
written by the office apps and code_exec.

Non-obvious choice: read_text_file refuses office files and binaries (a NUL byte in the first 8 KiB)
with a message naming the tool that can read them, rather than dumping zip bytes into the context;
text that does not decode with the requested `encoding` is an error, as upstream.
"""

from __future__ import annotations

import fnmatch
import mimetypes
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

from fastmcp.utilities.types import Image

from kwrl.worlds.apps.base import ToolError, WorldApp, confine, tool
from kwrl.worlds.apps.base import rel as _rel

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp"}
MAX_IMAGE_BYTES = 10 * 1024 * 1024
MAX_TEXT_BYTES = 50 * 1024 * 1024
MAX_TREE_ENTRIES = 1000
_READER_HINT = {
    ".docx": "word_read_document_content",
    ".xlsx": "excel_read_tab",
    ".xlsm": "excel_read_tab",
    ".pptx": "powerpoint_read_completedeck",
    ".pdf": "pdfs_read_pdf_pages",
}


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def rel(root: Path, path: Path) -> str:
    r = _rel(root, path)
    return "/" if r == "/." else r


def _is_hidden(name: str) -> bool:
    return name.startswith(".")


class FilesystemApp(WorldApp):
    """The filesystem app: its tools read the world's files (module docstring)."""

    def _lookup(self, path: str) -> Path | str:
        """The path, or upstream's bracketed answer when it cannot be used."""
        try:
            p = confine(self.root, path or "/")
        except ToolError:
            return f"[access denied: {path}]"
        return p if p.exists() else f"[not found: {path}]"

    def _dir_arg(self, path: str) -> Path | str:
        p = self._lookup(path)
        return p if isinstance(p, str) or p.is_dir() else f"[not a directory: {path}]"

    def _file_arg(self, file_path: str) -> Path:
        try:
            p = confine(self.root, file_path)
        except ToolError:
            raise ToolError(f"Access denied: {file_path}") from None
        if not p.exists():
            raise ToolError(f"File not found: {file_path}")
        if not p.is_file():
            raise ToolError(f"Not a file: {file_path}")
        return p

    @tool
    def list_files(self, path: str) -> str:
        d = self._dir_arg(path)
        if isinstance(d, str):
            return d + "\n"
        items = ""
        for e in sorted(os.scandir(d), key=lambda e: e.name):
            if _is_hidden(e.name):
                continue
            if e.is_dir(follow_symlinks=False):  # links are not followed: they may leave the root
                items += f"'{e.name}' (folder)\n"
            elif e.is_file(follow_symlinks=False):
                mime = mimetypes.guess_type(e.path)[0] or "unknown"
                items += f"'{e.name}' ({mime} file) {e.stat().st_size} bytes\n"
        if items:
            return items
        if path in ("", "/"):
            return (
                "Directory is empty. If you expected files here, use a more specific path (e.g., "
                "'/documents', '/data'). The root '/' maps to the sandbox root which may not contain "
                "files at the top level."
            )
        return f"No items found in '{path}'"

    @tool
    def read_text_file(self, file_path: str, encoding: str, max_size: int) -> str:
        p = self._file_arg(file_path)
        if p.stat().st_size > MAX_TEXT_BYTES:
            raise ToolError(
                f"{file_path!r} is larger than {MAX_TEXT_BYTES // 2**20} MB; read parts of it with code_execution_code_exec"
            )
        data = p.read_bytes()
        hint = _READER_HINT.get(p.suffix.lower())
        if hint or b"\x00" in data[:8192]:
            use = f"; use {hint}" if hint else ""
            raise ToolError(f"{file_path!r} is a binary file, not text{use}")
        try:
            return data.decode(encoding)
        except LookupError:
            raise ToolError(f"Unknown encoding: {encoding}") from None
        except UnicodeDecodeError as e:
            raise ToolError(
                f"Failed to decode {file_path} with encoding '{encoding}': {e}"
            ) from None

    @tool
    def read_image_file(self, file_path: str) -> Image:
        p = self._file_arg(file_path)
        if p.suffix.lower() not in IMAGE_SUFFIXES:
            raise ToolError(
                f"Unsupported image format: {p.suffix or '(none)'} (expected one of {', '.join(sorted(IMAGE_SUFFIXES))})"
            )
        if p.stat().st_size > MAX_IMAGE_BYTES:
            raise ToolError(f"{file_path!r} is larger than {MAX_IMAGE_BYTES // 2**20} MB")
        fmt = p.suffix.lower().lstrip(".").replace("jpg", "jpeg")
        return Image(data=p.read_bytes(), format=fmt)

    @tool
    def search_files(self, pattern: str, path: str, recursive: bool, max_results: int) -> str:
        d = self._dir_arg(path)
        if isinstance(d, str):
            return d
        matches: list[str] = []
        limited = False
        for dirpath, dirnames, filenames in os.walk(d):
            dirnames[:] = sorted(n for n in dirnames if not _is_hidden(n)) if recursive else []
            for name in sorted(filenames):
                f = Path(dirpath) / name
                if f.is_symlink() and self.root.resolve() not in f.resolve().parents:
                    continue  # upstream: links leaving the sandbox are skipped
                if fnmatch.fnmatch(name, pattern):
                    if max_results and len(matches) >= max_results:
                        limited = True
                        break
                    matches.append(rel(self.root, f))
            if limited:
                break
        if not matches:
            return f"No files matching '{pattern}' found in {path}"
        out = f"Found {len(matches)} file(s) matching '{pattern}':\n" + "\n".join(matches)
        return out + (f"\n\n(Results limited to {max_results})" if limited else "")

    @tool
    def get_file_metadata(self, file_path: str) -> str:
        p = self._lookup(file_path)
        if isinstance(p, str):
            return p
        st = p.stat()
        lines = [f"Path: {file_path}", f"Type: {'directory' if p.is_dir() else 'file'}"]
        if not p.is_dir():
            lines.append(f"MIME type: {mimetypes.guess_type(p.name)[0] or 'unknown'}")
        lines += [
            f"Size: {st.st_size} bytes ({_human(st.st_size)})",
            f"Permissions: {stat.filemode(st.st_mode)} ({oct(st.st_mode)[-3:]})",
            *(f"{k}: {datetime.fromtimestamp(t, UTC).isoformat()}"
              for k, t in (("Modified", st.st_mtime), ("Accessed", st.st_atime),
                           ("Created/Changed", st.st_ctime))),
            f"Inode: {st.st_ino}", f"Device: {st.st_dev}", f"Hard links: {st.st_nlink}",
        ]  # fmt: skip
        return "\n".join(lines)

    @tool
    def get_directory_tree(
        self, path: str, max_depth: int, include_files: bool, show_size: bool
    ) -> str:
        d = self._dir_arg(path)
        if isinstance(d, str):
            return d
        depth_cap = min(max(max_depth, 1), 10)
        count = [0]

        def tree(p: Path, prefix: str, depth: int) -> list[str]:
            lines: list[str] = []
            try:
                entries = [e for e in os.scandir(p) if not _is_hidden(e.name)]
            except OSError as exc:
                return [f"{prefix}[error: {exc!r}]"]
            dirs = sorted(
                (e for e in entries if e.is_dir(follow_symlinks=False)),
                key=lambda e: e.name.lower(),
            )
            files = sorted(
                (e for e in entries if e.is_file(follow_symlinks=False)),
                key=lambda e: e.name.lower(),
            )
            shown = dirs + (files if include_files else [])
            for i, e in enumerate(shown):
                if count[0] >= MAX_TREE_ENTRIES:
                    lines.append(f"{prefix}... (truncated at {MAX_TREE_ENTRIES} entries)")
                    break
                count[0] += 1
                last = i == len(shown) - 1
                conn, child = ("└── ", "    ") if last else ("├── ", "│   ")
                if e in dirs:
                    lines.append(f"{prefix}{conn}{e.name}/")
                    if depth < depth_cap:
                        lines += tree(Path(e.path), prefix + child, depth + 1)
                else:
                    size = f" ({e.stat(follow_symlinks=False).st_size} bytes)" if show_size else ""
                    lines.append(f"{prefix}{conn}{e.name}{size}")
            return lines

        body = tree(d, "", 1)
        return "\n".join([rel(self.root, d) if path in ("", "/") else path, *(body or ["(empty)"])])
