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


@pytest.fixture(scope="module")
def server(model_dir: Path) -> Iterator[str]:
    """`kwrl serve MODEL --port 0`; yields the base URL from its ready line."""
    cmd = [sys.executable, "-m", "kwrl.cli", "serve", str(model_dir), "--port", "0"]
    cmd += ["--threads", "1", "--served-name", "smollm2"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or []], daemon=True).start()
    deadline = time.monotonic() + 300
    url = None
    while url is None:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            proc.kill()
            pytest.fail(
                f"kwrl serve did not get ready: {proc.stderr.read() if proc.stderr else ''}"
            )
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
