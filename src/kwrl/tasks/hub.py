"""Hugging Face dataset sources: `org/name` ids fetched with `snapshot_download`.

Both `kwrl data convert` (APEX layout) and `kwrl data extract` (parquet bundles) accept a HF dataset
id where a local path does not exist; only the files matching `allow_patterns` are downloaded. A
failed download (offline, unknown repo, no access) becomes a `TaskFormatError` naming the source,
because to the user it is a bad SRC argument, not a crash.
"""

from __future__ import annotations

import re
from pathlib import Path

from kwrl.errors import TaskFormatError

_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def looks_like_repo_id(src: str | Path) -> bool:
    """True for `org/name` that is not an existing local path."""
    return bool(_REPO_ID.match(str(src))) and not Path(src).exists()


def fetch_dataset(repo_id: str, allow_patterns: list[str], *, revision: str | None = None) -> Path:
    """Download the matching files of a HF dataset repo (cached by huggingface_hub); returns its dir."""
    from huggingface_hub import snapshot_download

    try:
        local = snapshot_download(
            repo_id=repo_id, repo_type="dataset", allow_patterns=allow_patterns, revision=revision
        )
    except Exception as e:  # hub errors have many types (offline, 401, 404, revision not found)
        raise TaskFormatError(
            repo_id, None, f"not a local path, and fetching it as a HF dataset failed: {e}"
        ) from None
    return Path(local)
