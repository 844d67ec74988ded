"""The Hermes tool-call format (Qwen2.5, SmolLM2): `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.

`render_tools` lists the tools in a system prompt (Qwen2.5's wording, for templates that drop
`tools=`); `render_call` writes a call the way the agent's history, SFT's gold turns and the chat templates
that ignore `tools=` show it; `parse_body` reads one block's JSON (arguments may also be a JSON
string, or come as `parameters`; missing, empty or null arguments are `{}`); `parse` splits a
sampled turn by the block contract of `kwrl.llm.formats.blocks` (a block that does not parse or
is not closed is an error, not a call, and stays in the content).
"""

from __future__ import annotations

import json
from typing import Any

from kwrl.llm.formats.blocks import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, Blocks, split_blocks


def render_tools(system: str, tools: list[dict[str, Any]]) -> str:
    """`system` followed by the tools' JSON schemas and the call format, in Qwen2.5's wording."""
    lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    return (
        f"{system}\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        f"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{lines}\n"
        "</tools>\n\nFor each function call, return a json object with function name and arguments "
        f"within <tool_call></tool_call> XML tags:\n{TOOL_CALL_OPEN}\n"
        f'{{"name": <function-name>, "arguments": <args-json-object>}}\n{TOOL_CALL_CLOSE}'
    )


def render_call(name: Any, arguments: Any) -> str:
    """One call as a block: the tags on their own lines around compact JSON (non-ASCII kept)."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"{TOOL_CALL_OPEN}\n{body}\n{TOOL_CALL_CLOSE}"


def parse_body(body: str) -> tuple[str, dict[str, Any]]:
    """The JSON between the tags -> (name, arguments); ValueError with a short reason."""
    try:
        obj = json.loads(body.strip())
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON ({e.msg} at char {e.pos}): {body.strip()[:80]!r}") from None
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
        raise ValueError(f"arguments of {obj['name']} must be an object, got {type(args).__name__}")
    return obj["name"], args


def parse(text: str) -> Blocks:
    """A sampled turn -> content, (name, arguments) calls and errors."""
    return split_blocks(text, parse_body)
