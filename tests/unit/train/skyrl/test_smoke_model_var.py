"""scripts/skyrl/smoke_1gpu.sh takes its model and tool-call format from the environment (no hub on
the lent GPU machines: a packaged model's folder stands in), through SkyRL's own config loader."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[4] / "scripts" / "skyrl" / "smoke_1gpu.sh"


def test_model_and_tool_parser_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kwrl.train.skyrl.config import kwrl_section
    from kwrl.train.skyrl.main_train import load

    monkeypatch.setenv("WANDB_API_KEY", "test")  # SkyRL's validation only checks it is set
    model = tmp_path / "models" / "smollm2-135m"
    env = {**os.environ, "KWRL_DRY_RUN": "1", "KWRL_SKYRL_ROOT": str(tmp_path),
           "MODEL": str(model), "TOOL_CALL_PARSER": "hermes"}  # fmt: skip
    argv = subprocess.run(
        ["bash", str(SCRIPT)], env=env, check=True, capture_output=True, text=True
    ).stdout.splitlines()
    cfg = load(argv)
    assert cfg.trainer.policy.model.path == str(model)
    assert kwrl_section(cfg).agent.tool_call_parser == "hermes"
