"""benchmarks/skyrl_steps.py on the console log of the SkyRL smoke that ran on the lent H200."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
SCRIPT = ROOT / "benchmarks" / "skyrl_steps.py"
LOG = ROOT / "docs" / "results" / "skyrl_smoke-h200.log"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120,
        check=False, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def test_the_h200_smoke_log_splits_into_its_logged_timings(tmp_path: Path) -> None:
    out = _run(str(LOG), "--json", str(tmp_path / "split.json"))
    assert out.returncode == 0, out.stderr
    steps = json.loads((tmp_path / "split.json").read_text())["steps"]
    assert [s["step"] for s in steps] == [1, 2]
    one = steps[0]
    assert (one["generate"], one["policy_train"], one["sync_weights"]) == (18.7207, 9.4637, 1.2572)
    assert abs(one["checkpoints"] - (15.8529 + 0.8895)) < 1e-9 and one["total"] == 46.3381
    parts = ("generate", "policy_train", "sync_weights", "checkpoints", "other")
    assert abs(sum(one[k] for k in parts) - 46.3381) < 1e-9
    assert one["trials"] == 16 and one["mean_reward"] == 0.0
    assert "18.72 s (40%)" in out.stdout


def test_a_log_without_step_blocks_is_an_error_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "not-skyrl.log"
    bad.write_text("hello\nStep 1:\n 'loss': '0.1',\n")  # a block, but no timing/step
    out = _run(str(bad), "--json", str(tmp_path / "x.json"))
    assert out.returncode != 0 and str(bad) in out.stderr and "timing/step" in out.stderr
    assert not (tmp_path / "x.json").exists()
