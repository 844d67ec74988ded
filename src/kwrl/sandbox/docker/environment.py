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
- The initial copy. The images hold the seed at /kwrl/initial/world and the overlay at
  /kwrl/initial/overlay (an empty dir without one), root's: the agent's side, which runs as
  `SANDBOX_UID`, reads them and cannot change them; the grader reads them in the verifier phase.
- The gateway. The image's entry point (`kwrl.sandbox.docker.init`) binds the gateway's Unix
  socket in /kwrl/run as root and serves the world on it as `SANDBOX_UID`; the socket is reached
  from the host through that bound dir and relayed to `mcp_url` (`http://127.0.0.1:PORT/mcp/`,
  `kwrl.sandbox.forward.UnixForwarder`), so the container needs no network at all. `start()`
  returns once `GET /health` answers. `gateway_fate()` tells a gateway ended by agent code
  (the socket refuses) from one that serves.
- The agent phase. Commands run as `SANDBOX_UID` (an explicit `user` is kept); one past its
  timeout raises `SandboxTimeoutError` after the agent's processes are killed.
- The verifier phase (harbor uploads /tests): every process of `SANDBOX_UID` is killed (the
  gateway and whatever agent code left), /logs/verifier emptied, and later commands run as root.
  The grader runs in the same container, so, as in the agent phase, it has no network there:
  judge-graded criteria need `verifier_network` (docs/docker.md).
- Limits: cpus and memory_mb through harbor's compose resources, `pids_max` as the container's
  pids limit; storage_mb is not enforced (Docker's overlay2 has no size quota without xfs
  pquota) and `sandbox.json` lists it under `unenforced`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
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
from kwrl.errors import ConfigError, SandboxError, SandboxTimeoutError
from kwrl.sandbox.contract import (
    TESTS_DIR,
    VERIFIER_DIR,
    KwrlEnvironment,
    LimitsReport,
    under,
)
from kwrl.sandbox.docker.images import DockerImageConfig, ensure_task_image
from kwrl.sandbox.docker.init import GATEWAY_LOG, GATEWAY_SOCKET
from kwrl.sandbox.forward import UnixForwarder
from kwrl.tasks.taskdir import SANDBOX_UID

TRIAL_LABEL = "kwrl.trial"


class DockerSandboxConfig(KwrlConfig):
    """Settings of the docker preset; harbor passes them as environment kwargs (`--ek key=value`)."""

    image: DockerImageConfig = Field(default_factory=DockerImageConfig)
    """What the images hold (base image, packages left out, world image tag)."""
    gateway_timeout_s: float = Field(default=120.0, gt=0)
    """How long start() waits for the gateway's `/health` to answer."""
    pids_max: int = Field(default=512, gt=0)
    """Process limit of the container (threads count)."""
    verifier_network: bool = False
    """Run the task's container on the host's network (agent phase included): what a judge on
    the host's loopback needs. Off, the container has no network unless the task asks for it."""


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
        self._task_policy: NetworkPolicy | None = kwargs.pop("network_policy", None)
        kwargs.pop("phase_network_policies", None)
        self.mcp_url: str | None = None
        self._run_dir: Path | None = None
        self._compose_dir: tempfile.TemporaryDirectory[str] | None = None
        self._forwarder: UnixForwarder | None = None
        self._verifier_phase = False
        self._started = False
        self._stopped = False
        super().__init__(*args, **kwargs)

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True, mounted=True, docker_compose=True)

    async def _apply_network_policy(self, network_policy: NetworkPolicy) -> None:
        """The container's network is fixed when it starts (`_kwrl_compose`)."""
        return

    @property
    def agent_network(self) -> bool:
        """The task's container has network: task.toml asks for it, or `verifier_network`."""
        explicit = "network_mode" in self.task_env_config.model_fields_set
        public = explicit and self.task_env_config.network_mode == NetworkMode.PUBLIC
        return public or self.settings.verifier_network

    @property
    def project(self) -> str:
        from harbor.environments.docker.docker import _sanitize_docker_compose_project_name

        return _sanitize_docker_compose_project_name(self.session_id)

    @property
    def gateway_socket(self) -> Path | None:
        """The gateway's socket as the host sees it (None before start)."""
        return None if self._run_dir is None else self._run_dir / Path(GATEWAY_SOCKET).name

    def _kwrl_compose(self, image: str) -> dict[str, Any]:
        """kwrl's compose override of the main service (module docstring)."""
        assert self._run_dir is not None
        main: dict[str, Any] = {
            "image": image,
            "init": True,
            "security_opt": ["no-new-privileges:true"],
            "pids_limit": self.settings.pids_max,
            "labels": {TRIAL_LABEL: self.project},
            "volumes": [
                {
                    "type": "bind",
                    "source": str(self._run_dir),
                    "target": str(Path(GATEWAY_SOCKET).parent),
                }
            ],
        }
        if self.settings.verifier_network:
            main["network_mode"] = "host"
        elif not self.agent_network:
            main["network_mode"] = "none"
        return {"services": {"main": main}}

    async def start(self, force_build: bool) -> None:
        image = await ensure_task_image(self.environment_dir.parent, self.settings.image)
        self.task_env_config = self.task_env_config.model_copy(update={"docker_image": image})
        self._env_vars.prebuilt_image_name = image
        # A short path: a Unix socket's path holds at most 107 bytes.
        self._run_dir = Path(tempfile.mkdtemp(prefix="kwrl-docker-"))
        self._run_dir.chmod(0o755)
        self._compose_dir = tempfile.TemporaryDirectory(prefix="kwrl-compose-")
        override = Path(self._compose_dir.name) / "docker-compose-kwrl.json"
        override.write_text(json.dumps(self._kwrl_compose(image), indent=2))
        self.extra_docker_compose_paths = [*self.extra_docker_compose_paths, override]
        DockerEnvironment._projects.add(self.project)
        self._started = True
        await HarborDockerEnvironment.start(self, force_build=False)
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
        try:
            return await super().exec(command, cwd=cwd, env=env, timeout_sec=timeout_sec, user=user)
        except RuntimeError as e:
            if "timed out" not in str(e):
                raise
            if not self._verifier_phase:
                await self._kill_agent()
            raise SandboxTimeoutError(f"command ran past its timeout of {timeout_sec} s") from e

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
        result = await self._root(
            f"find {VERIFIER_DIR} -mindepth 1 -delete; mkdir -p {VERIFIER_DIR}"
        )
        if result.return_code != 0:
            raise SandboxError(f"emptying {VERIFIER_DIR} failed: {result.stdout}")

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
            await HarborDockerEnvironment.stop(self, delete)
        finally:
            self._write_report()
            if self._run_dir is not None:
                with contextlib.suppress(OSError):
                    shutil.copyfile(
                        self._run_dir / GATEWAY_LOG, self.trial_paths.trial_dir / GATEWAY_LOG
                    )
                shutil.rmtree(self._run_dir, ignore_errors=True)
            if self._compose_dir is not None:
                self._compose_dir.cleanup()

    def _write_report(self) -> None:
        env = self.task_env_config
        LimitsReport(
            limits={
                "memory_mb": env.memory_mb,
                "pids": self.settings.pids_max,
                "cpus": env.cpus,
                "storage_mb": env.storage_mb,
            },
            unenforced=["storage_mb"] if env.storage_mb else [],
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
