"""Pure pieces of the local sandbox: limit checks and the grader entry point it expects."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kwrl.errors import ConfigError
from kwrl.sandbox.local import check_limits
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
