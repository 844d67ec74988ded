"""Tool schemas for the model (envelope flattening), result rendering and truncation."""

from __future__ import annotations

import base64

from mcp_types import CallToolResult, ImageContent, TextContent, Tool

from kwrl.agent.tools import flatten_envelope, openai_tools, result_text, truncate_middle

ENVELOPED = {
    "type": "object",
    "properties": {"request": {"$ref": "#/$defs/ReadTabRequest"}},
    "required": ["request"],
    "$defs": {
        "ReadTabRequest": {
            "title": "ReadTabRequest",
            "type": "object",
            "properties": {"file_path": {"type": "string"}, "tab_index": {"type": "integer"}},
            "required": ["file_path"],
        }
    },
}


def test_an_envelope_argument_is_flattened_and_remembered_for_dispatch() -> None:
    flat_tool = Tool(name="excel_read_tab", input_schema=ENVELOPED)
    plain = {"type": "object", "properties": {"path": {"type": "string"}}}
    tools, wrappers = openai_tools(
        [flat_tool, Tool(name="fs_read", description="Read.", input_schema=plain)]
    )
    assert wrappers == {"excel_read_tab": "request"}
    params = tools[0]["function"]["parameters"]
    assert set(params["properties"]) == {"file_path", "tab_index"}
    assert params["required"] == ["file_path"] and "title" not in params
    assert tools[1]["function"] == {"name": "fs_read", "description": "Read.", "parameters": plain}


def test_single_scalar_or_other_named_arguments_are_not_envelopes() -> None:
    scalar = {"type": "object", "properties": {"input": {"type": "string"}}}
    other = {"type": "object", "properties": {"payload": {"type": "object", "properties": {}}}}
    assert flatten_envelope(scalar) == (scalar, None)
    assert flatten_envelope(other) == (other, None)


def test_results_render_text_and_name_images() -> None:
    png = base64.b64encode(b"\x89PNG" + b"0" * 96).decode()
    result = CallToolResult(
        content=[
            TextContent(type="text", text="a"),
            ImageContent(type="image", data=png, mime_type="image/png"),
        ]
    )
    text = result_text(result)
    assert text.startswith("a\n[image image/png, 100 bytes")
    structured = CallToolResult(content=[], structured_content={"x": 1})
    assert result_text(structured) == '{"x": 1}'


def test_truncation_keeps_head_and_tail_within_the_budget() -> None:
    text = "H" * 1000 + "M" * 5000 + "T" * 1000
    out = truncate_middle(text, 3000)
    assert out.startswith("H" * 1000) and out.endswith("T" * 1000)
    assert "[... 4000 characters truncated ...]" in out
    assert truncate_middle("short", 3000) == "short"
    assert truncate_middle(text, 0) == text
