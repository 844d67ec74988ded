"""EngineClient and OpenAICompletionsClient return the same TITO completions as the engine."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from kwrl.llm.base import FinishReason, SamplingParams
from kwrl.llm.engine_client import EngineClient
from kwrl.llm.engines import Engine
from kwrl.llm.openai_completions import OpenAICompletionsClient
from kwrl.llm.server import build_app
from kwrl.llm.tool_prompt import chat_prompt_ids

GREEDY = SamplingParams(max_tokens=3, temperature=0.0)
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


class Recorder:
    """ASGI middleware that keeps each request's headers and body, then calls the real app."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[dict[str, str], bytes]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        chunks: list[bytes] = []
        while True:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        body = b"".join(chunks)
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        self.seen.append((headers, body))

        async def replay() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def test_engine_client_complete_and_chat_agree(
    engine: Engine, prompts: list[list[int]]
) -> None:
    client = EngineClient(engine)
    assert client.supports_tokens
    direct = await client.complete(prompts[1], GREEDY)
    assert len(direct.token_ids) == len(direct.logprobs) == 3
    assert direct.usage == {"prompt_tokens": len(prompts[1]), "completion_tokens": 3}
    assert direct.weight_version == engine.weight_version

    messages = [{"role": "user", "content": "What is the capital of France?"}]
    chat = await client.chat(messages, GREEDY)
    assert chat.token_ids == direct.token_ids and chat.text == direct.text
    with_tools = await client.chat(messages, GREEDY, tools=[TOOL])
    ids = chat_prompt_ids(engine.tokenizer, messages, [TOOL])
    assert with_tools.usage["prompt_tokens"] == len(ids) > len(prompts[1])


async def test_completions_client_over_the_server_app_is_exact(
    engine: Engine, prompts: list[list[int]]
) -> None:
    app = Recorder(build_app(engine, "smollm2"))
    client = OpenAICompletionsClient(
        "http://kwrl.test/v1", "smollm2", transport=httpx.ASGITransport(app=app)
    )
    client.set_weight_version(7)
    got = await client.complete(prompts[0], GREEDY, session_id="trial-9")
    want = engine.generate_sync(prompts[0], GREEDY)
    assert got.token_ids == want.token_ids and got.text == want.text
    assert got.logprobs == pytest.approx(want.logprobs, abs=1e-5)
    assert got.finish_reason == FinishReason.LENGTH
    assert got.weight_version == engine.weight_version

    import json

    headers, raw = app.seen[-1]
    body = json.loads(raw)
    assert headers["x-session-id"] == "trial-9"
    assert body["session_id"] == body["user"] == "trial-9" and body["cache_salt"] == "w7"
    assert body["prompt"] == prompts[0] and body["return_token_ids"] is True

    chat = await client.chat([{"role": "user", "content": "Hi!"}], GREEDY, tools=[TOOL])
    assert chat.token_ids == [] and chat.finish_reason == FinishReason.LENGTH

    over = await client.complete(list(range(1, engine.max_context + 5)), GREEDY)
    assert over.finish_reason == FinishReason.CONTEXT and over.token_ids == []
    await client.aclose()


async def test_both_token_clients_report_the_models_context_window(engine: Engine) -> None:
    assert await EngineClient(engine).context_window() == engine.max_context == 8192
    app = build_app(engine, "smollm2")
    client = OpenAICompletionsClient(
        "http://kwrl.test/v1", "smollm2", transport=httpx.ASGITransport(app=app)
    )
    assert await client.context_window() == 8192
    await client.aclose()
