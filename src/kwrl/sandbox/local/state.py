"""What every part of `LocalEnvironment` shares: the trial's state, its limits, its paths.

`LocalState` declares the fields the other parts read and write (set by `LocalEnvironment.__init__`
and `start()`), and the small helpers they all use: the trial's limits (task.toml's, else the
settings'), the prefix that puts a command into one of the trial's cgroups (`_join`), where the
agent's private output dirs are, and a path as the sandbox's mount namespace sees it. The parts
stack on it: `commands` (processes under limits), `phases` (the verifier phase and the outputs),
`gateway` (the world gateway's side), `env` (harbor's lifecycle).
"""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

from kwrl.sandbox import cgroups, outputs
from kwrl.sandbox.base import LocalSandboxConfig, storage_inodes
from kwrl.sandbox.contract import KwrlEnvironment
from kwrl.sandbox.gateway.forward import UnixForwarder
from kwrl.sandbox.gateway.launch import ProcRef
from kwrl.sandbox.local import host
from kwrl.sandbox.local.enter import enter_argv
from kwrl.sandbox.network.egress import EgressProxy

# Writes "$$" into each cgroup.procs file given before "--", then execs the rest.
JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1"; shift; done; shift; exec "$@"'
DROP_CAPS = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs"]


class LocalState(KwrlEnvironment):
    """The fields and shared helpers of `LocalEnvironment` (module docstring)."""

    settings: LocalSandboxConfig
    root: Path | None
    """The sandbox root `<sandbox_dir>/<pid>-<token>/` (after start)."""
    _cg: cgroups.Cgroups | None
    _unenforced: list[str]
    _proc: asyncio.subprocess.Process | None
    """The sandbox itself: unshare -> mount -> bwrap -> init."""
    _gateway: asyncio.subprocess.Process | None
    _drain: asyncio.Task[None] | None
    _gateway_ref: ProcRef | None
    _forwarder: UnixForwarder | None
    _init_pid: int
    _listener: socket.socket | None
    _holder: asyncio.subprocess.Process | None
    """Keeps the sandbox's mount namespace in the verifier phase (its init is gone)."""
    _disk_events: int
    _dropped: outputs.Dropped
    _copied: dict[str, outputs.Copied]
    _verifier_phase: bool
    _agent_events: cgroups.ResourceEvents | None
    """The limit hits of the agent phase (set when the verifier phase starts)."""
    _verifier_memory_mb: int | None
    """The trial's memory limit in the verifier phase (`Cgroups.reserve_memory`)."""
    _egress: EgressProxy | None
    """The verifier phase's way out: the judge, and nothing else on the host (`sandbox.egress`)."""
    _stopped: bool
    _spare_dir: Path | None
    """The trial dir of the pooled spare this trial took (`pool`), removed at stop()."""
    _spare_linked: tuple[str, ...]
    """Its log files hard-linked into this trial's dir (the others are copied at stop())."""
    _ctor: tuple[tuple[Any, ...], dict[str, Any]]
    _ctor_settings: dict[str, Any]

    @property
    def cgroups(self) -> cgroups.Cgroups | None:
        """The trial's cgroups (None where cgroups are unavailable or before start)."""
        return self._cg

    @property
    def init_pid(self) -> int:
        """Host pid of the sandbox's init (the process whose namespaces commands enter)."""
        return self._init_pid

    @property
    def gateway_socket(self) -> Path | None:
        """The gateway's Unix socket on the host side (None before start)."""
        return None if self.root is None else self.root / "run" / "gateway.sock"

    def _sandbox_dir(self) -> Path:
        if self.settings.sandbox_dir:
            return Path(self.settings.sandbox_dir)
        return default_sandbox_dir()

    def _enter(self, user: tuple[int, int] | None = None) -> list[str]:
        """argv prefix that runs a command inside the sandbox with no privilege left, as `user`
        (uid, gid) or uid 0 without capabilities (`kwrl.sandbox.local.enter`)."""
        return enter_argv(self._sandbox_dir(), self._init_pid, userns=host.rootless(), user=user)

    def _nproc(self) -> list[str]:
        """Rootless: `prlimit --nproc=<pids> --`, run inside the sandbox's user namespace, where
        RLIMIT_NPROC counts the trial's processes alone (the kernel counts per user namespace)."""
        pids = self._limits().pids
        return ["prlimit", f"--nproc={pids}", "--"] if host.rootless() and pids else []

    def _limits(self) -> cgroups.Limits:
        """task.toml's [environment] cpus and memory_mb, else the settings' defaults."""
        cpus = self._effective_cpus
        return cgroups.Limits(
            memory_mb=self._effective_memory_mb or self.settings.memory_mb,
            pids=self.settings.pids_max,
            cpus=float(cpus) if cpus else self.settings.cpus,
        )

    def _storage_mb(self) -> int:
        """task.toml's [environment] storage_mb, else the settings' default."""
        return self._effective_storage_mb or self.settings.storage_mb

    def _storage_inodes(self) -> int:
        """The nr_inodes of the trial's tmpfs (`base.storage_inodes`)."""
        return storage_inodes(self._storage_mb(), self.settings.storage_inodes)

    def _join(self, child: str) -> list[str]:
        """Prefix that puts a command in the trial's cgroup `child` (or, without cgroups, under rlimits)."""
        if self._cg is None:
            mem = self._limits().memory_mb
            return ["prlimit", f"--as={mem * 2**20}", "--"] if mem else []
        files = [str(f) for f in self._cg.procs_files(child)]
        return ["sh", "-c", JOIN, "kwrl-join", *files, "--"]

    def _mount_source(self, target: str) -> Path | None:
        for m in self._mounts:
            if m.get("type") == "bind" and m.get("target") == target:
                return Path(m["source"])
        return None

    def _private(self, target: str) -> Path:
        """The dir (on the trial's tmpfs) agent code sees at `target` (/logs/agent, /logs/artifacts,
        /solution)."""
        assert self.root is not None
        return self.root / "disk" / ("out" + target.replace("/", "-"))

    def _in_mounts(self, rel: str) -> str | None:
        """`<root>/<rel>` as seen in the sandbox's mount namespace (where its tmpfs is mounted)."""
        holder = self._holder if self._verifier_phase else self._proc
        if holder is None or holder.returncode is not None or self.root is None:
            return None
        return f"/proc/{holder.pid}/root{self.root / rel}"


def default_sandbox_dir() -> Path:
    """Where sandbox roots live unless `sandbox_dir` says: $TMPDIR/kwrl-sandboxes (a plain
    user's own: kwrl-sandboxes-<uid>)."""
    uid = "" if not host.rootless() else f"-{os.geteuid()}"
    return Path(tempfile.gettempdir()) / f"kwrl-sandboxes{uid}"
