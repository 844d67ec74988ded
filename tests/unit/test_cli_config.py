"""Flags generated from a config's fields (`kwrl.cli_config`): every verb that runs trials lists
the same trial settings, from one model; flags become the config; 0.1.0's spellings are gone."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kwrl.cli import app
from kwrl.cli_config import build_config, config_flags
from kwrl.config import KwrlConfig
from kwrl.errors import ConfigError
from kwrl.rollout.settings import TRIAL_PANEL, TrialSettings, trial_panel

VERBS = ("eval", "rollout", "train", "smoke")
WIDE = {"COLUMNS": "250", "TERMINAL_WIDTH": "250"}


def _panel(verb: str) -> list[str]:
    """The rows of `kwrl VERB --help`'s trial-settings panel."""
    r = CliRunner().invoke(app, [verb, "--help"], env=WIDE)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    start = next(i for i, line in enumerate(lines) if TRIAL_PANEL in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("╰"))
    return [line.strip("│ ").rstrip() for line in lines[start + 1 : end]]


def _flags(rows: list[str]) -> dict[str, str]:
    """{--flag: its row and the rows that continue it} (short spellings such as -c left out)."""
    out: dict[str, str] = {}
    flag = ""
    for row in rows:
        if m := re.match(r"(--[\w.]+)", row):
            flag = m.group(1)
            out[flag] = re.sub(r"\s+-\w\s+", " ", row[len(flag) :])
        else:
            out[flag] += " " + row
    # eval, rollout and trial run read --judge from KWRL_JUDGE too; train and smoke never did
    return {k: " ".join(re.sub(r"\[env var: \w+\]", "", v).split()) for k, v in out.items()}


def test_every_verb_lists_the_same_trial_settings_from_one_model() -> None:
    tables = {verb: _flags(_panel(verb)) for verb in VERBS}
    first = tables[VERBS[0]]
    for verb in VERBS[1:]:
        assert tables[verb] == first, verb
    assert "--agent.max_steps" in first and "--sandbox.allow_missing_limits" in first
    assert "[default: (100)]" in first["--agent.max_steps"]
    assert "Policy turns per trial" in first["--agent.max_steps"]  # the field's docstring
    assert "[default: (false)]" in first["--sandbox.allow_missing_limits"]
    n_leaves = sum(
        len(TrialSettings.model_fields[k].annotation.model_fields)  # type: ignore[union-attr]
        if k in ("agent", "sandbox")
        else 1
        for k in TrialSettings.model_fields
    )
    assert len(first) == n_leaves


probe = typer.Typer()


@probe.command()
@config_flags(TrialSettings, panel=trial_panel, short={"concurrency": "-c"})
def show(overrides: dict[str, Any]) -> None:
    cfg = build_config(TrialSettings, overrides, "probe")
    sets = {"set": sorted(cfg.model_fields_set), "agent_set": sorted(cfg.agent.model_fields_set)}
    typer.echo(json.dumps({"overrides": overrides, **sets}))
    typer.echo(cfg.model_dump_json())


def _run(*args: str) -> tuple[dict[str, Any], TrialSettings, str]:
    r = CliRunner().invoke(probe, list(args))
    assert r.exit_code == 0, r.output
    head, body = r.stdout.splitlines()[-2:]
    return json.loads(head), TrialSettings.model_validate_json(body), r.stderr


def test_dotted_flags_are_the_configs_keys_and_only_given_ones_are_set() -> None:
    given, cfg, err = _run(
        "-c", "3", "--agent.max_steps", "20", "--sandbox.allow_missing_limits", "true",
        "--agent.tools", "mail_*", "--agent.tools", "excel_*", "--sandbox.kwargs", "app_name=x",
        "--policy", "engine.device=cpu", "--judge", "http://127.0.0.1:9/v1#j",
    )  # fmt: skip
    assert given["overrides"] == {
        "concurrency": 3, "agent.max_steps": 20, "sandbox.allow_missing_limits": True,
        "agent.tools": ["mail_*", "excel_*"], "sandbox.kwargs.app_name": "x",
        "policy.engine.device": "cpu", "judge": "http://127.0.0.1:9/v1#j",
    }  # fmt: skip
    assert cfg.concurrency == 3 and cfg.agent.max_steps == 20 and cfg.sandbox.allow_missing_limits
    assert cfg.agent.tools == ["mail_*", "excel_*"] and cfg.policy == {"engine": {"device": "cpu"}}
    assert given["set"] == ["agent", "concurrency", "judge", "policy", "sandbox"]
    assert given["agent_set"] == ["max_steps", "tools"]  # what trials get (exclude_unset)
    assert err == ""
    _, one_array, _ = _run("--agent.tools", '["a", "b"]')
    assert one_array.agent.tools == ["a", "b"]


