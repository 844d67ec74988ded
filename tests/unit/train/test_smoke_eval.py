"""`evaluate_engine` reuses a finished evaluation only when it evaluated the same model, with the
same samples, sample seed and agent settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kwrl.agent.config import AgentConfig
from kwrl.train.smoke import evaluate_engine


def test_a_finished_evaluation_is_reused_only_for_its_own_model(tmp_path: Path) -> None:
    out = tmp_path / "eval"
    out.mkdir()
    step6 = tmp_path / "step-6"
    agent = {"temperature": 1.0}
    config = {"model": f"engine:{step6}", "n_samples": 2, "agent": agent, "tokenizer": str(step6)}
    done = {"config": config, "metrics": {"n": 1}}
    (out / "eval.json").write_text(json.dumps(done))
    data = tmp_path / "data"
    assert evaluate_engine(data, step6, out, AgentConfig(temperature=1.0), n_samples=2) == done
    with pytest.raises(ValueError, match=r"eval\.json: config\.model is .*step-6.*step-12"):
        evaluate_engine(data, tmp_path / "step-12", out, AgentConfig(temperature=1.0), n_samples=2)
    with pytest.raises(ValueError, match=r"eval\.json: config\.n_samples is 2, not 1"):
        evaluate_engine(data, step6, out, AgentConfig(temperature=1.0), n_samples=1)
    with pytest.raises(ValueError, match=r"eval\.json: config\.sample_seed is None, not 3"):
        evaluate_engine(data, step6, out, AgentConfig(temperature=1.0), n_samples=2, sample_seed=3)
    with pytest.raises(ValueError, match=r"eval\.json: config\.agent is .*'temperature': 1\.0"):
        evaluate_engine(data, step6, out, AgentConfig(temperature=0.0), n_samples=2)
    assert json.loads((out / "eval.json").read_text()) == done  # nothing overwritten
