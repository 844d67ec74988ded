"""The one app table (kwrl.tasks.apps.APPS) and every list of apps derived from or checked
against it agree: the gateway's servers, the upstream contract, a generated world's app list, the
AppName literal, the shipped tool schemas and the fixture script's upstream servers."""

from __future__ import annotations

import ast
import importlib
import json
from importlib import resources
from pathlib import Path

from kwrl.synth import layout
from kwrl.tasks.apps import APPS
from kwrl.tasks.models import APP_NAMES
from kwrl.worlds import apps as world_apps
from kwrl.worlds.apps.contract import UPSTREAM_SERVER

REGENERATE = (
    Path(__file__).resolve().parents[2] / "fixtures" / "archipelago_schemas" / "regenerate.py"
)


def _regenerate_servers() -> list[str]:
    tree = ast.parse(REGENERATE.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "SERVERS":
            return ast.literal_eval(node.value)
    raise AssertionError(f"{REGENERATE}: no SERVERS")


def test_every_app_list_is_the_table() -> None:
    names = list(APPS)
    upstreams = [app.upstream for app in APPS.values()]
    assert len(names) == 9 and len(set(upstreams)) == 9
    assert sorted(APP_NAMES) == sorted(names)
    assert list(world_apps.APPS) == names
    assert {n: a.upstream for n, a in APPS.items()} == UPSTREAM_SERVER
    assert sorted((n, a.title) for n, a in APPS.items()) == layout.APPS
    tools = json.loads(
        resources.files("kwrl.worlds.apps").joinpath("archipelago_tools.json").read_text("utf-8")
    )
    assert {t["server"] for t in tools} == set(upstreams)
    assert _regenerate_servers() == upstreams


def test_every_app_module_builds_a_server_of_its_name() -> None:
    for name, app in APPS.items():
        module = importlib.import_module(app.module)
        assert callable(module.build), app.module
        assert f'FastMCP("{name}")' in Path(module.__file__ or "").read_text(encoding="utf-8")
