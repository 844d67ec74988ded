"""The Hermes tool-call format (Qwen2.5, SmolLM2): `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.

`render_tools` lists the tools in a system prompt (Qwen2.5's wording, for templates that drop
`tools=`); `render_call` writes a call the way the agent's history, SFT's gold turns and the chat
templates that ignore `tools=` show it (the tags on their own lines around compact JSON,
non-ASCII kept); `parse_body` reads one block's JSON (arguments may also be a JSON string, or come
as `parameters`; missing, empty or null arguments are `{}`). The format of the engine's chat path
and `kwrl serve` by default.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kwrl.llm.formats.base import Schemas, ToolCallFormat
from kwrl.llm.formats.blocks import TOOL_CALL_CLOSE, TOOL_CALL_OPEN


class Hermes(ToolCallFormat):
    """`<tool_call>{"name": "x", "arguments": {...}}</tool_call>` (arguments may be a JSON string)."""

    name = "hermes"
    aliases = ("qwen", "qwen25")
    instruction = (
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:"
    )

    def example(self, noun: str = "function") -> str:
        return (
            f'{TOOL_CALL_OPEN}\n{{"name": <{noun}-name>, "arguments": <args-json-object>}}\n'
            f"{TOOL_CALL_CLOSE}"
        )

    def render_call(self, name: str, arguments: Mapping[str, Any]) -> str:
        body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
        return f"{TOOL_CALL_OPEN}\n{body}\n{TOOL_CALL_CLOSE}"

    def call_prefix(self, name: str | None = None) -> str:
        if name is None:
            return f'{TOOL_CALL_OPEN}\n{{"name": "'
        return f'{TOOL_CALL_OPEN}\n{{"name": {json.dumps(name, ensure_ascii=False)}, "arguments": '

    def parse_body(self, body: str, schemas: Schemas) -> tuple[str, dict[str, Any]]:
        try:
            obj = json.loads(body.strip())
        except json.JSONDecodeError as e:
            raise ValueError(
                f"invalid JSON ({e.msg} at char {e.pos}): {body.strip()[:80]!r}"
            ) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
            raise ValueError('expected an object {"name": ..., "arguments": {...}}')
        args = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError:
                raise ValueError(f"arguments of {obj['name']} are not a JSON object") from None
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ValueError(
                f"arguments of {obj['name']} must be an object, got {type(args).__name__}"
            )
        return obj["name"], args
