"""What this host allows the local sandbox (`kwrl.sandbox.local`), and what earlier runs left on it.

- `rootless()`: kwrl runs as a plain user, so each trial's mounts are made in a user namespace the
  user owns (`userns_flags()` joins it with nsenter);
- `check_host()`: refuses, naming the fix, a host without the tools (bwrap, unshare, nsenter,
  setpriv) or, for a plain user, without unprivileged user namespaces (`userns_refused()`);
- `host_env()`: the minimal environment of the host-side helpers (mount, nsenter);
- `sweep_stale_once(sandbox_dir)`: once per process, removes the sandbox roots and cgroups of
  processes that died without `stop()`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

from kwrl.errors import SandboxError
from kwrl.sandbox import cgroups

_swept = False


def host_env() -> dict[str, str]:
    return {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C.UTF-8",
    }


def rootless() -> bool:
    """A plain user's sandbox: its mounts are made in a user namespace it owns (uid 0 inside)."""
    return os.geteuid() != 0


def userns_flags() -> list[str]:
    """nsenter's flags to join the sandbox's user namespace too (rootless), keeping this uid (which
    is uid 0 in there; setgroups is denied in a namespace that maps one user)."""
    return ["-U", "--preserve-credentials"] if rootless() else []


def check_host() -> None:
    if rootless() and (why := userns_refused()):
        raise SandboxError(
            f"LocalEnvironment as a plain user (uid {os.geteuid()}) makes each trial's mounts in a "
            f"user namespace, and this host refuses unprivileged user namespaces ({why}). Allow "
            "them (sysctls kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0, "
            "kernel.apparmor_restrict_unprivileged_userns=0), run as root, or use the docker preset "
            "(`--sandbox.environment docker`)."
        )
    for tool in ("bwrap", "unshare", "nsenter", "setpriv"):
        if shutil.which(tool) is None:
            raise SandboxError(
                f"{tool} not found on PATH; install it (apt-get install -y bubblewrap util-linux)"
            )


def userns_refused() -> str | None:
    """Why this host refuses a plain user the user and mount namespaces, or None."""
    probe = ["unshare", "--user", "--map-root-user", "--mount", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
    except OSError as e:
        return f"unshare: {e}"
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return None


def sweep_stale(sandbox_dir: Path) -> None:
    """Remove sandbox roots and cgroups left by processes that died without stop()."""
    cgroups.sweep_stale()
    if sandbox_dir.is_dir():
        for d in sandbox_dir.iterdir():
            if d.is_dir() and not cgroups.owner_alive(d.name):
                shutil.rmtree(d, ignore_errors=True)


async def sweep_stale_once(sandbox_dir: Path) -> None:
    """`sweep_stale` on the first call in this process; later calls do nothing."""
    global _swept
    if not _swept:
        _swept = True
        await asyncio.to_thread(sweep_stale, sandbox_dir)
