"""Fixtures of the eval tests (builders live in eval_testkit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from eval_testkit import make_task_dir


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    """A task dir with a real generated task's archipelago.json."""
    return make_task_dir(tmp_path)
