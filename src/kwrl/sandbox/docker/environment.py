"""`DockerEnvironment`: kwrl's docker preset, harbor's docker environment on kwrl's images.

Use it as `--sandbox.environment docker` (kwrl) or by import path: `harbor run -p TASK -a oracle -e
kwrl.sandbox.docker:DockerEnvironment`. Set-up on a bare Debian host: `scripts/docker/setup.sh`
(docs/docker.md). It follows the environment contract (`kwrl.sandbox.contract.KwrlEnvironment`):

- The world. `start()` builds, where changed, the runtime, world and task images of the task dir
  (`kwrl.sandbox.docker.images`: the world seed and the task overlay at /filesystem and
  /.apps_data, owned by `SANDBOX_UID`) and runs the task image through harbor's own docker
  environment (compose, prebuilt image), with one more compose file of kwrl's: `network_mode: none`
  (unless task.toml sets `[environment] network_mode = "public"` itself), `init: true`, a
  read-only root and /dev (writable only the tmpfs mounts of `STORAGE_MOUNTS`, /dev/shm, and
  /logs/verifier in the verifier phase), every capability dropped but `CAPABILITIES`, `no-new-privileges`, a process
  limit, and a private host dir bound at /kwrl/run.
- The initial copy. The host's world seed and task overlay (`initial_layers`: an empty dir for a
  task without one) are bound read-only at /kwrl/initial/world and /kwrl/initial/overlay (over
  the images' own copies, which the modal preset uses): not even the grader, root, writes there.
- The gateway. The image's entry point (`kwrl.sandbox.docker.init`) binds the gateway's Unix
  socket in /kwrl/run as root and serves the world on it as `SANDBOX_UID`; the socket is reached
  from the host through that bound dir and relayed to `mcp_url` (`http://127.0.0.1:PORT/mcp/`,
  `kwrl.sandbox.gateway.forward.UnixForwarder`), so the container needs no network at all. `start()`
  returns once `GET /health` answers. `gateway_fate()` tells a gateway ended by agent code
  (the socket refuses) from one that serves.
- The agent phase. Commands run as `SANDBOX_UID` (an explicit `user` is kept), with no capability
  and no way to gain one; one past its timeout raises `SandboxTimeoutError` after the agent's
  processes are killed (counted by the host from the container's cgroup: nothing runs as root
  inside meanwhile), one during which the container's cgroups counted an OOM kill or a refused
  fork `SandboxLimitError`. Nothing privileged runs in the container while agent code may: a file
  harbor uploads is put in by the host (/tests, /solution: `HOST_UPLOADS`) or extracted as
  `SANDBOX_UID` (harbor's own fallback extracts as root), and the root it could plant a loader
  configuration or a binary on PATH in is read-only.
- The verifier phase (harbor uploads /tests): every process of `SANDBOX_UID` is killed (the
  gateway and whatever agent code left), /tmp and /logs/verifier emptied, and later commands run
  as root in the same container. Its one way out is the local sandbox's egress proxy
  (`kwrl.sandbox.network.egress`: the judge, the task's allowlist; none under `no-network`), whose socket
  the host opens in /kwrl/run only now; each command runs under its relay.
- Limits: cpus and memory_mb through harbor's compose resources, `pids_max` as the container's
  pids limit, hits counted from the container's cgroups into `sandbox.json` `events`. storage_mb
  (Docker's overlay2 has no size quota without xfs pquota): /filesystem, /.apps_data and /tmp
  are each a tmpfs of that size and of `storage_inodes` files and dirs (the world's own beyond),
  which the entry point fills from the initial copy (`KWRL_POPULATE_WORLD`), and a command after
  which one is full raises `SandboxLimitError` (`disk_full` in `events`).
- Nothing the agent writes reaches the host's disk unbounded. /var/tmp and /run/lock are on the
  read-only root, and the agent's output dirs /logs/agent and /logs/artifacts (harbor's host dirs
  otherwise) are tmpfs of storage_mb and storage_inodes too; the
  outputs are copied into harbor's dirs (`kwrl.sandbox.outputs.sync_out`: plain files and dirs,
  links left out, at most `outputs.OUTPUT_MAX_ENTRIES` and `OUTPUT_MAX_BYTES` each, through
  the container's root at /proc/PID/root) when harbor asks
  (`prepare_logs_for_host`) and when the agent phase ends, and the verifier phase then finds in
  them what harbor's dirs hold (the copies beside what the host wrote: the final answer), as in the
  local sandbox. /logs/verifier, harbor's host dir, is root's (0755) until then. The gateway, whose
  `code_execution` runs agent code, writes no file over storage_mb (RLIMIT_FSIZE, `FSIZE_ENV`), and
  its log goes through a FIFO in /kwrl/run that the host copies into the trial's gateway.log, at
  most `outputs.LOG_CAP` bytes; the container's own log is capped (`LOG_OPTIONS`).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

import httpx
from harbor.environments.base import ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities
from harbor.environments.docker.docker import DockerEnvironment as HarborDockerEnvironment
from harbor.models.task.config import NetworkMode, NetworkPolicy
from pydantic import Field, ValidationError

from kwrl.config import KwrlConfig, format_validation_error
from kwrl.errors import ConfigError, SandboxError, SandboxLimitError, SandboxTimeoutError
from kwrl.sandbox import cgroups, outputs
from kwrl.sandbox.base import storage_inodes
from kwrl.sandbox.cgroups import ResourceEvents
from kwrl.sandbox.contract import (
    AGENT_OUTPUTS,
    TESTS_DIR,
    VERIFIER_DIR,
    WORLD_ROOTS,
    KwrlEnvironment,
    LimitsReport,
    under,
)
from kwrl.sandbox.docker.images import DockerImageConfig, ensure_task_image
from kwrl.sandbox.docker.init import (
    FSIZE_ENV,
    GATEWAY_LOG,
    GATEWAY_SOCKET,
    POPULATE_ENV,
    PYTHON,
)
from kwrl.sandbox.gateway.forward import UnixForwarder
from kwrl.sandbox.network.egress import (
    SANDBOX_SOCKET,
    Allowlist,
    EgressProxy,
    relay_argv,
)
from kwrl.tasks.taskdir import SANDBOX_UID

_REMOUNT_DEV_RO = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
mount = libc.mount
os.setns(os.open(f"/proc/{sys.argv[1]}/ns/mnt", os.O_RDONLY), os.CLONE_NEWNS)
keep = os.statvfs("/dev").f_flag & 0xF  # ST_RDONLY, NOSUID, NODEV, NOEXEC: the MS_ bits
if mount(None, b"/dev", None, keep | 32 | 4096 | 1, None) != 0:  # MS_REMOUNT|MS_BIND|MS_RDONLY
    raise OSError(ctypes.get_errno(), "remount /dev read-only")
"""
TRIAL_LABEL = "kwrl.trial"
STORAGE_MOUNTS: tuple[str, ...] = (*WORLD_ROOTS, "/tmp", *AGENT_OUTPUTS)
"""Where the agent's side writes, each a tmpfs of the trial's storage_mb and storage_inodes (mode
1777 but for the world's roots, which the entry point fills and gives to `SANDBOX_UID`); the
rest of the container's root is read-only."""
CAPABILITIES: tuple[str, ...] = ("CHOWN", "SETUID", "SETGID", "DAC_READ_SEARCH")
"""The container's bounding set (every other capability dropped): the entry point gives the
world to `SANDBOX_UID` and becomes it for the gateway, `docker exec -u` switches user, and the
grader, root in the verifier phase, reads what agent code made unreadable, as the local
sandbox's verifier does. Agent commands, as `SANDBOX_UID` with no_new_privs, hold none."""
HOST_UPLOADS: dict[str, str] = {TESTS_DIR: "tests", "/solution": "solution"}
"""Upload targets the host writes itself, into its dir bound at /kwrl/run (the images link
/tests and /solution there: `images.runtime_spec`): nothing runs inside the container to put
them there, and /tests exists only once the verifier phase made it."""
LOG_OPTIONS: dict[str, str] = {"max-size": "1m", "max-file": "1"}
"""The container's own log (its first process's output, json-file): at most 1 MiB on the host."""


