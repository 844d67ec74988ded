"""`<tool_call>` blocks in sampled text -> (content, calls, errors), one contract for every format.

Contract (the agent, the engine's chat path and `kwrl serve` all follow it):

- A block opened by `<tool_call>` and closed by `</tool_call>` whose body the format parses is a
  call; its text (tags included) leaves the content.
- A block that does not parse, or that is never closed (a turn cut off mid-call), is not a call,
  even if what was written so far happens to parse: one message per such block goes to `errors`,
  and its text stays in the content verbatim, so whoever reads the content (a chat client, the
  agent's final answer, a corrective message) sees what the model wrote.
- Never raises; the content is stripped of surrounding whitespace.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
_BLOCK_RE = re.compile(re.escape(TOOL_CALL_OPEN) + r"(.*?)" + re.escape(TOOL_CALL_CLOSE), re.DOTALL)

BodyParser = Callable[[str], tuple[str, dict[str, Any]]]
"""The text between the tags -> (name, arguments); raises ValueError with a short reason."""


@dataclass
class Blocks:
    content: str
    """The text outside the blocks that became calls, stripped."""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(name, arguments) per call, in order."""
    errors: list[str] = field(default_factory=list)
    """One message per block that is not a call."""


def split_blocks(text: str, parse_body: BodyParser) -> Blocks:
    """Split `text` by the contract above."""
    calls: list[tuple[str, dict[str, Any]]] = []
    errors: list[str] = []
    pieces: list[str] = []
    pos = scanned = 0
    for m in _BLOCK_RE.finditer(text):
        scanned = m.end()
        try:
            call = parse_body(m.group(1))
        except ValueError as e:
            errors.append(f"tool call {len(calls) + len(errors) + 1}: {e}")
            continue
        pieces.append(text[pos : m.start()])
        pos = m.end()
        calls.append(call)
    if TOOL_CALL_OPEN in text[scanned:]:
        unclosed = text[scanned:].split(TOOL_CALL_OPEN, 1)[1]
        errors.append(
            f"tool call {len(calls) + len(errors) + 1}: {TOOL_CALL_OPEN} without "
            f"{TOOL_CALL_CLOSE} (cut off?): {unclosed[:80]!r}"
        )
    pieces.append(text[pos:])
    return Blocks("".join(pieces).strip(), calls, errors)
