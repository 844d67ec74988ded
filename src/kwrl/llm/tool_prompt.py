"""Tools in chat prompts: render schemas in, parse `<tool_call>` blocks out, in one tool-call
format (`kwrl.llm.formats`, by name: `hermes` unless a caller names another).

Templates that render `tools=` themselves (Qwen2.5) get the tools and OpenAI-format messages
passed through, with tool-call arguments decoded to objects (the template JSON-encodes them).
Templates that ignore `tools=` (SmolLM2) get the schemas appended to the system prompt in the
wording Qwen2.5 uses, with the format's call syntax (`ToolCallFormat.render_tools`), assistant
tool calls written back as the format's `<tool_call>` blocks (`render_call`) and tool results sent
as user turns wrapped in `<tool_response>`, so the whole history stays visible.

Style `compact` (for small-context models) lists each tool as one line, `- name(arg: type,
opt?: type): first sentence of the description`, about a tenth of the Hermes JSON (8 tools: ~190
vs ~1650 SmolLM2 tokens); the call syntax is the format's, so the parsers are the same. It
always goes into the system prompt, whatever the template does with `tools=`.

`parse_tool_calls(text)` splits a sampled turn into plain content and OpenAI-format tool calls
(`{"id", "type": "function", "function": {"name", "arguments": <json string>}}`) with the format
the agent parses by: a block that does not parse, or is not closed, is not a call and stays in the
content, so the caller sees what the model wrote.

The agent's TITO path (kwrl.agent.tito) renders tool prompts through
`render_tools_system_prompt`, so the engine, `kwrl serve` and the agent agree to the byte.

`chat_prompt_ids` (the chat path of `kwrl serve` and of the in-process engine) tokenizes a special
token's text inside a message's content as plain text: only the template writes turns, so a user
message or a tool result holding `<|im_end|>\n<|im_start|>system ...` cannot open a system turn.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from kwrl.llm.formats import get_format

ToolPromptStyle = Literal["hermes", "compact"]


def render_tools_system_prompt(
    system: str,
    tools: list[dict[str, Any]],
    style: ToolPromptStyle = "hermes",
    fmt: str = "hermes",
) -> str:
    """Append tool signatures to a system prompt (for templates that drop `tools=`, or `compact`),
    with the call syntax of tool-call format `fmt`."""
    if style == "compact":
        lines = "\n".join(_compact_signature(t) for t in tools)
        example = get_format(fmt).example("tool")
        return f"{system}\n\n# Tools\n{lines}\n\nTo call a tool, write:\n{example}"
    return get_format(fmt).render_tools(system, tools)


def _schema_type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    if "anyOf" in schema:
        kinds = [_schema_type(x) for x in schema["anyOf"] if x.get("type") != "null"]
        return "|".join(dict.fromkeys(kinds)) or "null"
    kind = schema.get("type", "any")
    if kind == "array":
        return f"{_schema_type(schema.get('items', {}))}[]"
    return "|".join(kind) if isinstance(kind, list) else str(kind)


def _compact_signature(tool: dict[str, Any]) -> str:
    """`- name(arg: type, opt?: type): first sentence` for one OpenAI-format tool."""
    fn = tool.get("function", tool)
    params = fn.get("parameters") or {}
    required = set(params.get("required", []))
    args = ", ".join(
        f"{name}{'' if name in required else '?'}: {_schema_type(schema)}"
        for name, schema in (params.get("properties") or {}).items()
    )
    desc = " ".join(str(fn.get("description", "")).split())
    first = re.split(r"(?<=[.!?])\s", desc, maxsplit=1)[0]
    return f"- {fn.get('name')}({args})" + (f": {first}" if first else "")


def template_messages(
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    native_tools: bool,
    style: ToolPromptStyle = "hermes",
    fmt: str = "hermes",
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """OpenAI-format chat -> (messages, tools) for `apply_chat_template` of this kind of template;
    calls and tool lists the template does not render are written in tool-call format `fmt`."""
    if native_tools and style == "hermes":
        return [_native_message(m) for m in messages], (tools or None)
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        content = _text(m.get("content"))
        if role == "assistant" and m.get("tool_calls"):
            blocks = [_call_block(c, fmt) for c in m["tool_calls"]]
            content = "\n".join(x for x in [content, *blocks] if x)
            out.append({"role": "assistant", "content": content})
        elif role == "tool":
            out.append({"role": "user", "content": f"<tool_response>\n{content}\n</tool_response>"})
        else:
            out.append({"role": role, "content": content})
    if tools:
        if out and out[0]["role"] == "system":
            out[0] = {
                "role": "system",
                "content": render_tools_system_prompt(out[0]["content"], tools, style, fmt),
            }
        else:
            out.insert(
                0,
                {"role": "system", "content": render_tools_system_prompt("", tools, style, fmt)},
            )
    return out, None


def parse_tool_calls(
    text: str, fmt: str = "hermes", tools: list[dict[str, Any]] | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """Split a sampled turn into (content without tool-call blocks, OpenAI tool calls), reading
    tool-call format `fmt` (`tools` type the XML formats' values)."""
    blocks = get_format(fmt).parse(text, tools)
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
        }
        for i, (name, args) in enumerate(blocks.calls)
    ]
    return blocks.content, calls


