"""`kwrl serve` as a real subprocess: OpenAI-compatible endpoints that return the engine's tokens."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kwrl.llm.base import FinishReason, SamplingParams
from kwrl.llm.engines import Engine, EngineConfig
from kwrl.llm.openai_completions import OpenAICompletionsClient
from kwrl.llm.tool_prompt import chat_prompt_ids

TOOL = {
    "type": "function",
    "function": {"name": "mail_list_mails", "parameters": {"type": "object", "properties": {}}},
}


@pytest.fixture(scope="module")
def model_dir() -> Path:
    from kwrl.llm.packaged import ensure_model

    return ensure_model("smollm2-135m")


SERVE_LOG: list[str] = []
"""The module's `kwrl serve`'s stderr lines, as they come."""


@pytest.fixture(scope="module")
def server(model_dir: Path) -> Iterator[str]:
    """`kwrl serve MODEL --port 0`; yields the base URL from its ready line (stderr in SERVE_LOG;
    `--served_name`, a `ServeConfig` field)."""
    cmd = [sys.executable, "-m", "kwrl.cli", "serve", str(model_dir), "--port", "0"]
    cmd += ["--threads", "1", "--served_name", "smollm2"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or []], daemon=True).start()
    threading.Thread(
        target=lambda: [SERVE_LOG.append(x.rstrip("\n")) for x in proc.stderr or []], daemon=True
    ).start()
    deadline = time.monotonic() + 300
    url = None
    while url is None:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            proc.kill()
            pytest.fail("kwrl serve did not get ready: " + "\n".join(SERVE_LOG))
        try:
            line = lines.get(timeout=min(left, 1.0))
        except queue.Empty:
            continue
        if line.startswith("kwrl-serve ready "):
            url = line.split()[-1]
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def engine(model_dir: Path) -> Iterator[Engine]:
    eng = Engine.from_config(EngineConfig(model=str(model_dir), threads=1))
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=300) as c:
        yield c


def post(http: httpx.Client, url: str, body: dict[str, Any]) -> dict[str, Any]:
    r = http.post(url, json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_health_and_models(server: str, http: httpx.Client) -> None:
    root = server.removesuffix("/v1")
    assert http.get(f"{root}/health").json()["status"] == "ok"
    (card,) = http.get(f"{server}/models").json()["data"]
    assert card["id"] == "smollm2" and card["max_model_len"] == 8192


def test_completions_return_the_engines_token_ids_and_logprobs(
    server: str, http: httpx.Client, engine: Engine
) -> None:
    prompt = chat_prompt_ids(engine.tokenizer, [{"role": "user", "content": "Name a fruit."}])
    for params in (
        SamplingParams(max_tokens=4, temperature=0.0),
        SamplingParams(max_tokens=4, seed=3),
    ):
        body = {
            "model": "smollm2",
            "prompt": prompt,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "seed": params.seed,
            "logprobs": 0,
            "return_token_ids": True,
            "session_id": "trial-1",
            "cache_salt": "w0",
        }
        data = post(http, f"{server}/completions", body)
        (choice,) = data["choices"]
        want = engine.generate_sync(prompt, params)
        assert choice["prompt_token_ids"] == prompt
        assert choice["token_ids"] == want.token_ids
        assert choice["logprobs"]["token_logprobs"] == pytest.approx(want.logprobs, abs=1e-4)
        assert choice["text"] == want.text and choice["finish_reason"] == "length"
        assert data["usage"]["completion_tokens"] == 4


def test_text_prompts_several_samples_and_errors(
    server: str, http: httpx.Client, engine: Engine
) -> None:
    body = {"prompt": "The capital of France is", "max_tokens": 2, "n": 2, "seed": 1}
    data = post(http, f"{server}/completions", {**body, "return_token_ids": True})
    assert [c["index"] for c in data["choices"]] == [0, 1]
    ids = engine.tokenizer.encode("The capital of France is")
    assert data["choices"][0]["prompt_token_ids"] == ids
    assert data["choices"][0]["logprobs"] is None

    streamed = http.post(f"{server}/completions", json={**body, "stream": True})
    assert streamed.status_code == 400 and "stream" in streamed.json()["error"]["message"]
    huge = http.post(f"{server}/completions", json={"prompt": [1] * 9000, "max_tokens": 1})
    assert huge.status_code == 400
    assert "maximum context length" in huge.json()["error"]["message"]


def test_chat_completions_render_tools_and_return_the_prompt_ids(
    server: str, http: httpx.Client, engine: Engine
) -> None:
    messages = [{"role": "user", "content": "Any new mail?"}]
    body = {
        "model": "smollm2",
        "messages": messages,
        "tools": [TOOL],
        "max_tokens": 3,
        "temperature": 0,
        "logprobs": True,
        "return_token_ids": True,
    }
    data = post(http, f"{server}/chat/completions", body)
    (choice,) = data["choices"]
    prompt = chat_prompt_ids(engine.tokenizer, messages, [TOOL])
    want = engine.generate_sync(prompt, SamplingParams(max_tokens=3, temperature=0.0))
    assert choice["prompt_token_ids"] == prompt and choice["token_ids"] == want.token_ids
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"] == want.text
    lps = [x["logprob"] for x in choice["logprobs"]["content"]]
    assert lps == pytest.approx(want.logprobs, abs=1e-4)
    assert json.dumps(TOOL) in engine.tokenizer.decode(prompt)


async def test_the_completions_client_gets_exact_tokens_from_kwrl_serve(
    server: str, engine: Engine
) -> None:
    client = OpenAICompletionsClient(server, "smollm2", timeout_s=300)
    prompt = chat_prompt_ids(engine.tokenizer, [{"role": "user", "content": "Say yes."}])
    params = SamplingParams(max_tokens=3, temperature=1.0, seed=21)
    got = await client.complete(prompt, params, session_id="trial-2")
    want = engine.generate_sync(prompt, params)
    assert got.token_ids == want.token_ids
    assert got.logprobs == pytest.approx(want.logprobs, abs=1e-4)
    assert got.finish_reason == FinishReason.LENGTH and got.weight_version == 0
    over = await client.complete([1] * 9000, params)
    assert over.finish_reason == FinishReason.CONTEXT
    await client.aclose()


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def test_tool_choice_through_the_openai_client(server: str) -> None:
    """`tool_choice` "required" and a named function force a call (the format's call opening
    written after the turn starts); every call has an id of its own; a name not among the tools
    and an unknown form are a 400. Before: tool_choice was ignored (the model answered in prose)
    and every call's id was `call_0`."""
    import openai

    client = openai.OpenAI(base_url=server, api_key="none", max_retries=0, timeout=300)
    ask: Any = [{"role": "user", "content": "Hello! How are you today?"}]
    several: Any = [WEATHER, TOOL]
    ids = []
    named = {"type": "function", "function": {"name": "get_weather"}}
    for tools, choice in [
        ([WEATHER], "required"),
        ([WEATHER, TOOL], named),
        ([TOOL, WEATHER], named),
    ]:
        resp = client.chat.completions.create(
            model="smollm2", messages=ask, tools=tools, tool_choice=choice,  # type: ignore[arg-type]
            max_tokens=48, seed=5, temperature=0.7,
        )  # fmt: skip
        msg = resp.choices[0].message
        assert msg.tool_calls, (choice, msg)
        assert resp.choices[0].finish_reason in ("tool_calls", "length")
        call = msg.tool_calls[0]
        assert call.type == "function" and call.function.name == "get_weather", call  # type: ignore[union-attr]
        ids += [c.id for c in msg.tool_calls]
    assert len(set(ids)) == len(ids) >= 3, ids
    # required among several tools: a call of one of them, or a 400 saying none came (the engine
    # has no grammar to constrain the name); never a call of a tool not offered, nor prose
    try:
        resp = client.chat.completions.create(
            model="smollm2", messages=ask, tools=several, tool_choice="required",
            max_tokens=48, seed=5, temperature=0.7,
        )  # fmt: skip
    except openai.BadRequestError as e:
        assert "no parseable hermes call of the tools" in str(e), e
    else:
        calls = resp.choices[0].message.tool_calls or []
        assert calls and {c.function.name for c in calls} <= {"get_weather", "mail_list_mails"}  # type: ignore[union-attr]
    for bad, said in [
        ({"type": "function", "function": {"name": "nosuch"}}, "not among the tools"),
        ("sometimes", "tool_choice: expected"),
    ]:
        with pytest.raises(openai.BadRequestError, match=said):
            client.chat.completions.create(
                model="smollm2", messages=ask, tools=[WEATHER], tool_choice=bad,  # type: ignore[arg-type]
                max_tokens=4,
            )  # fmt: skip
    with pytest.raises(openai.BadRequestError, match="offers no tools"):
        client.chat.completions.create(
            model="smollm2", messages=ask, tool_choice="required", max_tokens=4
        )


def test_each_request_is_one_log_line(server: str, http: httpx.Client) -> None:
    """`kwrl serve` says when its model loads and logs every request with its timing (before:
    nothing on stderr)."""
    post(http, f"{server}/completions", {"prompt": "Hi", "max_tokens": 3, "seed": 1})
    http.post(f"{server}/completions", json={"prompt": 7})
    time.sleep(0.5)  # the reader thread
    assert any(x.startswith("kwrl-serve loaded ") for x in SERVE_LOG), SERVE_LOG
    import re

    ok = [
        x
        for x in SERVE_LOG
        if re.fullmatch(r"kwrl-serve POST /v1/completions 200 [\d.]+ s tokens \d+\+3", x)
    ]
    bad = [x for x in SERVE_LOG if re.fullmatch(r"kwrl-serve POST /v1/completions 400 [\d.]+ s", x)]
    assert ok and bad, SERVE_LOG
