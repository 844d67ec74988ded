"""Shared pieces of kwrl's sandboxes: settings, the world a task runs in, the bubblewrap command line.

- `LocalSandboxConfig`: the knobs of `LocalEnvironment`, passed by harbor as environment kwargs
  (`--ek key=value` on harbor's CLI, `environment.kwargs` in a trial config); `SandboxSettings`:
  where a verb's trials run (`--sandbox.environment`), the local knobs typed and any other
  environment's as `kwargs` (the `[sandbox]` of every verb that runs trials).
- `resolve_world(task_dir)`: the world seed and task overlay of a task dir (docs/architecture.md:
  `archipelago.json:world_dir`, else `../../worlds/<world_id>`); a task without archipelago.json runs
  on an empty world, so stock harbor tasks work too.
- `host_binds()`: the read-only host paths a sandbox needs: /usr (and the merged-/usr symlinks),
  a few /etc files, the Python prefix and kwrl's own source (kwrl is an editable install), so
  `$KWRL_PYTHON -m kwrl...` works inside at the same paths as outside (symlinked ones too).
- `GatewayLaunch`: what the gateway's starters (`kwrl.sandbox.gateway.launch`, `kwrl.sandbox.gateway.zygote`) get
  from the sandbox that asks for a gateway.
- `SandboxLimitError`, `SandboxTimeoutError`: `kwrl.errors`' typed limit errors, importable here too.
- `bwrap_argv(...)`: one pure function from a `SandboxSpec` to bwrap's argv, shared by the
  agent sandbox and the per-command verifier sandboxes, so both see the same world.

Non-obvious choice: everything is read-only or absent except the world (`/filesystem`,
`/.apps_data`), `/logs/agent` and `/logs/artifacts` (`/logs/verifier` only in the verifier phase),
`/solution` in the agent phase (harbor's oracle uploads there), `/tmp` and `/dev/shm` (private
tmpfs); the root itself (bwrap's tmpfs: `/etc`, `/kwrl`, the mount points) and `/dev` are
remounted read-only once built, so agent code cannot plant `/etc/ld.so.preload` or any other file
a later program would read from the root; `/kwrl/run` holds the gateway's socket, read-only.
The environment variables inside are built from scratch (`--clearenv`), so the host's API keys
never reach agent code.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

import kwrl
from kwrl.config import KwrlConfig
from kwrl.errors import SandboxLimitError as SandboxLimitError  # kwrl.errors' own, kept here
from kwrl.errors import SandboxTimeoutError as SandboxTimeoutError
from kwrl.tasks.taskdir import META_JSON, read_meta
from kwrl.tasks.taskdir import resolve_world as resolve_world_dir

# /etc entries programs inside need (name resolution, TLS roots, loader cache, time zone, the
# grader's LibreOffice).
ETC_FILES: tuple[str, ...] = (
    "passwd",
    "group",
    "hosts",
    "nsswitch.conf",
    "resolv.conf",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "alternatives",
    "mime.types",
    "fonts",
    "libreoffice",  # LibreOffice's registry (/usr/lib/libreoffice/share/registry links here)
)
USR_LINKS: tuple[str, ...] = ("bin", "sbin", "lib", "lib64", "lib32", "libx32")
SANDBOX_GATEWAY_SOCKET = "/kwrl/run/gateway.sock"

# The line a gateway prints once it serves (a forked or an exec'd one); its starter waits for it.
GATEWAY_READY = b"kwrl-gateway ready"
LOCAL = "local"
"""The environment preset of the local (bubblewrap) sandbox (`kwrl.sandbox.presets`)."""
INODES_PER_MB = 64
"""Files and dirs a trial's storage holds per MiB of storage_mb unless `storage_inodes` says."""
MIN_INODES = 4096


