"""Pure pieces of the local sandbox: limit checks and the grader entry point it expects."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kwrl.errors import ConfigError
from kwrl.sandbox.contract import check_limits
from kwrl.tasks.taskdir import TEST_SH_TEXT, limit_problems, outdated_test_sh


def test_limits_must_be_positive() -> None:
    ok = SimpleNamespace(cpus=2, memory_mb=1024, storage_mb=None)
    assert limit_problems(ok) == []
    bad = SimpleNamespace(cpus=0, memory_mb=-5, storage_mb=-1)
    assert [f for f, _ in limit_problems(bad)] == [
        "environment.cpus",
        "environment.memory_mb",
        "environment.storage_mb",
    ]
    with pytest.raises(ConfigError, match=r"task.toml: environment.cpus = 0"):
        check_limits(bad, Path("t/task.toml"))


def test_an_old_kwrl_test_sh_is_outdated_and_a_custom_one_is_not() -> None:
    old = TEST_SH_TEXT.replace("cd /\n", "").replace(" -I -m", " -m")
    assert outdated_test_sh(old)
    assert not outdated_test_sh(TEST_SH_TEXT)
    assert not outdated_test_sh("#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n")


def test_harbors_relative_paths_are_made_absolute_where_they_enter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harbor.models.trial.paths import TrialPaths

    from kwrl.sandbox.local.env import _absolute_paths

    monkeypatch.chdir(tmp_path)
    kwargs = _absolute_paths(
        {
            "environment_dir": Path("D/tasks/t/environment"),
            "trial_paths": TrialPaths(trial_dir=Path("jobs/j/t__x")),
            "mounts": [
                {"type": "bind", "source": "jobs/j/t__x/agent", "target": "/logs/agent"},
                {"type": "volume", "source": "named", "target": "/v"},
            ],
            "session_id": "s",
        }
    )
    assert kwargs["environment_dir"] == tmp_path / "D/tasks/t/environment"
    assert kwargs["trial_paths"].trial_dir == tmp_path / "jobs/j/t__x"
    assert kwargs["mounts"][0]["source"] == str(tmp_path / "jobs/j/t__x/agent")
    assert kwargs["mounts"][1]["source"] == "named" and kwargs["session_id"] == "s"
