"""The rollout boundary stays typed: what a rollout hands on is objects, not files read back,
dict keys or string prefixes.

- No module reads summary.json (`kwrl.rollout.runner.ROLLOUT_FILES`): `run_rollout` returns a
  `RolloutResult` and writes the file from it, for people and other processes.
- Only `kwrl/rollout/trial.py` builds or parses the `criterion/<id>` names (`criterion_key`,
  `trial_scores`).
- A `Trajectory` carries its trial's decision, raw reward and cause as fields, no `meta` dict.

Each rule is read statically (ast) from src/kwrl; each checker is shown the code it forbids.
"""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

from kwrl.train.batch import Trajectory

SRC = Path(__file__).resolve().parents[2] / "src" / "kwrl"
CRITERION_MODULE = SRC / "rollout" / "trial.py"
READERS = {"read_text", "read_bytes", "read_json", "load", "loads", "model_validate_json"}
"""Calls that read a file or its text (and the builtin `open`; `OutputDir.open` makes dirs)."""
SUMMARY = ("summary.json", "ROLLOUT_FILES")


def _modules() -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8")) for p in sorted(SRC.rglob("*.py"))]


def summary_reads(source: str) -> list[int]:
    """Lines of `source` that read summary.json (a read call whose text names it)."""
    out: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        text = ast.get_source_segment(source, node) or ""
        reads = name in READERS or (isinstance(f, ast.Name) and name == "open")
        if reads and any(s in text for s in SUMMARY):
            out.add(node.lineno)
    return sorted(out)


def criterion_literals(source: str) -> list[int]:
    """Lines of `source` whose code (docstrings aside) spells the `criterion/` prefix."""
    tree = ast.parse(source)
    docs = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
    }
    return [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and "criterion/" in n.value
        and id(n) not in docs
    ]


def test_the_checkers_find_what_they_forbid() -> None:
    before = 'summary = json.loads((out / "summary.json").read_text())\n'
    assert summary_reads(before) == [1]
    assert summary_reads("s = read_json(out / ROLLOUT_FILES[1])\n") == [1]
    assert summary_reads('with open(out / "summary.json") as f:\n    pass\n') == [1]
    assert summary_reads('write_json(out / "summary.json", s)\n') == []
    assert summary_reads("output.open(ROLLOUT_FILES)\n") == []
    assert criterion_literals('crit[f"criterion/{k}"].append(v)\n') == [1]
    assert criterion_literals('"""Scores as `criterion/<id>` keys."""\n') == []


def test_no_module_reads_the_rollout_summary_back() -> None:
    found = {str(p.relative_to(SRC)): lines for p, s in _modules() if (lines := summary_reads(s))}
    assert found == {}


def test_only_the_trial_module_spells_the_criterion_prefix() -> None:
    found = {
        str(p.relative_to(SRC)): lines
        for p, s in _modules()
        if p != CRITERION_MODULE and (lines := criterion_literals(s))
    }
    assert found == {}
    assert criterion_literals(CRITERION_MODULE.read_text(encoding="utf-8"))  # it is there


def test_a_trajectory_has_typed_fields_and_no_meta() -> None:
    names = {f.name for f in fields(Trajectory)}
    assert "meta" not in names
    assert {"trained", "raw_reward", "cause", "trial"} <= names
