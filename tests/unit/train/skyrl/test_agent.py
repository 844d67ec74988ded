"""SkyRLKwrlAgent: the batch's weight version salts the policy's prefix cache; sessions per trial."""

from __future__ import annotations

from pathlib import Path

import httpx

from kwrl.llm.base import SamplingParams
from kwrl.train.skyrl.agent import SkyRLKwrlAgent


async def test_weight_version_becomes_the_cache_salt_and_session_id_is_kept(tmp_path: Path) -> None:
    agent = SkyRLKwrlAgent(
        tmp_path,
        "http://127.0.0.1:9/v1#policy",
        session_id="train-s000002-ab12cd34-7_1",
        weight_version=7,
        tokenizer="smollm2-135m",
        max_steps=3,
    )
    agent.session_id = "t__s0__agent"  # what harbor's Trial does after building the agent
    assert agent.session_id == "train-s000002-ab12cd34-7_1" and agent.config.max_steps == 3
    policy = agent._build_policy()
    assert policy.weight_version == 7

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        choice = {"text": "hi", "token_ids": [5], "logprobs": {"token_logprobs": [-0.1]},
                  "finish_reason": "stop", "prompt_token_ids": [1, 2]}  # fmt: skip
        return httpx.Response(200, json={"choices": [choice], "usage": {}})

    policy._http = httpx.AsyncClient(
        base_url=policy.base_url, transport=httpx.MockTransport(handler)
    )
    done = await policy.complete([1, 2], SamplingParams(max_tokens=1), session_id="sess-1")
    await policy.aclose()
    assert done.token_ids == [5] and done.weight_version == 7
    body = seen[0].read().decode()
    assert '"cache_salt":"w7"' in body.replace(" ", "")
    assert seen[0].headers["X-Session-ID"] == "sess-1"


def test_without_a_weight_version_the_client_keeps_its_default(tmp_path: Path) -> None:
    agent = SkyRLKwrlAgent(tmp_path, "http://127.0.0.1:9/v1#policy", tokenizer="smollm2-135m")
    agent.session_id = "t__s0__agent"
    assert agent.session_id == "t__s0__agent"
    assert agent._build_policy().weight_version == 0
