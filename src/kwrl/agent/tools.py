"""The agent's side of MCP: tool schemas for the model, dispatch, and results as text.

- `openai_tools(mcp_tools)` turns MCP tool listings into OpenAI function schemas, flattening a
  single `input`/`request` envelope argument (RECIPE: the model sees flat arguments; the call is
  re-wrapped on dispatch). Already-flat tools pass through unchanged.
- `ToolSession` is the one interface the loop calls: `list_tools()` and `call_tool(name, args)`
  (the loop bounds each call with its own timeout). The world stage's `GatewayClient` (MCP over
  `http://.../mcp/` or `unix:///path.sock`) implements it; tests may pass any other.
- `result_text` renders a `CallToolResult` as text (images become a short note: the policies here
  read text only) and `truncate_middle` keeps the head and tail of a long result.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

import mcp_types as mt

ENVELOPE_KEYS = ("input", "request")


class ToolSession(Protocol):
    async def list_tools(self) -> list[mt.Tool]: ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> mt.CallToolResult: ...


def _resolve_ref(schema: Any, root: dict[str, Any]) -> Any:
    seen: set[str] = set()
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        if not ref.startswith("#/") or ref in seen:
            return schema
        seen.add(ref)
        node: Any = root
        for part in ref[2:].split("/"):
            if not isinstance(node, dict) or part not in node:
                return schema
            node = node[part]
        schema = node
    return schema


def flatten_envelope(schema: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """`(flat_schema, wrapper)`: a schema whose only property is an `input`/`request` object is
    replaced by that object's schema; `wrapper` names the key to re-wrap arguments under."""
    props = schema.get("properties") or {}
    if len(props) != 1:
        return schema, None
    ((key, sub),) = props.items()
    if key not in ENVELOPE_KEYS:
        return schema, None
    inner = _resolve_ref(sub, schema)
    if not isinstance(inner, dict) or not (inner.get("type") == "object" or "properties" in inner):
        return schema, None
    flat = {k: v for k, v in inner.items() if k not in ("title",)}
    flat.setdefault("type", "object")
    defs = schema.get("$defs")
    if defs and "$defs" not in flat:
        flat["$defs"] = defs
    return flat, key


def openai_tools(tools: list[mt.Tool]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """MCP tools -> (OpenAI function schemas, {tool name: envelope key to re-wrap under})."""
    out: list[dict[str, Any]] = []
    wrappers: dict[str, str] = {}
    for tool in tools:
        params, wrapper = flatten_envelope(dict(tool.input_schema or {"type": "object"}))
        if wrapper:
            wrappers[tool.name] = wrapper
        out.append(
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description or "",
                    "parameters": params,
                },
            }
        )
    return out, wrappers


def result_text(result: mt.CallToolResult) -> str:
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mt.TextContent):
            parts.append(block.text)
        elif isinstance(block, mt.ImageContent):
            size = len(block.data) * 3 // 4 - block.data[-2:].count("=")
            parts.append(f"[image {block.mime_type}, {size} bytes, not shown]")
        elif isinstance(block, mt.EmbeddedResource) and isinstance(
            block.resource, mt.TextResourceContents
        ):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{block.type} content not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the first 2/3 and the last 1/3 of `max_chars`, with a note of what was cut."""
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    head = max_chars * 2 // 3
    tail = max_chars - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters truncated ...]\n{text[len(text) - tail :]}"
