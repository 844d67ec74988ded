"""KwrlAgent's settings are checked where they are given, before any trial starts: a misspelt
field through `--ak` fails naming the flag and the field, as one in a TOML config names the file."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from kwrl.agent.config import KWRL_AGENT_KWARGS, AgentConfig, check_agent_kwargs
from kwrl.errors import ConfigError


def _kwrl(*args: str) -> subprocess.CompletedProcess[str]:
    kwrl = Path(sys.executable).with_name("kwrl")
    return subprocess.run([str(kwrl), *args], capture_output=True, text=True, timeout=120)


def test_a_misspelt_agent_setting_fails_in_eval_and_trial_run_before_any_trial(
    tmp_path: Path,
) -> None:
    ev = _kwrl("eval", str(tmp_path / "none"), "--model", "engine:/none", "--agent.max_step", "3",
               "--out", str(tmp_path / "run"))  # fmt: skip
    assert ev.returncode == 2, ev.stdout + ev.stderr
    assert "No such option: --agent.max_step" in ev.stdout + ev.stderr
    assert not (tmp_path / "run").exists()

    tr = _kwrl("trial", "run", str(tmp_path / "none"), "--model", "engine:/none",
               "--agent.temperature", "-1", "--out", str(tmp_path / "t"))  # fmt: skip
    assert tr.returncode == 2, tr.stdout + tr.stderr
    assert "agent.temperature: Input should be greater than or equal to 0" in tr.stdout + tr.stderr
    assert "temperature:" in tr.stdout + tr.stderr


def test_kwrl_agent_kwargs_and_agent_config_fields_pass() -> None:
    check_agent_kwargs({"max_steps": 3, "tools": ["filesystem_*"], "tokenizer": "t"}, "x")
    with pytest.raises(ConfigError, match=r"x: invalid agent settings\n  max_step: not"):
        check_agent_kwargs({"max_step": 3}, "x")


def test_the_listed_kwargs_are_kwrl_agents_own() -> None:
    from kwrl.agent.harbor_agent import KwrlAgent

    params = inspect.signature(KwrlAgent.__init__).parameters.values()
    assert {p.name for p in params if p.kind is p.KEYWORD_ONLY} == KWRL_AGENT_KWARGS


def test_a_turn_s_budget_follows_the_window_unless_set() -> None:
    assert AgentConfig().turn_tokens(32768) == 4096  # the default window: as it always was
    assert AgentConfig().turn_tokens(8192) == 1024  # the packaged SmolLM2-135M's
    assert AgentConfig(max_tokens_per_turn=300).turn_tokens(8192) == 300
    assert AgentConfig().turn_tokens(4) == 1
