"""`kwrl eval`'s flags are EvalConfig's fields: one flag per field, none with a default of its own
(the help shows the field's), so the CLI and a config built in code evaluate alike; what the
console shows of a run."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import get_args

from typer.models import OptionInfo

from kwrl.cli_config import defaults_of, shown_default
from kwrl.eval.cli import eval_
from kwrl.eval.config import EvalConfig


def test_every_eval_flag_is_a_config_field_and_shows_its_default() -> None:
    options = {}
    for p in inspect.signature(eval_).parameters.values():
        info = next((a for a in get_args(p.annotation) if isinstance(a, OptionInfo)), None)
        if info is not None and not info.hidden:
            assert p.default is None, p.name  # given or not: only given flags override
            options[str(info.default).removeprefix("--")] = info  # typer keeps the first name there
    defaults = defaults_of(EvalConfig)
    assert set(options) == set(defaults) - {"dataset"}
    for key, info in options.items():
        assert info.show_default == shown_default(defaults[key]), key
    assert {"n_samples", "concurrency", "agent.max_steps", "sandbox.environment"} <= set(options)
    assert "bootstrap.seed" in options and "out" in options


def test_report_prints_pass_at_k_when_the_run_has_k_samples(tmp_path: Path, task_dir: Path) -> None:
    """`kwrl eval -k 3` showed pass@k only in report.html; the console shows it too."""
    from eval_testkit import make_run
    from typer.testing import CliRunner

    from kwrl.cli import app

    run = make_run(tmp_path / "run", task_dir, "oracle", [1.0, 0.0, 1.0])
    r = CliRunner().invoke(app, ["report", str(run)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "pass@k and pass^k" in r.output
    rows = [line for line in r.output.splitlines() if line.startswith("│ 3 ")]
    assert rows and "100.0%" in rows[0] and "0.0%" in rows[0]  # pass@3 1, pass^3 0
    single = make_run(tmp_path / "one", task_dir, "oracle", [1.0])
    r = CliRunner().invoke(app, ["report", str(single)], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "pass@k" not in r.output
