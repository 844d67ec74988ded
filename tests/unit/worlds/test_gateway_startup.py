"""What keeps the gateway's start-up cheap: lazy document libraries.

A gateway process builds every app at start-up, so an app module (or an office helper,
`kwrl.worlds.office`) that imports openpyxl (or any document library) at module level shows up
directly in the time to ready (benchmarks/worlds.py). These tests pin the mechanisms, not the
timings.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import kwrl.worlds.apps as apps_pkg
import kwrl.worlds.office as office_pkg
from kwrl.tasks.apps import APPS
from kwrl.worlds.apps import LAZY_IMPORTS

APP_DIRS = (Path(apps_pkg.__file__).parent, Path(office_pkg.__file__).parent)

_BUILD_AND_REPORT = """
import json, sys
from pathlib import Path
from kwrl.worlds.gateway import build_server
from kwrl.tasks.layout import WorldRoots
server, mounted, missing = build_server(WorldRoots.of_dir(Path(sys.argv[1])))
print(json.dumps({"mounted": mounted, "modules": sorted(sys.modules)}))
"""


def test_building_the_gateway_imports_no_document_library(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _BUILD_AND_REPORT, str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    report = json.loads(out)
    assert report["mounted"] == list(APPS)
    tops = {m.split(".")[0] for m in LAZY_IMPORTS} | {"pdfminer", "griffe"}
    loaded = sorted(m for m in report["modules"] if m.split(".")[0] in tops)
    assert loaded == []


def _third_party_imports(path: Path) -> set[str]:
    """Top-level packages a module imports anywhere (module level or inside functions)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_lazy_imports_list_every_document_library_the_apps_use() -> None:
    """The zygote preloads LAZY_IMPORTS; a library missing from it is paid for per trial."""
    used = set().union(*(_third_party_imports(p) for d in APP_DIRS for p in d.glob("*.py")))
    known = set(sys.stdlib_module_names) | {
        "kwrl",
        "fastmcp",
        "pydantic",
        "mcp",
        "starlette",
        "anyio",
    }
    assert used - known == {m.split(".")[0] for m in LAZY_IMPORTS}


def test_preload_imports_every_lazy_library() -> None:
    code = (
        "import sys\nfrom kwrl.worlds.apps import LAZY_IMPORTS, preload\npreload()\n"
        "print([m for m in LAZY_IMPORTS if m not in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.strip() == "[]"
