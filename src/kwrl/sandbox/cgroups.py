"""Per-trial cgroups (v1): the limits on memory, process count and CPU, and the kill switch.

A trial owns one cgroup per controller (`pids`, `memory`, `cpu`, `freezer`) at
`<controller mount>/<this process's cgroup>/kwrl/<name>`, with two children:

    <name>/sandbox   bwrap, the sandbox's init and the world gateway
    <name>/exec      every command the agent or the verifier runs

Limits sit on `<name>`, so they bound the trial as a whole (v1 hierarchies are hierarchical when
`memory.use_hierarchy` is 1, which the kernel default and this machine have). Nesting under the
caller's own cgroup keeps a trial charged to whoever started it. `kill(...)` freezes, SIGKILLs every
member and thaws, so a fork bomb cannot outrun it. Limit hits are read back as counters
(`pids.events: max`, `memory.oom_control: oom_kill`) and reported as `ResourceEvents`.

Non-obvious choice: cgroup v1 only. This machine (and the docker-in-VM hosts it stands for) mounts
v1 controllers writable for root; where they are missing, `Cgroups.available()` is false and the
sandbox falls back to rlimits (`prlimit`), which cannot bound process count for root.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from kwrl.errors import SandboxError

CONTROLLERS: tuple[str, ...] = ("pids", "memory", "cpu", "freezer")
CGROUP_FS = Path("/sys/fs/cgroup")
CHILDREN: tuple[str, ...] = ("sandbox", "exec")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one trial. None means unlimited."""

    memory_mb: int | None = None
    pids: int | None = None
    cpus: float | None = None


@dataclass
class ResourceEvents:
    """How often a trial hit its limits (counters read from the cgroup)."""

    pids_max: int = 0
    oom_kill: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"pids_max": self.pids_max, "oom_kill": self.oom_kill}


def _own_path(controller: str) -> str:
    """This process's cgroup path in the v1 hierarchy of `controller` (e.g. '/process_api/ab12')."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        if controller in ctrls.split(","):
            return path
    raise SandboxError(f"/proc/self/cgroup: no v1 hierarchy for controller {controller!r}")


def base_dir(controller: str) -> Path:
    """The dir under which this process's trial cgroups of `controller` live."""
    return CGROUP_FS / controller / _own_path(controller).lstrip("/") / "kwrl"


class Cgroups:
    """The cgroups of one trial: create, limit, join, observe, kill, remove."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dirs = {c: base_dir(c) / name for c in CONTROLLERS}

    @staticmethod
    def available() -> bool:
        """True when every controller kwrl needs is a writable v1 hierarchy here."""
        try:
            return all(
                (CGROUP_FS / c).is_dir() and os.access(CGROUP_FS / c, os.W_OK) and _own_path(c)
                for c in CONTROLLERS
            )
        except (OSError, SandboxError):
            return False

    def create(self, limits: Limits) -> None:
        for _c, d in self.dirs.items():
            for child in CHILDREN:
                (d / child).mkdir(parents=True, exist_ok=True)
        pids, mem, cpu = self.dirs["pids"], self.dirs["memory"], self.dirs["cpu"]
        if limits.pids is not None:
            (pids / "pids.max").write_text(str(limits.pids))
        if limits.memory_mb is not None:
            nbytes = str(limits.memory_mb * 1024 * 1024)
            (mem / "memory.limit_in_bytes").write_text(nbytes)
            memsw = mem / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                memsw.write_text(nbytes)
        if limits.cpus is not None:
            period = 100_000
            (cpu / "cpu.cfs_period_us").write_text(str(period))
            (cpu / "cpu.cfs_quota_us").write_text(str(max(1000, int(limits.cpus * period))))

    def procs_files(self, child: str) -> list[Path]:
        """The `cgroup.procs` files a process writes its pid into to join `child`."""
        return [d / child / "cgroup.procs" for d in self.dirs.values()]

    def join(self, pid: int, child: str) -> None:
        for f in self.procs_files(child):
            f.write_text(str(pid))

    def pids(self, child: str | None = None) -> list[int]:
        """Every process in the trial (or in one child), read from the pids hierarchy."""
        root = self.dirs["pids"]
        groups = [root / child] if child else [root, *(root / c for c in CHILDREN)]
        out: list[int] = []
        for g in groups:
            try:
                out.extend(int(x) for x in (g / "cgroup.procs").read_text().split())
            except FileNotFoundError:
                continue
        return out

    def events(self) -> ResourceEvents:
        """Limit hits summed over the trial and its children (v1 counts them where they happen)."""
        ev = ResourceEvents()
        for d in self._tree("pids"):
            for key, val in _pairs(d / "pids.events"):
                if key == "max":
                    ev.pids_max += val
        for d in self._tree("memory"):
            for key, val in _pairs(d / "memory.oom_control"):
                if key == "oom_kill":
                    ev.oom_kill += val
        return ev

    def _tree(self, controller: str) -> list[Path]:
        d = self.dirs[controller]
        return [d, *(d / c for c in CHILDREN)]

    def memory_bytes(self) -> int:
        try:
            return int((self.dirs["memory"] / "memory.usage_in_bytes").read_text())
        except FileNotFoundError:
            return 0

    def kill(self, child: str | None = None, deadline_s: float = 10.0) -> int:
        """SIGKILL every process of the trial (or of one child) under the freezer; returns the count."""
        freezer = self.dirs["freezer"] / child if child else self.dirs["freezer"]
        state = freezer / "freezer.state"
        killed = 0
        end = time.monotonic() + deadline_s
        while True:
            pids = self.pids(child)
            if not pids:
                return killed
            if time.monotonic() > end:
                raise SandboxError(f"{freezer}: {len(pids)} processes survived SIGKILL")
            frozen = state.exists()
            if frozen:
                state.write_text("FROZEN")
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
            if frozen:
                state.write_text("THAWED")
            time.sleep(0.005)  # let the kernel reap before re-reading the member list

    def remove(self) -> None:
        """Remove the trial's cgroups; they must be empty (call `kill` first)."""
        for d in self.dirs.values():
            for child in CHILDREN:
                _rmdir(d / child)
            _rmdir(d)


def _pairs(path: Path) -> list[tuple[str, int]]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        key, _, val = line.partition(" ")
        if val.strip().isdigit():
            out.append((key, int(val)))
    return out


def _rmdir(d: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        d.rmdir()


def owner_alive(name: str) -> bool:
    """Trial names start with the owning process's pid (`<pid>-<token>`); is that process alive?"""
    head = name.split("-", 1)[0]
    if not head.isdigit():
        return True  # not ours to judge
    try:
        os.kill(int(head), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> int:
    """Kill and remove trial cgroups whose owning process is gone (left by a crashed run)."""
    removed = 0
    try:
        base = base_dir("pids")
    except SandboxError:
        return 0
    if not base.is_dir():
        return 0
    for d in base.iterdir():
        if not d.is_dir() or owner_alive(d.name):
            continue
        cg = Cgroups(d.name)
        try:
            cg.kill()
            cg.remove()
            removed += 1
        except OSError:
            continue
    return removed
