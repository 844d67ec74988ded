"""The local sandbox really isolates: real bubblewrap, overlayfs, cgroups and processes.

Each test starts a `LocalEnvironment` on a hand-made task (kwrl.sandbox.conformance.testing) and runs shell
commands in it the way harbor does. Needs root and bwrap (skipped otherwise).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kwrl.sandbox import cgroups
from kwrl.sandbox.base import SandboxLimitError
from kwrl.sandbox.conformance.testing import make_dataset, make_environment
from kwrl.sandbox.local import LocalEnvironment

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed process waits for the host's init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("ds"), 1, memory_mb=256)[0]


async def _started(task_dir: Path, trial_dir: Path, **settings: object) -> LocalEnvironment:
    env = make_environment(
        task_dir, trial_dir, gateway=False, sandbox_dir=str(trial_dir.parent / "sbx"), **settings
    )
    await env.start(force_build=False)
    return env


@pytest.fixture
async def env(task_dir: Path, tmp_path: Path) -> AsyncIterator[LocalEnvironment]:
    e = await _started(task_dir, tmp_path / "trial")
    try:
        yield e
    finally:
        await e.stop(delete=True)


async def test_agent_code_cannot_read_a_secret_planted_on_the_host(
    env: LocalEnvironment, tmp_path: Path
) -> None:
    token = secrets.token_hex(8)
    planted = [
        Path("/root") / f"kwrl-secret-{token}",
        tmp_path / "secret.txt",
        Path("/tmp") / f"kwrl-secret-{token}",
    ]
    for p in planted:
        p.write_text(token)
    try:
        for p in planted:
            r = await env.exec(f"cat {p}")
            assert r.return_code != 0 and token not in (r.stdout or "")
        r = await env.exec(
            f"ls /root; find / -xdev -name 'kwrl-secret-{token}' 2>/dev/null; echo done"
        )
        assert token not in (r.stdout or "")
    finally:
        for p in planted:
            p.unlink()


async def test_agent_code_cannot_connect_to_a_port_open_on_the_host(env: LocalEnvironment) -> None:
    srv = socket.socket()
    srv.bind(("0.0.0.0", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    try:
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        probe.connect(("10.255.255.255", 1))
        host_ip = probe.getsockname()[0]
        probe.close()
        for ip in {"127.0.0.1", host_ip}:
            r = await env.exec(
                f"timeout 5 bash -c 'echo hi > /dev/tcp/{ip}/{port}' && echo CONNECTED"
            )
            assert "CONNECTED" not in (r.stdout or ""), ip
        r = await env.exec("cat /proc/net/dev")
        assert "lo:" in (r.stdout or "") and "eth0" not in (r.stdout or "")
    finally:
        srv.close()


async def test_tests_are_hidden_from_the_agent_and_shown_to_the_verifier(
    env: LocalEnvironment, task_dir: Path
) -> None:
    r = await env.exec("ls /tests")
    assert r.return_code != 0
    r = await env.exec("ls /kwrl/initial")
    assert r.return_code != 0
    await env.upload_dir(task_dir / "tests", "/tests")
    r = await env.exec("cat /tests/verifiers.json && ls /kwrl/initial/world/filesystem")
    assert (
        r.return_code == 0
        and "verifier_id" in (r.stdout or "")
        and "readme.txt" in (r.stdout or "")
    )
    r = await env.exec("touch /kwrl/initial/world/x")
    assert r.return_code != 0, "the initial world must be read-only"


async def test_the_world_is_copy_on_write_over_a_pristine_seed(
    env: LocalEnvironment, task_dir: Path
) -> None:
    seed = task_dir.parents[1] / "worlds"
    before = sorted(str(p.relative_to(seed)) for p in seed.rglob("*"))
    r = await env.exec(
        "echo changed >> /filesystem/readme.txt && echo new > /filesystem/new.txt && cat /filesystem/readme.txt"
    )
    assert r.return_code == 0 and "changed" in (r.stdout or "")
    assert sorted(str(p.relative_to(seed)) for p in seed.rglob("*")) == before
    assert "changed" not in next(seed.rglob("readme.txt")).read_text()


async def test_agent_code_has_no_capabilities(env: LocalEnvironment) -> None:
    r = await env.exec(
        "grep CapEff /proc/self/status; mknod /tmp/disk b 8 0 || echo DENIED; mount -t tmpfs x /mnt 2>&1 || echo DENIED2"
    )
    assert "0000000000000000" in (r.stdout or "")
    assert "DENIED" in (r.stdout or "") and "DENIED2" in (r.stdout or "")


async def test_stop_leaves_no_process_mount_or_dir(task_dir: Path, tmp_path: Path) -> None:
    env = await _started(task_dir, tmp_path / "trial")
    r = await env.exec("setsid sleep 1000 > /dev/null 2>&1 < /dev/null & echo started")
    assert r.return_code == 0
    cg = env.cgroups
    assert cg is not None
    pids = cg.pids()
    assert len(pids) >= 3  # bwrap monitor, init, sleep
    root = env.root
    assert root is not None
    await env.stop(delete=True)
    await env.stop(delete=True)  # idempotent
    alive = [p for p in pids if _running(p)]
    assert alive == []
    assert not root.exists()
    assert str(root) not in Path("/proc/mounts").read_text()
    assert not any(d.exists() for d in cg.dirs.values())
    assert (tmp_path / "trial" / "sandbox.json").is_file()


async def test_a_fork_bomb_is_contained_while_another_trial_goes_on(
    task_dir: Path, tmp_path: Path
) -> None:
    bomb = await _started(task_dir, tmp_path / "bomb", pids_max=64)
    calm = await _started(task_dir, tmp_path / "calm")
    try:
        run = asyncio.create_task(bomb.exec("bomb() { bomb | bomb & }; bomb; wait", timeout_sec=60))
        r = await calm.exec(
            "for i in $(seq 20); do echo $i > /filesystem/n.txt; done; cat /filesystem/n.txt"
        )
        assert r.return_code == 0 and (r.stdout or "").strip() == "20"
        # Where the host delegates no pids controller (the lent cgroup v2 machine runs with
        # allow_missing_limits), the memory limit is what stops the bomb.
        limit = "process limit" if "pids" in cgroups.support().controllers else "memory limit"
        with pytest.raises(SandboxLimitError, match=limit):
            await run
        r = await bomb.exec("echo still-usable")
        assert (r.stdout or "").strip() == "still-usable"
    finally:
        await bomb.stop(delete=True)
        await calm.stop(delete=True)


async def test_killed_orphans_are_reaped_before_the_next_command(
    env: LocalEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork bomb's killed processes are orphans the sandbox's init reaps; until it does they
    count against pids.max, so the command after the bomb could not fork (seen once in CI: the
    fork bomb test's `echo still-usable` printed nothing). `kill("exec")` waits for the reaping."""
    import signal

    cg = env.cgroups
    assert cg is not None
    if "pids" not in cg.enforced:
        pytest.skip("no pids controller here")
    monkeypatch.setattr(cgroups, "UNCHARGE_S", 0.2)
    os.kill(env.init_pid, signal.SIGSTOP)  # the init cannot reap while stopped
    try:
        await env.exec("for i in $(seq 20); do (sleep 60 > /dev/null 2>&1 &); done")
        assert len(cg.pids("exec")) == 20
        await asyncio.to_thread(cg.kill, "exec")  # bounded: returns with the zombies unreaped
        assert cg.pids("exec") == [] and cg.charged("exec") == 20
        monkeypatch.setattr(cgroups, "UNCHARGE_S", 60.0)
        kill = asyncio.ensure_future(asyncio.to_thread(cg.kill, "exec"))
        # still waiting for the stopped init (a kill that returned on an empty member list would
        # be done by now: never a false failure, at worst a false pass on a very slow machine)
        done, _ = await asyncio.wait({kill}, timeout=0.5)
        assert not done
    finally:
        os.kill(env.init_pid, signal.SIGCONT)
    await kill
    assert cg.charged("exec") == 0
    r = await env.exec("echo reaped")
    assert (r.stdout or "").strip() == "reaped"