def storage_inodes(storage_mb: int, setting: int | None) -> int:
    """The nr_inodes of a trial's tmpfs: `setting`, else `INODES_PER_MB` per MiB of `storage_mb`
    (at least `MIN_INODES`). A tmpfs without it allows one inode per two pages of the host's
    memory whatever its size (3 million on a 24 GB host): each costs kernel memory, and each
    file in /logs/agent once became a host inode."""
    return setting or max(MIN_INODES, storage_mb * INODES_PER_MB)


class LocalSandboxConfig(KwrlConfig):
    """Settings of the local (bubblewrap) sandbox; harbor passes them as environment kwargs."""

    sandbox_dir: str | None = None
    """Where per-trial sandbox roots (overlay upper dirs, sockets) live; default $TMPDIR/kwrl-sandboxes."""
    gateway: bool = True
    """Start the world gateway inside the sandbox and expose `mcp_url` on the host."""
    gateway_timeout_s: float = 60.0
    """How long start() waits for the gateway to list its tools."""
    gateway_mode: Literal["fork", "exec"] = "fork"
    """fork: fork the gateway from a warm process that has imported it (fast); exec: cold start."""
    pool: int = Field(default=0, ge=0)
    """Spare sandboxes kept started (`kwrl.sandbox.local.pool`): a trial's start() takes one of its
    world (~1 ms instead of ~60-100 ms); each trial's stop() starts one of its world (up to this
    many), ending older spares of other worlds beyond this many in all. Each idle spare holds a
    sandbox and a gateway (~5 MB); 0 (the default) starts every trial cold."""
    memory_mb: int = Field(default=4096, gt=0)
    """Memory limit of the whole trial when task.toml sets none (MiB)."""
    pids_max: int = Field(default=512, gt=0)
    """Process limit of the whole trial (threads count)."""
    cpus: float | None = Field(default=None, gt=0)
    """CPU quota when task.toml sets none; None means unlimited."""
    storage_mb: int = Field(default=10240, gt=0)
    """Disk for the trial's writes (world changes and /logs/agent) when task.toml sets none (MiB).
    The world's writes live on a tmpfs, so they also count against the trial's memory limit."""
    storage_inodes: int | None = Field(default=None, gt=0)
    """Files and dirs the trial's writes may hold (the nr_inodes of its tmpfs); None: 64 per MiB
    of storage_mb, at least 4,096 (655,360 for the default 10 GiB)."""
    keep_root: bool = False
    """Keep the sandbox root after stop() (debugging only)."""
    exec_user: str | None = None
    """Run every command as this user (name or uid) instead of root-without-capabilities."""
    extra_ro_binds: list[str] = Field(default_factory=list)
    """More host paths bound read-only at the same place inside."""
    allow_missing_limits: bool = False
    """Start trials even where this host cannot apply their memory, process or CPU limit or kill
    all their processes (no writable cgroup v1 controllers or delegated cgroup v2 subtree): by
    default start() refuses, naming what is missing. For hosts and agents you trust only."""


class SandboxSettings(LocalSandboxConfig):
    """Where each trial runs: an environment preset, with the local sandbox's settings typed
    (`LocalSandboxConfig`) and any other environment's as `kwargs`."""

    environment: str = LOCAL
    """Trial environment: local (the bubblewrap sandbox), docker, modal, or an environment import
    path module:Class. The other sandbox.* settings but `kwargs` apply to local only."""
    kwargs: dict[str, Any] = Field(default_factory=dict)
    """Further keyword arguments of the environment (docker's, modal's, an import path's)."""

    @model_validator(mode="before")
    @classmethod
    def _typed_local_kwargs(cls, data: Any) -> Any:
        """The local sandbox's settings given in `kwargs` (`--sandbox.kwargs gateway=false`)
        become its typed fields, so they are validated here, not at the trial's start."""
        if not isinstance(data, dict) or data.get("environment", LOCAL) != LOCAL:
            return data
        kwargs = dict(data.get("kwargs") or {})
        typed = {k: kwargs.pop(k) for k in list(kwargs) if k in LocalSandboxConfig.model_fields}
        return {**data, **typed, "kwargs": kwargs} if typed else data

    def environment_kwargs(self) -> dict[str, Any]:
        """harbor's environment kwargs: the local settings that differ from their defaults (so a
        config read back from TOML gives the same), then `kwargs`. Raises ConfigError for a local
        setting given to another environment."""
        from kwrl.errors import ConfigError

        local = {
            k: v
            for k, v in self.model_dump(mode="json", exclude={"environment", "kwargs"}).items()
            if v != _LOCAL_DEFAULTS[k]
        }
        if local and self.environment != LOCAL:
            names = ", ".join(f"sandbox.{k}" for k in sorted(local))
            raise ConfigError(
                f"{names}: settings of the local sandbox, not of environment "
                f"{self.environment!r}; give its settings as sandbox.kwargs"
            )
        return {**local, **self.kwargs}


