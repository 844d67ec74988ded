"""`LocalEnvironment`: harbor's lifecycle of a trial in a bubblewrap sandbox on this machine.

`start()` makes the sandbox root, the trial's cgroups, the world (an overlayfs of the task overlay
over the world seed, its upper dir on a tmpfs of `storage_mb` in a private mount namespace), the
sandbox (bwrap with kwrl's init as pid 1) and the world gateway; `stop()` kills every process of the
trial, writes sandbox.json and removes the cgroups and the root; `exec()` runs a command of either
phase (`commands`). The package docstring (`kwrl.sandbox.local`) tells the whole story.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
from pathlib import Path
from typing import Any

from harbor.environments.base import ExecResult
from harbor.environments.capabilities import (
    EnvironmentCapabilities,
    EnvironmentResourceCapabilities,
)
from harbor.models.task.config import NetworkPolicy
from pydantic import ValidationError

from kwrl.config import format_validation_error
from kwrl.errors import ConfigError, SandboxError
from kwrl.sandbox import cgroups, outputs
from kwrl.sandbox.base import LocalSandboxConfig, bwrap_argv
from kwrl.sandbox.contract import LimitsReport
from kwrl.sandbox.local import host, pool
from kwrl.sandbox.local.gateway import WorldGateway, listen
from kwrl.sandbox.local.init import READY, init_argv
from kwrl.sandbox.local.phases import Phases
from kwrl.sandbox.local.state import default_sandbox_dir

# $1 = tmpfs options, $2 = the disk dir, $3 = overlay options, $4 = the merged dir. The trial's
# writes (overlay upper and work, /logs/agent and /logs/artifacts) live on a tmpfs limited in
# size and inodes, private to this mount namespace.
_MOUNT = (
    'mount -t tmpfs -o "$1" kwrl-disk "$2" && cd "$2" && '
    "mkdir -p upper/filesystem upper/.apps_data/mail upper/.apps_data/calendar "
    "upper/.apps_data/chat work out-logs-agent out-logs-artifacts out-solution && "
    'mount -t overlay overlay -o "$3" "$4" && shift 4 && exec "$@"'
)

_WARNED_UNENFORCED: set[tuple[str, ...]] = set()
"""The sets of unenforced limits this process has warned about (`allow_missing_limits`)."""


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


class LocalEnvironment(Phases, WorldGateway):
    """A trial sandbox on this machine: bubblewrap + overlayfs + cgroups, no Docker."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        known = set(LocalSandboxConfig.model_fields)
        settings = {k: kwargs.pop(k) for k in list(kwargs) if k in known}
        try:
            self.settings = LocalSandboxConfig.model_validate(settings)
        except ValidationError as e:
            raise ConfigError(format_validation_error("environment kwargs", e)) from e
        self.root = None
        self.mcp_url = None
        self._cg = None
        self._unenforced = []
        self._proc = self._gateway = self._holder = None
        self._drain = None
        self._gateway_ref = None
        self._forwarder = None
        self._init_pid = 0
        self._listener = None
        self._disk_events = 0
        self._dropped = outputs.Dropped()
        self._copied = {}
        self._verifier_phase = False
        self._agent_events = None
        self._verifier_memory_mb = None
        self._egress = None
        self._stopped = False
        self._spare_dir = None
        self._spare_linked = ()
        kwargs = _absolute_paths(kwargs)
        self._ctor = (args, kwargs)  # what a spare of this trial's world is built from (`pool`)
        self._ctor_settings = settings
        super().__init__(*args, **kwargs)

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
        super()._validate_definition()  # limits checked, world resolved (KwrlEnvironment)
        for p in self.world.lowers:
            if _bad_mount_chars(p):
                raise SandboxError(f"{p}: overlayfs cannot take a path containing ',' or ':'")

    async def _apply_network_policy(self, network_policy: NetworkPolicy) -> None:
        """Only the verifier phase follows the policy; the agent phase never has network."""
        return

    async def start(self, force_build: bool) -> None:
        self.close_trial_dirs()
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
        if self._unenforced and tuple(self._unenforced) not in _WARNED_UNENFORCED:
            # once a process: a training run starts thousands of sandboxes alike
            _WARNED_UNENFORCED.add(tuple(self._unenforced))
            logging.getLogger(__name__).warning(
                "sandbox without %s (allow_missing_limits; said once a process): %s",
                self._unenforced, sup.describe(),
            )  # fmt: skip
        if self.settings.pool:
            spare = await pool.claim(self)
            if spare is not None:
                pool.adopt(self, spare)
                return
        await host.sweep_stale_once(self._sandbox_dir())
        name = f"{os.getpid()}-{secrets.token_hex(4)}"
        self.root = root = self._sandbox_dir() / name
        if _bad_mount_chars(root):
            raise SandboxError(f"sandbox_dir {root}: overlayfs cannot take ',' or ':' in a path")
        root.mkdir(parents=True, mode=0o700)
        # empty/: the lower of a world-less task, the initial overlay of an overlay-less one
        for sub in ("disk", "merged", "run", "tests", "empty"):
            (root / sub).mkdir()
        lowers = self.world.lowers or [root / "empty"]
        self._cg = cgroups.trial_cgroups(name, sup)
        if self._cg is not None:
            await asyncio.to_thread(self._cg.create, self._limits())
        if self.settings.gateway:
            self._listener = listen(root / "run" / "gateway.sock")
        disk = root / "disk"
        opts = f"lowerdir={':'.join(map(str, lowers))},upperdir={disk / 'upper'},workdir={disk / 'work'}"
        if host.rootless():
            opts += ",userxattr"  # overlayfs in a user namespace keeps its marks in user.* xattrs
        init, init_binds = await asyncio.to_thread(init_argv, self._sandbox_dir())
        read_fd, write_fd = os.pipe()
        spec = self._spec(share_net=False, verifier=False)
        spec.binds += init_binds
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
            f"size={self._storage_mb()}m,nr_inodes={self._storage_inodes()},mode=0755",
            str(disk),
            opts,
            str(root / "merged"),
            *bwrap_argv(spec, init, info_fd=write_fd, init=True),
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
        if not line.startswith(READY):
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
        report = LimitsReport(
            limits={
                **vars(self._limits()),
                "storage_mb": self._storage_mb(),
                "storage_inodes": self._storage_inodes(),
            },
            unenforced=self._unenforced,
            dropped=self._dropped.listed,
            dropped_total=self._dropped.total,
        )
        if self._cg is not None:
            events = self._cg.events()
            agent = self._agent_events or events
            report.events = agent.as_dict()
            if self._agent_events is not None:
                report.verifier_events = events.minus(agent).as_dict()
            report.verifier_memory_mb = self._verifier_memory_mb
            await asyncio.to_thread(self._cg.remove)
        if self._disk_events:
            report.events = {**(report.events or {}), "disk_full": self._disk_events}
        if self._egress is not None and (self._egress.connected or self._egress.denied):
            report.egress = self._egress.report()
        with contextlib.suppress(OSError):
            report.write(self.trial_paths.trial_dir)
        if self.root is not None and not self.settings.keep_root:
            await asyncio.to_thread(shutil.rmtree, self.root, True)
        if self._spare_dir is not None:  # it took a pooled spare: its logs and dir
            await asyncio.to_thread(pool.release, self)
        if self.settings.pool:  # a spare takes this trial's place
            pool.refill(self)

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

    @classmethod
    async def drain(cls) -> None:
        """End the pooled spares (`pool`; they end by themselves when the event loop ends)."""
        await pool.drain()

    @classmethod
    def leftovers(cls) -> list[str]:
        """This process's trial cgroups and sandbox roots (under the default sandbox dir) still
        on the host."""
        pid = os.getpid()
        pooled = pool.pooled_names()  # spares the pool holds are no trial's
        left = [f"cgroup {d}" for d in cgroups.leftovers(pid) if d.name not in pooled]
        roots = default_sandbox_dir()
        mine = roots.glob(f"{pid}-*") if roots.is_dir() else []
        left += [
            f"sandbox root {d}"
            for d in mine
            if not d.name.endswith(("-zygote", "-pool")) and d.name not in pooled
        ]
        return left


def _read_all(fd: int) -> bytes:
    chunks = []
    with os.fdopen(fd, "rb") as f:
        while chunk := f.read(65536):
            chunks.append(chunk)
    return b"".join(chunks)
