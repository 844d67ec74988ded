"""`kwrl data ...` through typer's CliRunner: each verb, its output and its exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tasks_builders import make_apex_layout
from typer.testing import CliRunner

from kwrl.cli import app
from kwrl.config import parse_size
from kwrl.errors import ConfigError, TaskFormatError, UnsafeArchiveError

runner = CliRunner(env={"COLUMNS": "250"})


def _flat(output: str) -> str:
    """Output with rich's line wrapping undone (where it wraps depends on the tmp path's length)."""
    return " ".join(output.split())


def test_convert_validate_stats_pack_extract(tmp_path: Path) -> None:
    apex = make_apex_layout(tmp_path / "apex")
    ds = tmp_path / "ds"
    r = runner.invoke(
        app,
        [
            "data",
            "convert",
            "--from",
            "apex-hf",
            str(apex),
            "--out",
            str(ds),
            "-q",
            "--task_dir.cpus",
            "3",
            "--max_bytes",
            "1GiB",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "converted 6 tasks, 2 worlds, 1 overlays" in _flat(r.output)
    assert "cpus = 3" in next((ds / "tasks").glob("*/task.toml")).read_text()

    r = runner.invoke(app, ["data", "validate", str(ds)])
    assert r.exit_code == 0 and "6 tasks valid" in _flat(r.output)

    r = runner.invoke(app, ["data", "stats", str(ds), "--json"])
    stats = json.loads(r.output)
    assert stats["tasks"] == 6 and stats["domains"] == {"Investment Banking": 3, "Law": 3}
    r = runner.invoke(app, ["data", "stats", str(ds)])
    assert "tasks per world" in r.output and "World 433" in r.output

    r = runner.invoke(
        app,
        [
            "data",
            "pack",
            str(ds),
            "--out",
            str(tmp_path / "b"),
            "--rows_per_shard",
            "4",
            "-q",
        ],
    )
    assert r.exit_code == 0 and "2 task shards and 1 world shards" in _flat(r.output)
    r = runner.invoke(
        app, ["data", "extract", str(tmp_path / "b"), "--out", str(tmp_path / "x"), "-q"]
    )
    assert r.exit_code == 0 and "extracted 6 tasks and 2 worlds from 3 shards" in _flat(r.output)
    assert "cpus = 3" in next((tmp_path / "x").glob("tasks/*/task.toml")).read_text()


def test_validate_exits_1_with_a_table_and_json(tmp_path: Path, dataset: Path) -> None:
    (dataset / "tasks" / "task-002" / "tests" / "verifiers.json").write_text("{")
    r = runner.invoke(app, ["data", "validate", str(dataset)])
    assert r.exit_code == 1
    assert (
        "1 of 3 tasks invalid" in r.output
        and "verifiers.json" in r.output
        and "invalid JSON" in r.output
    )
    r = runner.invoke(app, ["data", "validate", str(dataset), "--json"])
    assert r.exit_code == 1
    (problem,) = json.loads(r.output)["problems"]
    assert (
        problem["task"] == "task-002" and problem["file"] == "tasks/task-002/tests/verifiers.json"
    )


def test_errors_surface_as_kwrl_errors(tmp_path: Path) -> None:
    apex = make_apex_layout(tmp_path / "apex")
    r = runner.invoke(
        app,
        ["data", "convert", str(apex), "--out", str(tmp_path / "ds"), "--max_bytes", "10KiB", "-q"],
    )
    assert isinstance(r.exception, UnsafeArchiveError) and "size cap of 10240 bytes" in str(
        r.exception
    )
    r = runner.invoke(
        app, ["data", "extract", str(tmp_path / "nothing-here"), "--out", str(tmp_path / "x")]
    )
    assert isinstance(r.exception, TaskFormatError)
    r = runner.invoke(
        app, ["data", "convert", "--from", "csv", str(apex), "--out", str(tmp_path / "ds")]
    )
    assert isinstance(r.exception, ConfigError)  # one line, exit 2 (`kwrl.cli.main`)
    assert "from: Input should be 'apex-hf'" in str(r.exception)
    r = runner.invoke(app, ["data", "convert", str(apex), "--out", "o", "--max_bytes", "lots"])
    assert isinstance(r.exception, ConfigError) and "'lots' is not a size" in str(r.exception)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1048576", 1048576),
        ("20GiB", 20 * 1024**3),
        ("500MB", 500_000_000),
        ("1.5k", 1500),
        ("2 MiB", 2 * 1024**2),
        ("7b", 7),
    ],
)
def test_parse_size(text: str, value: int) -> None:
    assert parse_size(text) == value


def test_parse_size_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")
