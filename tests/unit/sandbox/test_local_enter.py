"""Entering a sandbox (`kwrl.sandbox.local.enter`): nothing inside is loaded with a privilege.

The target here is a bubblewrap process whose root stays *writable* and holds an
`/etc/ld.so.preload` naming a library that logs who loaded it: the helper (compiled, and its
Python fallback) must run the command in the target's namespaces and root, and the first program
the sandbox's loader maps (the command itself) must already have no capability and
no_new_privs. The sandbox's root is read-only in kwrl besides (tests/integration, the conformance
suite's `root:*` checks); this tests the second guard alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kwrl.sandbox.local import native
from kwrl.sandbox.local.enter import enter_argv

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None or shutil.which("cc") is None,
    reason="needs root, bubblewrap and a C compiler",
)

_LIB = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void probe(void) {
    char buf[4096], out[256], comm[64] = "?", caps[32] = "?", nnp[8] = "?", uid[16] = "?";
    int fd = open("/proc/self/status", O_RDONLY), n;
    if (fd < 0) return;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = 0;
    char *p;
    if ((p = strstr(buf, "Name:"))) sscanf(p, "Name: %63s", comm);
    if ((p = strstr(buf, "CapEff:"))) sscanf(p, "CapEff: %31s", caps);
    if ((p = strstr(buf, "NoNewPrivs:"))) sscanf(p, "NoNewPrivs: %7s", nnp);
    if ((p = strstr(buf, "Uid:"))) sscanf(p, "Uid: %15s", uid);
    n = snprintf(out, sizeof out, "%s %s %s %s\n", comm, caps, nnp, uid);
    fd = open("/out/log", O_WRONLY | O_APPEND | O_CREAT, 0666);
    if (fd >= 0) { write(fd, out, n); close(fd); }
}
"""


@pytest.fixture
def target(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """(host pid of a process in a fresh sandbox whose root is writable and preloads the probe
    library, the host dir the library logs into)."""
    out = tmp_path / "out"
    out.mkdir(mode=0o777)
    out.chmod(0o777)
    (tmp_path / "probe.c").write_text(_LIB)
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(out / "probe.so"), str(tmp_path / "probe.c")],
        check=True,
    )
    read_fd, write_fd = os.pipe()
    argv = ["bwrap", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
            "--tmpfs", "/", "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev",
            "--tmpfs", "/tmp", "--bind", str(out), "/out", "--dir", "/etc",
            "--ro-bind-try", "/etc/passwd", "/etc/passwd", "--ro-bind-try", "/etc/group", "/etc/group",
            "--info-fd", str(write_fd), "--cap-drop", "ALL"]  # fmt: skip
    for name in ("bin", "sbin", "lib", "lib64"):
        p = Path("/") / name
        if p.is_symlink():
            argv += ["--symlink", os.readlink(p), str(p)]
    plant = "echo /out/probe.so > /etc/ld.so.preload && exec sleep 600"
    proc = subprocess.Popen([*argv, "--", "/usr/bin/bash", "-c", plant], pass_fds=(write_fd,))
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        pid = int(json.loads(f.read())["child-pid"])
    try:
        for _ in range(2000):  # the sleep, loaded with the preload in place
            if (out / "log").is_file() and "sleep" in (out / "log").read_text():
                break
            subprocess.run(["true"], check=True)
        yield pid, out
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("compiler", ["cc", "none"])
def test_a_planted_preload_is_never_loaded_with_a_privilege(
    target: tuple[int, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiler: str
) -> None:
    pid, out = target
    native.compiled.cache_clear()
    if compiler == "none":
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    argv = enter_argv(tmp_path / "cache", pid, userns=False)
    monkeypatch.undo()
    native.compiled.cache_clear()
    assert argv[0].endswith("python") if compiler == "none" else "enter-" in argv[0]

    done = subprocess.run(
        [*argv, "/usr/bin/bash", "-c", "cat /etc/ld.so.preload; grep CapEff /proc/self/status"],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "/out/probe.so" in done.stdout  # it ran in the target's root
    assert "CapEff:\t0000000000000000" in done.stdout
    lines = [line.split() for line in (out / "log").read_text().splitlines()]
    entered = [line for line in lines if line[0] in ("bash", "cat", "grep")]
    assert entered, lines  # the planted library was loaded by the command...
    assert all(caps == "0000000000000000" and nnp == "1" for _, caps, nnp, _ in entered), entered
    assert {line[0] for line in lines} <= {"sleep", "bash", "cat", "grep"}, lines  # ...only by it

    as_nobody = enter_argv(tmp_path / "cache", pid, userns=False, user=(65534, 65534))
    done = subprocess.run(
        [*as_nobody, "/usr/bin/id", "-u"], capture_output=True, text=True, check=False
    )
    assert done.stdout.strip() == "65534"
    status = subprocess.run([*argv, "/usr/bin/bash", "-c", "exit 7"], check=False)
    assert status.returncode == 7
    killed = subprocess.run([*argv, "/usr/bin/bash", "-c", "kill -9 $$"], check=False)
    assert killed.returncode == -9  # the parent ends by the command's signal, as nsenter does
