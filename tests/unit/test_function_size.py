"""No function in src/kwrl is longer than 150 lines: a longer one is split along its seams (a table
of per-case functions, a small shared context) before it lands. The rule is read statically (ast),
and the checker is shown a function it must flag."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "kwrl"
MAX_LINES = 150


def long_functions(source: str, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """(name, lines) of every function or method in `source` longer than `limit` lines."""
    return [
        (n.name, n.end_lineno - n.lineno + 1)
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and n.end_lineno is not None
        and n.end_lineno - n.lineno + 1 > limit
    ]


def test_the_checker_flags_a_long_function_and_passes_a_short_one() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    assert long_functions(f"def long():\n{body}\n") == [("long", MAX_LINES + 1)]
    assert long_functions("async def short():\n    return 1\n") == []


def test_no_function_in_src_is_longer_than_150_lines() -> None:
    found = [
        f"{p.relative_to(SRC)}:{name} ({n} lines)"
        for p in sorted(SRC.rglob("*.py"))
        for name, n in long_functions(p.read_text(encoding="utf-8"))
    ]
    assert not found, found
