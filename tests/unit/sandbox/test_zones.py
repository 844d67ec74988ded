"""The sandbox room stays zoned: a few shared modules at its top, each zone a package that says
what it owns, and nothing outside the room reaching into an environment's package."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import kwrl
import kwrl.sandbox

SRC = Path(kwrl.__file__).parent
ROOM = Path(kwrl.sandbox.__file__).parent
ZONES = ("local", "docker", "gateway", "network", "conformance")
ENVIRONMENTS = ("kwrl.sandbox.local", "kwrl.sandbox.docker")


def test_at_most_eight_modules_at_the_top() -> None:
    top = sorted(p.name for p in ROOM.glob("*.py"))
    assert len(top) <= 8, top


def test_every_zone_is_a_package_that_says_what_it_owns() -> None:
    found = sorted(p.parent.name for p in ROOM.glob("*/__init__.py"))
    assert sorted(ZONES) == found
    for zone in ZONES:
        doc = importlib.import_module(f"kwrl.sandbox.{zone}").__doc__ or ""
        assert len(doc.split()) >= 20, f"kwrl.sandbox.{zone} has no docstring saying what it owns"


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
    return names


def test_callers_outside_the_room_do_not_import_an_environment() -> None:
    """Callers name an environment by import path (presets) and take everything else from the
    contract; an environment's package is its own business."""
    bad = [
        f"{p.relative_to(SRC)}: {name}"
        for p in SRC.rglob("*.py")
        if ROOM not in p.parents
        for name in _imports(p)
        if name.startswith(ENVIRONMENTS)
    ]
    assert bad == []
