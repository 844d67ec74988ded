"""A tool-call format: how one model family writes a call in text, rendered and parsed by one class.

A format renders a call (`render_call`: the agent's history, SFT's gold turns, templates that
ignore `tools=`), lists tools in a system prompt in its own wording (`render_tools`), and parses a
sampled turn (`parse`) by the block contract of `kwrl.llm.formats.blocks`. Rendering then parsing
gives the same calls back (tests/unit/llm/formats/test_formats.py checks it for every format).

The XML formats carry every value as text, so `parse` types values by the tool's JSON schema
(`coerce_value`: integers, numbers, booleans, arrays, objects); without a schema they stay
strings, as vLLM's parsers do.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from kwrl.llm.formats.blocks import TOOL_CALL_OPEN, Blocks, split_blocks

Schemas = Mapping[str, dict[str, Any]]
"""{tool name: its parameters' JSON schema} (`tool_schemas_by_name`)."""


class ToolCallFormat(ABC):
    """One model family's tool-call syntax, both ways.

    Example::

        class Bracket(ToolCallFormat):
            name = "bracket"
            instruction = "For each function call, write its name and JSON arguments in <tool_call> tags:"

            def example(self, noun: str = "function") -> str:
                return f"<tool_call>[<{noun}-name>] <args-json-object></tool_call>"

            def render_call(self, name, arguments):
                return f"<tool_call>[{name}] {json.dumps(arguments)}</tool_call>"

            def parse_body(self, body, schemas):
                name, _, args = body.strip().partition(" ")
                return name.strip("[]"), json.loads(args or "{}")
    """

    name: ClassVar[str]
    """The name `AgentConfig.tool_call_parser` (`--agent.tool_call_parser`) selects it by."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Other names for it (model families that write the same syntax)."""
    instruction: ClassVar[str]
    """The sentence before `example()` in a tool list rendered into a system prompt."""

    @abstractmethod
    def example(self, noun: str = "function") -> str:
        """How a call is written, with placeholders (`<function-name>`), for tool prompts."""

    @abstractmethod
    def render_call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """One call as the model writes it: a whole `<tool_call>...</tool_call>` block."""

    @abstractmethod
    def parse_body(self, body: str, schemas: Schemas) -> tuple[str, dict[str, Any]]:
        """The text between the tags -> (name, arguments); raise ValueError with a short reason."""

    def call_prefix(self, name: str | None = None) -> str:
        """The text that opens a call (of `name` when given), as the model writes it: what a
        server writes after the assistant's turn starts to force a call (`kwrl serve`'s
        `tool_choice`). The default opens a block and leaves the name to the model."""
        if name is not None:
            raise NotImplementedError(f"format {self.name!r} cannot force a named call")
        return TOOL_CALL_OPEN

    def render_tools(self, system: str, tools: list[dict[str, Any]]) -> str:
        """`system` followed by the tools' JSON schemas and how to call them (Qwen2.5's wording)."""
        lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
        return (
            f"{system}\n\n# Tools\n\nYou may call one or more functions to assist with the user "
            "query.\n\nYou are provided with function signatures within <tools></tools> XML tags:"
            f"\n<tools>\n{lines}\n</tools>\n\n{self.instruction}\n{self.example()}"
        )

    def parse(self, text: str, tools: list[dict[str, Any]] | None = None) -> Blocks:
        """A sampled turn -> content, (name, arguments) calls and errors (the block contract);
        `tools` (OpenAI format) type the XML formats' values."""
        schemas = tool_schemas_by_name(tools)
        return split_blocks(text, lambda body: self.parse_body(body, schemas))


def tool_schemas_by_name(tools: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """OpenAI-style tool list -> {name: parameters schema}."""
    out: dict[str, dict[str, Any]] = {}
    for tool in tools or []:
        fn = tool.get("function", tool)
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            out[fn["name"]] = fn.get("parameters") or {}
    return out


def _schema_types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    t = schema.get("type")
    types = {t} if isinstance(t, str) else set(t) if isinstance(t, list) else set()
    if "properties" in schema or "$ref" in schema:
        types.add("object")
    if "items" in schema:
        types.add("array")
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or []:
            types |= _schema_types(sub)
    return types


def coerce_value(raw: str, schema: Any) -> Any:
    """Type a textual argument value by its JSON schema; a value that does not parse stays text."""
    types = _schema_types(schema)
    if not types or (types <= {"string", "null"} and raw.strip() != "null"):
        return raw
    value = raw.strip()
    if "boolean" in types and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if "null" in types and value.lower() in ("null", "none"):
        return None
    if "integer" in types:
        try:
            return int(value)
        except ValueError:
            pass
    if "number" in types:
        try:
            f = float(value)
            return int(f) if f.is_integer() and "." not in value and "e" not in value.lower() else f
        except ValueError:
            pass
    if types & {"array", "object"}:
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            pass
    return raw


def value_text(value: Any) -> str:
    """An argument value as the XML formats write it: a string as is, anything else as JSON (the
    chat templates of Qwen3-Coder and GLM-4.5 do the same), so `coerce_value` reads it back."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
