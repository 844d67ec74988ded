"""`kwrl trial run`'s table of criteria (`kwrl.rollout.cli`)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from kwrl.rollout.cli import _criteria_table


def test_a_rationale_quoting_the_agent_prints_as_text_not_markup(tmp_path: Path) -> None:
    """A small model's answer held `[/.-]`; quoted in a rationale, rich read it as a closing tag
    and `kwrl trial run` crashed (MarkupError) after the trial was graded."""
    (tmp_path / "verifier").mkdir()
    (tmp_path / "result.json").write_text("{}")
    grade = {"verifier_id": "c1", "score": 0, "method": "machine", "criteria": "Says [b]42[/b]",
             "rationale": "the answer 'POR 120,[/.-] [red]' does not say 42"}  # fmt: skip
    (tmp_path / "verifier" / "grades.json").write_text(json.dumps({"grades": [grade]}))
    console = Console(record=True, width=200)
    console.print(_criteria_table(tmp_path, {"c1": 0.0}))
    out = console.export_text()
    assert "POR 120,[/.-] [red]' does not say 42" in out and "Says [b]42[/b]" in out
