"""`kwrl eval`'s flags are EvalConfig's fields: one flag per field, none with a default of its own
(the help shows the field's), so the CLI and a config built in code evaluate alike."""

from __future__ import annotations

import inspect
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
