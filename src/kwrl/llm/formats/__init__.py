"""Tool-call formats: one module per format that both renders calls into text and parses them out,
and `FORMATS`, the one registry the agent (`AgentConfig.tool_call_parser`), SFT's gold turns and
the chat rendering of `kwrl.llm.tool_prompt` look a format up in by name.

Every format kwrl speaks wraps a call in `<tool_call>...</tool_call>`; `blocks` splits sampled
text into calls, errors and content with one contract for all of them (see its docstring); `base`
is the interface (`ToolCallFormat`) and the schema typing the XML formats share. `hermes` is the
JSON format (Qwen2.5, SmolLM2; the engine's chat path speaks it, and `kwrl serve` unless its
`--tool_call_parser` names another); `qwen3_xml` (Qwen3-Coder, Qwen3.5) and `glm4` (GLM 4.5-4.7)
are XML.
"""

from __future__ import annotations

from kwrl.llm.formats.base import ToolCallFormat
from kwrl.llm.formats.glm4 import Glm4
from kwrl.llm.formats.hermes import Hermes
from kwrl.llm.formats.qwen3_xml import Qwen3Xml

FORMATS: dict[str, ToolCallFormat] = {
    name: fmt for fmt in (Hermes(), Qwen3Xml(), Glm4()) for name in (fmt.name, *fmt.aliases)
}
"""Tool-call formats by name and alias.

To add one: `kwrl/llm/formats/<name>.py` with a `ToolCallFormat` subclass (`base.py`: `name`,
`aliases`, `instruction`, `example`, `render_call`, `parse_body`, splitting by `blocks.py`'s
contract through the inherited `parse`), and an instance in the tuple above. Nothing else
changes: `--agent.tool_call_parser NAME` selects it for the agent's parsing, its tool prompt and
SFT's gold turns. Tests: tests/unit/llm/formats/test_formats.py renders then parses every
registered format (add a case of the format's own syntax beside it there or in
tests/unit/agent/test_parsers.py). docs/extending.md lists every extension point."""


def get_format(name: str) -> ToolCallFormat:
    """The format registered as `name`; a ValueError naming the known ones otherwise."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(
            f"unknown tool-call format {name!r}; choose one of {sorted(FORMATS)}"
        ) from None
