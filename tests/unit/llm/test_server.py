"""`kwrl serve`'s app: chat tool calls rendered and parsed in the server's tool-call format."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from kwrl.errors import ConfigError
from kwrl.llm.base import FinishReason
from kwrl.llm.engines.base import EngineOutput
from kwrl.llm.formats import get_format
from kwrl.llm.server import build_app, chat_choice
from kwrl.llm.tool_prompt import chat_prompt_ids

SEARCH = {
    "type": "function",
    "function": {
        "name": "mail_search",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        },
    },
}
MESSAGES = [{"role": "user", "content": "Find the break fee mail."}]


def _out(text: str) -> EngineOutput:
    return EngineOutput(
        token_ids=[1], logprobs=[0.0], text=text, finish_reason=FinishReason.STOP,
        prompt_tokens=3, weight_version=0,
    )  # fmt: skip


@pytest.mark.parametrize("fmt", ["hermes", "qwen3_xml", "glm4"])
def test_a_call_in_the_servers_format_comes_back_as_an_openai_tool_call(fmt: str) -> None:
    text = "Searching.\n" + get_format(fmt).render_call("mail_search", {"query": "fee", "limit": 3})
    choice = chat_choice(0, _out(text), [SEARCH], fmt)
    (call,) = choice["message"]["tool_calls"]
    assert call["function"]["name"] == "mail_search"
    assert json.loads(call["function"]["arguments"]) == {"query": "fee", "limit": 3}
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Searching."


def test_another_formats_call_is_not_read_as_one() -> None:
    xml = get_format("qwen3_xml").render_call("mail_search", {"query": "fee"})
    choice = chat_choice(0, _out(xml), [SEARCH], "hermes")
    assert "tool_calls" not in choice["message"]
    assert choice["finish_reason"] == "stop"


def test_without_tools_the_text_is_the_answer() -> None:
    text = get_format("hermes").render_call("mail_search", {"query": "fee"})
    choice = chat_choice(0, _out(text), None, "hermes")
    assert choice["message"]["content"] == text and "tool_calls" not in choice["message"]


def test_the_chat_route_renders_tools_in_the_servers_format(engine: Any) -> None:
    body = {
        "model": "m", "messages": MESSAGES, "tools": [SEARCH], "max_tokens": 1,
        "temperature": 0, "return_token_ids": True,
    }  # fmt: skip
    prompts = {}
    for fmt in ("hermes", "qwen3_xml"):
        with TestClient(build_app(engine, "m", fmt)) as client:
            r = client.post("/v1/chat/completions", json=body)
        assert r.status_code == 200, r.text
        prompts[fmt] = r.json()["choices"][0]["prompt_token_ids"]
        assert prompts[fmt] == chat_prompt_ids(engine.tokenizer, MESSAGES, [SEARCH], fmt=fmt)
    xml_prompt = engine.tokenizer.decode(prompts["qwen3_xml"])
    assert "<function=" in xml_prompt and "<function=" not in engine.tokenizer.decode(
        prompts["hermes"]
    )


def test_an_unknown_format_is_refused_naming_the_known_ones(engine: Any) -> None:
    with pytest.raises(ValueError, match="qwen3_xml"):
        build_app(engine, "m", "nope")


def test_kwrl_serve_refuses_an_unknown_format_before_loading_a_model() -> None:
    from kwrl.cli import app

    r = CliRunner().invoke(app, ["serve", "/nonexistent", "--tool_call_parser", "nope"])
    assert isinstance(r.exception, ConfigError)  # `kwrl.cli.main` prints it in one line, exit 2
    assert "tool_call_parser" in str(r.exception) and "qwen3_xml" in str(r.exception)


@pytest.mark.parametrize("fmt", ["hermes", "qwen3_xml", "glm4"])
def test_a_forced_call_is_the_formats_opening_and_the_model_writes_the_rest(fmt: str) -> None:
    """`tool_choice` required or named: the format's call opening goes into the prompt, and the
    opening with what the model writes after it parses as a call of the named tool, with an id
    of its own."""
    from kwrl.llm.server import calls_offered, forced_call

    call = get_format(fmt).render_call("mail_search", {"query": "fee", "limit": 3})
    named = {"type": "function", "function": {"name": "mail_search"}}
    for choice in ("required", named):
        tools, prefix = forced_call(choice, [SEARCH], fmt)
        assert tools == [SEARCH] and prefix and call.startswith(prefix)
        out = chat_choice(0, _out(call.removeprefix(prefix)), tools, fmt, prefix)
        assert calls_offered(out, tools)
        (got,) = out["message"]["tool_calls"]
        assert got["function"]["name"] == "mail_search" and got["id"] != "call_0"
    assert forced_call("auto", [SEARCH], fmt) == ([SEARCH], "")
    assert forced_call("none", [SEARCH], fmt) == (None, "")
    other = {**SEARCH, "function": {**SEARCH["function"], "name": "mail_read"}}
    _, prefix = forced_call("required", [SEARCH, other], fmt)  # the model names the tool
    assert "mail_search" not in prefix and call.startswith(prefix)
    prose = chat_choice(0, _out("I will not."), [SEARCH], fmt, "")
    assert not calls_offered(prose, [SEARCH])


def test_bad_tool_choices_are_400s() -> None:
    from kwrl.llm.server import BadRequest, forced_call

    for choice, said in [
        ("always", "expected"),
        ({"type": "function", "function": {"name": "nosuch"}}, "not among the tools"),
        ({"type": "function"}, "expected"),
    ]:
        with pytest.raises(BadRequest, match=said):
            forced_call(choice, [SEARCH], "hermes")
    with pytest.raises(BadRequest, match="offers no tools"):
        forced_call("required", None, "hermes")
