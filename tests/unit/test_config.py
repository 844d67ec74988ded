from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from kwrl.config import KwrlConfig, load_config, save_config
from kwrl.errors import ConfigError


class Inner(KwrlConfig):
    lr: float = 1e-6
    """Learning rate."""
    name: str = "x"


class Outer(KwrlConfig):
    steps: int = 2
    inner: Inner = Inner()


def test_overrides_are_parsed_as_toml_values_and_nested(tmp_path: Path) -> None:
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text("steps = 3\n[inner]\nname = 'a'\n")
    cfg = load_config(Outer, cfg_file, ["inner.lr=3e-4", "steps=5", "inner.name=hello world"])
    assert cfg.steps == 5 and cfg.inner.lr == 3e-4 and cfg.inner.name == "hello world"


def test_unknown_key_names_the_file_and_field(tmp_path: Path) -> None:
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text("[inner]\nlrr = 1\n")
    with pytest.raises(ConfigError, match=r"c\.toml.*\n\s+inner\.lrr: Extra inputs"):
        load_config(Outer, cfg_file)


def test_saved_config_loads_back_equal(tmp_path: Path) -> None:
    cfg = Outer(steps=7, inner=Inner(lr=0.5, name="q"))
    save_config(cfg, tmp_path / "resolved.toml")
    assert load_config(Outer, tmp_path / "resolved.toml") == cfg


def test_field_docstrings_become_descriptions() -> None:
    assert Inner.model_fields["lr"].description == "Learning rate."


class WithNone(KwrlConfig):
    tasks: list[str] | None = None
    """None: every task."""
    ratio: float | None = 0.2
    """None disables."""
    kwargs: dict[str, Any] = Field(default_factory=dict)
    inner: Inner | None = None


def test_a_none_whose_default_is_none_is_left_out_and_loads_back(tmp_path: Path) -> None:
    for cfg in (WithNone(), WithNone(tasks=["a"], kwargs={"k.x": [1, "s"]}, inner=Inner(lr=2.0))):
        save_config(cfg, tmp_path / "c.toml")
        assert load_config(WithNone, tmp_path / "c.toml") == cfg


def test_a_none_that_cannot_round_trip_is_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"c\.toml: ratio: None cannot be written"):
        save_config(WithNone(ratio=None), tmp_path / "c.toml")
    with pytest.raises(ConfigError, match=r"kwargs\.k: None cannot be written"):
        save_config(WithNone(kwargs={"k": None}), tmp_path / "c.toml")
    assert not (tmp_path / "c.toml").exists()


def test_every_resolved_kwrl_config_round_trips(tmp_path: Path) -> None:
    from kwrl.eval.run import EvalConfig
    from kwrl.train.local.config import TrainConfig
    from kwrl.train.smoke import SmokeConfig

    for cfg in (TrainConfig(dataset=Path("d")), EvalConfig(dataset=Path("d"), model="oracle"),
                SmokeConfig()):  # fmt: skip
        save_config(cfg, tmp_path / "c.toml")
        assert load_config(type(cfg), tmp_path / "c.toml") == cfg
