"""Per-trial cgroups (v1 and v2): the limits on memory, process count and CPU, the kill switch.

A trial owns a cgroup `<this process's cgroup>/kwrl/<name>` with two children:

    <name>/sandbox   bwrap, the sandbox's init and the world gateway
    <name>/exec      every command the agent or the verifier runs

Limits sit on `<name>`, so they bound the trial as a whole; `<name>` itself holds no process. The
verifier phase gets memory of its own on top of what the agent phase left charged (`reserve_memory`):
the world's writes live on a tmpfs whose pages stay charged to the trial after agent code is gone,
and a world filled to just under the limit left the grader (or LibreOffice recalculating the
agent's workbook) nothing, an OOM kill the agent had bought.
Nesting under the caller's own cgroup keeps a trial charged to whoever started it. Limit hits are
read back as counters and reported as `ResourceEvents`. One interface (`Cgroups`), two backends,
chosen by what /sys/fs/cgroup is (`detect()`):

- `CgroupsV1` (legacy and hybrid hosts, a hierarchy per controller at /sys/fs/cgroup/<controller>):
  one dir per controller (`pids`, `memory`, `cpu`, `freezer`); `pids.max`,
  `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes`), `cpu.cfs_quota_us`; kill = freeze,
  SIGKILL every member, thaw, until none is left; events `pids.events: max` and
  `memory.oom_control: oom_kill` (hierarchical with `memory.use_hierarchy` 1, the default).
- `CgroupsV2` (unified hosts: /sys/fs/cgroup/cgroup.controllers exists): one dir; `pids.max`,
  `memory.max` (and `memory.swap.max` 0), `cpu.max`; kill = `cgroup.kill` (Linux 5.14+), else
  freeze (`cgroup.freeze`), SIGKILL every member, thaw; events `pids.events: max` and
  `memory.events: oom_kill`. A controller works in a cgroup only once each parent enables it in
  `cgroup.subtree_control`, which v2 refuses in a non-root cgroup that holds processes (the
  "no internal processes" rule). kwrl enables what is delegated of pids, memory and cpu in its own
  cgroup and in `kwrl/`, and nothing below a trial, so the trial's children may hold processes.

Non-obvious choices: a v2 cgroup that holds processes cannot enable controllers, and kwrl's own
cgroup holds at least kwrl. Where it holds only kwrl and its descendants (a `systemd-run --scope -p
Delegate=yes` scope, a container whose entrypoint is kwrl), kwrl moves them into the leaf
`<own>/kwrl-main` before the first trial, as systemd asks of a delegated cgroup's payload, and trials
go to `<own>/kwrl/<name>`. Processes that are not kwrl's (the shell that started it, a service's
other processes) are not kwrl's to move: the trial still gets a cgroup, hence the kill switch, but
no limit, and `require_limits` says why. A host whose cgroups cannot apply a trial's limits makes
`require_limits` refuse to start it unless the caller opts out; limits that something else applies
(rlimits that really bind) are passed in as `also_enforced`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kwrl.errors import SandboxError

CGROUP_FS = Path("/sys/fs/cgroup")
CHILDREN: tuple[str, ...] = ("sandbox", "exec")
V1_CONTROLLERS: tuple[str, ...] = ("pids", "memory", "cpu", "freezer")
LIMIT_CONTROLLERS: tuple[str, ...] = ("pids", "memory", "cpu")
"""The controllers that apply a trial's limits (both versions); v2 needs no freezer controller."""
UNCHARGE_S = 5.0
"""How long `Cgroups.kill` waits for the processes it killed to be reaped (`_await_uncharged`)."""
CPU_PERIOD_US = 100_000
UNIFIED = "unified"
"""The key of a v2 trial's one dir in `Cgroups.dirs`."""
LEAF = "kwrl-main"
"""v2: the leaf kwrl moves its own processes into, so that their cgroup may enable controllers."""

Version = Literal["v1", "v2"]


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

    def minus(self, earlier: ResourceEvents) -> ResourceEvents:
        """The hits since `earlier` (counters only grow)."""
        return ResourceEvents(self.pids_max - earlier.pids_max, self.oom_kill - earlier.oom_kill)


