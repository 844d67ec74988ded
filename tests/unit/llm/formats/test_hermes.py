"""The Hermes format renders the calls it parses, and every caller splits blocks by one contract:
a block that does not parse or is not closed is an error, not a call, and stays in the content."""

from __future__ import annotations

from kwrl.agent.parsers import build_parser
from kwrl.llm.formats.hermes import Hermes
from kwrl.llm.tool_prompt import parse_tool_calls

hermes = Hermes()


def test_a_rendered_call_parses_back() -> None:
    block = hermes.render_call("filesystem_read", {"path": "/a/Ä.txt", "n": [1, 2]})
    assert (
        block
        == '<tool_call>\n{"name": "filesystem_read", "arguments": {"path": "/a/Ä.txt", "n": [1, 2]}}\n</tool_call>'
    )
    parsed = hermes.parse(f"Reading.\n{block}")
    assert (parsed.content, parsed.calls, parsed.errors) == (
        "Reading.",
        [("filesystem_read", {"path": "/a/Ä.txt", "n": [1, 2]})],
        [],
    )


def test_the_agent_and_the_chat_path_split_a_turn_alike() -> None:
    good = hermes.render_call("a", {"x": 1})
    broken = '<tool_call>{"name": "b", "arguments": {</tool_call>'
    cut = '<tool_call>{"name": "c", "arguments": {}}'
    text = f"First. {good} then {broken} and {cut}"
    agent = build_parser("hermes").parse(text)
    chat_content, chat_calls = parse_tool_calls(text)
    expected_content = f"First.  then {broken} and {cut}"
    assert agent.content == chat_content == expected_content
    assert [(c.name, c.arguments) for c in agent.tool_calls] == [("a", {"x": 1})]
    assert [c["function"]["name"] for c in chat_calls] == ["a"]
    assert len(agent.errors) == 2
    assert "invalid JSON" in agent.errors[0] and "without </tool_call>" in agent.errors[1]


def test_arguments_may_be_a_json_string_parameters_or_missing() -> None:
    assert hermes.parse_body('{"name": "a", "arguments": "{\\"y\\": 2}"}', {}) == ("a", {"y": 2})
    assert hermes.parse_body('{"name": "a", "parameters": {"z": 3}}', {}) == ("a", {"z": 3})
    assert hermes.parse_body('{"name": "a", "arguments": null}', {}) == ("a", {})
    assert hermes.parse_body('{"name": "a"}', {}) == ("a", {})
