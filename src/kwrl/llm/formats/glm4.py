"""The GLM 4.5-4.7 tool-call format:
`<tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>...</tool_call>`.

Rendered as GLM-4.5's chat template writes it (the name, then each key and value on a line of
their own); parsed with any whitespace between the pairs. Values are typed by the tool's schema
(`coerce_value`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kwrl.llm.formats.base import Schemas, ToolCallFormat, coerce_value, value_text
from kwrl.llm.formats.blocks import TOOL_CALL_CLOSE, TOOL_CALL_OPEN

_ARG_RE = re.compile(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)


class Glm4(ToolCallFormat):
    """`<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...</tool_call>`."""

    name = "glm4"
    aliases = ("glm45", "glm47")
    instruction = (
        "For each function call, output the function name and arguments within the following "
        "XML format:"
    )

    def example(self, noun: str = "function") -> str:
        return (
            f"{TOOL_CALL_OPEN}<{noun}-name>\n<arg_key><arg-key-1></arg_key>\n"
            f"<arg_value><arg-value-1></arg_value>\n...\n{TOOL_CALL_CLOSE}"
        )

    def render_call(self, name: str, arguments: Mapping[str, Any]) -> str:
        pairs = "".join(
            f"<arg_key>{k}</arg_key>\n<arg_value>{value_text(v)}</arg_value>\n"
            for k, v in arguments.items()
        )
        return f"{TOOL_CALL_OPEN}{name}\n{pairs}{TOOL_CALL_CLOSE}"

    def call_prefix(self, name: str | None = None) -> str:
        return TOOL_CALL_OPEN + ("" if name is None else f"{name}\n")

    def parse_body(self, body: str, schemas: Schemas) -> tuple[str, dict[str, Any]]:
        head = body.split("<arg_key>", 1)[0]
        name = head.strip()
        if not name or any(c in name for c in "<>{}\n "):
            raise ValueError(f"no function name before the arguments: {body.strip()[:80]!r}")
        props = schemas.get(name, {}).get("properties") or {}
        args: dict[str, Any] = {}
        rest = body[len(head) :]
        for m in _ARG_RE.finditer(rest):
            key = m.group(1).strip()
            args[key] = coerce_value(m.group(2), props.get(key))
        if rest.count("<arg_key>") != len(args):
            raise ValueError(f"unbalanced <arg_key>/<arg_value> pairs in the call to {name}")
        return name, args