# ------------------------------------------------------------------ pure parts


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """`/proc/<pid>/cgroup` as {controller: path}; the v2 (unified) line `0::/path` is under ''."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        _, ctrls, path = line.split(":", 2)
        for c in ctrls.split(",") if ctrls else [""]:
            out[c] = path
    return out


def parse_keyed(text: str) -> dict[str, int]:
    """A flat-keyed cgroup file (`key value` lines: pids.events, memory.events, memory.oom_control)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, val = line.strip().partition(" ")
        if val.strip().isdigit():
            out[key] = int(val)
    return out


def cpu_quota_us(cpus: float, period_us: int = CPU_PERIOD_US) -> int:
    """CFS quota per period for `cpus` CPUs (at least 1 ms, the kernel's minimum)."""
    return max(1000, int(cpus * period_us))


def detect(fs: Path = CGROUP_FS) -> Version | None:
    """v2 where /sys/fs/cgroup is the unified hierarchy, v1 where it holds v1 controllers, else None.

    A hybrid host (v1 controllers plus an empty cgroup2 at /sys/fs/cgroup/unified) is v1.
    """
    if (fs / "cgroup.controllers").is_file():
        return "v2"
    if any((fs / c).is_dir() for c in V1_CONTROLLERS):
        return "v1"
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (FileNotFoundError, ProcessLookupError):
        return ""


@dataclass(frozen=True)
class Support:
    """What this host's cgroups can do for the trials of this process (see `support()`)."""

    version: Version | None
    controllers: frozenset[str] = frozenset()
    """The limit controllers (pids, memory, cpu) a trial cgroup gets here."""
    kill: bool = False
    """A trial can have its own cgroup: its processes listed and all killed at once."""
    bases: dict[str, Path] = field(default_factory=dict)
    """Where trial cgroups live, per hierarchy (`<own cgroup>/kwrl`); UNIFIED for v2."""
    notes: tuple[str, ...] = ()
    """Why a limit controller or the kill switch is missing."""
    leaf_move: bool = False
    """v2: kwrl's cgroup holds only this process and its descendants; they move into `LEAF` first."""

    def describe(self) -> str:
        ctrls = ",".join(sorted(self.controllers)) or "none"
        head = f"cgroup {self.version or 'none'}: limits {ctrls}; kill-all {'yes' if self.kill else 'no'}"
        return "; ".join([head, *self.notes])


def support(fs: Path = CGROUP_FS, proc_cgroup: str | None = None) -> Support:
    """Which limits and whether the kill switch this host's cgroups give a trial of this process."""
    if proc_cgroup is None:
        proc_cgroup = _read(Path("/proc/self/cgroup"))
    own = parse_proc_cgroup(proc_cgroup)
    version = detect(fs)
    if version == "v2":
        return _support_v2(fs, own)
    if version == "v1":
        return _support_v1(fs, own)
    return Support(None, notes=(f"no cgroup v1 controllers or cgroup v2 hierarchy at {fs}",))


def _support_v1(fs: Path, own: dict[str, str]) -> Support:
    ok: dict[str, Path] = {}
    notes: list[str] = []
    for c in V1_CONTROLLERS:
        mount = fs / c
        if c not in own or not mount.is_dir():
            notes.append(f"no cgroup v1 {c} hierarchy at {mount}")
        elif not os.access(mount, os.W_OK):
            notes.append(f"{mount} is not writable by this process")
        else:
            ok[c] = mount / own[c].lstrip("/") / "kwrl"
    return Support(
        "v1",
        controllers=frozenset(ok) & frozenset(LIMIT_CONTROLLERS),
        kill="pids" in ok,  # members are listed from the pids hierarchy
        bases=ok if "pids" in ok else {},
        notes=tuple(notes),
    )


