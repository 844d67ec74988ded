"""Through the real `kwrl` command: every trial dir and every score row carries the run manifest,
and the config hash names the settings (the same settings hash the same, a changed one differs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import kwrl
from kwrl.rollout.manifest import world_digest

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)


def kwrl_cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "kwrl"
    env = {**os.environ, "COLUMNS": "250"}
    return subprocess.run(
        [str(exe), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory holding `D`, a synthesized dataset of 2 tasks in one world."""
    cwd = tmp_path_factory.mktemp("manifest")
    r = kwrl_cli(cwd, "data", "synth", "--out", "D", "--worlds", "1", "--tasks_per_world", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    return cwd


def rollout(work: Path, out: str, *flags: str) -> dict[str, Any]:
    r = kwrl_cli(work, "rollout", "D", "--model", "oracle", "--out", out, "-c", "2", *flags)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "manifest kwrl" in r.stdout
    return json.loads((work / out / "summary.json").read_text())


def test_each_trial_and_row_carries_the_manifest_and_the_hash_names_the_settings(
    work: Path,
) -> None:
    first = rollout(work, "R1")
    run = first["manifest"]
    assert run["kwrl_version"] == kwrl.__version__ and run["world_digest"] is None
    assert len(first["records"]) == 2
    for row in first["records"]:
        trial = json.loads((work / row["trial_dir"] / "manifest.json").read_text())
        assert row["manifest"] == trial
        assert trial["config_hash"] == run["config_hash"]
        assert trial["git_commit"] == run["git_commit"]
        assert trial["world_digest"] == world_digest(work / "D" / "tasks" / row["task"])
        assert trial["world_digest"] is not None

    again = rollout(work, "R2")  # the same settings, another output dir
    assert again["manifest"]["config_hash"] == run["config_hash"]
    assert sorted(r["manifest"]["world_digest"] for r in again["records"]) == sorted(
        r["manifest"]["world_digest"] for r in first["records"]
    )
    changed = rollout(work, "R3", "--agent.max_steps", "5")
    assert changed["manifest"]["config_hash"] != run["config_hash"]


def test_eval_rows_and_report_show_the_manifest(work: Path) -> None:
    r = kwrl_cli(work, "eval", "D", "--model", "oracle", "--out", "E", "-c", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [json.loads(line) for line in (work / "E" / "trials.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(row["manifest"]["world_digest"] for row in rows)
    data = json.loads((work / "E" / "eval.json").read_text())
    assert len(data["manifests"]) == 1
    config_hash = data["manifests"][0]["config_hash"]
    assert all(t["manifest"]["config_hash"] == config_hash for t in data["trials"])
    r = kwrl_cli(work, "report", "E")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"config {config_hash}" in r.stdout
    assert config_hash in (work / "E" / "report.html").read_text()
