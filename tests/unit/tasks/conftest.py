"""Fixtures of the tasks tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from tasks_builders import make_dataset


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A dataset with one world and three tasks."""
    return make_dataset(tmp_path / "ds")