def _support_v2(fs: Path, own: dict[str, str]) -> Support:
    if "" not in own:
        return Support("v2", notes=("/proc/self/cgroup has no cgroup v2 line (0::/path)",))
    path = own[""]
    if Path(path).name == LEAF:  # moved there by an earlier trial of this process
        path = str(Path(path).parent)
    d = fs / path.lstrip("/")
    if not (d / "cgroup.subtree_control").is_file() or not os.access(d, os.W_OK):
        return Support("v2", notes=(f"cgroup v2: {d} (this process's cgroup) is not writable",))
    available = set(_read(d / "cgroup.controllers").split()) & set(LIMIT_CONTROLLERS)
    enabled = set(_read(d / "cgroup.subtree_control").split())
    is_root = not (d / "cgroup.type").exists()  # the root cgroup may hold processes and enable
    procs = [] if is_root else [int(p) for p in _read(d / "cgroup.procs").split()]
    foreign = [p for p in procs if not _ours(p)]
    usable = available & enabled if foreign else available
    notes: list[str] = []
    absent = [c for c in LIMIT_CONTROLLERS if c not in available]
    if absent:
        notes.append(
            f"cgroup v2: {', '.join(absent)} not delegated to {path} "
            f"(its cgroup.controllers: {' '.join(sorted(available)) or 'none'})"
        )
    blocked = sorted(available - usable)
    if blocked:
        notes.append(
            f"cgroup v2: {path} holds {len(foreign)} processes not of this one (e.g. pid "
            f"{foreign[0]}), so it cannot enable {', '.join(blocked)} for child cgroups "
            "(no controllers below a cgroup with processes)"
        )
    return Support(
        "v2",
        controllers=frozenset(usable),
        kill=True,
        bases={UNIFIED: d / "kwrl"},
        notes=tuple(notes),
        leaf_move=bool(procs) and not foreign and bool(available - enabled),
    )


def _ours(pid: int, me: int | None = None) -> bool:
    """Is `pid` this process or one of its descendants (or already gone)?"""
    me = os.getpid() if me is None else me
    while pid > 1:
        if pid == me:
            return True
        stat = _read(Path(f"/proc/{pid}/stat"))
        if not stat:
            return True  # exited: nothing to move
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


def _move_into_leaf(d: Path, deadline_s: float = 5.0) -> None:
    """Move this process and its descendants from `d` into `d/LEAF` (as a delegated payload must)."""
    leaf = d / LEAF
    leaf.mkdir(exist_ok=True)
    end = time.monotonic() + deadline_s
    while procs := [int(p) for p in _read(d / "cgroup.procs").split()]:
        if time.monotonic() > end:
            raise SandboxError(f"{d}: processes keep appearing; cannot empty it into {leaf}")
        for pid in procs:
            if not _ours(pid):
                raise SandboxError(
                    f"{d}: pid {pid} is not this process's; cannot empty it into {leaf}"
                )
            with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                (leaf / "cgroup.procs").write_text(str(pid))


# ------------------------------------------------------------------ refusing to run unlimited

_LIMIT_NAMES = {"memory": "memory_mb", "pids": "pids_max", "cpu": "cpus"}


def unenforced(limits: Limits, sup: Support, also_enforced: Collection[str] = ()) -> list[str]:
    """The requested limits (and the kill switch) nothing here applies, e.g. ['pids_max=512'].

    `also_enforced` names what something else applies ('pids', 'memory', 'cpu', 'kill'), e.g.
    'pids' for a non-root sandbox whose RLIMIT_NPROC binds.
    """
    wanted = {"memory": limits.memory_mb, "pids": limits.pids, "cpu": limits.cpus}
    done = set(sup.controllers) | set(also_enforced)
    out = [f"{_LIMIT_NAMES[c]}={v}" for c, v in wanted.items() if v is not None and c not in done]
    if not sup.kill and "kill" not in also_enforced:
        out.append("kill-all (every process of the trial killed at the phase switch and at stop)")
    return out


def require_limits(
    limits: Limits,
    *,
    allow_missing: bool,
    also_enforced: Collection[str] = (),
    sup: Support | None = None,
) -> list[str]:
    """Refuse (SandboxError) a trial whose limits nothing here applies, unless `allow_missing`.

    Returns what goes unenforced (empty when everything is), for the caller to record.
    """
    sup = sup or support()
    missing = unenforced(limits, sup, also_enforced)
    if missing and not allow_missing:
        why = "; ".join(sup.notes) or sup.describe()
        raise SandboxError(
            f"the sandbox cannot apply {', '.join(missing)}: {why}. Run kwrl as root where the "
            "cgroups are writable: cgroup v1 controllers, or a cgroup v2 cgroup delegated with "
            "pids, memory and cpu that holds only kwrl (e.g. `systemd-run --scope -p "
            "Delegate=yes kwrl ...`; kwrl moves itself into a leaf), or set the sandbox "
            "setting allow_missing_limits=true to run trials without these limits"
        )
    return missing


# ------------------------------------------------------------------ the trial's cgroups