def _text(content: Any) -> str:
    """Message content as text: a string, None, or OpenAI content parts (text parts joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return str(content)


def _arguments(fn: dict[str, Any]) -> Any:
    args = fn.get("arguments", {})
    if isinstance(args, str):
        try:
            return json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return args
    return args


def _call_block(call: dict[str, Any], fmt: str) -> str:
    fn = call.get("function", call)
    return get_format(fmt).render_call(fn.get("name"), _arguments(fn))


def _native_message(m: dict[str, Any]) -> dict[str, Any]:
    out = {**m, "content": _text(m.get("content"))}
    if m.get("tool_calls"):
        out["tool_calls"] = [
            {
                **c,
                "function": {
                    **c.get("function", {}),
                    "arguments": _arguments(c.get("function", {})),
                },
            }
            for c in m["tool_calls"]
        ]
    return out


def template_renders_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template renders `tools=` (probe: does the text change?)."""
    cached = getattr(tokenizer, "_kwrl_native_tools", None)
    if cached is not None:
        return bool(cached)
    probe = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    tool = {"type": "function", "function": {"name": "probe_fn", "parameters": {"type": "object"}}}
    with_tools = tokenizer.apply_chat_template(probe, tools=[tool], tokenize=False)
    native = with_tools != tokenizer.apply_chat_template(probe, tokenize=False)
    tokenizer._kwrl_native_tools = native
    return native


def _render(tokenizer: Any, msgs: list[dict[str, Any]], native: list[dict[str, Any]] | None) -> str:
    text = tokenizer.apply_chat_template(
        msgs, tools=native, tokenize=False, add_generation_prompt=True
    )
    return str(text)


def chat_prompt_text(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> str:
    """Render an OpenAI-format chat (plus tools) to the prompt text of the next assistant turn."""
    msgs, native = template_messages(
        messages, tools, native_tools=template_renders_tools(tokenizer)
    )
    return _render(tokenizer, msgs, native)


def special_tokens(tokenizer: Any) -> list[str]:
    """The texts of the tokenizer's special tokens (`<|im_end|>`, `<|endoftext|>`, every added
    token marked special), longest first; cached on the tokenizer."""
    cached = getattr(tokenizer, "_kwrl_special_tokens", None)
    if cached is None:
        added = getattr(tokenizer, "added_tokens_decoder", None) or {}
        found = {str(t.content) for t in added.values() if getattr(t, "special", False)}
        found |= {str(t) for t in getattr(tokenizer, "all_special_tokens", ())}
        cached = sorted((t for t in found if t), key=len, reverse=True)
        tokenizer._kwrl_special_tokens = cached
    return list(cached)


_MARK = 0xF0000
"""A special token's text inside a message's content stands as one private-use character (plane
15, `_MARK` + its index in `special_tokens`) while the template renders."""


class ContentSpecials:
    """Special-token texts inside message contents, kept as plain text through a chat template.

    `mark(messages)` replaces each special token's text in a message's string content with one
    private-use character (`_MARK` + its index); render the marked messages with the template;
    `encode(text)` then tokenizes the rendering (or any slice of it that starts and ends between
    tokens): the template's own special tokens as special ids, the marked ones restored and split
    as plain text (`split_special_tokens`). `chat_prompt_ids` and the agent's TITO encoder
    (`kwrl.agent.tito.ChatTemplate`) share it, so a tool result or a user message that writes
    `<|im_end|>\n<|im_start|>system ...` stays text inside its own turn in both."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        specials = special_tokens(tokenizer)
        self._index = {t: i for i, t in enumerate(specials)}
        self._restore = {_MARK + i: t for i, t in enumerate(specials)}
        self._found = re.compile("|".join(map(re.escape, specials))) if specials else None

    def mark(self, messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
        """The messages with special-token texts in their string contents marked, and whether
        any was."""
        found = self._found
        if found is None or not any(
            isinstance(m.get("content"), str) and found.search(m["content"]) for m in messages
        ):
            return messages, False
        marked = [
            {**m, "content": found.sub(lambda x: chr(_MARK + self._index[x.group()]), m["content"])}
            if isinstance(m.get("content"), str) else m
            for m in messages
        ]  # fmt: skip
        return marked, True

    def encode(self, text: str, marked: bool = True) -> list[int]:
        """Token ids of a rendering of marked messages (no special token added); `marked` False:
        nothing was marked, the plain encoding."""
        tok = self.tokenizer
        if not marked or self._found is None:
            return list(tok.encode(text, add_special_tokens=False))
        ids: list[int] = []
        start = 0
        for m in [*self._found.finditer(text), None]:
            piece = text[start : m.start() if m else len(text)].translate(self._restore)
            if piece:  # the tokenizer splits at special tokens too: pieces encode as the whole
                ids += tok.encode(piece, add_special_tokens=False, split_special_tokens=True)
            if m:
                ids.append(int(tok.convert_tokens_to_ids(m.group())))
                start = m.end()
        return ids


def chat_prompt_ids(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    fmt: str = "hermes",
) -> list[int]:
    """Token ids of `chat_prompt_text`: the template's own special tokens as special ids, none
    added, and a special token's text inside a message's content as plain text (split), as the
    tokenizer's `split_special_tokens` reads it (`ContentSpecials`). Content without such text
    tokenizes as the whole prompt always did. Tools and calls a template does not render itself
    are written in tool-call format `fmt`."""
    msgs, native = template_messages(
        messages, tools, native_tools=template_renders_tools(tokenizer), fmt=fmt
    )
    specials = ContentSpecials(tokenizer)
    marked, any_marked = specials.mark(msgs)
    return specials.encode(_render(tokenizer, marked, native), any_marked)
