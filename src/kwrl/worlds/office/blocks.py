"""Content blocks: the document body a create tool receives (word create_document, pdfs create_pdf).

A model may pass either a list of typed blocks (Archipelago's shape:
`{"type": "heading", "text": "Summary", "level": 1}`, `{"type": "bullet_list", "items": [...]}`,
`{"type": "table", "rows": [[...], ...], "header": true}`, `{"type": "paragraph", "text": ...}`,
`{"type": "numbered_list", "items": [...]}`, `{"type": "page_break"}`) or one markdown-ish string:
`#`..`####` headings, `-`/`*` bullets, `1.` numbered items, `|a|b|` table rows (a `|---|` rule
line is skipped; the first row is the header), every other non-empty line a paragraph.
`parse_content` turns both into the same validated block list, so writers handle one shape.
Inside text, `**bold**` and `*italic*` become formatted runs (`inline_runs`).
"""

from __future__ import annotations

import re
from typing import Any, Literal, NotRequired, TypedDict

from fastmcp.exceptions import ToolError

BlockType = Literal["paragraph", "heading", "bullet_list", "numbered_list", "table", "page_break"]


class Block(TypedDict):
    """One block of document content; which keys matter depends on `type`."""

    type: BlockType
    text: NotRequired[str]
    """paragraph / heading text; **bold** and *italic* are honoured."""
    level: NotRequired[int]
    """heading level 1-4 (default 1)."""
    items: NotRequired[list[str]]
    """bullet_list / numbered_list items."""
    rows: NotRequired[list[list[Any]]]
    """table rows (all the same length)."""
    header: NotRequired[bool]
    """table: bold the first row (default true)."""
    style: NotRequired[str]
    """paragraph: a named style of the target format (e.g. 'Quote'), optional."""


_BLOCK_TYPES = (
    "paragraph", "heading", "bullet_list", "numbered_list", "table", "page_break", "section_break",
)  # fmt: skip
_NUMBERED = re.compile(r"^\d+[.)]\s+")
_RULE = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?$")


def _split_row(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in inner.split("|")]


def parse_markdown(text: str) -> list[Block]:
    blocks: list[Block] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        s = line.strip()
        if not s:
            continue
        last = blocks[-1] if blocks else None
        if s.startswith("|"):
            if _RULE.match(s):
                continue
            row = _split_row(s)
            if last is not None and last["type"] == "table":
                last.setdefault("rows", []).append(row)
            else:
                blocks.append({"type": "table", "rows": [row], "header": True})
        elif m := re.match(r"^(#{1,6})\s+(.*)$", s):
            blocks.append(
                {"type": "heading", "text": m.group(2).strip(), "level": min(len(m.group(1)), 4)}
            )
        elif s[:2] in ("- ", "* ", "• "):
            item = s[2:].strip()
            if last is not None and last["type"] == "bullet_list":
                last.setdefault("items", []).append(item)
            else:
                blocks.append({"type": "bullet_list", "items": [item]})
        elif m := _NUMBERED.match(s):
            item = s[m.end() :].strip()
            if last is not None and last["type"] == "numbered_list":
                last.setdefault("items", []).append(item)
            else:
                blocks.append({"type": "numbered_list", "items": [item]})
        else:
            blocks.append({"type": "paragraph", "text": s})
    for b in blocks:
        if b["type"] == "table":
            rows = b.get("rows", [])
            width = max(len(r) for r in rows)
            b["rows"] = [r + [""] * (width - len(r)) for r in rows]
    return blocks


def parse_content(
    content: str | list[Block] | list[dict[str, Any]], *, arg: str = "content"
) -> list[Block]:
    """Validate `content` (blocks or markdown-ish text) into a non-empty block list."""
    if isinstance(content, str):
        blocks = parse_markdown(content)
    else:
        blocks = []
        for i, raw in enumerate(content):
            b: dict[str, Any] = dict(raw)
            t = b.get("type")
            if t not in _BLOCK_TYPES:
                raise ToolError(
                    f"{arg}[{i}].type must be one of {', '.join(_BLOCK_TYPES)}; got {t!r}"
                )
            if t in ("paragraph", "heading") and not isinstance(b.get("text"), str):
                raise ToolError(f"{arg}[{i}] ({t}) needs a 'text' string")
            if t == "heading":
                level = b.get("level", 1)
                if not isinstance(level, int) or not 1 <= level <= 4:
                    raise ToolError(f"{arg}[{i}].level must be an integer 1-4; got {level!r}")
            if t in ("bullet_list", "numbered_list"):
                items = b.get("items")
                if not isinstance(items, list) or not items:
                    raise ToolError(f"{arg}[{i}] ({t}) needs a non-empty 'items' list of strings")
                b["items"] = [str(x) for x in items]
            if t == "table":
                rows = b.get("rows")
                if (
                    not isinstance(rows, list)
                    or not rows
                    or not all(isinstance(r, list) and r for r in rows)
                ):
                    raise ToolError(
                        f"{arg}[{i}] (table) needs 'rows': a non-empty list of non-empty lists"
                    )
                width = len(rows[0])
                for j, r in enumerate(rows):
                    if len(r) != width:
                        raise ToolError(
                            f"{arg}[{i}].rows[{j}] has {len(r)} cells; every row must have {width} like the first"
                        )
                b["rows"] = [["" if c is None else str(c) for c in r] for r in rows]
            blocks.append(b)  # type: ignore[arg-type]
    if not blocks:
        raise ToolError(f"{arg} is empty: pass a list of blocks or markdown-ish text")
    return blocks


_INLINE = re.compile(r"(\*\*[^*]+\*\*|\*[^*\s][^*]*\*)")


def inline_runs(text: str) -> list[tuple[str, bool, bool]]:
    """Split `text` into (text, bold, italic) runs on **bold** and *italic* markers."""
    runs: list[tuple[str, bool, bool]] = []
    for part in _INLINE.split(text):
        if not part:
            continue
        if part.startswith("**") and part.endswith("**") and len(part) > 4:
            runs.append((part[2:-2], True, False))
        elif part.startswith("*") and part.endswith("*") and len(part) > 2:
            runs.append((part[1:-1], False, True))
        else:
            runs.append((part, False, False))
    return runs or [("", False, False)]
