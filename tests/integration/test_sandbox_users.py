"""Oracle trials through `kwrl trial run` the way users set up: a `.venv` reached through a symlink,
and a plain (non-root) user, whose trial runs in a rootless sandbox (a user namespace it owns)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kwrl.sandbox.base import python_paths
from kwrl.sandbox.conformance.testing import make_task, make_world

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

# The sandbox's interpreter and a tool call through the gateway (forked from a zygote that the
# host interpreter started) must both find modules that nothing imported before the trial.
SOLVE = """#!/usr/bin/env bash
set -e
"$KWRL_PYTHON" -c "import rich.table, openpyxl"
"$KWRL_PYTHON" -m kwrl.cli world call filesystem_list_files '{"path": "/"}' > /logs/agent/ls.txt
echo 42 > /filesystem/answer.txt
echo 'The answer is 42.' > /logs/agent/final_answer.txt
"""


def _trial(python: str, task: Path, out: Path, env: dict[str, str] | None = None) -> Path:
    """Run `kwrl trial run TASK --agent oracle` with `python`; the trial dir."""
    proc = subprocess.run(
        [python, "-m", "kwrl.cli", "trial", "run", str(task), "--model", "oracle", "--out", str(out)],
        capture_output=True, text=True, timeout=300, check=False, cwd=out.parent,
        env={**os.environ, "HARBOR_TELEMETRY": "0", **(env or {})},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (trial,) = out.iterdir()
    return trial


@pytest.mark.skipif(os.geteuid() != 0, reason="the root sandbox (non-root: see the user test)")
def test_a_venv_reached_through_a_symlink_runs_the_gateway(tmp_path: Path) -> None:
    world = make_world(tmp_path / "ds")
    task = make_task(tmp_path / "ds", "linked", world_id=world.name, solve=SOLVE)
    (tmp_path / "clone").mkdir()
    (tmp_path / "clone" / ".venv").symlink_to(Path(sys.prefix).resolve())
    trial = _trial(str(tmp_path / "clone" / ".venv" / "bin" / "python"), task, tmp_path / "out")
    result = json.loads((trial / "result.json").read_text())
    assert result["verifier_result"]["rewards"]["reward"] == 1.0, (
        trial / "gateway.log"
    ).read_text()
    assert "readme.txt" in (trial / "agent" / "ls.txt").read_text()


def _as_user(user: str, argv: list[str], home: Path) -> list[str]:
    """`argv` run as `user` in a private mount namespace where the interpreter is reachable: a
    Python under a dir only root may enter (pyenv in /root) is bound back under a tmpfs there."""
    script = ["set -e"]
    blocked = sorted(
        {
            a
            for p in python_paths()
            for a in p.parents
            if a != Path("/") and not a.stat().st_mode & 1
        }
    )
    top = [b for b in blocked if not any(o in b.parents for o in blocked)]
    for i, b in enumerate(top):
        inside = [p for p in python_paths() if b in p.parents]
        for j, p in enumerate(inside):
            script.append(f"mkdir -p {home}/keep{i}-{j} && mount --bind {p} {home}/keep{i}-{j}")
        script.append(f"mount -t tmpfs -o mode=755 kwrl-test {b}")
        for j, p in enumerate(inside):
            script.append(f"mkdir -p {p} && mount --bind {home}/keep{i}-{j} {p}")
    command = " ".join(f"'{a}'" for a in argv)
    script.append(
        f"exec setpriv --reuid={user} --regid={user} --init-groups env HOME={home} {command}"
    )
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(script)]


# As the plain user: who it is inside, its capabilities, and how many processes it may start.
PROBE = """#!/usr/bin/env bash
set -e
id -u > /logs/agent/uid.txt
grep CapEff /proc/self/status > /logs/agent/caps.txt
"$KWRL_PYTHON" - > /logs/agent/forks.txt <<'PY'
import os, signal, time
kids = []
try:
    while len(kids) < 2000:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print(len(kids), e.errno)
for pid in kids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
PY
echo 42 > /filesystem/answer.txt
echo 'The answer is 42.' > /logs/agent/final_answer.txt
# every process it may signal: the gateway and the shell harbor ran it under too (not itself, not
# the sandbox's init); the trial is still graded
kill -9 -1 || true
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="creates a user (useradd)")
def test_a_plain_user_runs_an_oracle_trial_in_a_rootless_sandbox() -> None:
    user = "kwrl-plain"
    made = subprocess.run(["id", user], capture_output=True, check=False).returncode != 0
    if made:
        subprocess.run(["useradd", "--system", "--no-create-home", user], check=True)
    base = Path(tempfile.mkdtemp(prefix="kwrl-user-"))  # pytest's tmp_path is root's alone
    try:
        base.chmod(0o755)
        world = make_world(base / "ds")
        task = make_task(base / "ds", "plain", world_id=world.name, solve=PROBE)
        home = base / "home"
        home.mkdir()
        shutil.chown(home, user, user)

        def trial(*ek: str) -> tuple[int, str, Path]:
            out = home / f"trials{len(ek)}"
            argv = [sys.executable, "-m", "kwrl.cli", "trial", "run", str(task), "--model"]
            argv += ["oracle", "--out", str(out), "--sandbox.sandbox_dir", str(home / "sbx")]
            argv += [a for k in ek for a in ("--sandbox.kwargs", k)]
            proc = subprocess.run(
                _as_user(user, argv, home), capture_output=True, text=True, timeout=300,
                check=False, cwd=home, env={**os.environ, "HARBOR_TELEMETRY": "0", "COLUMNS": "400"},
            )  # fmt: skip
            (d,) = out.iterdir()
            return proc.returncode, proc.stdout + proc.stderr, d

        userns = subprocess.run(
            _as_user(user, ["unshare", "--user", "--map-root-user", "--mount", "true"], home),
            capture_output=True, check=False,
        )  # fmt: skip
        rc, out, d = trial()
        assert rc != 0, out
        why = (d / "exception.txt").read_text()
        if userns.returncode != 0:  # a host without unprivileged user namespaces
            assert (
                "refuses unprivileged user namespaces" in why
                and "--sandbox.environment docker" in why
            ), why
            return
        # No writable cgroups here for a plain user: refused by default, naming what is missing.
        assert "cannot apply memory_mb=1024, cpus=1.0" in why, why
        assert "allow_missing_limits" in why and "Delegate=yes" in why
        rc, out, d = trial("allow_missing_limits=true")
        assert rc == 0 and "reward 1 " in out, out
        result = json.loads((d / "result.json").read_text())
        assert result["verifier_result"]["rewards"]["reward"] == 1.0
        assert (d / "agent" / "uid.txt").read_text().strip() == "0"  # its own user namespace
        assert (d / "agent" / "caps.txt").read_text().split() == ["CapEff:", "0000000000000000"]
        started, errno = map(int, (d / "agent" / "forks.txt").read_text().split())
        assert 400 < started < 512 and errno == 11  # RLIMIT_NPROC (pids 512) binds: EAGAIN
        # the kill reached: the shell harbor ran the script under died of it
        assert (d / "agent" / "exit-code.txt").read_text().strip() == "-9"
        report = json.loads((d / "sandbox.json").read_text())
        assert report["unenforced"] == ["memory_mb=1024", "cpus=1.0"]
    finally:
        shutil.rmtree(base, ignore_errors=True)
        if made:
            subprocess.run(["userdel", user], capture_output=True, check=False)
