"""`LocalEnvironment`: a harbor environment that runs a trial in a bubblewrap sandbox on this machine.

Use it by import path: `harbor run -p TASK -a oracle -e kwrl.sandbox.local:LocalEnvironment`, or
`EnvironmentConfig(import_path="kwrl.sandbox.local:LocalEnvironment")` in a trial config.

Lifecycle (harbor's `BaseEnvironment` contract):
- `start()`: a sandbox root `<sandbox_dir>/<pid>-<token>/` (mode 0700) with `disk/ merged/ run/
  tests/`; a private mount namespace (`unshare --mount`) in which `disk/` is a tmpfs of the trial's
  `storage_mb` and the world an overlayfs (lower = task overlay over world seed, upper on that
  tmpfs), so populating a world costs one mount whatever its size, the seed is never written and
  the world's writes are bounded; bwrap with its own pid, ipc, uts, cgroup and net namespaces
  (loopback only), no capabilities, the host read-only or absent, and kwrl's init as the pid
  namespace's pid 1 (`_INIT`: agent code's signals cannot end the sandbox, nor can it ptrace the
  init or write through its fds into the host's sandbox.log); `/logs/{agent,artifacts}` bound
  from private dirs on that tmpfs (copied into harbor's trial dir as plain files and dirs when
  harbor asks, `prepare_logs_for_host`, and when the agent phase ends: agent code never touches a
  dir the host writes or reads), `/logs/verifier` (harbor's) read-only; per-trial cgroups bound
  memory, process count and CPU (task.toml `[environment]`, checked positive); the world gateway
  started inside on a listening socket the host made at `run/gateway.sock` (`/kwrl/run` is
  read-only inside), relayed to `mcp_url` (http://127.0.0.1:PORT/mcp/) on the host.
- `exec()`: agent phase: `nsenter` into the sandbox (same processes, loopback-only net), `setpriv`
  to drop every capability, env exactly `base_env`, no file over `storage_mb` (RLIMIT_FSIZE); the
  tmpfs (world's writes plus /logs/{agent,artifacts}) full ends the command with
  `SandboxLimitError`.
  Verifier phase (from the moment harbor uploads `/tests`): the sandbox's init is killed, which
  ends its whole pid namespace (the gateway, its `code_execution` children, daemons; a holder
  process keeps the mounts), the agent's outputs are copied out (links, fifos and sockets left
  out, listed in sandbox.json `dropped`) and /logs/verifier emptied; then each command runs in a
  fresh bwrap over the same world, from `/` with `PYTHONSAFEPATH=1`, in a network namespace of
  its own whose one way out is the egress proxy (`kwrl.sandbox.egress`: the judge, the task's
  allowlist, public hosts under harbor's `public` mode, never the host's loopback or private
  networks; nothing under `no-network`), sees `/tests`, and `/kwrl/initial/{world,overlay}` read-only (docs/contracts.md),
  and keeps one capability, CAP_DAC_READ_SEARCH: the grader reads the world whatever modes agent
  code left on it (Archipelago's grader is root); and those to start a sandbox of its own for
  LibreOffice, network-less, as `nobody` (`SandboxSpec.nest`, `kwrl.grading.recalc`).
  `/tests` never exists in the agent's sandbox. Output is capped at `outputs.OUTPUT_CAP` bytes per stream
  in both phases.
- `stop()`: freeze and SIGKILL every process in the trial's cgroups, end the sandbox (its mount
  namespace, hence the overlay mount, goes with it), write `sandbox.json` (limit hits) into the
  trial dir, remove the cgroups and the root. Idempotent; also runs after an agent crash.

As a plain user (rootless), the mounts are made in a user namespace the user owns (`unshare --user
--map-root-user`; the user is uid 0 in there, without capabilities in the sandbox): overlayfs with
`userxattr`, nsenter with `-U --preserve-credentials`, the gateway started through nsenter (exec
mode); RLIMIT_NPROC, which the kernel counts per user namespace, binds the process limit and the pid
namespace ends every process; memory and CPU need a delegated cgroup v2 (else start() refuses
unless `allow_missing_limits`). World files the trial changes must be the user's own.

Non-obvious choices: files move in and out through `tar`/`cat` run *inside* the sandbox, never
through host paths, so a symlink planted by agent code cannot redirect a host-side write. A trial
that hits its process or memory limit during `exec` gets `SandboxLimitError` (its commands are
killed) instead of hanging until the agent timeout. Not in the verifier phase: it has `memory_mb`
of its own beyond what the agent phase left charged (the world's tmpfs pages), a hit there ends no
command, and sandbox.json reports it apart (`verifier_events`) for the rollout to score as the
agent's.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import pwd
import secrets
import shutil
import signal
import socket
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import (
    EnvironmentCapabilities,
    EnvironmentResourceCapabilities,
)
from harbor.models.task.config import NetworkMode, NetworkPolicy
from pydantic import ValidationError

from kwrl.config import format_validation_error
from kwrl.errors import ConfigError, SandboxError
from kwrl.io import write_json
from kwrl.sandbox import cgroups, host, outputs
from kwrl.sandbox.base import (
    SANDBOX_GATEWAY_SOCKET,
    LocalSandboxConfig,
    SandboxLimitError,
    SandboxSpec,
    SandboxTimeoutError,
    World,
    base_env,
    bwrap_argv,
    resolve_world,
    sandbox_python,
)
from kwrl.sandbox.egress import Allowlist, EgressProxy, judge_endpoints, relay_argv
from kwrl.sandbox.forward import UnixForwarder
from kwrl.sandbox.gateway import ProcRef, proc_state
from kwrl.tasks.taskdir import limit_problems

# Writes "$$" into each cgroup.procs file given before "--", then execs the rest.
_JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1"; shift; done; shift; exec "$@"'
# $1 = tmpfs options, $2 = the disk dir, $3 = overlay options, $4 = the merged dir. The trial's
# writes (overlay upper and work, /logs/agent and /logs/artifacts) live on a size-limited tmpfs
# private to this mount namespace.
_MOUNT = (
    'mount -t tmpfs -o "$1" kwrl-disk "$2" && cd "$2" && '
    "mkdir -p upper/filesystem upper/.apps_data/mail upper/.apps_data/calendar "
    "upper/.apps_data/chat work out-logs-agent out-logs-artifacts && "
    'mount -t overlay overlay -o "$3" "$4" && shift 4 && exec "$@"'
)
# The sandbox's init (bwrap --as-pid-1): its line says bwrap finished building the namespaces; it
# then reaps whatever is orphaned inside. As pid 1 of the sandbox's pid namespace it receives no
# signal sent from inside unless it handles that signal, and it handles none (SIGINT back to the
# default; SIGCHLD is only blocked and waited for): agent code's `kill -9 -1` cannot end the sandbox.
# With bwrap's own reaper as pid 1, a shell keeper as pid 2 was killable, and bwrap ended the whole
# sandbox (world, /logs, gateway) with it. It is non-dumpable, so agent code (same uid, no
# capabilities) can neither ptrace it nor open its /proc/1/{fd,mem,environ}, and once ready its
# stdout and stderr are /dev/null: through /proc/1/fd/2, agent code wrote 2 GiB and forged lines
# into the host file sandbox.log (bwrap's own messages, outside, still go there), and a write to
# /proc/1/fd/1 (a pipe the host stops reading) blocked it until the agent timeout.
_INIT = (
    "import ctypes, os, signal\n"
    "if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0):  # PR_SET_DUMPABLE\n"
    "    raise OSError(ctypes.get_errno(), 'prctl(PR_SET_DUMPABLE, 0)')\n"
    "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
    "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})\n"
    "os.write(1, b'kwrl-sandbox-ready\\n')\n"
    "null = os.open('/dev/null', os.O_RDWR)\n"
    "os.dup2(null, 1)\n"
    "os.dup2(null, 2)\n"
    "while True:\n"
    "    try:\n"
    "        while os.waitpid(-1, os.WNOHANG)[0]:\n"
    "            pass\n"
    "    except ChildProcessError:\n"
    "        pass\n"
    "    signal.sigwait({signal.SIGCHLD})\n"
)
_DROP_CAPS = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs"]
_WATCH_S = 0.05
_REAP_S = 5.0
_DISK_SLACK = 64 * 1024  # a world tmpfs with less free is full
_VERIFIER_DIR = "/logs/verifier"
_AGENT_OUTPUTS = ("/logs/agent", "/logs/artifacts")


async def _group_gone(pgid: int, deadline_s: float) -> bool:
    """Wait until no process of group `pgid` is left (zombies count); False past the deadline."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > end:
            return False
        await asyncio.sleep(0.005)


