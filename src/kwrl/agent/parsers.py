"""Tool-call parsing for the agent: the raw text a policy sampled -> (visible content, tool calls,
errors, reasoning).

A token policy returns text, not structured calls, so the agent parses the call format the model
was trained on: `build_parser(AgentConfig.tool_call_parser)` looks the format up by name in
`kwrl.llm.formats.FORMATS`, the one registry of tool-call formats (each renders and parses its
own syntax: `hermes` (aliases `qwen`, `qwen25`), `qwen3_xml` (alias `qwen3_coder`), `glm4`
(aliases `glm45`, `glm47`)). A new format goes there, not here.

Contract: `parse(text, tools)` never raises, and splits blocks by `kwrl.llm.formats.blocks`'s rule
(shared with the engine's chat path and `kwrl serve`): a block that cannot be parsed (bad JSON, no
closing tag, no function name) is reported in `ParseResult.errors`, is not a call and stays in the
content as written; the loop answers it with a corrective message. The XML formats' values are
typed from the tool's JSON schema (`kwrl.llm.formats.base.coerce_value`). Reasoning
(`<think>...</think>`) is split off before parsing, so a call written while thinking is not run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kwrl.llm.formats import ToolCallFormat, get_format

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"


@dataclass(frozen=True)
class ParsedToolCall:
    """One tool call as the model wrote it (name as advertised, arguments as a dict)."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class ParseResult:
    content: str
    """The visible text outside tool-call blocks and reasoning, stripped."""
    tool_calls: list[ParsedToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """One message per malformed block; non-empty means the model tried and failed to call a tool."""
    reasoning: str | None = None
    """Text inside `<think>...</think>`, if any."""

    @property
    def malformed(self) -> bool:
        return bool(self.errors)


def split_reasoning(text: str) -> tuple[str | None, str]:
    """`(reasoning, rest)`: a `</think>` ends the reasoning (the opening tag may be in the prompt)."""
    if _THINK_CLOSE not in text:
        return None, text
    head, rest = text.split(_THINK_CLOSE, 1)
    reasoning = head.split(_THINK_OPEN, 1)[1] if _THINK_OPEN in head else head
    return reasoning.strip(), rest


class ToolCallParser:
    """A sampled turn in one tool-call format -> `ParseResult` (reasoning split off first)."""

    def __init__(self, fmt: ToolCallFormat) -> None:
        self.format = fmt
        self.name = fmt.name

    def parse(self, text: str, tools: list[dict[str, Any]] | None = None) -> ParseResult:
        reasoning, visible = split_reasoning(text)
        blocks = self.format.parse(visible, tools)
        calls = [
            ParsedToolCall(id=f"call_{i}", name=name, arguments=args)
            for i, (name, args) in enumerate(blocks.calls)
        ]
        return ParseResult(blocks.content, calls, blocks.errors, reasoning)


def build_parser(name: str) -> ToolCallParser:
    """The parser of the format registered as `name` (`kwrl.llm.formats.FORMATS`); a ValueError
    naming the known formats otherwise."""
    return ToolCallParser(get_format(name))
