"""Trial cgroups: the pure parts (parsing, choosing the backend, what a host supports, refusing to
run without limits) on hand-made cgroup trees, and the real v1 or v2 backend on this host's cgroupfs
(limits applied, a process limit and a memory limit hit and counted, kill-all, sweeping)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kwrl.errors import SandboxError
from kwrl.sandbox import cgroups
from kwrl.sandbox.cgroups import UNIFIED, Limits

HYBRID = """12:pids:/
4:memory:/process_api/c4c0
6:freezer:/
1:cpu,cpuacct:/
9:name=systemd:/
0::/
"""


def test_proc_cgroup_is_parsed_per_controller_and_the_unified_line_is_under_empty() -> None:
    v1 = cgroups.parse_proc_cgroup(HYBRID)
    assert v1["memory"] == "/process_api/c4c0" and v1["pids"] == "/" and v1["cpuacct"] == "/"
    assert v1[""] == "/"
    assert cgroups.parse_proc_cgroup("0::/process_api/a85b\n") == {"": "/process_api/a85b"}


def test_event_counters_are_read_from_flat_keyed_files() -> None:
    assert cgroups.parse_keyed("max 3\n") == {"max": 3}
    oom = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"
    assert cgroups.parse_keyed(oom)["oom_kill"] == 2
    events = "low 0\nhigh 0\nmax 17\noom 1\noom_kill 1\noom_group_kill 0\n"
    assert cgroups.parse_keyed(events)["oom_kill"] == 1
    assert cgroups.parse_keyed("") == {}


def test_a_cpu_quota_is_a_share_of_the_period_and_at_least_a_millisecond() -> None:
    assert cgroups.cpu_quota_us(0.5) == 50_000
    assert cgroups.cpu_quota_us(2) == 200_000
    assert cgroups.cpu_quota_us(0.001) == 1000


def _v2_tree(fs: Path, own: str, *, controllers: str, procs: str, root: bool = False) -> Path:
    (fs / "cgroup.controllers").parent.mkdir(parents=True, exist_ok=True)
    (fs / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids\n")
    d = fs / own.lstrip("/")
    d.mkdir(parents=True, exist_ok=True)
    (d / "cgroup.controllers").write_text(controllers + "\n")
    (d / "cgroup.subtree_control").write_text("\n")
    (d / "cgroup.procs").write_text(procs)
    if not root:
        (d / "cgroup.type").write_text("domain\n")
    return d


def test_the_backend_follows_what_sys_fs_cgroup_is(tmp_path: Path) -> None:
    assert cgroups.detect(tmp_path) is None
    (tmp_path / "pids").mkdir()
    (tmp_path / "unified").mkdir()
    assert cgroups.detect(tmp_path) == "v1"  # hybrid: v1 controllers, an empty cgroup2 beside
    (tmp_path / "cgroup.controllers").write_text("memory pids\n")
    assert cgroups.detect(tmp_path) == "v2"


def test_a_delegated_v2_cgroup_without_processes_gets_every_limit(tmp_path: Path) -> None:
    d = _v2_tree(tmp_path, "/svc/kwrl.scope", controllers="cpu memory pids", procs="")
    sup = cgroups.support(tmp_path, "0::/svc/kwrl.scope\n")
    assert sup.version == "v2" and sup.kill and sup.notes == ()
    assert sup.controllers == {"cpu", "memory", "pids"}
    assert sup.bases == {UNIFIED: d / "kwrl"}
    assert cgroups.unenforced(Limits(memory_mb=256, pids=64, cpus=1.0), sup) == []


def test_a_v2_cgroup_with_processes_and_only_memory_delegated_says_why(tmp_path: Path) -> None:
    """The lent H200 as found: /process_api/<id> holds others' processes, memory only."""
    _v2_tree(tmp_path, "/process_api/a85b", controllers="memory", procs="1\n")
    sup = cgroups.support(tmp_path, "0::/process_api/a85b\n")
    assert sup.version == "v2" and sup.kill and sup.controllers == frozenset()
    text = " ".join(sup.notes)
    assert "pids, cpu not delegated to /process_api/a85b" in text
    assert "holds 1 processes not of this one (e.g. pid 1)" in text and "memory" in text
    assert not sup.leaf_move
    # Once its processes sit in a leaf, memory is usable and pids and cpu are still not.
    (tmp_path / "process_api/a85b/cgroup.procs").write_text("")
    sup = cgroups.support(tmp_path, "0::/process_api/a85b\n")
    assert sup.controllers == {"memory"}
    assert cgroups.unenforced(Limits(memory_mb=256, pids=512), sup) == ["pids_max=512"]


