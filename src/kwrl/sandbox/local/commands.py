"""Processes under limits: how a command runs in the sandbox, and what ends it.

`Commands` builds each command's argv and runs it:
- agent phase: `nsenter` into the sandbox's namespaces (its processes, its loopback-only net),
  `setpriv` dropping every capability, env exactly `base_env`, in the trial's `exec` cgroup, no
  file over `storage_mb` (RLIMIT_FSIZE);
- verifier phase: a fresh bwrap over the same world (entered through the holder's mount
  namespace) with `/tests` and the initial copy (`KwrlEnvironment.initial_layers`), its own
  network namespace whose one way out is the egress proxy (`kwrl.sandbox.network.egress`), the env
  harbor passes (the judge) under the sandbox's own.

`_run` runs one command in its own process group and kills the group on timeout or
cancellation. In the agent phase a watcher polls the trial's cgroup events and its disk every
`_WATCH_S`: a process, memory or disk limit hit kills the trial's commands and raises
`SandboxLimitError` instead of letting them hang until the agent timeout. In the verifier phase a
hit kills and raises nothing (sandbox.json's `verifier_events` tell the rollout).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shlex
import signal
import time
from pathlib import Path
from typing import Any

from kwrl.errors import SandboxError, SandboxLimitError, SandboxTimeoutError
from kwrl.sandbox import cgroups, outputs
from kwrl.sandbox.base import (
    SANDBOX_GATEWAY_SOCKET,
    SandboxSpec,
    base_env,
    bwrap_argv,
    sandbox_python,
)
from kwrl.sandbox.contract import AGENT_OUTPUTS, SOLUTION_DIR, TESTS_DIR, VERIFIER_DIR, under
from kwrl.sandbox.local import host
from kwrl.sandbox.local.state import DROP_CAPS, LocalState
from kwrl.sandbox.network.egress import relay_argv

_WATCH_S = 0.05
REAP_S = 5.0
_DISK_SLACK = 64 * 1024  # a world tmpfs with less free is full
_INODE_SLACK = 8  # or with fewer free inodes


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


class Commands(LocalState):
    """Commands in the sandbox, run under the trial's limits (module docstring)."""

    def _spec(self, *, share_net: bool, verifier: bool) -> SandboxSpec:
        assert self.root is not None
        binds: list[tuple[str, str, bool]] = []
        for m in self._mounts:
            if m.get("type") == "bind":
                Path(m["source"]).mkdir(parents=True, exist_ok=True)
                # The agent phase may read but never write the verifier's outputs (a planted reward).
                ro = bool(m.get("read_only")) or (not verifier and under(m["target"], VERIFIER_DIR))
                # Agent code writes its outputs into a private dir, copied out as plain files: it
                # never touches the host dir that harbor and kwrl write and read (no planted links).
                private = not verifier and m["target"] in AGENT_OUTPUTS
                src = str(self._private(m["target"])) if private else m["source"]
                binds.append((src, m["target"], ro))
        if not verifier:  # harbor's oracle uploads here; the root is read-only
            binds.append((str(self._private(SOLUTION_DIR)), SOLUTION_DIR, False))
        env = base_env(SANDBOX_GATEWAY_SOCKET if self.settings.gateway else None)
        if verifier:
            # Never import from the cwd or a script's dir (agent-writable /filesystem), whatever
            # an older tests/test.sh does.
            env["PYTHONSAFEPATH"] = "1"
            binds.append((str(self.root / "tests"), TESTS_DIR, True))
            for target, layer in self.initial_layers(self.root / "empty").items():
                binds.append((str(layer), target, True))
        return SandboxSpec(
            root=self.root,
            share_net=share_net,
            binds=binds,
            env=env,
            extra_ro=self.settings.extra_ro_binds,
        )

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
        shell = ["bash", "-c", f"cd {shlex.quote(workdir)} || exit 1\n{command}"]
        if not self._verifier_phase:
            # No single file may outgrow the trial's storage (/logs/agent is a host dir). Every
            # privilege is gone before the first program of the sandbox's root is loaded (`enter`).
            fsize = f"--fsize={self._storage_mb() * 2**20}"
            return [
                *self._join("exec"),
                "prlimit", fsize, *self._nproc()[1:-1], "--",
                *self._enter(user), *shell,
            ]  # fmt: skip
        ids = [] if user is None else [f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups"]
        assert self._holder is not None
        # Never the host's network: the phase's own loopback, and the egress proxy (the judge).
        spec = self._spec(share_net=False, verifier=True)
        spec.keep_setid = bool(ids)
        spec.read_all = True  # the grader reads what agent code made unreadable (chmod 000)
        spec.nest = True  # the grader's LibreOffice runs in a sandbox of its own (grading.recalc)
        # What harbor passes (task verifier.env, the trial's verifier env: the judge and its key)
        # reaches the grader; the sandbox's own variables win.
        spec.env = {**(self._merge_env(env) or {}), **spec.env}
        inner = [*DROP_CAPS, *ids, "--", *shell] if ids else shell
        if self._egress is not None and self._egress.allow.follow(self._network_policy, spec.env):
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

    def _disk_breach(self) -> str:
        """Non-empty when the trial's writes (world, /logs/agent, /logs/artifacts: one tmpfs of
        `storage_mb` and `storage_inodes`, which refuses writes past them) filled its storage."""
        disk = self._in_mounts("disk")
        try:
            st = os.statvfs(disk) if disk is not None else None
        except OSError:
            return ""  # the sandbox is ending
        if st is None:
            return ""
        if st.f_bavail * st.f_frsize >= _DISK_SLACK and st.f_favail >= _INODE_SLACK:
            return ""
        self._disk_events += 1
        limit = (
            f"storage_mb={self._storage_mb()}"
            if st.f_bavail * st.f_frsize < _DISK_SLACK
            else f"storage_inodes={self._storage_inodes()}"
        )
        return (
            f"disk limit reached ({limit}: the world's writes, "
            "/logs/agent and /logs/artifacts); the trial's commands were killed"
        )

    async def _reap(
        self, proc: asyncio.subprocess.Process, talk: asyncio.Future[Any] | None
    ) -> None:
        """Kill a command's process group and wait for it, within bounds.

        A process that left the group (setsid) may still hold the command's pipes; if the group
        does not finish within `REAP_S`, every agent command of the trial is killed (its cgroup).
        Returning means the group is gone, not just signalled: the command's processes inside the
        sandbox's pid namespace exit after `nsenter` and are reaped by the namespace's init, which
        under load can take a moment after the direct child has been waited for.
        """
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        pending = [asyncio.ensure_future(proc.wait()), *([talk] if talk is not None else [])]
        for last in (False, True):
            _, still = await asyncio.wait(pending, timeout=REAP_S)
            if not still and await _group_gone(proc.pid, REAP_S):
                return
            if not still and self._cg is None:
                return
            if last:
                for t in still:
                    t.cancel()
                return
            if self._cg is not None:
                await asyncio.to_thread(self._cg.kill, "exec")


def _breach(
    before: cgroups.ResourceEvents, now: cgroups.ResourceEvents, limits: cgroups.Limits
) -> str:
    if now.pids_max > before.pids_max:
        return f"process limit reached (pids.max={limits.pids}); the trial's commands were killed"
    if now.oom_kill > before.oom_kill:
        return f"memory limit exceeded ({limits.memory_mb} MiB); the kernel killed a process"
    return ""
