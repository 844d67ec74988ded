"""Tool-call parsers: the raw text a policy sampled -> (visible content, tool calls, errors).

A token policy returns text, not structured calls, so the agent parses the call format the model
was trained on. Three formats are supported, one class each, in the `PARSERS` registry:

- `hermes` (alias `qwen`): Hermes / Qwen2.5 / Qwen3 `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.
- `qwen3_xml` (alias `qwen3_coder`): `<tool_call><function=NAME><parameter=KEY>VALUE</parameter>...
  </function></tool_call>` (Qwen3-Coder, Qwen3.5).
- `glm4` (aliases `glm45`, `glm47`): `<tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>
  ...</tool_call>` (GLM 4.5-4.7).

Contract: `parse(text, tools)` never raises, and splits blocks by `kwrl.llm.formats.blocks`'s rule
(shared with the engine's chat path and `kwrl serve`): a block that cannot be parsed (bad JSON, no
closing tag, no function name) is reported in `ParseResult.errors`, is not a call and stays in the
content as written; the loop answers it with a corrective message. The Hermes format itself
(rendering and parsing) is `kwrl.llm.formats.hermes`. The XML formats carry every value as text, so values are typed from
the tool's JSON schema (integers, numbers, booleans, arrays, objects); without a schema they stay
strings, as vLLM's parsers do. Reasoning (`<think>...</think>`) is split off before parsing, so a
call written while thinking is not run.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kwrl.llm.formats import hermes
from kwrl.llm.formats.blocks import split_blocks

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


class ToolCallParser(ABC):
    """Parses one model family's tool-call syntax out of sampled text."""

    name: ClassVar[str]

    def parse(self, text: str, tools: list[dict[str, Any]] | None = None) -> ParseResult:
        reasoning, visible = split_reasoning(text)
        schemas = tool_schemas_by_name(tools)
        blocks = split_blocks(visible, lambda body: self.parse_block(body, schemas))
        calls = [
            ParsedToolCall(id=f"call_{i}", name=name, arguments=args)
            for i, (name, args) in enumerate(blocks.calls)
        ]
        return ParseResult(blocks.content, calls, blocks.errors, reasoning)

    @abstractmethod
    def parse_block(
        self, body: str, schemas: dict[str, dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        """The text between the tags -> (name, arguments); raise ValueError with a short reason."""


class HermesParser(ToolCallParser):
    """`<tool_call>{"name": "x", "arguments": {...}}</tool_call>` (arguments may be a JSON string)."""

    name = "hermes"

    def parse_block(
        self, body: str, schemas: dict[str, dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        return hermes.parse_body(body)


_FUNCTION_RE = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|$)", re.DOTALL)
_PARAMETER_RE = re.compile(
    r"<parameter=([^>\s]+)>(.*?)(?:</parameter>|(?=<parameter=)|$)", re.DOTALL
)


def _strip_one_newline(value: str) -> str:
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


class Qwen3XmlParser(ToolCallParser):
    """`<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>`."""

    name = "qwen3_xml"

    def parse_block(
        self, body: str, schemas: dict[str, dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        m = _FUNCTION_RE.search(body)
        if m is None:
            raise ValueError(f"no <function=NAME> inside the block: {body.strip()[:80]!r}")
        name, inner = m.group(1).strip(), m.group(2)
        props = schemas.get(name, {}).get("properties") or {}
        args: dict[str, Any] = {}
        for p in _PARAMETER_RE.finditer(inner):
            key = p.group(1).strip()
            args[key] = coerce_value(_strip_one_newline(p.group(2)), props.get(key))
        return name, args


_ARG_RE = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)


class Glm4Parser(ToolCallParser):
    """`<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...</tool_call>` (GLM 4.5-4.7)."""

    name = "glm4"

    def parse_block(
        self, body: str, schemas: dict[str, dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        name = body.split("<arg_key>", 1)[0].strip()
        if not name or any(c in name for c in "<>{}\n "):
            raise ValueError(f"no function name before the arguments: {body.strip()[:80]!r}")
        props = schemas.get(name, {}).get("properties") or {}
        args: dict[str, Any] = {}
        rest = body[len(body.split("<arg_key>", 1)[0]) :]
        for m in _ARG_RE.finditer(rest):
            key = m.group(1).strip()
            args[key] = coerce_value(m.group(2), props.get(key))
        if rest.count("<arg_key>") != len(args):
            raise ValueError(f"unbalanced <arg_key>/<arg_value> pairs in the call to {name}")
        return name, args


PARSERS: dict[str, type[ToolCallParser]] = {
    "hermes": HermesParser,
    "qwen": HermesParser,
    "qwen25": HermesParser,
    "qwen3_xml": Qwen3XmlParser,
    "qwen3_coder": Qwen3XmlParser,
    "glm4": Glm4Parser,
    "glm45": Glm4Parser,
    "glm47": Glm4Parser,
}


def build_parser(name: str) -> ToolCallParser:
    try:
        return PARSERS[name]()
    except KeyError:
        raise ValueError(
            f"unknown tool-call parser {name!r}; choose one of {sorted(PARSERS)}"
        ) from None
