"""Fixtures of the grading tests: the fake judge server (tests/conftest.py's `judge`)."""

from __future__ import annotations

import pytest

from fake_judge import FakeJudge


@pytest.fixture
def fake_judge(judge: FakeJudge) -> FakeJudge:
    """tests/conftest.py's `judge`, under the name the grading unit tests use."""
    return judge
