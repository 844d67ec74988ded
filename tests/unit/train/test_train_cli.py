"""`kwrl train` (RL: CONFIG.toml [key=value ...] and trial-settings flags) and its subcommand
`kwrl train sft` (SFTConfig's flags), told apart by the subcommand's name, not a positional."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kwrl.cli import app
from kwrl.errors import ConfigError

WIDE = {"COLUMNS": "250", "TERMINAL_WIDTH": "250"}


def _error(*args: str) -> str:
    r = CliRunner().invoke(app, list(args))
    assert isinstance(r.exception, ConfigError), r.output
    return str(r.exception)


@pytest.mark.parametrize(
    "args",
    [
        ["train", "-", "dataset=/nowhere", "--agent.max_steps", "0"],
        ["train", "--agent.max_steps", "0", "-", "dataset=/nowhere"],  # a flag before CONFIG
    ],
)
def test_train_is_rl_with_its_trial_settings_wherever_the_flags_stand(args: list[str]) -> None:
    assert "agent.max_steps: Input should be greater than or equal to 1" in _error(*args)


def test_sft_is_a_subcommand_whose_flags_are_its_configs_fields() -> None:
    assert "epochs: Input should be greater than or equal to 1" in _error(
        "train", "sft", "-", "dataset=/nowhere", "--epochs", "0"
    )
    assert "epochs:" in _error("train", "sft", "-", "dataset=/nowhere", "epochs=0")
    assert "dataset: Field required" in _error("train", "sft", "-")
    r = CliRunner().invoke(app, ["train", "sft", "--help"], env=WIDE)
    assert r.exit_code == 0 and "--epochs" in r.output and "--agent.max_steps" in r.output


def test_train_help_is_rls_and_names_the_sft_subcommand() -> None:
    r = CliRunner().invoke(app, ["train", "--help"], env=WIDE)
    assert r.exit_code == 0, r.output
    assert "Usage: kwrl train [OPTIONS] {args}..." in r.output and "kwrl train sft" in r.output
    assert "--agent.max_steps" in r.output and "--epochs" not in r.output
