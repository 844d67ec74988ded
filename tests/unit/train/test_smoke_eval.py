"""`evaluate_engine` reuses a finished evaluation only when it evaluated the same model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kwrl.train.smoke import evaluate_engine


def test_a_finished_evaluation_is_reused_only_for_its_own_model(tmp_path: Path) -> None:
    out = tmp_path / "eval"
    out.mkdir()
    done = {"config": {"model": f"engine:{tmp_path / 'step-6'}"}, "metrics": {"n": 1}}
    (out / "eval.json").write_text(json.dumps(done))
    assert evaluate_engine(tmp_path / "data", tmp_path / "step-6", out, {}) == done
    with pytest.raises(ValueError, match=r"eval\.json: config\.model is .*step-6.*step-12"):
        evaluate_engine(tmp_path / "data", tmp_path / "step-12", out, {})
    assert json.loads((out / "eval.json").read_text()) == done  # nothing overwritten
