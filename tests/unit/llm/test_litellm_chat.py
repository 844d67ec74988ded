"""The litellm chat client against a tiny fake OpenAI server on loopback (the one faked seam)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from kwrl.errors import PolicyError
from kwrl.llm.base import FinishReason, SamplingParams
from kwrl.llm.litellm_chat import LiteLLMChatClient

TOOL = {
    "type": "function",
    "function": {
        "name": "calendar_list_events",
        "parameters": {"type": "object", "properties": {}},
    },
}


class FakeOpenAI:
    """Answers /v1/chat/completions from a script keyed by the last user message."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    async def chat(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        last = body["messages"][-1]["content"]
        if last == "overflow":
            err = {
                "message": "This model's maximum context length is 8 tokens.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
            return JSONResponse({"error": err}, status_code=400)
        if last == "broken":
            return JSONResponse({"error": {"message": "bad key", "type": "auth"}}, status_code=401)
        message: dict[str, Any] = {"role": "assistant", "content": "The answer is 42."}
        finish = "length" if last == "long" else "stop"
        if last == "tools":
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc",
                        "type": "function",
                        "function": {"name": "calendar_list_events", "arguments": '{"limit": 3}'},
                    }
                ],
            }
            finish = "tool_calls"
        return JSONResponse(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
            }
        )


@pytest.fixture(scope="module")
def fake() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    app = Starlette(routes=[Route("/v1/chat/completions", fake.chat, methods=["POST"])])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "fake OpenAI server did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield fake, f"http://127.0.0.1:{port}/v1"
    server.should_exit = True
    thread.join(timeout=10)


def client(url: str) -> LiteLLMChatClient:
    return LiteLLMChatClient("openai/fake-model", api_base=url, api_key="sk-test", num_retries=0)


async def test_text_answers_and_request_fields_pass_through(fake: tuple[FakeOpenAI, str]) -> None:
    server, url = fake
    params = SamplingParams(max_tokens=32, temperature=0.3, stop=["END"], seed=4)
    out = await client(url).chat([{"role": "user", "content": "hi"}], params, session_id="trial-1")
    assert out.text == "The answer is 42." and out.finish_reason == FinishReason.STOP
    assert out.token_ids == [] and out.usage["total_tokens"] == 16
    sent = server.requests[-1]
    assert sent["model"] == "fake-model" and sent["messages"] == [{"role": "user", "content": "hi"}]
    assert (sent["max_tokens"], sent["temperature"], sent["stop"], sent["seed"]) == (
        32,
        0.3,
        ["END"],
        4,
    )
    assert "tools" not in sent


async def test_tools_go_out_and_tool_calls_come_back_in_openai_format(
    fake: tuple[FakeOpenAI, str],
) -> None:
    server, url = fake
    out = await client(url).chat(
        [{"role": "user", "content": "tools"}], SamplingParams(), tools=[TOOL]
    )
    assert server.requests[-1]["tools"] == [TOOL]
    assert out.finish_reason == FinishReason.STOP and out.text == ""
    (call,) = out.tool_calls
    assert call["id"] == "call_abc" and call["function"]["name"] == "calendar_list_events"
    assert json.loads(call["function"]["arguments"]) == {"limit": 3}


async def test_length_context_and_provider_errors_map_to_our_types(
    fake: tuple[FakeOpenAI, str],
) -> None:
    _, url = fake
    c = client(url)
    long = await c.chat([{"role": "user", "content": "long"}], SamplingParams())
    assert long.finish_reason == FinishReason.LENGTH
    over = await c.chat([{"role": "user", "content": "overflow"}], SamplingParams())
    assert over.finish_reason == FinishReason.CONTEXT and over.text == ""
    with pytest.raises(PolicyError, match="fake-model"):
        await c.chat([{"role": "user", "content": "broken"}], SamplingParams())