def container_events(pid: int) -> ResourceEvents:
    """Memory and process limit hits of the cgroups the host process `pid` is in (a container's
    first process: docker's cgroup of the container), v1 or v2."""
    try:
        own = cgroups.parse_proc_cgroup(Path(f"/proc/{pid}/cgroup").read_text())
    except OSError:
        return ResourceEvents()
    fs = cgroups.CGROUP_FS

    def keyed(path: Path, key: str) -> int:
        with contextlib.suppress(OSError):
            return cgroups.parse_keyed(path.read_text()).get(key, 0)
        return 0

    if "memory" in own or "pids" in own:  # v1
        return ResourceEvents(
            pids_max=keyed(fs / "pids" / own.get("pids", "/-").lstrip("/") / "pids.events", "max"),
            oom_kill=keyed(
                fs / "memory" / own.get("memory", "/-").lstrip("/") / "memory.oom_control",
                "oom_kill",
            ),
        )
    unified = fs / own.get("", "/-").lstrip("/")
    return ResourceEvents(
        pids_max=keyed(unified / "pids.events", "max"),
        oom_kill=keyed(unified / "memory.events", "oom_kill"),
    )


class DockerSandboxConfig(KwrlConfig):
    """Settings of the docker preset; harbor passes them as environment kwargs (`--ek key=value`)."""

    image: DockerImageConfig = Field(default_factory=DockerImageConfig)
    """What the images hold (base image, packages left out, world image tag)."""
    gateway_timeout_s: float = Field(default=120.0, gt=0)
    """How long start() waits for the gateway's `/health` to answer."""
    pids_max: int = Field(default=512, gt=0)
    """Process limit of the container (threads count)."""
    storage_mb: int = Field(default=10240, gt=0)
    """Size of each of the world's two roots and /tmp (MiB) when task.toml sets none."""
    storage_inodes: int | None = Field(default=None, gt=0)
    """Files and dirs each of those may hold beyond the world's own (nr_inodes); None: 64 per MiB
    of storage_mb, at least 4,096."""


