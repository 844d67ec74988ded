"""Every registered tool-call format parses back the calls it renders, lists tools in its own
syntax, and is the one the agent, SFT's gold turns and the chat rendering look up by name."""

from __future__ import annotations

from typing import Any

import pytest

from kwrl.agent.parsers import build_parser
from kwrl.llm.formats import FORMATS, get_format
from kwrl.llm.tool_prompt import parse_tool_calls, render_tools_system_prompt, template_messages
from kwrl.train.local.sft import GoldPolicy

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "sheet_write",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "row": {"type": "integer"},
                    "scale": {"type": "number"},
                    "dry_run": {"type": "boolean"},
                    "cells": {"type": "array", "items": {"type": "string"}},
                    "style": {"type": "object"},
                    "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
            },
        },
    },
    {"type": "function", "function": {"name": "mail_list", "parameters": {"type": "object"}}},
]
CALLS: list[tuple[str, dict[str, Any]]] = [
    (
        "sheet_write",
        {
            "path": "/filesystem/Q3 €.xlsx",
            "row": 12,
            "scale": 0.5,
            "dry_run": False,
            "cells": ["A1", "multi\nline"],
            "style": {"bold": True},
            "note": None,
        },
    ),
    ("sheet_write", {"path": "42", "note": "null as text? no: a string"}),
    ("mail_list", {}),
]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_a_rendered_call_parses_back_to_the_same_call(name: str) -> None:
    fmt = get_format(name)
    text = "Let me write it.\n" + "\n".join(fmt.render_call(n, a) for n, a in CALLS) + "\n"
    blocks = fmt.parse(text, TOOLS)
    assert (blocks.calls, blocks.errors, blocks.content) == (CALLS, [], "Let me write it.")
    agent = build_parser(name).parse(text, TOOLS)  # the agent looks the format up by name
    assert [(c.name, c.arguments) for c in agent.tool_calls] == CALLS
    _, chat_calls = parse_tool_calls(text, name, TOOLS)
    assert [c["function"]["name"] for c in chat_calls] == [n for n, _ in CALLS]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_a_cut_off_call_is_an_error_that_stays_in_the_content(name: str) -> None:
    fmt = get_format(name)
    cut = fmt.render_call(*CALLS[0]).removesuffix("</tool_call>")
    blocks = fmt.parse(f"Writing.\n{cut}", TOOLS)
    assert blocks.calls == [] and "without </tool_call>" in blocks.errors[0]
    assert blocks.content == f"Writing.\n{cut}".strip()


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_tool_prompts_and_history_speak_the_format(name: str) -> None:
    fmt = get_format(name)
    full = render_tools_system_prompt("S", TOOLS, "hermes", name)
    compact = render_tools_system_prompt("S", TOOLS, "compact", name)
    assert full.endswith(fmt.example()) and compact.endswith(fmt.example("tool"))
    messages = [
        {"role": "system", "content": "S"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "mail_list", "arguments": "{}"}}],
        },
    ]
    out, _ = template_messages(messages, TOOLS, native_tools=False, fmt=name)
    assert out[1]["content"] == fmt.render_call("mail_list", {})


def test_hermes_is_the_default_and_renders_as_before() -> None:
    assert render_tools_system_prompt("S", TOOLS[1:], "compact").endswith(
        'To call a tool, write:\n<tool_call>\n{"name": <tool-name>, "arguments": '
        "<args-json-object>}\n</tool_call>"
    )
    assert FORMATS["qwen"] is FORMATS["hermes"] is get_format("qwen25")


class _Tokenizer:
    """Only what GoldPolicy reads at construction."""

    unk_token_id = 0
    eos_token_id = 2

    def convert_tokens_to_ids(self, token: str) -> int:
        return 1


@pytest.mark.parametrize("name", ["hermes", "qwen3_xml", "glm4"])
def test_sft_gold_turns_are_written_in_the_agents_format(name: str) -> None:
    gold = GoldPolicy(_Tokenizer(), [{"tool": "mail_list", "arguments": {}}], "Done.", name)
    assert gold.turns == [get_format(name).render_call("mail_list", {}), "Done."]


def test_an_unknown_format_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown tool-call format 'nope'; choose one of .*glm4"):
        get_format("nope")
