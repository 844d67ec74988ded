"""Smoke runs of `kwrl trial run` and `kwrl rollout` through the real CLI and the local sandbox."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kwrl.cli import app
from kwrl.sandbox.conformance.testing import make_dataset

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)


def test_trial_run_prints_the_reward_per_criterion(tmp_path: Path) -> None:
    task = make_dataset(tmp_path / "ds", 1)[0]
    result = CliRunner().invoke(
        app,
        [
            "trial",
            "run",
            str(task),
            "--model",
            "oracle",
            "--out",
            str(tmp_path / "out"),
            "--sandbox.gateway",
            "false",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "c1" in result.output and "c2" in result.output
    assert "reward 1" in result.output and "cause none" in result.output


def test_rollout_writes_a_summary(tmp_path: Path) -> None:
    make_dataset(tmp_path / "ds", 2)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "rollout",
            str(tmp_path / "ds"),
            "--model",
            "nop",
            "-n",
            "2",
            "-c",
            "4",
            "--out",
            str(out),
            "--sandbox.gateway",
            "false",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["trials"] == 4 and summary["graded"] == 4
    assert summary["mean_reward"] == 0.0 and summary["causes"] == {"none": 4}
    assert len(list((out / "trials").iterdir())) == 4