class DockerEnvironment(KwrlEnvironment, HarborDockerEnvironment):
    """A trial in a docker container built from kwrl's images (module docstring)."""

    _projects: ClassVar[set[str]] = set()
    """Compose projects of this process's trials (`leftovers`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        known = set(DockerSandboxConfig.model_fields)
        settings = {k: kwargs.pop(k) for k in list(kwargs) if k in known}
        try:
            self.settings = DockerSandboxConfig.model_validate(settings)
        except ValidationError as e:
            raise ConfigError(format_validation_error("environment kwargs", e)) from e
        # harbor's docker environment enforces a non-public policy with a sidecar image from
        # Docker Hub; kwrl isolates the container itself (`_kwrl_compose`), so harbor sees public.
        policy: NetworkPolicy | None = kwargs.pop("network_policy", None)
        kwargs.pop("phase_network_policies", None)
        self.mcp_url: str | None = None
        self._tmp: Path | None = None
        """The trial's host dir: run/ (bound at /kwrl/run), empty/, the compose override."""
        self._container_pid = 0
        self._events = ResourceEvents()
        self._disk_events = 0
        self._host_outputs: dict[str, Path] = {}
        """harbor's host dir of each of `AGENT_OUTPUTS` (a tmpfs inside instead of harbor's bind)."""
        self._copied: dict[str, outputs.Copied] = {}
        self._dropped = outputs.Dropped()
        self._forwarder: UnixForwarder | None = None
        self._log_pump: asyncio.Task[None] | None = None
        """Copies the gateway's log (a FIFO in /kwrl/run) into the trial dir, capped."""
        self._log_writer: int | None = None
        self._egress: EgressProxy | None = None
        self._verifier_phase = False
        self._started = False
        self._stopped = False
        super().__init__(*args, **kwargs)
        self._network_policy = policy or NetworkPolicy()

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True, mounted=True, docker_compose=True)

    async def _apply_network_policy(self, network_policy: NetworkPolicy) -> None:
        """The container's network is fixed when it starts (`_kwrl_compose`)."""
        return

    @property
    def agent_network(self) -> bool:
        """The container has a network: task.toml sets `[environment] network_mode = "public"`."""
        explicit = "network_mode" in self.task_env_config.model_fields_set
        return explicit and self.task_env_config.network_mode == NetworkMode.PUBLIC

    @property
    def project(self) -> str:
        from harbor.environments.docker.docker import _sanitize_docker_compose_project_name

        return _sanitize_docker_compose_project_name(self.session_id)

    @property
    def _run_dir(self) -> Path | None:
        """/kwrl/run as the host sees it (None before start)."""
        return None if self._tmp is None else self._tmp / "run"

    @property
    def gateway_socket(self) -> Path | None:
        """The gateway's socket as the host sees it (None before start)."""
        return None if self._tmp is None else self._tmp / "run" / Path(GATEWAY_SOCKET).name

    def _kwrl_compose(self, image: str) -> dict[str, Any]:
        """kwrl's compose override of the main service (module docstring)."""
        assert self._tmp is not None
        binds = [(self._tmp / "run", str(Path(GATEWAY_SOCKET).parent), False)]
        binds += [(src, dst, True) for dst, src in self.initial_layers(self._tmp / "empty").items()]
        inodes = storage_inodes(self._storage_mb(), self.settings.storage_inodes)
        world = _entries(self.world.lowers)
        main: dict[str, Any] = {
            "image": image,
            "init": True,
            "read_only": True,
            "cap_drop": ["ALL"],
            "cap_add": list(CAPABILITIES),
            "security_opt": ["no-new-privileges:true"],
            "pids_limit": self.settings.pids_max,
            "labels": {TRIAL_LABEL: self.project},
            "logging": {"driver": "json-file", "options": LOG_OPTIONS},
            "volumes": [
                *(
                    {"type": "bind", "source": str(src), "target": dst, "read_only": ro}
                    for src, dst, ro in binds
                ),
            ],
            # The storage limit: each dir the agent writes a tmpfs of storage_mb and
            # storage_inodes (its pages count against the memory limit, as in the local
            # sandbox); the entry point copies the initial copy into the world's two first.
            "tmpfs": [
                f"{t}:rw,nosuid,nodev,exec,mode=1777,size={self._storage_mb() * 2**20},"
                f"nr_inodes={inodes + (world if t in WORLD_ROOTS else 0)}"
                for t in STORAGE_MOUNTS
            ],
            "environment": {POPULATE_ENV: "1", FSIZE_ENV: str(self._storage_mb() * 2**20)},
        }
        if not self.agent_network:
            main["network_mode"] = "none"
        return {"services": {"main": main}}

    async def start(self, force_build: bool) -> None:
        self.close_trial_dirs()
        image = await ensure_task_image(self.environment_dir.parent, self.settings.image)
        self.task_env_config = self.task_env_config.model_copy(update={"docker_image": image})
        self._env_vars.prebuilt_image_name = image
        # The agent's outputs go on tmpfs mounts (`_kwrl_compose`), not harbor's binds.
        self._host_outputs = {
            m["target"]: Path(m["source"])
            for m in self._mounts
            if m["target"] in AGENT_OUTPUTS and m["type"] == "bind"
        }
        self._mounts = [m for m in self._mounts if m["target"] not in AGENT_OUTPUTS]
        # A short path: a Unix socket's path holds at most 107 bytes.
        self._tmp = Path(tempfile.mkdtemp(prefix="kwrl-docker-"))
        for d in (self._tmp, self._tmp / "run", self._tmp / "empty"):
            d.mkdir(exist_ok=True)
            d.chmod(0o755)
        self._open_gateway_log()
        override = self._tmp / "docker-compose-kwrl.json"
        override.write_text(json.dumps(self._kwrl_compose(image), indent=2))
        self.extra_docker_compose_paths = [*self.extra_docker_compose_paths, override]
        DockerEnvironment._projects.add(self.project)
        self._started = True
        await HarborDockerEnvironment.start(self, force_build=False)
        self._container_pid = await self._main_pid()
        await self._read_only_dev()
        # harbor made /logs/verifier (its host dir) writable by every user: root's until the
        # verifier phase, so agent code neither plants a reward nor fills the host's disk there.
        done = await self._root(f"chown 0:0 {VERIFIER_DIR} && chmod 0755 {VERIFIER_DIR}")
        if done.return_code != 0:
            raise SandboxError(f"closing {VERIFIER_DIR} failed: {done.stdout}")
        await self._wait_gateway()
        self._close_log_writer()  # the gateway holds the pipe now: its end is the log's EOF
        self._forwarder = UnixForwarder(self.gateway_socket)  # type: ignore[arg-type]
        port = await self._forwarder.start()
        self.mcp_url = f"http://127.0.0.1:{port}/mcp/"

    async def _read_only_dev(self) -> None:
        """Remount the container's /dev (runc's tmpfs, root's to write) read-only, its other
        flags kept (/dev/shm, its own mount, stays writable). A host interpreter does it with
        `setns` and `mount` after loading everything it needs: nothing of the container runs."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", "-c", _REMOUNT_DEV_RO, str(self._container_pid),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err = await proc.communicate()
        if proc.returncode != 0:
            raise SandboxError(f"making the container's /dev read-only failed: {err.decode()}")

    async def _wait_gateway(self) -> None:
        transport = httpx.AsyncHTTPTransport(uds=str(self.gateway_socket))
        async with httpx.AsyncClient(transport=transport, timeout=5.0) as client:
            try:
                async with asyncio.timeout(self.settings.gateway_timeout_s):
                    while True:
                        with contextlib.suppress(httpx.TransportError):
                            if (await client.get("http://gateway/health")).status_code == 200:
                                return
                        await asyncio.sleep(0.05)
            except TimeoutError as e:
                raise SandboxError(
                    f"world gateway not ready after {self.settings.gateway_timeout_s} s: "
                    f"{self._gateway_log_tail()}"
                ) from e

    def _open_gateway_log(self) -> None:
        """/kwrl/run/gateway.log is a FIFO (root's, 0600) the entry point gives the gateway as its
        stdout and stderr; the host copies it into the trial's gateway.log, at most
        `outputs.LOG_CAP` bytes (`outputs.pump_log`). The host holds a writer of its own until
        the gateway serves, so the pipe neither reads as ended nor blocks the entry point."""
        assert self._run_dir is not None
        fifo = self._run_dir / GATEWAY_LOG
        os.mkfifo(fifo, 0o600)
        read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        self._log_writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        self._log_pump = asyncio.create_task(
            outputs.pump_log(read_fd, self.trial_paths.trial_dir / GATEWAY_LOG)
        )

    def _close_log_writer(self) -> None:
        if self._log_writer is not None:
            os.close(self._log_writer)
            self._log_writer = None

    async def _end_log_pump(self) -> None:
        """The gateway's log copied to its end (the container is gone), within a few seconds."""
        self._close_log_writer()
        if self._log_pump is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._log_pump), 5)
            self._log_pump.cancel()
            await asyncio.gather(self._log_pump, return_exceptions=True)

    def _gateway_log_tail(self) -> str:
        with contextlib.suppress(OSError):
            log = self.trial_paths.trial_dir / GATEWAY_LOG
            return log.read_text(errors="replace")[-2000:]
        return ""

    def gateway_fate(self) -> str | None:
        """Agent code runs as the gateway's user, so a gateway whose socket refuses connections in
        the agent phase was ended by it (or by the memory limit agent code filled)."""
        path = self.gateway_socket
        if path is None or not self._started or self._stopped or self._verifier_phase:
            return None
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2.0)
            try:
                s.connect(str(path))
            except (ConnectionRefusedError, FileNotFoundError):
                return "the world gateway ended in the agent phase: agent code killed it"
            except OSError:
                return None
        return None

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        if user is None and self.default_user is None and not self._verifier_phase:
            user = SANDBOX_UID
        if (
            self._verifier_phase
            and self._egress is not None
            and self._egress.allow.follow(self.network_policy, self._merge_env(env) or {})
        ):
            command = shlex.join(relay_argv(PYTHON, ["bash", "-c", command]))
        before = self.limit_events()
        try:
            result = await super().exec(
                command, cwd=cwd, env=env, timeout_sec=timeout_sec, user=user
            )
        except RuntimeError as e:
            if "timed out" not in str(e):
                raise
            if not self._verifier_phase:
                await self._kill_agent()
            raise SandboxTimeoutError(f"command ran past its timeout of {timeout_sec} s") from e
        if not self._verifier_phase:
            self._check_limits(before)
        return result

    def limit_events(self) -> ResourceEvents:
        """The container's limit hits so far, from its cgroups (zero before start)."""
        if not self._container_pid:
            return ResourceEvents()
        return container_events(self._container_pid)

    def _storage_mb(self) -> int:
        return self.task_env_config.storage_mb or self.settings.storage_mb

    def _agent_pids(self) -> list[int]:
        """Processes of `SANDBOX_UID` in the container (its pid namespace), read by the host."""
        try:
            ns = os.readlink(f"/proc/{self._container_pid}/ns/pid")
        except OSError as e:
            raise SandboxError(f"{self.project}: its first process is gone ({e})") from e
        pids = []
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, StopIteration):
                if os.readlink(f"/proc/{entry.name}/ns/pid") != ns:
                    continue
                status = Path(f"/proc/{entry.name}/status").read_text()
                uid = next(ln.split()[1] for ln in status.splitlines() if ln.startswith("Uid:"))
                if uid == str(SANDBOX_UID):
                    pids.append(int(entry.name))
        return pids

    def _inside(self, path: str) -> Path:
        """`path` in the container as the host reaches it (its first process's root)."""
        return Path(f"/proc/{self._container_pid}/root{path}")

    def _disk_full(self) -> list[str]:
        """The storage mounts with no block or inode left, read through the container's root."""
        full = []
        for mount in STORAGE_MOUNTS:
            with contextlib.suppress(OSError):
                st = os.statvfs(self._inside(mount))
                if st.f_bavail == 0 or st.f_favail == 0:
                    full.append(mount)
        return full

    def _check_limits(self, before: ResourceEvents) -> None:
        """`SandboxLimitError` when the agent's command hit the memory, process or disk limit."""
        full = self._disk_full() if self._container_pid else []
        if full:
            self._disk_events += 1
            raise SandboxLimitError(
                f"disk limit reached (storage_mb={self._storage_mb()}: {', '.join(full)})"
            )
        hit = self.limit_events().minus(before)
        self._events = ResourceEvents(
            self._events.pids_max + hit.pids_max, self._events.oom_kill + hit.oom_kill
        )
        if hit.oom_kill:
            mb = self.task_env_config.memory_mb
            raise SandboxLimitError(
                f"memory limit exceeded ({mb} MiB); the kernel killed a process"
            )
        if hit.pids_max:
            raise SandboxLimitError(
                f"process limit reached (pids.max={self.settings.pids_max}); a fork failed"
            )

    async def _main_pid(self) -> int:
        """The host pid of the container's first process (its cgroups are the trial's)."""
        r = await self._run_docker_compose_command(["ps", "-q", "main"], check=False)
        cid = (r.stdout or "").strip().splitlines()[-1:] or [""]
        proc = await asyncio.create_subprocess_exec(
            "docker", "inspect", "-f", "{{.State.Pid}}", cid[0],
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        out, _ = await proc.communicate()
        return int(out.strip() or 0) if out.strip().isdigit() else 0

    async def _root(self, script: str) -> ExecResult:
        return await self._run_docker_compose_command(
            ["exec", "-T", "-u", "root", "main", "sh", "-c", script], check=False
        )

    async def _kill_agent(self) -> None:
        """SIGKILL every process of `SANDBOX_UID` (gateway included) until none is left (counted
        by the host: nothing runs as root inside while agent code may)."""
        for _ in range(20):
            await self._run_docker_compose_command(
                ["exec", "-T", "-u", str(SANDBOX_UID), "main", "sh", "-c", "kill -9 -1; true"],
                check=False,
            )
            if not await asyncio.to_thread(self._agent_pids):
                return
        raise SandboxError(f"processes of uid {SANDBOX_UID} survive SIGKILL in {self.project}")

    async def enter_verifier_phase(self) -> None:
        if self._verifier_phase:
            return
        self._verifier_phase = True
        await self._kill_agent()
        await asyncio.to_thread(self._swap_outputs)
        # The grader's /tmp (HOME) holds nothing agent code left there (the local sandbox's
        # verifier commands each get a fresh one): emptied by the host, no link followed.
        await asyncio.to_thread(outputs.empty_dir, self._inside("/tmp"))
        result = await self._root(
            f"find {VERIFIER_DIR} -mindepth 1 -delete; mkdir -p {VERIFIER_DIR}"
        )
        if result.return_code != 0:
            raise SandboxError(f"emptying {VERIFIER_DIR} failed: {result.stdout}")
        if not self.agent_network:
            # Its socket appears in /kwrl/run only now, once no agent process is left to use it.
            assert self._run_dir is not None
            self._egress = EgressProxy(self._run_dir / Path(SANDBOX_SOCKET).name, Allowlist())
            await self._egress.start()

    def _sync_outputs(self) -> None:
        """Copy the agent's outputs (tmpfs inside) into harbor's dirs (module docstring)."""
        if not self._container_pid:
            return
        for target, host in self._host_outputs.items():
            copied = self._copied.setdefault(target, outputs.Copied())
            outputs.sync_out(self._inside(target), host, target, copied, self._dropped)

    def _swap_outputs(self) -> None:
        """When the agent phase ends (its processes gone): its outputs copied out, then the
        container's output dirs hold what harbor's do, the copies and what the host wrote there."""
        self._sync_outputs()
        for target, host in self._host_outputs.items():
            inside = self._inside(target)
            try:
                outputs.empty_dir(inside)
            except OSError as e:
                raise SandboxError(f"emptying {target} for the verifier phase failed: {e}") from e
            # back in: the copies and the host's own files (not the agent's: nothing counted)
            outputs.sync_out(host, inside, target, outputs.Copied(), outputs.Dropped())

    async def prepare_logs_for_host(self) -> None:
        # harbor's stop() asks too, before the container goes.
        if not self._verifier_phase:
            await asyncio.to_thread(self._sync_outputs)
        await super().prepare_logs_for_host()

    def _host_upload(self, target: str) -> Path | None:
        """Where the host writes an upload to `target` itself (`HOST_UPLOADS`), else None."""
        for top, name in HOST_UPLOADS.items():
            if under(target, top) and self._run_dir is not None:
                rel = PurePosixPath(target).relative_to(top)
                if ".." in rel.parts:
                    raise SandboxError(f"upload target {target!r} escapes {top}")
                return self._run_dir / name / rel
        return None

    async def _tar_in(self, data: bytes, target: str) -> None:
        """Extract a tar into `target` in the container as the agent's user (root only in the
        verifier phase, once no agent process is left): harbor's own fallback extracts as root,
        so a link agent code planted in a writable dir would steer a root write."""
        user = "root" if self._verifier_phase else str(SANDBOX_UID)
        q = shlex.quote(target)
        script = f"mkdir -p {q} && tar -x -f - -C {q} --no-same-owner"
        result = await self._run_docker_compose_command(
            ["exec", "-T", "-u", user, "main", "sh", "-c", script], check=False, stdin_data=data
        )
        if result.return_code != 0:
            raise SandboxError(f"upload into {target} failed: {result.stdout}")

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        if under(target_dir, TESTS_DIR):
            await self.enter_verifier_phase()
        dest = self._host_upload(target_dir)
        if dest is not None:
            await asyncio.to_thread(shutil.copytree, source_dir, dest, dirs_exist_ok=True)
            return
        await self._tar_in(await asyncio.to_thread(_tar_of, Path(source_dir), "."), target_dir)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        if under(target_path, TESTS_DIR):
            await self.enter_verifier_phase()
        dest = self._host_upload(target_path)
        if dest is not None:
            dest.parent.mkdir(parents=True, exist_ok=True)
            await asyncio.to_thread(shutil.copyfile, source_path, dest)
            return
        target = PurePosixPath(target_path)
        data = await asyncio.to_thread(_tar_of, Path(source_path), target.name)
        await self._tar_in(data, str(target.parent))

    async def stop(self, delete: bool) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            if self._forwarder is not None:
                await self._forwarder.close()
            if self._egress is not None:
                await self._egress.close()
            await HarborDockerEnvironment.stop(self, delete)
        finally:
            await self._end_log_pump()
            self._write_report()
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)

    def _write_report(self) -> None:
        env = self.task_env_config
        LimitsReport(
            limits={
                "memory_mb": env.memory_mb,
                "pids": self.settings.pids_max,
                "cpus": env.cpus,
                "storage_mb": self._storage_mb(),
            },
            events={**self._events.as_dict(), "disk_full": self._disk_events},
            dropped=self._dropped.listed,
            dropped_total=self._dropped.total,
            egress=self._egress.report()
            if self._egress is not None and (self._egress.connected or self._egress.denied)
            else None,
        ).write(self.trial_paths.trial_dir)

    @classmethod
    def leftovers(cls) -> list[str]:
        """Containers of this process's trials that are still there."""
        out = subprocess.run(
            [
                "docker",
                "ps",
                "-a",
                "--filter",
                f"label={TRIAL_LABEL}",
                "--format",
                '{{.Label "kwrl.trial"}} {{.Names}}',
            ],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        return [line for line in out.splitlines() if line.split(" ")[0] in cls._projects]


def _tar_of(source: Path, name: str) -> bytes:
    """A tar of `source` (a dir: its contents, with `name` "."; a file: as `name`), owned by root."""
    buf = io.BytesIO()

    def root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buf, mode="w") as tf:
        tf.add(str(source), arcname=name, filter=root)
    return buf.getvalue()


def _entries(dirs: list[Path]) -> int:
    """Files and dirs under `dirs` (a world's seed and overlay: what its tmpfs starts with)."""
    return sum(1 + sum(len(d) + len(f) for _, d, f in os.walk(top)) for top in dirs)