async def test_a_memory_hog_is_contained(env: LocalEnvironment) -> None:
    hog = '"$KWRL_PYTHON" -c "x = []\nwhile True: x.append(bytearray(16 * 1024 * 1024))"'
    with pytest.raises(SandboxLimitError, match="memory limit"):
        await env.exec(hog, timeout_sec=60)
    r = await env.exec("echo alive")
    assert (r.stdout or "").strip() == "alive"


async def test_a_command_past_its_timeout_is_killed(env: LocalEnvironment) -> None:
    from kwrl.sandbox.base import SandboxTimeoutError

    with pytest.raises(SandboxTimeoutError):
        await env.exec("sleep 30", timeout_sec=1)
    cg = env.cgroups
    assert cg is not None
    assert cg.pids("exec") == []


async def test_files_move_in_and_out(env: LocalEnvironment, tmp_path: Path) -> None:
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a.txt").write_text("A")
    await env.upload_dir(src, "/filesystem/up")
    (tmp_path / "f.txt").write_text("F")
    await env.upload_file(tmp_path / "f.txt", "/tmp/deep/f.txt")
    r = await env.exec("cat /filesystem/up/sub/a.txt /tmp/deep/f.txt")
    assert r.stdout == "AF"
    await env.download_dir("/filesystem/up", tmp_path / "out")
    assert (tmp_path / "out" / "sub" / "a.txt").read_text() == "A"
    await env.download_file("/tmp/deep/f.txt", tmp_path / "f2.txt")
    assert (tmp_path / "f2.txt").read_text() == "F"


async def test_a_command_cancelled_while_spawning_leaves_nothing_running(
    env: LocalEnvironment,
) -> None:
    cg = env.cgroups
    assert cg is not None
    for delay in (0.0, 0.05, 0.3):
        task = asyncio.create_task(env.exec("sleep 100 & sleep 100"))
        await asyncio.sleep(delay)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert cg.pids("exec") == [], delay


async def test_a_timeout_ends_even_when_a_daemon_holds_the_output(env: LocalEnvironment) -> None:
    from kwrl.sandbox.base import SandboxTimeoutError

    with pytest.raises(SandboxTimeoutError):
        await env.exec("setsid sleep 100 & sleep 100", timeout_sec=1)
    cg = env.cgroups
    assert cg is not None and cg.pids("exec") == []


async def test_commands_can_run_as_another_user_in_both_phases(
    env: LocalEnvironment, task_dir: Path
) -> None:
    r = await env.exec("id -u; grep CapEff /proc/self/status", user="nobody")
    assert (r.stdout or "").split()[0] == "65534" and "0000000000000000" in (r.stdout or "")
    await env.upload_dir(task_dir / "tests", "/tests")
    r = await env.exec("id -u; grep CapEff /proc/self/status", user="nobody")
    assert r.return_code == 0, r.stderr
    assert (r.stdout or "").split()[0] == "65534" and "0000000000000000" in (r.stdout or "")
