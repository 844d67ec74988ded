"""Starting the world gateway inside a running sandbox.

`start_gateway(launch, listen_fd)` runs the world gateway in the sandbox's namespaces (its
loopback-only network, its pid namespace, the trial's `sandbox` cgroup, no capabilities, a minimal
environment) serving the listening socket `listen_fd`, which the host made at
`<root>/run/gateway.sock` (`/kwrl/run/gateway.sock` inside, read-only there), and returns once the
gateway prints `kwrl-gateway ready` (docs/contracts.md), i.e. once its tools are listable. stdout is
drained afterwards; stderr is a pipe the host copies into `<trial>/gateway.log`, at most
`kwrl.sandbox.outputs.LOG_CAP` bytes of it (`pump_log`), so nothing inside grows a host file. `launch` (`kwrl.sandbox.base.GatewayLaunch`)
holds what the sandbox tells its gateway: its init's pid, its cgroups, the argv that enters it, the
log; the starter never sees the environment object.

Two modes (`LocalSandboxConfig.gateway_mode`):
- `exec`: a cold `python -m kwrl.sandbox.gateway.launch FD` (imports everything: ~1-3 s on a busy 2-core
  box); it serves the socket it inherits as FD, non-dumpable.
- `fork`: a per-process warm "zygote" (`kwrl.sandbox.gateway.zygote`) has imported the gateway once; it
  forks a child that joins the trial's cgroups, enters the sandbox's namespaces with `setns`, drops
  every capability and serves. Ready in tens of milliseconds, and the child shares the zygote's
  pages copy-on-write, so an idle trial costs little memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import socket
import sys
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path

from kwrl.errors import SandboxError
from kwrl.sandbox.base import GATEWAY_READY, GatewayLaunch, base_env, sandbox_python
from kwrl.sandbox.outputs import pump_log


@dataclass(frozen=True)
class ProcRef:
    """One process on this host: its pid and start time (so a reused pid is not mistaken for it)."""

    pid: int
    start: str
    """Field 22 of /proc/PID/stat (clock ticks since boot)."""


PF_EXITING = 0x4
"""`task_struct.flags` bit (include/linux/sched.h, field 9 of /proc/PID/stat): the task is in the
kernel's exit."""


def _stat(pid: int) -> tuple[str, str, int] | None:
    """(state letter, start time, flags) of `pid`, or None when there is no such process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], fields[19], int(fields[6])


def proc_ref(pid: int) -> ProcRef | None:
    st = _stat(pid)
    return None if st is None else ProcRef(pid, st[1])


def proc_state(ref: ProcRef) -> str | None:
    """`ref`'s state letter (R, S, D, T, Z, ...), or None once it is gone (reaped, or its pid reused).

    A process on its way out (`PF_EXITING`) is "X" (dead), whatever letter /proc gives it: a killed
    process closes its files before it turns zombie, and /proc says R, S or D in between (for as
    long as the scheduler leaves it waiting on a busy machine), so its peers see their connections
    end while it still looks alive."""
    st = _stat(ref.pid)
    if st is None or st[1] != ref.start:
        return None
    return "X" if st[2] & PF_EXITING else st[0]


def _nspid_depth(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return len(line.split()) - 1
    except OSError:
        pass
    return 0


def _inner_process(launcher: int, levels: int = 6) -> ProcRef | None:
    """The first descendant of `launcher` in a deeper pid namespace: what nsenter -p forked into
    the sandbox (the gateway, once setpriv has exec'd it)."""
    depth = _nspid_depth(launcher)
    frontier = [launcher]
    for _ in range(levels):
        children: list[int] = []
        for pid in frontier:
            for task in Path(f"/proc/{pid}/task").glob("*/children"):
                with contextlib.suppress(OSError):
                    children += [int(c) for c in task.read_text().split()]
        for c in children:
            if _nspid_depth(c) > depth:
                return proc_ref(c)
        frontier = children
    return None


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.read(65536):
        pass


async def start_gateway(
    launch: GatewayLaunch, listen_fd: int
) -> tuple[asyncio.subprocess.Process | None, asyncio.Task[None] | None, ProcRef | None]:
    """Start the gateway serving `listen_fd` in `launch`'s sandbox; returns (launcher process,
    one task draining its stdout and pumping its stderr into the log, the gateway process
    itself) once it is ready. Fork mode has no launcher."""
    log_r, log_w = os.pipe()
    log = asyncio.create_task(pump_log(log_r, launch.log))
    try:
        if launch.mode == "fork":
            from kwrl.sandbox.gateway.zygote import fork_gateway

            pid, drain = await fork_gateway(launch, listen_fd, log_w)
            os.close(log_w)
            return None, asyncio.create_task(_both(drain, log)), proc_ref(pid)
        proc = await _exec_gateway(launch, listen_fd, log_w)
        os.close(log_w)
        assert proc.stdout is not None
        return proc, asyncio.create_task(_both(_drain(proc.stdout), log)), _inner_process(proc.pid)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.close(log_w)
        if not isinstance(e, SandboxError):
            log.cancel()
            raise
        with contextlib.suppress(TimeoutError):  # the gateway has exited: its log ends soon
            await asyncio.wait_for(asyncio.shield(log), 5)
        log.cancel()
        tail = launch.log.read_text(errors="replace")[-2000:]
        raise SandboxError(f"{e}: {tail}") from e


async def _exec_gateway(
    launch: GatewayLaunch, listen_fd: int, log_fd: int
) -> asyncio.subprocess.Process:
    """exec mode: a cold gateway entering the sandbox through `launch.enter_argv`; returns once
    it is ready."""
    argv = [
        *launch.enter_argv,
        sandbox_python(),
        "-I",
        "-m",
        "kwrl.sandbox.gateway.launch",
        str(listen_fd),
    ]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=log_fd,
        start_new_session=True,
        env=base_env(None),
        pass_fds=(listen_fd,),
    )
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(launch.timeout_s):
            while True:
                line = await proc.stdout.readline()
                if not line:
                    rc = await proc.wait()
                    raise SandboxError(f"world gateway exited ({rc}) before it was ready")
                if line.startswith(GATEWAY_READY):
                    return proc
    except TimeoutError as e:
        raise SandboxError(f"world gateway not ready after {launch.timeout_s} s") from e


async def _both(*waits: Awaitable[None]) -> None:
    """One task over a gateway's stdout drain and its log pump (cancelling it ends both)."""
    await asyncio.gather(*waits)


def serve_fd(fd: int) -> None:
    """The `exec` mode's gateway: serve the world under / on the listening socket `fd`."""
    from kwrl.sandbox.gateway.zygote import serve_app
    from kwrl.tasks.layout import WorldRoots
    from kwrl.worlds.gateway import build_app

    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: /proc/<pid>/mem stays closed
    serve_app(build_app(WorldRoots.sandbox_default()), socket.socket(fileno=fd))


if __name__ == "__main__":
    serve_fd(int(sys.argv[1]))
