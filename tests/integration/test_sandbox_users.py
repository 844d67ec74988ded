"""Oracle trials through `kwrl trial run` the way users set up: a `.venv` reached through a symlink."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kwrl.sandbox.testing import make_task, make_world

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

# The sandbox's interpreter and a tool call through the gateway (forked from a zygote that the
# host interpreter started) must both find modules that nothing imported before the trial.
SOLVE = """#!/usr/bin/env bash
set -e
"$KWRL_PYTHON" -c "import rich.table, openpyxl"
"$KWRL_PYTHON" -m kwrl.cli world call filesystem_list_files '{"path": "/"}' > /logs/agent/ls.txt
echo 42 > /filesystem/answer.txt
echo 'The answer is 42.' > /logs/agent/final_answer.txt
"""


def _trial(python: str, task: Path, out: Path, env: dict[str, str] | None = None) -> Path:
    """Run `kwrl trial run TASK --agent oracle` with `python`; the trial dir."""
    proc = subprocess.run(
        [python, "-m", "kwrl.cli", "trial", "run", str(task), "--agent", "oracle", "--out", str(out)],
        capture_output=True, text=True, timeout=300, check=False, cwd=out.parent,
        env={**os.environ, "HARBOR_TELEMETRY": "0", **(env or {})},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (trial,) = out.iterdir()
    return trial


@pytest.mark.skipif(os.geteuid() != 0, reason="the root sandbox (non-root: see the user test)")
def test_a_venv_reached_through_a_symlink_runs_the_gateway(tmp_path: Path) -> None:
    world = make_world(tmp_path / "ds")
    task = make_task(tmp_path / "ds", "linked", world_id=world.name, solve=SOLVE)
    (tmp_path / "clone").mkdir()
    (tmp_path / "clone" / ".venv").symlink_to(Path(sys.prefix).resolve())
    trial = _trial(str(tmp_path / "clone" / ".venv" / "bin" / "python"), task, tmp_path / "out")
    result = json.loads((trial / "result.json").read_text())
    assert result["verifier_result"]["rewards"]["reward"] == 1.0, (
        trial / "gateway.log"
    ).read_text()
    assert "readme.txt" in (trial / "agent" / "ls.txt").read_text()
