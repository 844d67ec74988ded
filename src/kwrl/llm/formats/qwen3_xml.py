"""The Qwen3-Coder / Qwen3.5 XML tool-call format:
`<tool_call><function=NAME><parameter=KEY>VALUE</parameter>...</function></tool_call>`.

Rendered as Qwen3-Coder's chat template writes it (each tag on its own line, one newline inside a
parameter's tags); parsed leniently as vLLM's qwen3_coder parser does (a parameter or function
left unclosed ends at the next one or at the block's end; one newline at each end of a value is
the template's, not the value's). Values are typed by the tool's schema (`coerce_value`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kwrl.llm.formats.base import Schemas, ToolCallFormat, coerce_value, value_text
from kwrl.llm.formats.blocks import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

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


class Qwen3Xml(ToolCallFormat):
    """`<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>`."""

    name = "qwen3_xml"
    aliases = ("qwen3_coder",)
    instruction = "For each function call, reply in the following format:"

    def example(self, noun: str = "function") -> str:
        return (
            f"{TOOL_CALL_OPEN}\n<function=<{noun}-name>>\n<parameter=<parameter-name>>\n"
            f"<value>\n</parameter>\n</function>\n{TOOL_CALL_CLOSE}"
        )

    def render_call(self, name: str, arguments: Mapping[str, Any]) -> str:
        params = "".join(
            f"<parameter={k}>\n{value_text(v)}\n</parameter>\n" for k, v in arguments.items()
        )
        return f"{TOOL_CALL_OPEN}\n<function={name}>\n{params}</function>\n{TOOL_CALL_CLOSE}"

    def call_prefix(self, name: str | None = None) -> str:
        return f"{TOOL_CALL_OPEN}\n<function=" + ("" if name is None else f"{name}>\n")

    def parse_body(self, body: str, schemas: Schemas) -> tuple[str, dict[str, Any]]:
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
