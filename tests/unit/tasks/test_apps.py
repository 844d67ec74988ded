"""The one app table (kwrl.tasks.apps.APPS) and every list of apps derived from or checked
against it agree: the gateway's servers, the upstream contract, a generated world's app list, the
shipped tool schemas, the fixture script's upstream servers and the world layout's state dirs;
each row's class serves exactly its upstream server's tools."""

from __future__ import annotations

import ast
import importlib
import json
from importlib import resources
from pathlib import Path

from kwrl.synth import layout
from kwrl.tasks.apps import APPS
from kwrl.tasks.layout import WorldRoots
from kwrl.worlds import apps as world_apps
from kwrl.worlds.apps.base import WorldApp
from kwrl.worlds.apps.contract import UPSTREAM_SERVER, specs

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
    assert len(set(upstreams)) == len(names)
    assert list(world_apps.APPS) == names
    assert {n: a.upstream for n, a in APPS.items()} == UPSTREAM_SERVER
    assert sorted((n, a.title) for n, a in APPS.items()) == layout.APPS
    tools = json.loads(
        resources.files("kwrl.worlds.apps").joinpath("archipelago_tools.json").read_text("utf-8")
    )
    assert {t["server"] for t in tools} == set(upstreams)
    assert _regenerate_servers() == upstreams


def test_every_row_names_an_app_class_serving_its_upstream_servers_tools(tmp_path: Path) -> None:
    roots = WorldRoots.of_dir(tmp_path)
    for name, app in APPS.items():
        server = world_apps.build(name, roots)
        assert server.name == name
        module, _, cls = app.entry.partition(":")
        instance = getattr(importlib.import_module(module), cls)(roots)
        assert isinstance(instance, WorldApp)
        upstream = [tool for server_name, tool in specs() if server_name == app.upstream]
        assert sorted(instance.tools()) == sorted(upstream), name


def test_the_layout_makes_a_state_dir_for_the_apps_that_keep_state(tmp_path: Path) -> None:
    roots = WorldRoots.of_dir(tmp_path)
    roots.ensure()
    stateful = sorted(name for name, app in APPS.items() if app.state)
    assert stateful == ["calendar", "chat", "mail"]
    assert sorted(p.name for p in roots.apps_data.iterdir()) == stateful
    assert roots.filesystem.is_dir()
