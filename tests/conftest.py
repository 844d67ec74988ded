"""Test-wide settings: no network, no telemetry, deterministic; the fixture paths; the two faked
seams (the judge's endpoint, a tiny model)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_judge import FakeJudge
from kwrl.tasks.apps import APPS, App
from tiny_model import save_tiny_llama

os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

FIXTURES = Path(__file__).resolve().parent / "fixtures"
"""tests/fixtures: real office documents and Archipelago example files (see its PROVENANCE.md)."""


@pytest.fixture(scope="session")
def office_fixtures() -> Path:
    """tests/fixtures/office/<kind>/: real docx, xlsx, pptx, pdf and ics files."""
    return FIXTURES / "office"


@pytest.fixture(scope="session")
def archipelago_fixtures() -> Path:
    """tests/fixtures/archipelago/simple_task/: Archipelago's example task (verifiers, snapshot)."""
    return FIXTURES / "archipelago"


@pytest.fixture
def app_table() -> Iterator[dict[str, App]]:
    """The one app table (`kwrl.tasks.apps.APPS`) to add rows to or drop rows from for one test:
    every reader sees the same dict; it is restored after the test, its order included."""
    saved = dict(APPS)
    try:
        yield APPS
    finally:
        APPS.clear()
        APPS.update(saved)


@pytest.fixture
def judge() -> Iterator[FakeJudge]:
    """A fresh `FakeJudge` (tests/fake_judge.py) on loopback for one test, closed after it: the
    judge's HTTP endpoint, the one faked seam. A test module that scripts its verdicts overrides
    this fixture by taking it (`def judge(judge)`) and setting `judge.decide`."""
    fake = FakeJudge()
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama with SmolLM2's tokenizer as an HF folder (tests/tiny_model.py)."""
    return save_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))
