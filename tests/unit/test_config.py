from __future__ import annotations

from pathlib import Path

import pytest

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
