"""`LiteLLMChatClient`: the chat path for API models (Gemini, OpenAI, any litellm provider).

Text in, text out: no token ids, so these policies are evaluated, not trained. Tools go to the
provider in OpenAI format and its structured `tool_calls` come back in OpenAI format (arguments
as a JSON string). Provider finish reasons map to ours: `length` -> LENGTH, anything else (stop,
tool_calls, content_filter) -> STOP; litellm's ContextWindowExceededError -> an empty CONTEXT
turn. Other errors raise PolicyError after litellm's own retries (`num_retries`). `session_id` is
unused: providers route by themselves (litellm drops OpenAI's `user` field anyway).

litellm is imported on first use (it is slow to import: ~5 s on a busy 2-core host), by `warm()`
before the agent's first turn, in a thread; `LITELLM_LOCAL_MODEL_COST_MAP=True` keeps that import
off the network. A turn's `latency_s` is `acompletion`'s alone.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import time
from typing import Any

from kwrl.errors import PolicyError
from kwrl.llm.base import Completion, FinishReason, PolicyClient, SamplingParams


class LiteLLMChatClient(PolicyClient):
    """Chat completions through litellm (see the module doc)."""

    supports_tokens = False

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 600.0,
        num_retries: int = 2,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.api_base = api_base
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.num_retries = num_retries
        self.extra = dict(extra or {})

    @classmethod
    def from_spec(cls, target: str, cfg: Any) -> LiteLLMChatClient:
        """`target` is a litellm model id, e.g. `gemini/gemini-2.5-flash`."""
        return cls(
            target,
            api_base=cfg.api_base,
            api_key=cfg.api_key(),
            timeout_s=cfg.timeout_s,
            num_retries=cfg.retries,
            extra=cfg.extra,
        )

    async def warm(self) -> None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        await asyncio.to_thread(importlib.import_module, "litellm")

    async def chat(
        self,
        messages: list[dict[str, Any]],
        params: SamplingParams,
        *,
        tools: list[dict[str, Any]] | None = None,
        session_id: str | None = None,
    ) -> Completion:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm
        from litellm.exceptions import ContextWindowExceededError

        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "timeout": self.timeout_s,
            "num_retries": self.num_retries,
            **self.extra,
        }
        if params.stop:
            kwargs["stop"] = params.stop
        if params.seed is not None:
            kwargs["seed"] = params.seed
        if tools:
            kwargs["tools"] = tools
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        t0 = time.perf_counter()
        try:
            resp: Any = await litellm.acompletion(**kwargs)
        except ContextWindowExceededError:
            return Completion(text="", finish_reason=FinishReason.CONTEXT)
        except Exception as e:  # provider errors of every kind become one typed error
            raise PolicyError(f"litellm {self.model}: {type(e).__name__}: {e}") from e
        latency_s = time.perf_counter() - t0
        choice = resp.choices[0]
        message = choice.message
        calls = [_call(c, i) for i, c in enumerate(getattr(message, "tool_calls", None) or [])]
        usage = getattr(resp, "usage", None)
        return Completion(
            text=str(getattr(message, "content", None) or ""),
            finish_reason=FinishReason.LENGTH
            if choice.finish_reason == "length"
            else FinishReason.STOP,
            tool_calls=calls,
            usage={
                k: int(getattr(usage, k))
                for k in ("prompt_tokens", "completion_tokens", "total_tokens")
                if usage is not None and isinstance(getattr(usage, k, None), int)
            },
            latency_s=latency_s,
        )


def _call(call: Any, index: int) -> dict[str, Any]:
    fn = call.function
    args = fn.arguments
    if not isinstance(args, str):
        args = json.dumps(args or {}, ensure_ascii=False)
    return {
        "id": getattr(call, "id", None) or f"call_{index}",
        "type": "function",
        "function": {"name": fn.name, "arguments": args},
    }
