"""Test-wide settings: no network, no telemetry, deterministic; the fixture paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
