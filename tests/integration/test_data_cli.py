"""The real `kwrl data` console script, as a subprocess: convert -> validate -> stats -> pack -> extract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "tasks"))
from tasks_builders import make_apex_layout, reward_doing_nothing

KWRL = Path(sys.executable).parent / "kwrl"


def _kwrl(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KWRL), "data", *map(str, args)],
        env={**os.environ, "COLUMNS": "400"},  # rich wraps error lines at the terminal width
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_data_pipeline_through_the_console_script(tmp_path: Path) -> None:
    apex = make_apex_layout(tmp_path / "apex")
    ds = tmp_path / "ds"
    r = _kwrl("convert", "--from", "apex-hf", apex, "--out", ds, "--quiet")
    assert r.returncode == 0, r.stderr
    assert "converted 6 tasks, 2 worlds" in r.stdout

    r = _kwrl("validate", ds)
    assert r.returncode == 0, r.stdout
    assert "control: 8 criteria graded without a judge" in r.stdout and "4 skipped" in r.stdout

    stats = json.loads(_kwrl("stats", ds, "--json").stdout)
    assert stats["tasks"] == 6 and len(stats["worlds"]) == 2

    assert _kwrl("pack", ds, "--out", tmp_path / "b", "--quiet").returncode == 0
    r = _kwrl("extract", tmp_path / "b", "--out", tmp_path / "x", "--quiet")
    assert r.returncode == 0 and "extracted 6 tasks and 2 worlds" in r.stdout
    for f in ds.rglob("*"):
        if f.is_file() and f.name != ".kwrl-out.json":
            assert (tmp_path / "x" / f.relative_to(ds)).read_bytes() == f.read_bytes()


def test_errors_exit_2_with_one_line_naming_file_and_field(tmp_path: Path) -> None:
    apex = make_apex_layout(tmp_path / "apex")
    (apex / "tasks_and_rubrics.json").write_text(
        (apex / "tasks_and_rubrics.json").read_text().replace('"Law"', '"Lore"', 1)
    )
    r = _kwrl("convert", apex, "--out", tmp_path / "ds", "--quiet")
    assert r.returncode == 2
    assert "error:" in r.stderr and "tasks_and_rubrics.json: 3.domain" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "ds").exists()

    (tmp_path / "bad" / "t").mkdir(parents=True)
    r = _kwrl("validate", tmp_path / "bad")
    assert r.returncode == 1 and "instruction.md" in r.stdout


def test_synth_and_validate_run_the_no_op_control(tmp_path: Path) -> None:
    """Generated tasks pass the control when made; one edited to reward doing nothing is flagged
    by `kwrl data validate`, naming the task, verifiers.json and the criterion."""
    ds = tmp_path / "ds"
    r = _kwrl("synth", "--out", ds, "--worlds", "1", "--tasks_per_world", "3", "--seed", "5")
    assert r.returncode == 0, r.stderr
    assert "no-op control: all" in r.stdout
    r = _kwrl("validate", ds)
    assert r.returncode == 0 and "no-op control:" in r.stdout, r.stdout
    task, vid = reward_doing_nothing(ds)
    r = _kwrl("validate", ds)
    assert r.returncode == 1, r.stdout
    assert task in r.stdout and "verifiers.json" in r.stdout and vid in r.stdout
    [problem] = json.loads(_kwrl("validate", ds, "--json").stdout)["problems"]
    assert problem["task"] == task and problem["field"] == "0.verifier_values"
    assert _kwrl("validate", ds, "--no-control").returncode == 0
