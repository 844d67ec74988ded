"""Where vLLM's engine was: its names, re-exported from `kwrl.llm.engines.vllm`.

The engine lives in `kwrl.llm.engines.vllm` (vLLM imported only when one is built) and its policy
client (`vllm:MODEL`) in `kwrl.llm.engine_client`. This module keeps the import paths callers use
(`from kwrl.llm.vllm_engine import VLLMConfig, VLLMEngine, shared_vllm_engine`).
"""

from __future__ import annotations

from kwrl.llm.engine_client import VLLMClient
from kwrl.llm.engines.registry import shared_vllm_engine
from kwrl.llm.engines.vllm import (
    VLLMConfig,
    VLLMEngine,
    engine_args,
    finish_reason,
    sampled_logprobs,
    vllm_sampling,
)

__all__ = [
    "VLLMClient",
    "VLLMConfig",
    "VLLMEngine",
    "engine_args",
    "finish_reason",
    "sampled_logprobs",
    "shared_vllm_engine",
    "vllm_sampling",
]