def test_a_v2_cgroup_holding_only_this_process_is_emptied_into_a_leaf_first(
    tmp_path: Path,
) -> None:
    """As in a `systemd-run --scope -p Delegate=yes` scope: only kwrl (and its children) inside."""
    d = _v2_tree(tmp_path, "/scope", controllers="cpu memory pids", procs=f"{os.getpid()}\n")
    sup = cgroups.support(tmp_path, "0::/scope\n")
    assert sup.leaf_move and sup.controllers == {"cpu", "memory", "pids"} and sup.notes == ()
    # Once moved, this process's cgroup is the leaf; trials still go beside it.
    (d / "cgroup.procs").write_text("")
    sup = cgroups.support(tmp_path, f"0::/scope/{cgroups.LEAF}\n")
    assert not sup.leaf_move and sup.bases == {UNIFIED: d / "kwrl"}


def test_this_process_and_its_children_are_ours_and_init_is_not() -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        assert cgroups._ours(os.getpid()) and cgroups._ours(child.pid)
        assert not cgroups._ours(1) and not cgroups._ours(os.getppid())
    finally:
        child.kill()
        child.wait()


def test_the_root_cgroup_may_hold_processes_and_still_enable_controllers(tmp_path: Path) -> None:
    _v2_tree(tmp_path, "/", controllers="cpu memory pids", procs="1\n2\n", root=True)
    sup = cgroups.support(tmp_path, "0::/\n")
    assert sup.controllers == {"cpu", "memory", "pids"} and sup.bases == {
        UNIFIED: tmp_path / "kwrl"
    }


def test_v1_support_is_per_controller(tmp_path: Path) -> None:
    for c in ("pids", "memory"):
        (tmp_path / c).mkdir()
    sup = cgroups.support(tmp_path, HYBRID)
    assert sup.version == "v1" and sup.kill
    assert sup.controllers == {"pids", "memory"}
    assert sup.bases["memory"] == tmp_path / "memory/process_api/c4c0/kwrl"
    assert any("cpu" in n for n in sup.notes) and any("freezer" in n for n in sup.notes)


def test_a_host_without_cgroups_refuses_unless_the_caller_opts_out(tmp_path: Path) -> None:
    sup = cgroups.support(tmp_path, "0::/\n")
    assert sup.version is None and not sup.kill
    limits = Limits(memory_mb=256, pids=512)
    with pytest.raises(SandboxError) as e:
        cgroups.require_limits(limits, allow_missing=False, sup=sup)
    msg = str(e.value)
    assert "memory_mb=256" in msg and "pids_max=512" in msg and "kill-all" in msg
    assert str(tmp_path) in msg and "allow_missing_limits=true" in msg
    missing = cgroups.require_limits(limits, allow_missing=True, sup=sup)
    assert missing[:2] == ["memory_mb=256", "pids_max=512"] and len(missing) == 3
    # What an rlimit really binds (a non-root sandbox's RLIMIT_NPROC) counts as applied.
    left = cgroups.unenforced(limits, sup, also_enforced={"pids", "memory", "kill"})
    assert left == []
    assert cgroups.unenforced(Limits(cpus=2.0), sup, also_enforced={"kill"}) == ["cpus=2.0"]


# ------------------------------------------------------------------ this host's real cgroups

SUPPORT = cgroups.support()
needs_cgroups = pytest.mark.skipif(
    not SUPPORT.kill, reason=f"no trial cgroups: {SUPPORT.describe()}"
)


def _needs(ctrl: str) -> None:
    if ctrl not in SUPPORT.controllers:
        pytest.skip(f"{ctrl} limits unavailable: {SUPPORT.describe()}")


@pytest.fixture
def cg() -> Iterator[cgroups.Cgroups]:
    c = cgroups.trial_cgroups(f"{os.getpid()}-{secrets.token_hex(4)}", SUPPORT)
    assert c is not None
    try:
        yield c
    finally:
        c.kill()
        c.remove()
    assert not any(d.exists() for d in c.dirs.values())


def _spawn(cg: cgroups.Cgroups, script: str) -> subprocess.Popen[bytes]:
    joined = " ".join(f'echo $$ > "{f}";' for f in cg.procs_files("exec"))
    return subprocess.Popen(["sh", "-c", f"{joined} {script}"], stdout=subprocess.PIPE)


@needs_cgroups
def test_a_trial_cgroup_limits_lists_kills_and_goes_away(cg: cgroups.Cgroups) -> None:
    cg.create(Limits(memory_mb=64, pids=8, cpus=0.5))
    want = Limits(
        memory_mb=64 if "memory" in cg.enforced else None,
        pids=8 if "pids" in cg.enforced else None,
        cpus=0.5 if "cpu" in cg.enforced else None,
    )
    assert cg.applied() == want
    if cg.version == "v2":
        assert (cg.dirs[UNIFIED] / "memory.swap.max").read_text().strip() in ("0", "")
    proc = _spawn(cg, "echo in; exec sleep 60")
    assert proc.stdout is not None and proc.stdout.readline() == b"in\n"
    assert cg.pids("exec") == [proc.pid] and cg.pids() == [proc.pid]
    for d in cg.dirs.values():  # the trial cgroup itself holds no process, only its children
        assert (d / "cgroup.procs").read_text() == ""
    assert cg.kill() == 1
    proc.wait(timeout=10)
    assert cg.pids() == []
    assert cg.events().as_dict() == {"pids_max": 0, "oom_kill": 0}
    assert cg.dirs[next(iter(cg.dirs))] in cgroups.leftovers(os.getpid(), SUPPORT)