def _bad_mount_chars(p: Path) -> bool:
    return any(c in str(p) for c in ",:\n")


def _absolute_paths(kwargs: dict[str, Any]) -> dict[str, Any]:
    """harbor's constructor kwargs with every host path made absolute.

    harbor hands over paths relative to its own working directory (its default `jobs/` dir, a
    relative `-o`, kwrl's relative `--out`); the zygote, the gateway and bwrap are other processes
    with other working directories, so a relative trial dir there names nothing (the zygote
    refused it: every trial failed on `sandbox`). Resolved once, where the paths enter.
    """
    from harbor.models.trial.paths import TrialPaths

    out = dict(kwargs)
    if isinstance(out.get("environment_dir"), (str, os.PathLike)):
        out["environment_dir"] = Path(out["environment_dir"]).resolve()
    paths = out.get("trial_paths")
    if isinstance(paths, TrialPaths) and not paths.trial_dir.is_absolute():
        out["trial_paths"] = TrialPaths(trial_dir=paths.trial_dir.resolve())
    if out.get("mounts"):
        out["mounts"] = [
            {**m, "source": str(Path(m["source"]).resolve())}
            if m.get("type", "bind") == "bind" and m.get("source")
            else m
            for m in out["mounts"]
        ]
    return out


class LocalEnvironment(BaseEnvironment):
    """A trial sandbox on this machine: bubblewrap + overlayfs + cgroups, no Docker."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        known = set(LocalSandboxConfig.model_fields)
        settings = {k: kwargs.pop(k) for k in list(kwargs) if k in known}
        try:
            self.settings = LocalSandboxConfig.model_validate(settings)
        except ValidationError as e:
            raise ConfigError(format_validation_error("environment kwargs", e)) from e
        self.root: Path | None = None
        self.mcp_url: str | None = None
        """http://127.0.0.1:PORT/mcp/ on the host, relayed to the gateway inside (after start)."""
        self.world = World(None, None)
        self._cg: cgroups.Cgroups | None = None
        self._unenforced: list[str] = []
        self._proc: asyncio.subprocess.Process | None = None
        self._gateway: asyncio.subprocess.Process | None = None
        self._drain: asyncio.Task[None] | None = None
        self._gateway_ref: ProcRef | None = None
        self._forwarder: UnixForwarder | None = None
        self._init_pid = 0
        self._listener: socket.socket | None = None
        self._holder: asyncio.subprocess.Process | None = None
        self._disk_events = 0
        self._dropped: list[str] = []
        self._copied: dict[str, set[str]] = {}
        self._verifier_phase = False
        self._agent_events: cgroups.ResourceEvents | None = None
        """The limit hits of the agent phase (set when the verifier phase starts)."""
        self._verifier_memory_mb: int | None = None
        """The trial's memory limit in the verifier phase (`Cgroups.reserve_memory`)."""
        self._egress: EgressProxy | None = None
        """The verifier phase's way out: the judge, and nothing else on the host (`sandbox.egress`)."""
        self._stopped = False
        super().__init__(*args, **_absolute_paths(kwargs))

    # ------------------------------------------------------------------ harbor interface

    @staticmethod
    def type() -> str:
        return "kwrl-local"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(
            disable_internet=True, dynamic_network_policy=True, mounted=True
        )

    @classmethod
    def resource_capabilities(cls) -> EnvironmentResourceCapabilities:
        return EnvironmentResourceCapabilities(cpu_limit=True, memory_limit=True)

    def _validate_definition(self) -> None:
        check_limits(self.task_env_config, self.environment_dir.parent / "task.toml")
        self.world = resolve_world(self.environment_dir.parent)
        for p in self.world.lowers:
            if _bad_mount_chars(p):
                raise SandboxError(f"{p}: overlayfs cannot take a path containing ',' or ':'")

    async def _apply_network_policy(self, network_policy: NetworkPolicy) -> None:
        """Only the verifier phase follows the policy; the agent phase never has network."""
        return

    @property
    def cgroups(self) -> cgroups.Cgroups | None:
        """The trial's cgroups (None where cgroups are unavailable or before start)."""
        return self._cg

    def gateway_fate(self) -> str | None:
        """Why the world gateway stopped serving in the agent phase, or None while it serves (or
        before it started, or once kwrl itself ended it for the verifier phase or stop()).

        Inside the sandbox only agent code shares the gateway's pid namespace and user, so a
        gateway that ended (gone, a zombie, or on its way out: its connections close before it
        turns zombie, see `proc_state`) or was stopped (SIGSTOP) there was ended by the agent's own
        commands (a kill by the trial's memory limit too: agent code filled the memory).
        `KwrlAgent` asks this when its MCP session fails or a call times out, and ends the run as
        `tools_lost`: the trial is graded on the world as it stands, not masked as an
        infrastructure error.
        """
        ref = self._gateway_ref
        if ref is None or self._stopped or self._verifier_phase:
            return None
        state = proc_state(ref)
        if state is None or state in "ZX":
            return "the world gateway ended in the agent phase: agent code killed it"
        if state in "Tt":
            return "the world gateway was stopped in the agent phase: agent code sent it SIGSTOP"
        return None

    @property
    def init_pid(self) -> int:
        """Host pid of the sandbox's init (the process whose namespaces commands enter)."""
        return self._init_pid

    @property
    def gateway_socket(self) -> Path | None:
        """The gateway's Unix socket on the host side (None before start)."""
        return None if self.root is None else self.root / "run" / "gateway.sock"

    async def start(self, force_build: bool) -> None:
        host.check_host()
        sup = cgroups.support()
        # Rootless: RLIMIT_NPROC binds the sandbox's user namespace alone, and its pid namespace
        # ends every process of the trial when its init dies.
        self._unenforced = cgroups.require_limits(
            self._limits(),
            allow_missing=self.settings.allow_missing_limits,
            also_enforced=("pids", "kill") if host.rootless() else (),
            sup=sup,
        )
        if host.rootless() and self.settings.exec_user is not None:
            raise ConfigError("exec_user: a rootless sandbox maps one user only (leave it unset)")
        foreign = [
            d for d in self.world.lowers if host.rootless() and d.stat().st_uid != os.geteuid()
        ]
        if foreign:
            logging.getLogger(__name__).warning(
                "rootless sandbox: %s is not owned by uid %d, so the trial cannot change what it "
                "holds (owners other than this user are unmapped in the sandbox); copy the dataset",
                foreign[0], os.geteuid(),
            )  # fmt: skip
        if host.rootless() and self.settings.gateway_mode == "fork":
            # The zygote enters no user namespace: the gateway starts cold, through nsenter.
            self.settings = self.settings.model_copy(update={"gateway_mode": "exec"})
        if self._unenforced:
            logging.getLogger(__name__).warning(
                "sandbox without %s (allow_missing_limits): %s", self._unenforced, sup.describe()
            )
        await host.sweep_stale_once(self._sandbox_dir())
        name = f"{os.getpid()}-{secrets.token_hex(4)}"
        self.root = root = self._sandbox_dir() / name
        if _bad_mount_chars(root):
            raise SandboxError(f"sandbox_dir {root}: overlayfs cannot take ',' or ':' in a path")
        root.mkdir(parents=True, mode=0o700)
        for sub in ("disk", "merged", "run", "tests"):
            (root / sub).mkdir()
        lowers = self.world.lowers
        if not lowers:
            (root / "empty").mkdir()
            lowers = [root / "empty"]
        self._cg = cgroups.trial_cgroups(name, sup)
        if self._cg is not None:
            await asyncio.to_thread(self._cg.create, self._limits())
        if self.settings.gateway:
            self._listener = _listen(root / "run" / "gateway.sock")
        disk = root / "disk"
        opts = f"lowerdir={':'.join(map(str, lowers))},upperdir={disk / 'upper'},workdir={disk / 'work'}"
        if host.rootless():
            opts += ",userxattr"  # overlayfs in a user namespace keeps its marks in user.* xattrs
        read_fd, write_fd = os.pipe()
        spec = self._spec(share_net=False, verifier=False)
        argv = [
            *self._join("sandbox"),
            "unshare",
            *(["--user", "--map-root-user"] if host.rootless() else []),
            "--mount",
            "--propagation",
            "private",
            "--",
            *self._nproc(),
            "sh",
            "-c",
            _MOUNT,
            "sh",
            f"size={self._storage_mb()}m,mode=0755",
            str(disk),
            opts,
            str(root / "merged"),
            *bwrap_argv(
                spec, [sandbox_python(), "-I", "-S", "-c", _INIT], info_fd=write_fd, init=True
            ),
        ]
        log = open(self.trial_paths.trial_dir / "sandbox.log", "ab")  # noqa: SIM115
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                pass_fds=(write_fd,),
                start_new_session=True,
                env=host.host_env(),
            )
        finally:
            os.close(write_fd)
            log.close()
        assert self._proc.stdout is not None
        info = await asyncio.to_thread(_read_all, read_fd)
        line = await self._proc.stdout.readline() if info else b""
        if not line.startswith(b"kwrl-sandbox-ready"):
            self._close_listener()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            rc = await self._proc.wait()
            text = (self.trial_paths.trial_dir / "sandbox.log").read_text(errors="replace")
            raise SandboxError(f"bwrap exited ({rc}) before the sandbox was up: {text[-2000:]}")
        self._init_pid = int(json.loads(info)["child-pid"])
        if self.settings.gateway:
            await self._start_gateway()

    async def stop(self, delete: bool) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._forwarder is not None:
            await self._forwarder.close()
        if self._egress is not None:
            await self._egress.close()
        self._close_listener()
        if not self._verifier_phase:  # a trial that ended in its agent phase: keep its outputs
            await asyncio.to_thread(self._sync_outputs)
        if self._cg is not None:
            await asyncio.to_thread(self._cg.kill)
        for proc in (self._proc, self._gateway, self._holder):
            if proc is not None and proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        if self._drain is not None:
            self._drain.cancel()
            await asyncio.gather(self._drain, return_exceptions=True)
        report: dict[str, Any] = {
            "limits": {**vars(self._limits()), "storage_mb": self._storage_mb()}
        }
        if self._unenforced:
            report["unenforced"] = self._unenforced
        if self._cg is not None:
            events = self._cg.events()
            agent = self._agent_events or events
            report["events"] = agent.as_dict()
            if self._agent_events is not None:
                report["verifier_events"] = events.minus(agent).as_dict()
            if self._verifier_memory_mb is not None:
                report["verifier_memory_mb"] = self._verifier_memory_mb
            await asyncio.to_thread(self._cg.remove)
        if self._disk_events:
            report.setdefault("events", {})["disk_full"] = self._disk_events
        if self._dropped:
            report["dropped"] = self._dropped[:100]
        if self._egress is not None and (self._egress.connected or self._egress.denied):
            report["egress"] = self._egress.report()
        with contextlib.suppress(OSError):
            write_json(self.trial_paths.trial_dir / "sandbox.json", report)
        if self.root is not None and not self.settings.keep_root:
            await asyncio.to_thread(shutil.rmtree, self.root, True)

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        argv = self._command_argv(command, cwd=cwd, user=self._uid_gid(user), env=env)
        rc, out, err = await self._run(argv, env=self._exec_env(env), timeout_sec=timeout_sec)
        return ExecResult(
            stdout=out.decode(errors="replace"), stderr=err.decode(errors="replace"), return_code=rc
        )

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        if _under(target_path, "/tests"):
            await self._enter_verifier_phase()
            dest = self._tests_host_path(target_path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source_path, dest)
            return
        data = Path(source_path).read_bytes()
        q = _q(target_path)
        await self._checked(f"mkdir -p $(dirname {q}) && cat > {q}", stdin=data)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        if _under(target_dir, "/tests"):
            await self._enter_verifier_phase()
            shutil.copytree(source_dir, self._tests_host_path(target_dir), dirs_exist_ok=True)
            return
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            tf.add(str(source_dir), arcname=".")
        q = _q(target_dir)
        await self._checked(
            f"mkdir -p {q} && tar -x -f - -C {q} --no-same-owner", stdin=buf.getvalue()
        )

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        data = await self._checked(f"cat {_q(source_path)}")
        target = Path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        data = await self._checked(f"tar -c -f - -C {_q(source_dir)} .")
        target = Path(target_dir)
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tf:
            tf.extractall(target, filter="data")

    # ------------------------------------------------------------------ internals

    def _sandbox_dir(self) -> Path:
        if self.settings.sandbox_dir:
            return Path(self.settings.sandbox_dir)
        uid = "" if not host.rootless() else f"-{os.geteuid()}"  # a plain user's own
        return Path(tempfile.gettempdir()) / f"kwrl-sandboxes{uid}"

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

    def _spec(self, *, share_net: bool, verifier: bool) -> SandboxSpec:
        assert self.root is not None
        binds: list[tuple[str, str, bool]] = []
        for m in self._mounts:
            if m.get("type") == "bind":
                Path(m["source"]).mkdir(parents=True, exist_ok=True)
                # The agent phase may read but never write the verifier's outputs (a planted reward).
                ro = bool(m.get("read_only")) or (
                    not verifier and _under(m["target"], _VERIFIER_DIR)
                )
                # Agent code writes its outputs into a private dir, copied out as plain files: it
                # never touches the host dir that harbor and kwrl write and read (no planted links).
                private = not verifier and m["target"] in _AGENT_OUTPUTS
                src = str(self._private(m["target"])) if private else m["source"]
                binds.append((src, m["target"], ro))
        env = base_env(SANDBOX_GATEWAY_SOCKET if self.settings.gateway else None)
        if verifier:
            # Never import from the cwd or a script's dir (agent-writable /filesystem), whatever
            # an older tests/test.sh does.
            env["PYTHONSAFEPATH"] = "1"
            binds.append((str(self.root / "tests"), "/tests", True))
            if self.world.world_dir is not None:
                binds.append((str(self.world.world_dir), "/kwrl/initial/world", True))
            if self.world.overlay_dir is not None:
                binds.append((str(self.world.overlay_dir), "/kwrl/initial/overlay", True))
        return SandboxSpec(
            root=self.root,
            share_net=share_net,
            binds=binds,
            env=env,
            extra_ro=self.settings.extra_ro_binds,
        )

    def _join(self, child: str) -> list[str]:
        """Prefix that puts a command in the trial's cgroup `child` (or, without cgroups, under rlimits)."""
        if self._cg is None:
            mem = self._limits().memory_mb
            return ["prlimit", f"--as={mem * 2**20}", "--"] if mem else []
        files = [str(f) for f in self._cg.procs_files(child)]
        return ["sh", "-c", _JOIN, "kwrl-join", *files, "--"]

    def _uid_gid(self, user: str | int | None) -> tuple[int, int] | None:
        user = self._resolve_user(user)
        if user is None:
            user = self.settings.exec_user
        if user in (None, 0, "0", "root"):
            return None
        try:
            pw = pwd.getpwuid(int(user)) if str(user).isdigit() else pwd.getpwnam(str(user))
        except KeyError as e:
            raise SandboxError(f"exec user {user!r}: no such user in /etc/passwd") from e
        return pw.pw_uid, pw.pw_gid

    def _command_argv(
        self,
        command: str,
        *,
        cwd: str | None,
        user: tuple[int, int] | None,
        env: dict[str, str] | None = None,
    ) -> list[str]:
        if self._stopped or not self._init_pid:
            raise SandboxError(f"{self.session_id}: sandbox is not running")
        # The verifier phase starts where the agent cannot write (the sandbox root is bwrap's tmpfs).
        default = "/" if self._verifier_phase else self.task_env_config.workdir or "/filesystem"
        workdir = cwd or default
        shell = ["bash", "-c", f"cd {_q(workdir)} || exit 1\n{command}"]
        ids = [] if user is None else [f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups"]
        if not self._verifier_phase:
            # No single file may outgrow the trial's storage (/logs/agent is a host dir).
            fsize = f"--fsize={self._storage_mb() * 2**20}"
            return [
                *self._join("exec"),
                "prlimit", fsize, *self._nproc()[1:-1], "--",
                "nsenter", "-t", str(self._init_pid), *host.userns_flags(),
                "-m", "-u", "-i", "-n", "-p", "-r", "-w", "--",
                *_DROP_CAPS, *ids, "--", *shell,
            ]  # fmt: skip
        assert self._holder is not None
        # Never the host's network: the phase's own loopback, and the egress proxy (the judge).
        spec = self._spec(share_net=False, verifier=True)
        spec.keep_setid = bool(ids)
        spec.read_all = True  # the grader reads what agent code made unreadable (chmod 000)
        spec.nest = True  # the grader's LibreOffice runs in a sandbox of its own (grading.recalc)
        # What harbor passes (task verifier.env, the trial's verifier env: the judge and its key)
        # reaches the grader; the sandbox's own variables win.
        spec.env = {**(self._merge_env(env) or {}), **spec.env}
        inner = [*_DROP_CAPS, *ids, "--", *shell] if ids else shell
        if self._egress is not None and self._admit(spec.env):
            inner = relay_argv(sandbox_python(), inner)
        return [
            *self._join("exec"),
            *self._nproc(),
            "nsenter", "-t", str(self._holder.pid), *host.userns_flags(), "-m", "--",
            *bwrap_argv(spec, inner),
        ]  # fmt: skip

    def _exec_env(self, env: dict[str, str] | None) -> dict[str, str]:
        """The launcher's env. Agent phase: exactly `base_env` (nothing of harbor's env reaches
        agent code); verifier phase: bwrap's --clearenv rebuilds the env inside from the spec."""
        gateway = SANDBOX_GATEWAY_SOCKET if self.settings.gateway else None
        if not self._verifier_phase:
            return base_env(gateway)
        return {**base_env(gateway), **(self._merge_env(env) or {})}

    async def _checked(self, command: str, stdin: bytes | None = None) -> bytes:
        argv = self._command_argv(command, cwd="/", user=None)
        rc, out, err = await self._run(argv, env=self._exec_env(None), stdin=stdin, timeout_sec=600)
        if rc != 0:
            raise SandboxError(
                f"{self.session_id}: `{command}` failed ({rc}): {err.decode(errors='replace')[-1000:]}"
            )
        return out

    async def _run(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        stdin: bytes | None = None,
        timeout_sec: float | None = None,
    ) -> tuple[int, bytes, bytes]:
        """Run one command in its own process group; kill the group on timeout or cancellation.

        Agent phase: a limit hit kills the trial's commands and raises `SandboxLimitError`. Verifier
        phase: it kills and raises nothing. The kernel has already killed the process that asked
        for too much (LibreOffice, the grader); the grader goes on or writes no reward, and
        sandbox.json's `verifier_events` tell the rollout (`verifier_limit`: the agent's, 0).
        """
        agent_phase = not self._verifier_phase
        before = self._cg.events() if self._cg and agent_phase else None
        # Spawning is shielded: cancelled mid-spawn, asyncio would kill only the direct child and
        # wait forever on pipes its children still hold; here the whole group is reaped instead.
        spawn = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                env=env,
            )
        )
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await self._reap(await spawn, None)
            raise
        talk = asyncio.ensure_future(outputs.communicate(proc, stdin))
        watch = asyncio.ensure_future(self._watch_limits(before)) if agent_phase else None
        try:
            waiters = {talk} | ({watch} if watch else set())
            done, _ = await asyncio.wait(
                waiters, timeout=timeout_sec, return_when=asyncio.FIRST_COMPLETED
            )
            if talk not in done:
                await self._reap(proc, talk)
                if watch is not None and watch in done:
                    raise SandboxLimitError(watch.result())
                raise SandboxTimeoutError(f"Command timed out after {timeout_sec} seconds")
            out, err = talk.result()
        except asyncio.CancelledError:
            await asyncio.shield(self._reap(proc, talk))
            raise
        finally:
            if watch is not None:
                watch.cancel()
        breach = ""
        if before is not None and self._cg is not None:
            breach = _breach(before, self._cg.events(), self._limits())
        if not breach and agent_phase:
            breach = await asyncio.to_thread(self._disk_breach)
        if breach:
            raise SandboxLimitError(breach)
        assert proc.returncode is not None
        return proc.returncode, out, err

    async def _watch_limits(self, before: cgroups.ResourceEvents | None) -> str:
        """Return (ending the command) as soon as the trial hits its process, memory or disk limit."""
        limits = self._limits()
        while True:
            await asyncio.sleep(_WATCH_S)
            breach = ""
            if before is not None and self._cg is not None:
                breach = _breach(before, self._cg.events(), limits)
            if not breach and not self._verifier_phase:
                breach = await asyncio.to_thread(self._disk_breach)
            if breach:
                if self._cg is not None:
                    await asyncio.to_thread(self._cg.kill, "exec")
                return breach

    def _storage_mb(self) -> int:
        """task.toml's [environment] storage_mb, else the settings' default."""
        return self._effective_storage_mb or self.settings.storage_mb

    def _disk_breach(self) -> str:
        """Non-empty when the trial's writes (world, /logs/agent, /logs/artifacts: one tmpfs of
        `storage_mb`, which refuses writes past it) filled its storage."""
        disk = self._in_mounts("disk")
        try:
            st = os.statvfs(disk) if disk is not None else None
        except OSError:
            return ""  # the sandbox is ending
        if st is None or st.f_bavail * st.f_frsize >= _DISK_SLACK:
            return ""
        self._disk_events += 1
        return (
            f"disk limit reached (storage_mb={self._storage_mb()}: the world's writes, "
            "/logs/agent and /logs/artifacts); the trial's commands were killed"
        )

    def _mount_source(self, target: str) -> Path | None:
        for m in self._mounts:
            if m.get("type") == "bind" and m.get("target") == target:
                return Path(m["source"])
        return None

    async def _reap(
        self, proc: asyncio.subprocess.Process, talk: asyncio.Future[Any] | None
    ) -> None:
        """Kill a command's process group and wait for it, within bounds.

        A process that left the group (setsid) may still hold the command's pipes; if the group
        does not finish within `_REAP_S`, every agent command of the trial is killed (its cgroup).
        Returning means the group is gone, not just signalled: the command's processes inside the
        sandbox's pid namespace exit after `nsenter` and are reaped by the namespace's init, which
        under load can take a moment after the direct child has been waited for.
        """
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        pending = [asyncio.ensure_future(proc.wait()), *([talk] if talk is not None else [])]
        for last in (False, True):
            _, still = await asyncio.wait(pending, timeout=_REAP_S)
            if not still and await _group_gone(proc.pid, _REAP_S):
                return
            if not still and self._cg is None:
                return
            if last:
                for t in still:
                    t.cancel()
                return
            if self._cg is not None:
                await asyncio.to_thread(self._cg.kill, "exec")

    async def _enter_verifier_phase(self) -> None:
        """Harbor uploads /tests right before verifying: end everything of the agent phase first.

        A holder process keeps the sandbox's mount namespace (the world's overlay) alive; then the
        sandbox's init is killed, which makes the kernel kill every process of its pid namespace
        (the gateway, `code_execution` children, setsid'ed daemons) at once, and the agent's
        commands are killed through their cgroup. The limit hits so far are the agent phase's; the
        trial's memory limit rises to what the agent left charged (its writes on the world's
        tmpfs) plus its `memory_mb`, the verifier's own (`Cgroups.reserve_memory`). The verifier's
        output dir is emptied last, so whatever reward file harbor reads afterwards is the
        grader's own.
        """
        if self._verifier_phase:
            return
        self._verifier_phase = True
        if self._forwarder is not None:
            await self._forwarder.close()
            self._forwarder = None
        assert self._proc is not None
        self._holder = await asyncio.create_subprocess_exec(
            *self._join("sandbox"),
            "nsenter", "-t", str(self._proc.pid), *host.userns_flags(), "-m", "--",
            "sh", "-c", "echo kwrl-holder; exec sleep infinity",
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            start_new_session=True, env=host.host_env(),
        )  # fmt: skip
        assert self._holder.stdout is not None
        if not (await self._holder.stdout.readline()).startswith(b"kwrl-holder"):
            raise SandboxError(f"{self.session_id}: could not hold the sandbox's mounts")
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._init_pid, signal.SIGKILL)
        for proc in (self._proc, self._gateway):
            if proc is not None:
                try:
                    async with asyncio.timeout(_REAP_S * 2):
                        await proc.wait()
                except TimeoutError as e:
                    raise SandboxError(f"{self.session_id}: the agent phase did not end") from e
        if self._cg is not None:
            await asyncio.to_thread(self._cg.kill, "exec")
            self._agent_events = self._cg.events()
            if (mb := self._limits().memory_mb) is not None:
                self._verifier_memory_mb = await asyncio.to_thread(self._cg.reserve_memory, mb)
        await asyncio.to_thread(self._sync_outputs)
        out = self._mount_source(_VERIFIER_DIR)
        if out is not None:
            await asyncio.to_thread(outputs.empty_dir, out)
        assert self.root is not None
        self._egress = EgressProxy(self.root / "run" / "egress.sock", Allowlist())
        await self._egress.start()

    def _admit(self, env: dict[str, str]) -> bool:
        """Point the egress proxy at what the verifier may reach now (harbor may change the
        phase's network policy between commands); False: no way out at all (`no-network`)."""
        assert self._egress is not None
        policy = self._network_policy
        if policy.network_mode == NetworkMode.NO_NETWORK:
            return False
        allow = self._egress.allow
        allow.endpoints = judge_endpoints(env)
        allow.hosts = list(getattr(policy, "allowed_hosts", None) or [])
        allow.public = policy.network_mode == NetworkMode.PUBLIC
        return True

    async def prepare_logs_for_host(self) -> None:
        """harbor calls this before reading agent logs on the host: copy the agent's outputs out
        (none when start() failed before making the sandbox: its error is the trial's)."""
        if not self._verifier_phase and self.root is not None:
            await asyncio.to_thread(self._sync_outputs)

    def _private(self, target: str) -> Path:
        """The dir (on the trial's tmpfs) agent code sees at `target` (/logs/agent, /logs/artifacts)."""
        assert self.root is not None
        return self.root / "disk" / ("out" + target.replace("/", "-"))

    def _in_mounts(self, rel: str) -> str | None:
        """`<root>/<rel>` as seen in the sandbox's mount namespace (where its tmpfs is mounted)."""
        holder = self._holder if self._verifier_phase else self._proc
        if holder is None or holder.returncode is not None or self.root is None:
            return None
        return f"/proc/{holder.pid}/root{self.root / rel}"

    def _sync_outputs(self) -> None:
        """Copy the agent phase's /logs/agent and /logs/artifacts into harbor's dirs: regular files
        and dirs only, links never followed, files harbor or kwrl wrote there left as they are."""
        for target in _AGENT_OUTPUTS:
            host = self._mount_source(target)
            private = self._in_mounts(str(self._private(target).relative_to(self.root or "/")))
            if host is None or private is None:
                continue
            try:
                dropped = outputs.copy_out(
                    Path(private), host, self._copied.setdefault(target, set())
                )
            except OSError:
                dropped = ["."]
            self._dropped += [
                f"{target}/{r}" for r in dropped if f"{target}/{r}" not in self._dropped
            ]

    def _tests_host_path(self, target: str) -> Path:
        assert self.root is not None
        rel = Path(target).relative_to("/tests")
        if ".." in rel.parts:
            raise SandboxError(f"upload target {target!r} escapes /tests")
        return self.root / "tests" / rel

    async def _start_gateway(self) -> None:
        from kwrl.sandbox.gateway import start_gateway

        assert self.root is not None and self.gateway_socket is not None
        assert self._listener is not None
        try:
            self._gateway, self._drain, self._gateway_ref = await start_gateway(
                self, self._listener.fileno()
            )
        finally:
            self._close_listener()  # the gateway holds it now; a dead gateway refuses connections
        # The relay connects by a host path under the sandbox root: /kwrl/run is read-only inside,
        # so agent code cannot replace the socket with a link to another one.
        self._forwarder = UnixForwarder(self.gateway_socket)
        port = await self._forwarder.start()
        self.mcp_url = f"http://127.0.0.1:{port}/mcp/"

    def _close_listener(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def gateway_argv(self) -> list[str]:
        """argv that runs a command in the sandbox's namespaces but in the `sandbox` cgroup."""
        return [
            *self._join("sandbox"),
            *self._nproc(),
            "nsenter", "-t", str(self._init_pid), *host.userns_flags(),
            "-m", "-u", "-i", "-n", "-p", "-r", "-w", "--",
            *_DROP_CAPS, "--",
        ]  # fmt: skip


def _breach(
    before: cgroups.ResourceEvents, now: cgroups.ResourceEvents, limits: cgroups.Limits
) -> str:
    if now.pids_max > before.pids_max:
        return f"process limit reached (pids.max={limits.pids}); the trial's commands were killed"
    if now.oom_kill > before.oom_kill:
        return f"memory limit exceeded ({limits.memory_mb} MiB); the kernel killed a process"
    return ""


def _listen(path: Path) -> socket.socket:
    """A listening Unix socket at `path` (made here, on the host, and handed to the gateway)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    os.chmod(path, 0o666)  # inside, any user may connect (the dir is the sandbox's only)
    sock.listen(128)
    return sock


def check_limits(env: Any, task_toml: Path) -> None:
    """Refuse [environment] limits no sandbox can apply, naming task.toml and the field."""
    problems = limit_problems(env)
    if problems:
        field, message = problems[0]
        raise ConfigError(f"{task_toml}: {field} = {message}")


def _q(s: str) -> str:
    import shlex

    return shlex.quote(s)


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _read_all(fd: int) -> bytes:
    chunks = []
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read(65536):
            chunks.append(chunk)
    return b"".join(chunks)
