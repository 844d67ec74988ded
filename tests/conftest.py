"""Test-wide settings: no network, no telemetry, deterministic; shared fixture paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """../shared/fixtures: real office documents and Archipelago example files."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not found at {SHARED_FIXTURES}")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def office_fixtures(shared_fixtures: Path) -> Path:
    return shared_fixtures / "office"


@pytest.fixture(scope="session")
def archipelago_fixtures(shared_fixtures: Path) -> Path:
    return shared_fixtures / "archipelago"