@needs_cgroups
@pytest.mark.parametrize("kill_file", [True, False], ids=["cgroup.kill", "freeze-and-kill"])
def test_a_process_limit_is_hit_counted_and_its_trial_killed(
    cg: cgroups.Cgroups, kill_file: bool
) -> None:
    _needs("pids")
    if not kill_file and cg.version == "v1":
        pytest.skip("v1 has one kill path (freezer)")
    if isinstance(cg, cgroups.CgroupsV2):
        cg.use_kill_file = kill_file
    cg.create(Limits(pids=8))
    proc = _spawn(cg, "for i in $(seq 20); do sleep 60 > /dev/null 2>&1 & done; wait")
    proc.wait(timeout=30)  # the shell dies on its first failed fork; its sleeps live on
    assert cg.events().pids_max >= 1
    left = cg.pids()
    assert 1 <= len(left) <= 8
    assert cg.kill() >= len(left)
    assert cg.pids() == []


@needs_cgroups
def test_a_memory_limit_is_hit_and_counted(cg: cgroups.Cgroups) -> None:
    _needs("memory")
    cg.create(Limits(memory_mb=48))
    hog = f"exec {sys.executable} -c 'x = []\nwhile True: x.append(b\"1\" * (8 << 20))'"
    proc = _spawn(cg, hog)
    assert proc.wait(timeout=60) == -9
    assert cg.events().oom_kill >= 1
    assert cg.memory_bytes() < 48 * 2**20


@needs_cgroups
def test_stale_trials_of_a_dead_owner_are_swept() -> None:
    dead = cgroups.trial_cgroups(f"999999999-{secrets.token_hex(4)}", SUPPORT)
    assert dead is not None
    dead.create(Limits(pids=16))
    proc = _spawn(dead, "echo in; exec sleep 60")
    assert proc.stdout is not None and proc.stdout.readline() == b"in\n"
    try:
        assert cgroups.sweep_stale() >= 1
        assert proc.wait(timeout=10) == -9
        assert not any(d.exists() for d in dead.dirs.values())
    finally:
        dead.kill()
        dead.remove()


@needs_cgroups
@pytest.mark.parametrize("kill_file", [True, False], ids=["cgroup.kill", "freeze-and-kill"])
def test_kill_all_takes_every_member_of_a_child(cg: cgroups.Cgroups, kill_file: bool) -> None:
    if not kill_file and cg.version == "v1":
        pytest.skip("v1 has one kill path (freezer)")
    if isinstance(cg, cgroups.CgroupsV2):
        cg.use_kill_file = kill_file
    cg.create(Limits())
    proc = _spawn(
        cg, "for i in 1 2 3 4 5; do setsid sleep 60 > /dev/null 2>&1 & done; echo up; wait"
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    assert len(cg.pids("exec")) >= 2  # the shell and its (setsid) sleeps, however many have forked
    assert cg.kill("exec") >= 2
    assert proc.wait(timeout=10) == -9
    assert cg.pids() == []


@needs_cgroups
def test_reserved_memory_is_free_whatever_a_tmpfs_left_charged(
    cg: cgroups.Cgroups, tmp_path: Path
) -> None:
    """What agent code wrote to a tmpfs stays charged after it exits; the memory reserved after it
    is free for the next process (the verifier) all the same."""
    _needs("memory")
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm tmpfs")
    cg.create(Limits(memory_mb=64))
    fill = Path("/dev/shm") / f"kwrl-test-{secrets.token_hex(4)}"
    need = (
        f"exec {sys.executable} -c 'x = bytearray(40 << 20); x[::4096] = b\"1\" * len(x[::4096])'"
    )
    try:
        assert _spawn(cg, f"head -c 48M /dev/zero > {fill}").wait(timeout=60) == 0
        assert cg.memory_bytes() >= 48 * 2**20  # charged to the trial, its writer gone
        assert _spawn(cg, need).wait(timeout=60) == -9  # 48 + 40 > 64: the kernel kills it
        limit = cg.reserve_memory(64)
        assert limit is not None and 64 + 48 <= limit <= 64 + 64
        assert cg.applied().memory_mb == limit
        assert _spawn(cg, need).wait(timeout=60) == 0
    finally:
        fill.unlink(missing_ok=True)
