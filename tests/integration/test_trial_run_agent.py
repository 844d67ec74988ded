"""`kwrl trial run` with kwrl's agent on the packaged model: agent settings through `--ak`, and
the full tool list (all apps) listed compactly because it does not fit SmolLM2's 8k window."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kwrl.sandbox.conformance.testing import make_dataset

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)


def test_trial_run_passes_agent_settings_and_fits_the_tools_to_the_model(tmp_path: Path) -> None:
    (task,) = make_dataset(tmp_path / "ds", 1, agent_timeout_sec=300)
    out = tmp_path / "trials"
    argv = [
        sys.executable, "-m", "kwrl.cli", "trial", "run", str(task), "--out", str(out),
        "--model", "engine:smollm2-135m",
        "--agent.max_steps", "1", "--agent.max_tokens_per_turn", "8", "--agent.temperature", "0.0",
    ]  # fmt: skip
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "HARBOR_TELEMETRY": "0", "OMP_WAIT_POLICY": "PASSIVE"},
    )  # fmt: skip
    (trial,) = out.iterdir()
    result = json.loads((trial / "result.json").read_text())
    meta = result["agent_result"]["metadata"]
    assert meta["n_turns"] == 1 and meta["stop_reason"] in ("max_steps", "length", "stop"), (
        proc.stdout[-2000:] + proc.stderr[-2000:]
    )
    assert meta["turn_stats"][0]["completion_tokens"] <= 8
    # progress on stderr while it runs (before: nothing for minutes): the model's loading, each turn
    lines = proc.stderr.splitlines()
    assert "kwrl: loading model smollm2-135m (engine) ..." in lines, proc.stderr[-2000:]
    assert any(x.startswith("kwrl: loading model smollm2-135m (engine): ") for x in lines)
    assert any(x.startswith("kwrl: turn 1: policy ") and "+" in x for x in lines), proc.stderr
    assert meta["context_window"] == 8192 and meta["tool_prompt"] == "compact"
    assert "over half the 8192-token context window" in meta["tool_prompt_reason"]
    assert meta["turn_stats"][0]["prompt_tokens"] < 8192 // 2
