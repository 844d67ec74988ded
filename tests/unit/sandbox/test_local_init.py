"""The sandbox's init (`kwrl.sandbox.local.init`): compiled where a C compiler is, else Python; either
says it is ready, then has /dev/null as stdout and stderr. Its life as pid 1 (signals, ptrace,
/proc/1/fd) is tested in the sandbox: tests/integration/test_sandbox_isolation.py and the
conformance suite's `init_log` and `kill_all` attacks."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kwrl.sandbox.local import native
from kwrl.sandbox.local.init import INIT_PATH, READY, compiled_init, init_argv


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    native.compiled.cache_clear()
    yield
    native.compiled.cache_clear()


def _ready_then_quiet(argv: list[str]) -> None:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(READY)
        deadline = time.monotonic() + 30  # it swaps its fds right after the line
        links: list[str] = []
        while time.monotonic() < deadline:
            links = [os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in (1, 2)]
            if links == ["/dev/null", "/dev/null"]:
                break
            time.sleep(0.01)
        assert links == ["/dev/null", "/dev/null"]
        assert proc.poll() is None  # it waits for orphans to reap
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_the_compiled_init_is_bound_read_only_and_says_ready(tmp_path: Path) -> None:
    argv, binds = init_argv(tmp_path / "cache")
    assert argv == [INIT_PATH]
    ((binary, target, read_only),) = binds
    assert target == INIT_PATH and read_only
    _ready_then_quiet([binary])
    native.compiled.cache_clear()
    assert compiled_init(tmp_path / "cache") == Path(binary)  # compiled once, found again


def test_without_a_compiler_the_init_is_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    argv, binds = init_argv(tmp_path / "cache")
    assert binds == [] and argv[1:4] == ["-I", "-S", "-c"]
    _ready_then_quiet(argv)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_a_cache_others_may_write_is_not_trusted(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert compiled_init(cache) is not None
    native.compiled.cache_clear()
    cache.chmod(0o777)
    assert compiled_init(cache) is None
