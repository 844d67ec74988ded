"""`DockerEnvironment`: kwrl's docker preset, harbor's docker environment on kwrl's images.

Use it as `--env docker` (kwrl) or by import path: `harbor run -p TASK -a oracle -e
kwrl.sandbox.docker:DockerEnvironment`. Set-up on a bare Debian host: `scripts/docker/setup.sh`
(docs/docker.md). It follows the environment contract (`kwrl.sandbox.contract.KwrlEnvironment`):

- The world. `start()` builds, where changed, the runtime, world and task images of the task dir
  (`kwrl.sandbox.docker.images`: the world seed and the task overlay at /filesystem and
  /.apps_data, owned by `SANDBOX_UID`) and runs the task image through harbor's own docker
  environment (compose, prebuilt image), with one more compose file of kwrl's: `network_mode: none`
  (unless task.toml sets `[environment] network_mode = "public"` itself), `init: true`,
  `no-new-privileges`, a process limit, and a private host dir bound at /kwrl/run.
- The initial copy. The host's world seed and task overlay (`initial_layers`: an empty dir for a
  task without one) are bound read-only at /kwrl/initial/world and /kwrl/initial/overlay (over
  the images' own copies, which the modal preset uses): not even the grader, root, writes there.
- The gateway. The image's entry point (`kwrl.sandbox.docker.init`) binds the gateway's Unix
  socket in /kwrl/run as root and serves the world on it as `SANDBOX_UID`; the socket is reached
  from the host through that bound dir and relayed to `mcp_url` (`http://127.0.0.1:PORT/mcp/`,
  `kwrl.sandbox.forward.UnixForwarder`), so the container needs no network at all. `start()`
  returns once `GET /health` answers. `gateway_fate()` tells a gateway ended by agent code
  (the socket refuses) from one that serves.
- The agent phase. Commands run as `SANDBOX_UID` (an explicit `user` is kept); one past its
  timeout raises `SandboxTimeoutError` after the agent's processes are killed, one during which
  the container's cgroups counted an OOM kill or a refused fork `SandboxLimitError`.
- The verifier phase (harbor uploads /tests): every process of `SANDBOX_UID` is killed (the
  gateway and whatever agent code left), /logs/verifier emptied, and later commands run as root
  in the same container. Its one way out is the local sandbox's egress proxy
  (`kwrl.sandbox.egress`: the judge, the task's allowlist; none under `no-network`), whose socket
  the host opens in /kwrl/run only now; each command runs under its relay.
- Limits: cpus and memory_mb through harbor's compose resources, `pids_max` as the container's
  pids limit, hits counted from the container's cgroups into `sandbox.json` `events`. storage_mb
  (Docker's overlay2 has no size quota without xfs pquota): /filesystem, /.apps_data and /tmp
  are each a tmpfs of that size, which the entry point fills from the initial copy
  (`KWRL_POPULATE_WORLD`), and a command after which one is full raises `SandboxLimitError`
  (`disk_full` in `events`).
- Nothing the agent writes reaches the host's disk unbounded. /var/tmp and /run/lock (writable by
  every user in the image, on the container's layer otherwise) and the agent's output dirs
  /logs/agent and /logs/artifacts (harbor's host dirs otherwise) are tmpfs of storage_mb too; the
  outputs are copied into harbor's dirs (`kwrl.sandbox.outputs.sync_out`: plain files and dirs,
  links left out, through the container's root at /proc/PID/root) when harbor asks
  (`prepare_logs_for_host`) and when the agent phase ends, and the verifier phase then finds in
  them what harbor's dirs hold (the copies beside what the host wrote: the final answer), as in the
  local sandbox. /logs/verifier, harbor's host dir, is root's (0755) until then. The gateway, whose
  `code_execution` runs agent code, writes its log (/kwrl/run, a host dir) under RLIMIT_FSIZE of
  storage_mb (`FSIZE_ENV`); the container's own log is capped (`LOG_OPTIONS`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
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
from kwrl.sandbox.egress import (
    SANDBOX_SOCKET,
    Allowlist,
    EgressProxy,
    relay_argv,
)
from kwrl.sandbox.forward import UnixForwarder
from kwrl.tasks.taskdir import SANDBOX_UID

TRIAL_LABEL = "kwrl.trial"
STORAGE_MOUNTS: tuple[str, ...] = (*WORLD_ROOTS, "/tmp", "/var/tmp", "/run/lock", *AGENT_OUTPUTS)
"""Where the agent's side writes, each a tmpfs of the trial's storage_mb (docker's default mode
1777 but for the world's roots, which the entry point fills and gives to `SANDBOX_UID`)."""
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
        self._copied: dict[str, set[str]] = {}
        self._dropped: list[str] = []
        self._forwarder: UnixForwarder | None = None
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
        main: dict[str, Any] = {
            "image": image,
            "init": True,
            "security_opt": ["no-new-privileges:true"],
            "pids_limit": self.settings.pids_max,
            "labels": {TRIAL_LABEL: self.project},
            "logging": {"driver": "json-file", "options": LOG_OPTIONS},
            "volumes": [
                *(
                    {"type": "bind", "source": str(src), "target": dst, "read_only": ro}
                    for src, dst, ro in binds
                ),
                # The storage limit: the world's writes and /tmp each on a tmpfs of storage_mb
                # (its pages count against the memory limit, as in the local sandbox); the entry
                # point copies the initial copy into the world's two first.
                *(
                    {"type": "tmpfs", "target": t, "tmpfs": {"size": self._storage_mb() * 2**20}}
                    for t in STORAGE_MOUNTS
                ),
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
        override = self._tmp / "docker-compose-kwrl.json"
        override.write_text(json.dumps(self._kwrl_compose(image), indent=2))
        self.extra_docker_compose_paths = [*self.extra_docker_compose_paths, override]
        DockerEnvironment._projects.add(self.project)
        self._started = True
        await HarborDockerEnvironment.start(self, force_build=False)
        self._container_pid = await self._main_pid()
        # harbor made /logs/verifier (its host dir) writable by every user: root's until the
        # verifier phase, so agent code neither plants a reward nor fills the host's disk there.
        done = await self._root(f"chown 0:0 {VERIFIER_DIR} && chmod 0755 {VERIFIER_DIR}")
        if done.return_code != 0:
            raise SandboxError(f"closing {VERIFIER_DIR} failed: {done.stdout}")
        await self._wait_gateway()
        self._forwarder = UnixForwarder(self.gateway_socket)  # type: ignore[arg-type]
        port = await self._forwarder.start()
        self.mcp_url = f"http://127.0.0.1:{port}/mcp/"

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

    def _gateway_log_tail(self) -> str:
        if self._run_dir is None:
            return ""
        with contextlib.suppress(OSError):
            return (self._run_dir / GATEWAY_LOG).read_text(errors="replace")[-2000:]
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

    def _inside(self, path: str) -> Path:
        """`path` in the container as the host reaches it (its first process's root)."""
        return Path(f"/proc/{self._container_pid}/root{path}")

    def _disk_full(self) -> list[str]:
        """The storage mounts with no block left, read through the container's root."""
        full = []
        for mount in STORAGE_MOUNTS:
            with contextlib.suppress(OSError):
                st = os.statvfs(self._inside(mount))
                if st.f_bavail == 0:
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
        """SIGKILL every process of `SANDBOX_UID` (gateway included) until none is left."""
        for _ in range(20):
            await self._run_docker_compose_command(
                ["exec", "-T", "-u", str(SANDBOX_UID), "main", "sh", "-c", "kill -9 -1; true"],
                check=False,
            )
            left = await self._root(f"ps -o pid= -u {SANDBOX_UID} | wc -l")
            if (left.stdout or "").strip() == "0":
                return
        raise SandboxError(f"processes of uid {SANDBOX_UID} survive SIGKILL in {self.project}")

    async def enter_verifier_phase(self) -> None:
        if self._verifier_phase:
            return
        self._verifier_phase = True
        await self._kill_agent()
        await asyncio.to_thread(self._swap_outputs)
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
            copied = self._copied.setdefault(target, set())
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
            outputs.sync_out(host, inside, target, set(), self._dropped)

    async def prepare_logs_for_host(self) -> None:
        # harbor's stop() asks too, before the container goes.
        if not self._verifier_phase:
            await asyncio.to_thread(self._sync_outputs)
        await super().prepare_logs_for_host()

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        if under(target_dir, TESTS_DIR):
            await self.enter_verifier_phase()
        await super().upload_dir(source_dir, target_dir)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        if under(target_path, TESTS_DIR):
            await self.enter_verifier_phase()
        await super().upload_file(source_path, target_path)

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
            self._write_report()
            if self._tmp is not None:
                with contextlib.suppress(OSError):
                    shutil.copyfile(
                        self._tmp / "run" / GATEWAY_LOG, self.trial_paths.trial_dir / GATEWAY_LOG
                    )
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
            dropped=self._dropped,
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