class Cgroups:
    """The cgroups of one trial: create, limit, join, observe, kill, remove (see the backends)."""

    version: Version

    def __init__(self, name: str, sup: Support) -> None:
        self.name = name
        self.enforced = sup.controllers
        self.leaf_move = sup.leaf_move
        self.dirs: dict[str, Path] = {k: base / name for k, base in sup.bases.items()}
        """The trial's dir in each hierarchy (one per v1 controller; UNIFIED for v2)."""

    @property
    def _main(self) -> Path:
        """The dir whose member lists are read (v1: pids)."""
        return self.dirs["pids" if self.version == "v1" else UNIFIED]

    def create(self, limits: Limits) -> None:
        raise NotImplementedError

    def applied(self) -> Limits:
        """The limits as the kernel holds them (None where unlimited or not enforced)."""
        raise NotImplementedError

    def events(self) -> ResourceEvents:
        raise NotImplementedError

    def memory_bytes(self) -> int:
        raise NotImplementedError

    def _set_memory_limit(self, nbytes: int) -> None:
        raise NotImplementedError

    def reserve_memory(self, mb: int) -> int | None:
        """Raise the trial's memory limit to what it is charged now plus `mb` MiB, and return the new
        limit in MiB (None where memory is not limited here). Called once every process of the
        agent phase is gone, what is still charged is what they left (the world's tmpfs pages,
        cache), so whatever runs next has `mb` of its own; the trial stays bounded (by its
        limit twice over at most: what is charged never passed the limit)."""
        if "memory" not in self.enforced:
            return None
        total_mb = -(-self.memory_bytes() // 2**20) + mb
        self._set_memory_limit(total_mb * 2**20)
        return total_mb

    def _kill_now(self, d: Path) -> bool:
        """Kill every member of `d` at once if the kernel can (v2 cgroup.kill); False if not."""
        return False

    def _freeze(self, d: Path, frozen: bool) -> bool:
        """Freeze or thaw `d`; False where no freezer applies."""
        return False

    def procs_files(self, child: str) -> list[Path]:
        """The `cgroup.procs` files a process writes its pid into to join `child`."""
        return [d / child / "cgroup.procs" for d in self.dirs.values()]

    def join(self, pid: int, child: str) -> None:
        for f in self.procs_files(child):
            f.write_text(str(pid))

    def pids(self, child: str | None = None) -> list[int]:
        """Every process in the trial (or in one child), nested cgroups included."""
        top = self._main / child if child else self._main
        out: list[int] = []
        for d in _walk(top):
            out.extend(int(x) for x in _read(d / "cgroup.procs").split())
        return out

    def kill(self, child: str | None = None, deadline_s: float = 10.0) -> int:
        """SIGKILL every process of the trial (or of one child); returns how many there were.

        Returns once none is left; a fork bomb cannot outrun it (v2 `cgroup.kill` kills all at
        once; otherwise members are frozen, killed and thawed until none is left). For one child
        (the sandbox goes on), also once they are reaped (`_await_uncharged`), within bounds.
        """
        key = "freezer" if self.version == "v1" else UNIFIED
        freezer = self.dirs[key] / child if key in self.dirs and child else self.dirs.get(key)
        target = self._main / child if child else self._main
        killed: set[int] = set()
        end = time.monotonic() + deadline_s
        while True:
            pids = self.pids(child)
            if not pids:
                if child is not None:  # the sandbox goes on: its next command must be able to fork
                    self._await_uncharged(child, min(end, time.monotonic() + UNCHARGE_S))
                return len(killed)
            if time.monotonic() > end:
                raise SandboxError(f"{target}: {len(pids)} processes survived SIGKILL")
            killed.update(pids)
            if not self._kill_now(target):
                frozen = freezer is not None and self._freeze(freezer, True)
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                if frozen:
                    assert freezer is not None
                    self._freeze(freezer, False)
            time.sleep(0.005)  # let the kernel reap before re-reading the member list

    def charged(self, child: str | None = None) -> int:
        """Tasks the pids controller charges to the trial (or one child): a process that exited
        leaves `cgroup.procs` at once but stays charged until its parent reaps it."""
        if "pids" not in self.enforced:
            return 0
        d = self.dirs.get("pids" if self.version == "v1" else UNIFIED)
        text = _read((d / child if child else d) / "pids.current").strip() if d else ""
        return int(text) if text.isdigit() else 0

    def _await_uncharged(self, child: str, until: float) -> None:
        """Wait until the killed processes are reaped (no longer charged), at most until `until`.

        Killed processes the sandbox's init must reap (orphans: a fork bomb's) are zombies for a
        moment, and under load the init may be scheduled late: until it reaps them they count
        against `pids.max`, so a command started at once could not fork. Past `until` it returns
        anyway: zombies run nothing."""
        while self.charged(child) and time.monotonic() < until:
            time.sleep(0.005)

    def remove(self) -> None:
        """Remove the trial's cgroups; they must be empty (call `kill` first)."""
        for d in self.dirs.values():
            for sub in reversed(_walk(d)):
                _rmdir(sub)


class CgroupsV1(Cgroups):
    """A trial's cgroups on cgroup v1: a dir per controller, limits on the trial's dirs."""

    version: Version = "v1"

    def create(self, limits: Limits) -> None:
        for d in self.dirs.values():
            for child in CHILDREN:
                (d / child).mkdir(parents=True, exist_ok=True)
        if limits.pids is not None and "pids" in self.dirs:
            (self.dirs["pids"] / "pids.max").write_text(str(limits.pids))
        if limits.memory_mb is not None and "memory" in self.dirs:
            mem = self.dirs["memory"]
            nbytes = str(limits.memory_mb * 2**20)
            (mem / "memory.limit_in_bytes").write_text(nbytes)
            memsw = mem / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                memsw.write_text(nbytes)
        if limits.cpus is not None and "cpu" in self.dirs:
            cpu = self.dirs["cpu"]
            (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (cpu / "cpu.cfs_quota_us").write_text(str(cpu_quota_us(limits.cpus)))

    def applied(self) -> Limits:
        pids = _read(self.dirs["pids"] / "pids.max").strip() if "pids" in self.dirs else ""
        mem = (
            _read(self.dirs["memory"] / "memory.limit_in_bytes").strip()
            if "memory" in self.dirs
            else ""
        )
        cpu = self.dirs.get("cpu")
        quota = _read(cpu / "cpu.cfs_quota_us").strip() if cpu else ""
        period = _read(cpu / "cpu.cfs_period_us").strip() if cpu else ""
        mem_mb = int(mem) // 2**20 if mem.isdigit() and int(mem) < 2**62 else None
        return Limits(
            memory_mb=mem_mb,
            pids=int(pids) if pids.isdigit() else None,
            cpus=int(quota) / int(period) if quota.isdigit() and period.isdigit() else None,
        )

    def events(self) -> ResourceEvents:
        """Limit hits summed over the trial and its children (v1 counts them where they happen)."""
        ev = ResourceEvents()
        for d in _tree(self.dirs.get("pids")):
            ev.pids_max += parse_keyed(_read(d / "pids.events")).get("max", 0)
        for d in _tree(self.dirs.get("memory")):
            ev.oom_kill += parse_keyed(_read(d / "memory.oom_control")).get("oom_kill", 0)
        return ev

    def memory_bytes(self) -> int:
        mem = self.dirs.get("memory")
        text = _read(mem / "memory.usage_in_bytes").strip() if mem else ""
        return int(text) if text.isdigit() else 0

    def _set_memory_limit(self, nbytes: int) -> None:
        mem = self.dirs["memory"]
        memsw = mem / "memory.memsw.limit_in_bytes"
        # memsw may never be below the memory limit: raise it first
        if memsw.exists():
            memsw.write_text(str(nbytes))
        (mem / "memory.limit_in_bytes").write_text(str(nbytes))

    def _freeze(self, d: Path, frozen: bool) -> bool:
        state = d / "freezer.state"
        if not state.exists():
            return False
        state.write_text("FROZEN" if frozen else "THAWED")
        return True


class CgroupsV2(Cgroups):
    """A trial's cgroup on cgroup v2: one dir, controllers enabled from kwrl's own cgroup down."""

    version: Version = "v2"
    use_kill_file = True
    """Use `cgroup.kill` where the kernel has it (tests turn it off to exercise the freezer path)."""

    @property
    def dir(self) -> Path:
        return self.dirs[UNIFIED]

    def create(self, limits: Limits) -> None:
        base = self.dir.parent  # <own>/kwrl
        ctrls = sorted(self.enforced)
        if self.leaf_move:
            _move_into_leaf(base.parent)
        if ctrls:
            _enable(base.parent, ctrls)
        base.mkdir(exist_ok=True)
        if ctrls:
            _enable(base, ctrls)
        for child in CHILDREN:
            (self.dir / child).mkdir(parents=True, exist_ok=True)
        d = self.dir
        if limits.pids is not None and "pids" in self.enforced:
            (d / "pids.max").write_text(str(limits.pids))
        if limits.memory_mb is not None and "memory" in self.enforced:
            (d / "memory.max").write_text(str(limits.memory_mb * 2**20))
            swap = d / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
        if limits.cpus is not None and "cpu" in self.enforced:
            (d / "cpu.max").write_text(f"{cpu_quota_us(limits.cpus)} {CPU_PERIOD_US}")

    def applied(self) -> Limits:
        pids = _read(self.dir / "pids.max").strip()
        mem = _read(self.dir / "memory.max").strip()
        quota, _, period = _read(self.dir / "cpu.max").strip().partition(" ")
        return Limits(
            memory_mb=int(mem) // 2**20 if mem.isdigit() else None,
            pids=int(pids) if pids.isdigit() else None,
            cpus=int(quota) / int(period) if quota.isdigit() and period.isdigit() else None,
        )

    def events(self) -> ResourceEvents:
        """Limit hits of the trial (v2 counts them in the cgroup whose limit was hit)."""
        return ResourceEvents(
            pids_max=parse_keyed(_read(self.dir / "pids.events")).get("max", 0),
            oom_kill=parse_keyed(_read(self.dir / "memory.events")).get("oom_kill", 0),
        )

    def memory_bytes(self) -> int:
        text = _read(self.dir / "memory.current").strip()
        return int(text) if text.isdigit() else 0

    def _set_memory_limit(self, nbytes: int) -> None:
        (self.dir / "memory.max").write_text(str(nbytes))

    def _kill_now(self, d: Path) -> bool:
        f = d / "cgroup.kill"
        if not self.use_kill_file or not f.exists():
            return False
        f.write_text("1")
        return True

    def _freeze(self, d: Path, frozen: bool) -> bool:
        f = d / "cgroup.freeze"
        if not f.exists():
            return False
        f.write_text("1" if frozen else "0")
        return True


def _enable(d: Path, ctrls: list[str]) -> None:
    """Enable `ctrls` for the children of `d` (cgroup.subtree_control), if not yet."""
    f = d / "cgroup.subtree_control"
    todo = [c for c in ctrls if c not in _read(f).split()]
    if not todo:
        return
    try:
        f.write_text(" ".join(f"+{c}" for c in todo))
    except OSError as e:
        why = " (it holds processes)" if e.errno == errno.EBUSY else ""
        raise SandboxError(f"{f}: cannot enable {' '.join(todo)}{why}: {e.strerror}") from e


def _walk(d: Path) -> list[Path]:
    """`d` and every cgroup below it, parents first (empty if `d` is gone)."""
    out: list[Path] = []
    todo = [d]
    while todo:
        cur = todo.pop()
        try:
            subs = [e for e in os.scandir(cur) if e.is_dir(follow_symlinks=False)]
        except (FileNotFoundError, NotADirectoryError):
            continue
        out.append(cur)
        todo.extend(Path(e.path) for e in subs)
    return out


def _tree(d: Path | None) -> list[Path]:
    return [] if d is None else [d, *(d / c for c in CHILDREN)]


def _rmdir(d: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        d.rmdir()


def trial_cgroups(name: str, sup: Support | None = None) -> Cgroups | None:
    """The cgroups of trial `name` on this host (not yet created); None where it can have none."""
    sup = sup or support()
    if not sup.kill:
        return None
    return CgroupsV2(name, sup) if sup.version == "v2" else CgroupsV1(name, sup)


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


def leftovers(owner_pid: int, sup: Support | None = None) -> list[Path]:
    """Trial cgroup dirs of process `owner_pid` still present (every hierarchy)."""
    sup = sup or support()
    return [d for base in sup.bases.values() for d in base.glob(f"{owner_pid}-*") if d.is_dir()]


def sweep_stale() -> int:
    """Kill and remove trial cgroups whose owning process is gone (left by a crashed run)."""
    sup = support()
    if not sup.kill:
        return 0
    base = sup.bases["pids" if sup.version == "v1" else UNIFIED]
    removed = 0
    for d in base.iterdir() if base.is_dir() else []:
        if not d.is_dir() or owner_alive(d.name):
            continue
        cg = trial_cgroups(d.name, sup)
        if cg is None:
            continue
        try:
            cg.kill()
            cg.remove()
            removed += 1
        except (OSError, SandboxError):
            continue
    return removed
