"""kwrl's imports run one way: no cycle between modules, no arrow against docs/architecture.md.

The graph is read statically (ast) from src/kwrl. A module-level import and one inside a function
both count: a deferred import is still an arrow, and hiding a cycle in a function is how cycles
creep in. Imports under `if TYPE_CHECKING:` never run, yet they count too: a type-only cycle
still ties two modules together (the cure is the same: a small record one file down).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

# Folder ranks (docs/architecture.md): a folder imports only folders of a lower rank.
# tasks, llm <- synth, worlds <- sandbox, grading <- agent <- rollout <- eval <- train
RANK = {
    "tasks": 0,
    "llm": 0,
    "synth": 1,
    "worlds": 1,
    "sandbox": 2,
    "grading": 2,
    "agent": 3,
    "rollout": 4,
    "eval": 5,
    "train": 6,
}
# grading reads tasks (the world's data layout, kwrl.tasks.layout, among them) and the judge's
# endpoint spec, nothing else.
GRADING_MAY_IMPORT = {"tasks", "llm"}
# Arrows across same-rank folders that are allowed by name: the adversarial kit attacks the
# sandbox and the grader alike, so its judge attacks are graded by the grader's loopback judge.
ALLOWED = {("kwrl.sandbox.conformance.testing", "kwrl.grading.judges.loopback")}
# Modules of no folder that every folder may import (they import no folder).
BASE = {
    "kwrl", "kwrl.cli_config", "kwrl.config", "kwrl.errors", "kwrl.io", "kwrl.net", "kwrl.progress"
}  # fmt: skip
TOP = "kwrl.cli"  # the command table imports every stage (by name, through importlib)


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for path in (SRC / "kwrl").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return mods


MODULES = _modules()


def _targets(name: str, is_pkg: bool, node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = name.split(".")[: len(name.split(".")) + is_pkg - node.level]
            mod = ".".join([*base, *([node.module] if node.module else [])])
        else:
            mod = node.module or ""
        subs = [f"{mod}.{a.name}" for a in node.names]
        # `from PKG import MODULE` names the module; PKG itself only for its own attributes.
        names = [*subs, *([mod] if any(s not in MODULES for s in subs) else [])]
    return {n for n in names if n in MODULES and n != name}


def _imports(name: str, path: Path, is_pkg: bool) -> dict[str, bool]:
    """What `name` imports -> whether that import runs (is not under `if TYPE_CHECKING:`)."""
    out: dict[str, bool] = {}
    todo: list[tuple[ast.AST, bool]] = [(ast.parse(path.read_text(), str(path)), True)]
    while todo:
        node, runs = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            for t in _targets(name, is_pkg, node):
                out[t] = out.get(t, False) or runs
        type_only = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        todo.extend((child, runs and not type_only) for child in ast.iter_child_nodes(node))
    return out


GRAPH = {name: _imports(name, path, is_pkg) for name, (path, is_pkg) in MODULES.items()}


def _folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else None


def test_the_graph_sees_kwrls_modules_and_their_imports() -> None:
    assert {"kwrl.eval.run", "kwrl.sandbox.local", "kwrl.train.local.trainer"} <= set(GRAPH)
    assert GRAPH["kwrl.eval.report"]["kwrl.eval.run"] is True
    assert set(MODULES) - BASE - {TOP} == {m for m in MODULES if _folder(m)}


def test_no_import_cycles() -> None:
    runs = {m: list(out) for m, out in GRAPH.items()}  # type-only imports included
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def strongconnect(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in runs[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in runs:
        if v not in index:
            strongconnect(v)
    assert cycles == [], f"import cycles (move the shared helper one file down): {cycles}"


def test_imports_run_down_the_architecture() -> None:
    upward = []
    for module, out in GRAPH.items():
        src = _folder(module)
        for target in out:
            dst = _folder(target)
            if module == TOP or target in BASE or dst == src or (module, target) in ALLOWED:
                continue
            if module in BASE or target == TOP or src is None or dst is None:
                upward.append(f"{module} -> {target}")
            elif src == "grading":
                if dst not in GRADING_MAY_IMPORT and target not in GRADING_MAY_IMPORT:
                    upward.append(f"{module} -> {target}")
            elif RANK[dst] >= RANK[src]:
                upward.append(f"{module} -> {target}")
    assert upward == [], "imports against docs/architecture.md's direction:\n" + "\n".join(upward)
