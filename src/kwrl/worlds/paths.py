"""Path confinement: what a tool's path argument may name.

Every path argument of a world app goes through `confine`, which refuses absolute paths that leave
the root, `..` escapes and symlinks resolving outside the root, raising
`fastmcp.exceptions.ToolError` with a message a model can act on; `rel` is the model-facing name
of a path under the root. Used by the apps (`kwrl.worlds.apps`) and their office helpers
(`kwrl.worlds.office`).
"""

from __future__ import annotations

from pathlib import Path

from fastmcp.exceptions import ToolError


def confine(root: Path, path: str, *, must_exist: bool = False, kind: str = "path") -> Path:
    """Resolve `path` (relative to `root`, or absolute within the root's virtual `/`) inside `root`.

    "/reports/q3.xlsx" and "reports/q3.xlsx" both mean `<root>/reports/q3.xlsx`: inside the sandbox
    the root is mounted at `/filesystem`, so a leading "/filesystem/" is accepted and stripped too.
    """
    if not isinstance(path, str) or "\x00" in path:
        raise ToolError(f"invalid {kind}: {path!r}")
    root_resolved = root.resolve()
    p = path.strip()
    for prefix in (str(root_resolved), str(root), "/filesystem"):
        if p == prefix or p.startswith(prefix.rstrip("/") + "/"):
            p = p[len(prefix.rstrip("/")) :]
            break
    candidate = (root_resolved / p.lstrip("/")).resolve()
    if candidate != root_resolved and root_resolved not in candidate.parents:
        raise ToolError(f"{kind} {path!r} is outside the allowed root")
    if must_exist and not candidate.exists():
        raise ToolError(f"{kind} {path!r} does not exist")
    return candidate


def rel(root: Path, path: Path) -> str:
    """The model-facing path of `path`: '/' + its path relative to the root."""
    return "/" + path.resolve().relative_to(root.resolve()).as_posix()
