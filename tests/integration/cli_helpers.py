"""The `kwrl` command run in-process as a user types it, and a byte-for-byte picture of a tree."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from kwrl.cli import main


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every path under `root`: its bytes (None for a dir) and mode."""
    out: dict[str, tuple[bytes | None, int]] = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        data = None if stat.S_ISDIR(st.st_mode) else p.read_bytes()
        out[str(p.relative_to(root))] = (data, stat.S_IMODE(st.st_mode))
    return out


def kwrl(
    cwd: Path,
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    mp: pytest.MonkeyPatch,
    *,
    umask: int | None = None,
) -> tuple[int, str, str]:
    """`kwrl ARGV` typed in `cwd` (under `umask` when given), through the console script's entry
    (`kwrl.cli.main`: a kwrl error is one line on stderr, exit 2): (exit status, stdout, stderr)."""
    capsys.readouterr()
    old = os.umask(umask) if umask is not None else None
    try:
        with mp.context() as m, pytest.raises(SystemExit) as done:
            m.chdir(cwd)
            m.setattr(sys, "argv", ["kwrl", *argv])
            m.setenv("COLUMNS", "400")
            main()
    finally:
        if old is not None:
            os.umask(old)
    out = capsys.readouterr()
    code = done.value.code
    return (code if isinstance(code, int) else 1), out.out, out.err
