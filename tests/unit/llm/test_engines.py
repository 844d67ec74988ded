"""The engine family (`kwrl.llm.engines`): one protocol both engines implement, one registry that
loads an engine once per kind, model and settings, and the old import paths still reaching it."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from kwrl.errors import ConfigError
from kwrl.llm.base import SamplingParams
from kwrl.llm.engines import (
    ENGINES,
    Engine,
    EngineConfig,
    SamplingEngine,
    VLLMConfig,
    VLLMEngine,
    load_engine,
)

PROTOCOL = [
    name
    for name, member in inspect.getmembers(SamplingEngine)
    if not name.startswith("_") and inspect.isfunction(member)
]


def test_the_protocol_names_what_callers_use() -> None:
    assert set(PROTOCOL) >= {"submit", "generate", "update_weights", "stage_weights", "close"}
    assert set(SamplingEngine.__annotations__) >= {"tokenizer", "max_context", "weight_version"}


@pytest.mark.parametrize("cls", [Engine, VLLMEngine])
def test_both_engines_implement_every_method_of_the_protocol(cls: type) -> None:
    for name in PROTOCOL:
        want = list(inspect.signature(getattr(SamplingEngine, name)).parameters)
        have = inspect.signature(getattr(cls, name)).parameters
        assert all(p in have for p in want), (cls.__name__, name, want, list(have))


def test_an_engine_is_loaded_once_per_kind_model_and_settings(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[str] = []

    def counting(model: str, cfg: Any) -> Any:
        loads.append(model)
        return ENGINES["engine"](model, cfg)

    monkeypatch.setitem(ENGINES, "counted", counting)
    model = str(tiny_model_dir)
    a = load_engine("counted", model, EngineConfig(threads=1))
    try:
        # the settings' own `model` field is the caller's to replace: not part of the key
        assert load_engine("counted", model, EngineConfig(model="elsewhere", threads=1)) is a
        b = load_engine("counted", model, EngineConfig(threads=1, batch_wait_ms=1.0))
        assert b is not a and loads == [model, model]
        assert isinstance(a, Engine) and a.name == model
        out = a.generate_sync([1, 2, 3], SamplingParams(max_tokens=2, temperature=0.0))
        assert 1 <= len(out.token_ids) == len(out.logprobs) <= 2
        b.close()
    finally:
        a.close()


def test_an_unknown_engine_kind_is_a_config_error_naming_the_kinds() -> None:
    with pytest.raises(ConfigError, match=r"engine kind 'tgi': unknown; choose one of \['engine'"):
        load_engine("tgi", "m", VLLMConfig())
