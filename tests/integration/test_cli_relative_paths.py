"""The verbs as a user types them: the real `kwrl` and `harbor` commands, run from a fresh working
directory with relative paths (dataset, task, --out, trial dir, run dir, harbor's default `jobs/`).

Every path kwrl hands to another process (the zygote, the gateway, bwrap, harbor) was once taken
as given, and a relative one made every trial fail on `sandbox` while `kwrl eval` printed a score
of 0.0% and exited 0; these tests run nothing with an absolute path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)

BIN = Path(sys.executable).parent


def sh(cwd: Path, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """One command as typed in `cwd` (the venv's `kwrl`/`harbor` on PATH, no absolute paths)."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "200"}
    return subprocess.run(
        list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh working directory holding a generated dataset `D` (2 tasks), made by `kwrl data
    synth --out D`."""
    cwd = tmp_path_factory.mktemp("user")
    r = sh(cwd, "kwrl", "data", "synth", "--out", "D", "--worlds", "1", "--tasks_per_world", "2",
           "--seed", "3")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    return cwd


def first_task(work: Path) -> str:
    return "D/tasks/" + sorted(p.name for p in (work / "D" / "tasks").iterdir())[0]


def test_trial_run_scores_the_oracle_1_and_nop_0_with_relative_paths(work: Path) -> None:
    task = first_task(work)
    r = sh(work, "kwrl", "trial", "run", task, "--model", "oracle", "--out", "T")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "reward 1 " in r.stdout and "cause none" in r.stdout
    r = sh(work, "kwrl", "trial", "run", task, "--model", "nop")  # the default relative out
    assert r.returncode == 0, r.stdout + r.stderr
    assert "reward 0 " in r.stdout and "cause none" in r.stdout
    assert any((work / "runs" / "trials").iterdir())


def test_rollout_eval_grade_and_report_with_relative_paths(work: Path) -> None:
    r = sh(work, "kwrl", "rollout", "D", "--model", "oracle", "--out", "RO", "-c", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((work / "RO" / "summary.json").read_text())
    assert summary["graded"] == 2 and summary["mean_reward"] == 1.0

    r = sh(work, "kwrl", "eval", "D", "--model", "oracle", "--out", "R", "-c", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    overall = json.loads((work / "R" / "eval.json").read_text())["metrics"]["overall"]
    assert overall["mean_score"]["value"] == 1.0 and overall["n_graded"] == 2
    assert (work / "R" / "report.html").is_file()

    trial = "R/trials/" + sorted(p.name for p in (work / "R" / "trials").iterdir())[0]
    r = sh(work, "kwrl", "grade", trial)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "reward 1.000" in r.stdout

    r = sh(work, "kwrl", "report", "R")
    assert r.returncode == 0, r.stdout + r.stderr
    r = sh(work, "kwrl", "report", "R", "--compare", "R")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (work / "R" / "compare.html").is_file()


def test_the_readme_stock_harbor_command_with_its_default_relative_jobs_dir(work: Path) -> None:
    task = first_task(work)
    r = sh(work, "harbor", "run", "-p", task, "-a", "oracle", "-e",
           "kwrl.sandbox.local:LocalEnvironment")  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    rewards = [json.loads(p.read_text()) for p in (work / "jobs").glob("*/*/verifier/reward.json")]
    assert rewards == [{"reward": 1.0}], r.stdout
    # harbor's summary shows each key of reward.json: the reward alone, no per-criterion column
    # (before: `criterion/...` columns and a progress line of `Criterion/...-C1: 0.125`)
    summary = " ".join(r.stdout.split())
    assert "Mean: 1.000" in summary and "│ 1.0 │ 1 │" in summary, r.stdout
    assert "criterion" not in r.stdout.lower() and "pass" not in r.stdout.lower(), r.stdout


def test_a_run_with_no_trial_graded_has_no_score_and_exits_1(work: Path) -> None:
    fail = ("--retries", "0", "--sandbox.gateway_timeout_s", "0.001")  # no gateway is ready in 1 ms
    r = sh(work, "kwrl", "eval", "D", "--model", "oracle", "--out", "RF", *fail)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "no trial graded" in r.stdout and "sandbox" in r.stdout
    overall = json.loads((work / "RF" / "eval.json").read_text())["metrics"]["overall"]
    assert overall["n_graded"] == 0 and overall["n_infra"] == 2
    assert overall["mean_score"]["value"] is None and overall["pass_at_1"]["value"] is None
    assert "No trial graded" in (work / "RF" / "report.html").read_text()

    r = sh(work, "kwrl", "rollout", "D", "--model", "oracle", "--out", "ROF", *fail)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "no trial graded" in r.stdout
    assert json.loads((work / "ROF" / "summary.json").read_text())["mean_reward"] is None