_LOCAL_DEFAULTS = LocalSandboxConfig().model_dump(mode="json")


@dataclass(frozen=True)
class GatewayLaunch:
    """What starting a world gateway in a running sandbox takes (`kwrl.sandbox.gateway.start_gateway`,
    `kwrl.sandbox.gateway.zygote.fork_gateway`): the sandbox's coordinates, not the environment object."""

    mode: Literal["fork", "exec"]
    """`LocalSandboxConfig.gateway_mode`."""
    ns_pid: int
    """Host pid of the sandbox's init: the gateway enters its namespaces."""
    cgroup_procs: tuple[str, ...]
    """The cgroup.procs files of the trial's `sandbox` cgroups (none without cgroups)."""
    enter_argv: tuple[str, ...]
    """exec mode: the argv prefix that runs a command in the sandbox's namespaces and `sandbox`
    cgroup without capabilities."""
    log: Path
    """The trial's gateway.log (absolute: the zygote has another working directory)."""
    timeout_s: float
    """How long to wait for the gateway's ready line."""


@dataclass(frozen=True)
class World:
    """The world seed and overlay of one task; either may be None."""

    world_dir: Path | None
    overlay_dir: Path | None

    @property
    def lowers(self) -> list[Path]:
        """overlayfs lower dirs, top first: the task overlay over the world seed."""
        return [p for p in (self.overlay_dir, self.world_dir) if p is not None]


def resolve_world(task_dir: Path) -> World:
    """The world seed dir and the task overlay dir of a task dir (docs/architecture.md)."""
    task_dir = Path(task_dir).resolve()
    overlay = task_dir / "environment" / "overlay"
    overlay_dir = overlay if overlay.is_dir() else None
    if not (task_dir / META_JSON).is_file():
        return World(world_dir=None, overlay_dir=overlay_dir)
    meta = read_meta(task_dir)
    world_dir = resolve_world_dir(task_dir, meta)
    return World(world_dir=world_dir, overlay_dir=overlay_dir)


def python_paths() -> list[Path]:
    """The interpreter prefixes and kwrl's source root, bound read-only inside: each under the
    name this interpreter uses (a `.venv` symlink: its sys.path goes through the link) and under
    its resolved path (what the links inside it lead to)."""
    named = [Path(sys.prefix), Path(sys.base_prefix), Path(kwrl.__file__).parents[1]]
    return sorted({q for p in named for q in (p.absolute(), p.resolve())})


def sandbox_python() -> str:
    """The interpreter path used inside (same as outside: the venv is bound at its own path)."""
    return str(Path(sys.prefix) / "bin" / "python")


def host_binds(extra: list[str] = ()) -> list[str]:  # type: ignore[assignment]
    """bwrap arguments binding the host's system paths read-only."""
    args: list[str] = ["--ro-bind", "/usr", "/usr"]
    for name in USR_LINKS:
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for p in [*python_paths(), *map(Path, extra)]:
        if not str(p).startswith("/usr/"):
            args += ["--ro-bind", str(p.resolve()), str(p)]
    return args


