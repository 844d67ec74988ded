"""kwrl's gateway serves Archipelago's exact tool contract.

The real gateway server (`kwrl.worlds.gateway.build_server`, every app) is listed through fastmcp's MCP
client and compared with upstream's own `tools/list` output vendored in
tests/fixtures/archipelago_schemas/ (see its PROVENANCE.md: Mercor-Intelligence/archipelago at
1c3dcd4694b313020cd626699c9c7cc1c0a2fc58): every upstream tool (73 of nine servers) is present under
`<kwrl server>_<upstream name>`, with the identical published input schema (parameter names, JSON
types, required sets, enums, constraints, nesting and descriptions), and the schema kwrl validates
calls against is upstream's pre-flattening schema (the one carrying the defaults).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps.contract import UPSTREAM_SERVER, specs
from kwrl.worlds.gateway import build_server

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "archipelago_schemas"
KWRL_SERVER = {upstream: kwrl for kwrl, upstream in UPSTREAM_SERVER.items()}


def _load(name: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURE / name).read_text())


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    roots = WorldRoots.of_dir(tmp_path_factory.mktemp("contract") / "world")
    roots.ensure()
    server, _, missing = build_server(roots)
    assert missing == []

    async def tools() -> dict[str, Any]:
        async with Client(server) as client:
            return {t.name: t for t in await client.list_tools()}

    return asyncio.run(tools())


def test_fixture_holds_the_tools_of_the_app_tables_servers() -> None:
    tools = _load("tools.json")
    assert {t["server"] for t in tools} == set(KWRL_SERVER)
    assert [(t["server"], t["name"]) for t in tools] == [
        (t["server"], t["name"]) for t in _load("tools_unflattened.json")
    ]


def test_every_upstream_tool_is_served_with_the_identical_schema(listed: dict[str, Any]) -> None:
    expected = {f"{KWRL_SERVER[t['server']]}_{t['name']}": t for t in _load("tools.json")}
    present = [name for name in expected if name in listed]
    identical = [n for n in present if listed[n].inputSchema == expected[n]["inputSchema"]]
    same_text = [n for n in present if listed[n].description == expected[n]["description"]]
    n = len(expected)
    assert (len(present), len(identical), len(same_text)) == (n, n, n), sorted(
        set(expected) - set(identical)
    )
    # nothing kwrl-only is listed beside them
    assert sorted(listed) == sorted(expected)


def test_calls_are_validated_against_upstreams_schema_with_its_defaults() -> None:
    served = {(t["server"], t["name"]): t["validationSchema"] for t in specs().values()}
    upstream = {(t["server"], t["name"]): t["inputSchema"] for t in _load("tools_unflattened.json")}
    assert served == upstream
