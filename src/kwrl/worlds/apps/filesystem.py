"""The filesystem app: browse and read the world's office files (ARCH mcp_servers/filesystem).

Tools: list_files, read_text_file, read_image_file, search_files, get_file_metadata,
get_directory_tree. Paths are model-facing (`/reports/q3.xlsx`, relative to the filesystem root) and
go through `confine`; results name files by the same model-facing paths. The app only reads: files are
written by the office apps and code_exec.

Non-obvious choice: read_text_file refuses office files and binaries (a NUL byte in the first 8 KiB)
with a message naming the tool that can read them, rather than dumping zip bytes into the context;
other non-UTF-8 text is decoded with replacement characters.
"""

from __future__ import annotations

import fnmatch
import mimetypes
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

from fastmcp import FastMCP
from fastmcp.utilities.types import Image
from pydantic import Field

from kwrl.worlds.apps.base import ToolError, confine, page_text, tool
from kwrl.worlds.apps.base import rel as _rel
from kwrl.worlds.layout import WorldRoots

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp"}
MAX_IMAGE_BYTES = 10 * 1024 * 1024
MAX_TEXT_BYTES = 50 * 1024 * 1024
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


def build(roots: WorldRoots) -> FastMCP:
    root = roots.filesystem
    mcp = FastMCP("filesystem")

    def dir_arg(path: str) -> Path:
        p = confine(root, path, must_exist=True, kind="directory")
        if not p.is_dir():
            raise ToolError(
                f"{path!r} is a file, not a directory; use get_file_metadata or a read tool"
            )
        return p

    def file_arg(path: str) -> Path:
        p = confine(root, path, must_exist=True, kind="file")
        if p.is_dir():
            raise ToolError(f"{path!r} is a directory; use list_files to see its contents")
        return p

    @tool(mcp)
    def list_files(
        path: Annotated[str, Field(description="Directory to list, e.g. '/' or '/reports'.")] = "/",
    ) -> str:
        """List the files and folders directly inside a directory, with sizes."""
        d = dir_arg(path)
        entries = sorted(
            os.scandir(d), key=lambda e: (not e.is_dir(follow_symlinks=False), e.name.lower())
        )
        lines = []
        for e in entries:
            if _is_hidden(e.name):
                continue
            if e.is_dir(follow_symlinks=False):
                lines.append(f"[dir]  {e.name}/")
            else:
                lines.append(f"[file] {e.name} ({_human(e.stat(follow_symlinks=False).st_size)})")
        header = f"{rel(root, d)}: {len(lines)} entries"
        return header + ("\n" + "\n".join(lines) if lines else "\n(empty directory)")

    @tool(mcp)
    def read_text_file(
        path: Annotated[str, Field(description="Text file to read, e.g. '/notes/todo.md'.")],
        offset: Annotated[int, Field(description="Character offset to start from.", ge=0)] = 0,
        limit: Annotated[
            int, Field(description="Maximum characters to return.", ge=1, le=100_000)
        ] = 20_000,
    ) -> str:
        """Read a plain-text file (txt, md, csv, json, py, ...), paged by characters."""
        p = file_arg(path)
        if p.stat().st_size > MAX_TEXT_BYTES:
            raise ToolError(
                f"{path!r} is larger than {MAX_TEXT_BYTES // 2**20} MB; read parts of it with code_execution_code_exec"
            )
        data = p.read_bytes()
        hint = _READER_HINT.get(p.suffix.lower())
        if hint or b"\x00" in data[:8192]:
            use = f"; use {hint}" if hint else ""
            raise ToolError(f"{path!r} is a binary file, not text{use}")
        text = data.decode("utf-8", errors="replace")
        return page_text(text, offset=offset, limit=limit)

    @tool(mcp)
    def read_image_file(
        path: Annotated[str, Field(description="Image file (png, jpg, gif, webp, bmp).")],
    ) -> Image:
        """Return an image file's pixels so you can look at it."""
        p = file_arg(path)
        if p.suffix.lower() not in IMAGE_SUFFIXES:
            raise ToolError(
                f"{path!r} is not an image (expected one of {', '.join(sorted(IMAGE_SUFFIXES))})"
            )
        if p.stat().st_size > MAX_IMAGE_BYTES:
            raise ToolError(f"{path!r} is larger than {MAX_IMAGE_BYTES // 2**20} MB")
        fmt = p.suffix.lower().lstrip(".").replace("jpg", "jpeg")
        return Image(data=p.read_bytes(), format=fmt)

    @tool(mcp)
    def search_files(
        pattern: Annotated[
            str,
            Field(
                description="Glob on file names ('*.xlsx', 'budget*') or a plain substring; case-insensitive."
            ),
        ],
        path: Annotated[str, Field(description="Directory to search under.")] = "/",
        max_results: Annotated[
            int, Field(description="Most matches to return.", ge=1, le=1000)
        ] = 100,
    ) -> str:
        """Find files and folders whose names match a pattern, searching all subdirectories."""
        d = dir_arg(path)
        pat = pattern.strip().lower()
        if not pat:
            raise ToolError("pattern must not be empty")
        glob = any(c in pat for c in "*?[")
        hits: list[str] = []
        total = 0
        for dirpath, dirnames, filenames in os.walk(d):
            dirnames[:] = sorted(n for n in dirnames if not _is_hidden(n))
            for name in dirnames + sorted(filenames):
                low = name.lower()
                if fnmatch.fnmatchcase(low, pat) if glob else pat in low:
                    total += 1
                    if len(hits) < max_results:
                        suffix = "/" if name in dirnames else ""
                        hits.append(rel(root, Path(dirpath) / name) + suffix)
        if not hits:
            return f"no files matching {pattern!r} under {rel(root, d)}"
        more = f"\n({total - len(hits)} more not shown)" if total > len(hits) else ""
        return f"{total} matches\n" + "\n".join(hits) + more

    @tool(mcp)
    def get_file_metadata(
        path: Annotated[str, Field(description="File or directory to describe.")],
    ) -> dict[str, object]:
        """Size, type, and timestamps of a file or directory."""
        p = confine(root, path, must_exist=True, kind="file")
        st = p.stat()
        mime = None if p.is_dir() else mimetypes.guess_type(p.name)[0]
        return {
            "path": rel(root, p),
            "name": p.name,
            "type": "directory" if p.is_dir() else "file",
            "size_bytes": st.st_size,
            "mime_type": mime or ("inode/directory" if p.is_dir() else "application/octet-stream"),
            "modified": datetime.fromtimestamp(st.st_mtime, UTC).isoformat(timespec="seconds"),
            "created": datetime.fromtimestamp(st.st_ctime, UTC).isoformat(timespec="seconds"),
        }

    @tool(mcp)
    def get_directory_tree(
        path: Annotated[str, Field(description="Directory at the top of the tree.")] = "/",
        max_depth: Annotated[int, Field(description="Levels to descend.", ge=1, le=20)] = 3,
        max_entries: Annotated[
            int, Field(description="Most lines to return.", ge=1, le=5000)
        ] = 500,
    ) -> str:
        """Show a directory's folders and files as an indented tree."""
        d = dir_arg(path)
        lines = [rel(root, d)]
        cut = False

        def walk(p: Path, depth: int, indent: str) -> None:
            nonlocal cut
            try:
                entries = sorted(
                    os.scandir(p),
                    key=lambda e: (not e.is_dir(follow_symlinks=False), e.name.lower()),
                )
            except OSError:
                return
            for e in entries:
                if _is_hidden(e.name):
                    continue
                if len(lines) >= max_entries:
                    cut = True
                    return
                if e.is_dir(follow_symlinks=False):
                    lines.append(f"{indent}{e.name}/")
                    if depth < max_depth:
                        walk(Path(e.path), depth + 1, indent + "  ")
                else:
                    lines.append(f"{indent}{e.name}")

        walk(d, 1, "  ")
        if cut:
            lines.append(f"[truncated at {max_entries} entries; narrow path or raise max_entries]")
        return "\n".join(lines)

    return mcp