def base_env(gateway_socket: str | None) -> dict[str, str]:
    """The environment every command inside starts from (nothing inherited from the host)."""
    py = sandbox_python()
    env = {
        "PATH": f"{Path(py).parent}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "KWRL_PYTHON": py,
        "HARBOR_TELEMETRY": "0",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    if gateway_socket:
        env["KWRL_GATEWAY"] = f"unix://{gateway_socket}"
    return env


@dataclass
class SandboxSpec:
    """What one bwrap invocation binds and how it is isolated."""

    root: Path
    """The sandbox root on the host (holds merged/, run/, tests/)."""
    share_net: bool = False
    binds: list[tuple[str, str, bool]] = field(default_factory=list)
    """(host source, sandbox target, read_only) beyond the world and system paths."""
    env: dict[str, str] = field(default_factory=dict)
    chdir: str = "/"
    extra_ro: list[str] = field(default_factory=list)
    keep_setid: bool = False
    """Keep CAP_SETUID/CAP_SETGID/CAP_SETPCAP so the command can empty its bounding set and switch to
    a non-root user (which drops them)."""
    read_all: bool = False
    """Keep CAP_DAC_READ_SEARCH: the command reads every file and lists every directory whatever
    its mode (the verifier phase: the grader reads the world as Archipelago's root grader does,
    so a `chmod 000` the agent left behind hides nothing from it and fails no other criterion)."""
    nest: bool = False
    """Keep CAP_SETUID, CAP_SETGID and CAP_SETFCAP: the command may switch to another user and
    map a user namespace of its own, as the grader does to run LibreOffice in a network-less
    sandbox of its own (`kwrl.grading.recalc`; no_new_privs still holds)."""


def bwrap_argv(
    spec: SandboxSpec, command: list[str], info_fd: int | None = None, *, init: bool = False
) -> list[str]:
    """bwrap's argv for `spec` running `command`; the world is `<root>/merged` (an overlay).
    `init`: `command` is the pid namespace's pid 1 (`--as-pid-1`, no bwrap reaper), so it must
    reap orphans itself; the kernel keeps signals sent from inside the namespace off it."""
    merged = spec.root / "merged"
    argv = [
        "bwrap",
        "--unshare-ipc",
        "--unshare-pid",
        *(["--as-pid-1"] if init else []),
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--hostname",
        "kwrl-sandbox",
        # /etc searchable by every user (bwrap makes a bind's parents 0700): a nested sandbox
        # run as another user binds from it.
        "--perms",
        "0755",
        "--dir",
        "/etc",
        *([] if spec.share_net else ["--unshare-net"]),
        # /tmp first: the venv and source binds may live under /tmp (a checkout there), and a
        # tmpfs mounted after them would hide them.
        "--tmpfs",
        "/tmp",
        *host_binds(spec.extra_ro),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/dev/shm",
        "--bind",
        str(merged / "filesystem"),
        "/filesystem",
        "--bind",
        str(merged / ".apps_data"),
        "/.apps_data",
        "--dir",
        "/kwrl",
        # Read-only: the host made the gateway's socket here; agent code may connect, not replace it.
        "--ro-bind",
        str(spec.root / "run"),
        "/kwrl/run",
    ]
    for src, dst, ro in spec.binds:
        argv += ["--ro-bind" if ro else "--bind", src, dst]
    # The root (and /dev) read-only once every mount point is made: only the mounts above that
    # are not read-only can be written (the world, /tmp, /dev/shm, the trial's output dirs).
    argv += ["--remount-ro", "/dev", "--remount-ro", "/"]
    argv += ["--clearenv"]
    for k, v in spec.env.items():
        argv += ["--setenv", k, v]
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    argv += ["--chdir", spec.chdir, "--cap-drop", "ALL"]
    if spec.read_all:
        argv += ["--cap-add", "CAP_DAC_READ_SEARCH"]
    if spec.nest:
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETFCAP"]
    if spec.keep_setid:
        # setpriv then empties the bounding set (CAP_SETPCAP; libcap-ng >= 0.8.4 refuses without
        # it) and switches user, which drops all three.
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    argv += ["--", *command]
    return argv
