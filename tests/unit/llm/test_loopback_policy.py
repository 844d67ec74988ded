"""`LoopbackPolicy` answers kwrl's token client and a litellm chat client over real HTTP with its
scripts, and each answer's `latency_s` is the endpoint's own (timed by the client on the wire)."""

from __future__ import annotations

import pytest

from kwrl.llm.base import FinishReason, SamplingParams
from kwrl.llm.litellm_chat import LiteLLMChatClient
from kwrl.llm.loopback import LoopbackPolicy
from kwrl.llm.openai_completions import OpenAICompletionsClient

PARAMS = SamplingParams(max_tokens=64)


@pytest.fixture(scope="module")
def tokenizer() -> object:
    from kwrl.agent.tokenizer import load_tokenizer

    return load_tokenizer("smollm2-135m")


async def test_token_sessions_replay_their_scripts(tokenizer: object) -> None:
    with LoopbackPolicy(tokenizer, lambda prompt: [f"one {prompt[-3:]}", "two"], name="m") as srv:
        client = OpenAICompletionsClient(srv.url, "m")
        assert await client.context_window() == 32768
        prompt = tokenizer.encode("abc xyz")  # type: ignore[attr-defined]
        first = await client.complete(prompt, PARAMS, session_id="a")
        other = await client.complete(prompt, PARAMS, session_id="b")
        second = await client.complete(prompt, PARAMS, session_id="a")
        third = await client.complete(prompt, PARAMS, session_id="a")
        await client.aclose()
    assert first.text == other.text == "one xyz" and second.text == "two" and third.text == "Done."
    assert first.token_ids[-1] == srv.end_id and len(first.logprobs) == len(first.token_ids)
    assert first.finish_reason == FinishReason.STOP
    assert first.latency_s is not None and 0 < first.latency_s < 5


async def test_a_slow_endpoint_is_timed_on_the_wire(tokenizer: object) -> None:
    with LoopbackPolicy(tokenizer, ["hi"], delay_s=0.3) as srv:
        client = OpenAICompletionsClient(srv.url, "loopback")
        got = await client.complete([1, 2, 3], PARAMS, session_id="s")
        await client.aclose()
    assert got.latency_s is not None and got.latency_s >= 0.3


async def test_chat_turns_follow_the_assistant_messages_and_litellm_warms_first() -> None:
    with LoopbackPolicy(None, ["first", "second"]) as srv:
        client = LiteLLMChatClient(f"openai/{srv.name}", api_base=srv.url, api_key="none")
        await client.warm()  # imports litellm off the first turn's clock
        messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
        one = await client.chat(messages, PARAMS)
        two = await client.chat([*messages, {"role": "assistant", "content": one.text}], PARAMS)
    assert (one.text, two.text) == ("first", "second")
    assert one.latency_s is not None and one.latency_s < 5
