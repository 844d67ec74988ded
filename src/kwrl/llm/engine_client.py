"""The policy clients over an engine in this process (`kwrl.llm.engines`): `engine:`, `vllm:`, `live:`.

`EngineClient` samples from any `SamplingEngine` (token and chat paths); its subclasses differ
only in how `from_spec` finds the engine: `engine:MODEL` and `vllm:MODEL` load it through the
engine registry (`load_engine(kind, MODEL, PolicyConfig.<kind>)`, shared per process), `live:HANDLE`
takes the one registered under HANDLE.

`complete` hands token ids straight to the engine; `chat` renders the chat template (tools
Hermes-style where the template ignores them, see `tool_prompt`), samples, and splits `<tool_call>`
blocks out of the text into OpenAI-format `tool_calls`, as `kwrl serve`'s chat endpoint does.
Neither path owns the engine: closing the client leaves it running for other clients.
"""

from __future__ import annotations

import time
from typing import Any

from kwrl.llm.base import Completion, PolicyClient, SamplingParams
from kwrl.llm.engines.base import EngineOutput, SamplingEngine
from kwrl.llm.engines.registry import live_engine, load_engine
from kwrl.llm.tool_prompt import chat_prompt_ids, parse_tool_calls


class EngineClient(PolicyClient):
    """Samples from an engine in this process (see the module doc); policy kind `engine`: the
    in-process transformers engine over `engine:MODEL`."""

    supports_tokens = True
    kind = "engine"
    """The engine kind `from_spec` loads (`kwrl.llm.engines.ENGINES`); its settings are the
    `PolicyConfig` field of that name."""

    def __init__(self, engine: SamplingEngine) -> None:
        self.engine = engine

    @classmethod
    def from_spec(cls, target: str, cfg: Any) -> EngineClient:
        """`target` is the model; the engine is loaded once per process and settings."""
        return cls(load_engine(cls.kind, target, getattr(cfg, cls.kind)))

    async def complete(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        *,
        session_id: str | None = None,
    ) -> Completion:
        t0 = time.perf_counter()
        out = await self.engine.generate(prompt_ids, params)
        return _completion(out, time.perf_counter() - t0)

    async def context_window(self) -> int | None:
        return self.engine.max_context

    def tokenizer(self) -> Any:
        return self.engine.tokenizer

    async def chat(
        self,
        messages: list[dict[str, Any]],
        params: SamplingParams,
        *,
        tools: list[dict[str, Any]] | None = None,
        session_id: str | None = None,
    ) -> Completion:
        prompt_ids = chat_prompt_ids(self.engine.tokenizer, messages, tools)
        t0 = time.perf_counter()
        out = await self.engine.generate(prompt_ids, params)
        done = _completion(out, time.perf_counter() - t0)
        if tools:
            done.text, done.tool_calls = parse_tool_calls(out.text)
        return done


def _completion(out: EngineOutput, latency_s: float) -> Completion:
    return Completion(
        text=out.text,
        token_ids=out.token_ids,
        logprobs=out.logprobs,
        finish_reason=out.finish_reason,
        usage={"prompt_tokens": out.prompt_tokens, "completion_tokens": len(out.token_ids)},
        weight_version=out.weight_version,
        latency_s=latency_s,
    )


class VLLMClient(EngineClient):
    """Policy kind `vllm`: `vllm:MODEL` samples from a shared in-process vLLM engine
    (`kwrl.llm.engines.vllm`, settings `PolicyConfig.vllm`)."""

    kind = "vllm"


class LiveEngineClient(EngineClient):
    """Policy kind `live`: `live:HANDLE` samples from the engine registered under HANDLE in this
    process (`kwrl.llm.engines.register_engine`; the trainer registers the one it pushes weights
    into). A handle nobody registered is an error; no model is loaded here."""

    @classmethod
    def from_spec(cls, target: str, cfg: Any) -> LiveEngineClient:
        return cls(live_engine(target))
