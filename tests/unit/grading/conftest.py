"""Fixtures of the grading tests: the fake judge server and a small world with its final state."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from grading_testkit import FakeJudge


@pytest.fixture
def fake_judge() -> Iterator[FakeJudge]:
    judge = FakeJudge()
    try:
        yield judge
    finally:
        judge.close()
