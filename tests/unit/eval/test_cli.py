"""`kwrl eval`'s flags restate no default of their own: each equals the EvalConfig field it fills,
so the CLI and a config built in code evaluate alike."""

from __future__ import annotations

import inspect

from kwrl.eval.cli import eval_
from kwrl.eval.metrics import Bootstrap
from kwrl.eval.run import EvalConfig

# flag parameter -> (config class, field) where the names differ
RENAMED = {
    "env": (EvalConfig, "environment"),
    "agent_timeout": (EvalConfig, "agent_timeout_sec"),
    "seed": (Bootstrap, "seed"),
    "n_boot": (Bootstrap, "n_boot"),
}


def test_every_eval_flag_default_is_its_config_fields() -> None:
    checked = []
    for p in inspect.signature(eval_).parameters.values():
        cls, name = RENAMED.get(p.name, (EvalConfig, p.name))
        field = cls.model_fields.get(name)
        if field is None or p.default is inspect.Parameter.empty:
            continue
        assert p.default == field.get_default(call_default_factory=True), p.name
        checked.append(p.name)
    assert {"n_samples", "concurrency", "out", "max_steps", "retries", "env", "seed"} <= set(
        checked
    )