@pytest.mark.parametrize(
    "old", [["--ak", "max_steps=7"], ["--ek", "gateway=false"], ["--env", "local"], ["-e", "x"],
            ["--agent-timeout", "30"]],
)  # fmt: skip
def test_the_flags_of_0_1_0_are_unknown(old: list[str]) -> None:
    r = CliRunner().invoke(probe, old)
    assert r.exit_code == 2 and "No such option" in r.output, r.output


def test_a_local_setting_given_as_a_kwarg_is_typed_and_another_environment_keeps_its_own() -> None:
    _, cfg, _ = _run("--sandbox.kwargs", "gateway=false")
    assert cfg.sandbox.gateway is False and cfg.sandbox.kwargs == {}
    _, docker, _ = _run("--sandbox.environment", "docker", "--sandbox.kwargs", "cpus=2")
    assert docker.sandbox.environment_kwargs() == {"cpus": 2}


def test_a_bad_flag_value_is_an_error_naming_its_key() -> None:
    r = CliRunner().invoke(probe, ["--agent.max_steps", "0"])
    assert isinstance(r.exception, ConfigError)
    assert "agent.max_steps" in str(r.exception) and "probe" in str(r.exception)
    r = CliRunner().invoke(probe, ["--sandbox.environment", "docker", "--sandbox.memory_mb", "9"])
    assert r.exit_code == 0  # parsing is fine; building harbor's kwargs refuses it:
    cfg = TrialSettings.model_validate_json(r.stdout.splitlines()[-1])
    with pytest.raises(ConfigError, match=r"sandbox\.memory_mb: settings of the local sandbox"):
        cfg.sandbox.environment_kwargs()


@pytest.mark.parametrize("old", ["environment", "environment_kwargs", "agent_kwargs", "max_steps"])
def test_the_config_keys_of_0_1_0_are_refused_naming_the_key(old: str) -> None:
    with pytest.raises(ConfigError, match=rf"(?s)probe.*\n  {old}: Extra inputs"):
        build_config(TrialSettings, {old: {}}, "probe")


def test_the_policy_settings_are_checked_when_the_config_is() -> None:
    with pytest.raises(ValueError, match="policy"):
        TrialSettings(policy={"timeout_s": -1})
    with pytest.raises(ValueError, match="the run's model"):
        TrialSettings(policy={"model": "engine:x"})


def test_a_text_flag_keeps_its_text() -> None:
    """`--sandbox.exec_user 1000` names a uid as text; TOML would have made it a number."""
    given, cfg, _ = _run("--sandbox.exec_user", "1000", "--tokenizer", "true")
    assert cfg.sandbox.exec_user == "1000" and cfg.tokenizer == "true"
    assert given["overrides"] == {"sandbox.exec_user": "1000", "tokenizer": "true"}


def test_flags_apply_after_the_config_file_and_its_key_value_overrides(tmp_path: Path) -> None:
    """What `kwrl train CONFIG k=v --flag v` does: file, then k=v, then the flags."""
    from kwrl.config import load_config

    path = tmp_path / "c.toml"
    path.write_text('concurrency = 1\n[agent]\nmax_steps = 9\ntools = ["mail_*"]\n')
    cfg = load_config(
        TrialSettings, path, ["concurrency=2"], {"concurrency": 3, "agent.max_steps": 5}
    )
    assert (cfg.concurrency, cfg.agent.max_steps, cfg.agent.tools) == (3, 5, ["mail_*"])


class _Switched(KwrlConfig):
    overwrite: bool = False
    """Write over."""
    control: bool = True
    """Run the control."""
    n: int = 1
    """A number."""


switched = typer.Typer()


@switched.command()
@config_flags(_Switched, switches={"overwrite", "control"})
def show_switched(overrides: dict[str, Any]) -> None:
    typer.echo(json.dumps(overrides))


def test_a_switch_is_a_bool_field_s_key_and_no_key_and_only_a_given_one_overrides() -> None:
    def given(*args: str) -> dict[str, Any]:
        r = CliRunner().invoke(switched, list(args))
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout.splitlines()[-1])

    assert given() == {}
    assert given("--overwrite", "--no-control", "--n", "2") == {
        "overwrite": True, "control": False, "n": 2,
    }  # fmt: skip
    assert given("--control") == {"control": True}
    with pytest.raises(TypeError, match="n is not a bool field"):
        config_flags(_Switched, switches={"n"})
