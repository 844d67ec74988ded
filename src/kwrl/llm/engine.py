"""Where the in-process engine was: its names, re-exported from `kwrl.llm.engines`.

The engine family lives in `kwrl.llm.engines` (protocol, registry, the in-process engine split
into batching, decode and weights, vLLM). This module keeps the import paths callers use
(`from kwrl.llm.engine import Engine, EngineConfig, shared_engine, register_engine`); kwrl itself
imports from `kwrl.llm.engines`; these paths stay for code outside kwrl for one release.
"""

from __future__ import annotations

from kwrl.llm.engines.base import EngineOutput, SamplingEngine
from kwrl.llm.engines.local import Engine, EngineConfig
from kwrl.llm.engines.registry import live_engine, register_engine, shared_engine, unregister_engine

__all__ = [
    "Engine",
    "EngineConfig",
    "EngineOutput",
    "SamplingEngine",
    "live_engine",
    "register_engine",
    "shared_engine",
    "unregister_engine",
]
