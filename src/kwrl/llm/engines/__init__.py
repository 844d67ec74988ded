"""Sampling engines: a model sampled in batches in this process, whose weights the trainer pushes.

- `base.py`: the protocol every engine implements (`SamplingEngine`: submit, generate, update and
  stage weights, weight version, tokenizer, context length) and its result (`EngineOutput`).
- `registry.py`: `ENGINES` by kind, `load_engine` (one engine per kind, model and settings in
  this process) and the handles that lend one by name (`register_engine` -> `live:HANDLE`).
- `local.py`: the in-process transformers engine (`Engine`, `EngineConfig`), assembled from
  `core.py` (shared state), `batching.py` (worker thread, decode loop), `decode.py` (prefill,
  prefix reuse, sampling) and `weights.py` (update, stage, load).
- `vllm.py`: vLLM's `LLMEngine` in this process on a GPU (`VLLMEngine`, `VLLMConfig`); vLLM
  itself is imported only when one is built.

Policy clients over an engine (`engine:`, `vllm:`, `live:` specs) are in `kwrl.llm.engine_client`.
"""

from kwrl.llm.engines.base import EngineOutput, SamplingEngine
from kwrl.llm.engines.local import Engine, EngineConfig
from kwrl.llm.engines.registry import (
    ENGINES,
    live_engine,
    load_engine,
    register_engine,
    shared_engine,
    shared_vllm_engine,
    unregister_engine,
)
from kwrl.llm.engines.vllm import VLLMConfig, VLLMEngine

__all__ = [
    "ENGINES",
    "Engine",
    "EngineConfig",
    "EngineOutput",
    "SamplingEngine",
    "VLLMConfig",
    "VLLMEngine",
    "live_engine",
    "load_engine",
    "register_engine",
    "shared_engine",
    "shared_vllm_engine",
    "unregister_engine",
]
