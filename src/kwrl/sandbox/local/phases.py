"""The two phases of a trial and what leaves the sandbox between them.

The verifier phase starts when harbor uploads `/tests` (its verifier always does, right before
`test.sh`): `enter_verifier_phase()` keeps the world's mounts with a holder process, kills the
sandbox's init (the kernel then ends its whole pid namespace: the gateway, its `code_execution`
children, daemons), kills the agent's commands through their cgroup, copies the agent's
`/logs/agent` and `/logs/artifacts` out (private dirs on the trial's tmpfs during the agent phase;
regular files and dirs only, `outputs.copy_out`; what was left out goes to sandbox.json
`dropped`), empties `/logs/verifier`, and starts the egress proxy the verifier's commands reach
the judge through. Files move in and out through `tar`/`cat` run *inside* the sandbox, never
through host paths, so a link planted by agent code cannot redirect a host-side write; `/tests`
goes to the host dir the verifier's bwrap binds read-only, never into the agent's sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shlex
import shutil
import signal
import tarfile
from pathlib import Path

from kwrl.errors import SandboxError
from kwrl.sandbox import outputs
from kwrl.sandbox.contract import AGENT_OUTPUTS, TESTS_DIR, VERIFIER_DIR, under
from kwrl.sandbox.local import host
from kwrl.sandbox.local.commands import REAP_S, Commands
from kwrl.sandbox.network.egress import Allowlist, EgressProxy


class Phases(Commands):
    """The verifier phase's start, the agent's outputs, and files in and out (module docstring)."""

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        if under(target_path, TESTS_DIR):
            await self.enter_verifier_phase()
            dest = self._tests_host_path(target_path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source_path, dest)
            return
        data = Path(source_path).read_bytes()
        q = shlex.quote(target_path)
        await self._checked(f"mkdir -p $(dirname {q}) && cat > {q}", stdin=data)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        if under(target_dir, TESTS_DIR):
            await self.enter_verifier_phase()
            shutil.copytree(source_dir, self._tests_host_path(target_dir), dirs_exist_ok=True)
            return
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            tf.add(str(source_dir), arcname=".")
        q = shlex.quote(target_dir)
        await self._checked(
            f"mkdir -p {q} && tar -x -f - -C {q} --no-same-owner", stdin=buf.getvalue()
        )

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        data = await self._checked(f"cat {shlex.quote(source_path)}")
        target = Path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        data = await self._checked(f"tar -c -f - -C {shlex.quote(source_dir)} .")
        target = Path(target_dir)
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tf:
            tf.extractall(target, filter="data")

    async def enter_verifier_phase(self) -> None:
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
                    async with asyncio.timeout(REAP_S * 2):
                        await proc.wait()
                except TimeoutError as e:
                    raise SandboxError(f"{self.session_id}: the agent phase did not end") from e
        if self._cg is not None:
            await asyncio.to_thread(self._cg.kill, "exec")
            self._agent_events = self._cg.events()
            if (mb := self._limits().memory_mb) is not None:
                self._verifier_memory_mb = await asyncio.to_thread(self._cg.reserve_memory, mb)
        await asyncio.to_thread(self._sync_outputs)
        out = self._mount_source(VERIFIER_DIR)
        if out is not None:
            await asyncio.to_thread(outputs.empty_dir, out)
        assert self.root is not None
        self._egress = EgressProxy(self.root / "run" / "egress.sock", Allowlist())
        await self._egress.start()

    async def prepare_logs_for_host(self) -> None:
        """harbor calls this before reading agent logs on the host: copy the agent's outputs out
        (none when start() failed before making the sandbox: its error is the trial's)."""
        if not self._verifier_phase and self.root is not None:
            await asyncio.to_thread(self._sync_outputs)

    def _sync_outputs(self) -> None:
        """Copy the agent phase's /logs/agent and /logs/artifacts into harbor's dirs: regular files
        and dirs only, links never followed, files harbor or kwrl wrote there left as they are."""
        for target in AGENT_OUTPUTS:
            host = self._mount_source(target)
            private = self._in_mounts(str(self._private(target).relative_to(self.root or "/")))
            if host is None or private is None:
                continue
            copied = self._copied.setdefault(target, outputs.Copied())
            outputs.sync_out(Path(private), host, target, copied, self._dropped)

    def _tests_host_path(self, target: str) -> Path:
        assert self.root is not None
        rel = Path(target).relative_to(TESTS_DIR)
        if ".." in rel.parts:
            raise SandboxError(f"upload target {target!r} escapes /tests")
        return self.root / "tests" / rel
