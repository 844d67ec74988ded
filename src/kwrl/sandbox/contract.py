"""The kwrl environment contract: what a harbor environment owes a kwrl trial, as code.

harbor's `BaseEnvironment` runs commands and moves files; a kwrl trial needs more, and
`KwrlEnvironment` (a `BaseEnvironment`) states it. An environment that subclasses it and passes
the conformance suite (`kwrl sandbox conform --sandbox.environment module:Class`, `kwrl.sandbox.conformance.suite`)
runs kwrl's tasks as `kwrl.sandbox.local:LocalEnvironment` does; docs/contracts.md says the same
in prose, docs/extending.md how to add one.

1. The world. `world` (`World`: the task's world seed and overlay, `resolve_world`) is resolved
   when harbor builds the environment (`_validate_definition`, which also refuses task.toml limits
   no sandbox can apply, naming task.toml and the field). After `start()` the agent phase sees the
   overlay over the seed at `/filesystem` and `/.apps_data` (`WORLD_ROOTS`), writable, and the seed
   itself never changes.
2. The initial copy. In the verifier phase the world as it was before the agent is mounted
   read-only at `INITIAL_WORLD` and `INITIAL_OVERLAY` (`initial_layers`: an empty dir stands for a
   task without overlay), so the grader (`kwrl.grading.verify --initial ...`) diffs against it; a
   missing layer is an error there, never an empty initial state.
3. The gateway. `mcp_url` is the world gateway's MCP endpoint reachable from the host where the
   agent runs (`http://127.0.0.1:PORT/mcp/`), set by `start()`, None when the environment runs no
   gateway. `gateway_fate()` says why the gateway stopped serving when the agent's own commands
   ended it (the agent then stops as `tools_lost` and the trial is graded), None while it serves
   or when the environment cannot tell (a dead session is then `tool_error`, infrastructure).
4. The verifier phase. It starts when harbor uploads `/tests` (its verifier always does, before
   `test.sh`); `enter_verifier_phase()` then ends every process of the agent phase (the gateway and
   whatever agent code left running), copies the agent's outputs out, and empties
   `VERIFIER_DIR`, so the only reward harbor reads is the grader's. `/tests` never exists in the
   agent phase.
5. Limits. task.toml `[environment]` `memory_mb`, `cpus`, `storage_mb` (and the environment's
   process limit) are enforced, or `start()` refuses by name (`SandboxError` naming each missing
   limit). An agent-phase command that hits one raises `SandboxLimitError`, one past its timeout
   `SandboxTimeoutError` (`kwrl.errors`). `stop()` writes `<trial_dir>/sandbox.json`
   (`LimitsReport`), which the rollout reads to tell the agent's failures from the host's.
6. Nothing left behind. `stop()` ends every process, mount and temporary dir of the trial, and
   `leftovers()` lists what this process's trials still hold (empty once every trial stopped).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harbor.environments.base import BaseEnvironment

from kwrl.errors import ConfigError
from kwrl.io import umask, write_json
from kwrl.sandbox.base import World, resolve_world
from kwrl.tasks.taskdir import limit_problems

WORLD_ROOTS: tuple[str, ...] = ("/filesystem", "/.apps_data")
"""Where the world is inside, in both phases."""
INITIAL_WORLD = "/kwrl/initial/world"
"""The world seed, read-only, in the verifier phase (absent for a task without a world)."""
INITIAL_OVERLAY = "/kwrl/initial/overlay"
"""The task overlay, read-only, in the verifier phase (an empty dir for a task without one)."""
TESTS_DIR = "/tests"
"""Uploaded by harbor's verifier: the start of the verifier phase."""
VERIFIER_DIR = "/logs/verifier"
"""The grader's output dir: read-only in the agent phase, emptied when the verifier phase starts."""
AGENT_OUTPUTS: tuple[str, ...] = ("/logs/agent", "/logs/artifacts")
"""The agent's output dirs, copied into harbor's trial dir as plain files."""
SOLUTION_DIR = "/solution"
"""Where harbor's oracle agent uploads the task's solution in the agent phase: a writable dir on
the trial's storage (the sandbox's root is read-only)."""
REPORT_NAME = "sandbox.json"
"""The limits report `stop()` writes into the trial dir."""


def under(path: str, top: str) -> bool:
    """`path` is `top` or inside it (posix paths inside the environment)."""
    return path == top or path.startswith(top.rstrip("/") + "/")


def check_limits(env: Any, task_toml: Path) -> None:
    """Refuse [environment] limits no sandbox can apply, naming task.toml and the field."""
    problems = limit_problems(env)
    if problems:
        name, message = problems[0]
        raise ConfigError(f"{task_toml}: {name} = {message}")


@dataclass
class LimitsReport:
    """`<trial_dir>/sandbox.json` (docs/contracts.md, "Sandbox and rollout"): the trial's limits,
    how often the agent phase hit them (`events`), and the verifier phase apart."""

    limits: dict[str, Any]
    """memory_mb, pids, cpus, storage_mb as applied."""
    events: dict[str, int] | None = None
    """Agent-phase hits: pids_max, oom_kill, disk_full (None where the environment cannot count)."""
    verifier_events: dict[str, int] | None = None
    verifier_memory_mb: int | None = None
    """The trial's memory limit in the verifier phase, when it differs from the agent phase's."""
    unenforced: list[str] = field(default_factory=list)
    """Limits the environment ran without (only where its settings allowed it)."""
    dropped: list[str] = field(default_factory=list)
    """Agent outputs left out of the copy (links, fifos, sockets, past the caps): the first 100."""
    dropped_total: int = 0
    """How many agent outputs were left out in all (a dir left out counts once)."""
    egress: dict[str, Any] | None = None
    """What the verifier phase reached or was denied on its way out (`kwrl.sandbox.network.egress`)."""

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"limits": self.limits}
        if self.events is not None:
            out["events"] = self.events
        if self.verifier_events is not None:
            out["verifier_events"] = self.verifier_events
        if self.verifier_memory_mb is not None:
            out["verifier_memory_mb"] = self.verifier_memory_mb
        if self.unenforced:
            out["unenforced"] = self.unenforced
        if self.dropped:
            out["dropped"] = self.dropped[:100]
            out["dropped_total"] = max(self.dropped_total, len(self.dropped))
        if self.egress is not None:
            out["egress"] = self.egress
        return out

    def write(self, trial_dir: Path) -> None:
        write_json(Path(trial_dir) / REPORT_NAME, self.as_json())


class KwrlEnvironment(BaseEnvironment):
    """A harbor environment that runs kwrl trials (module docstring: the contract, point by point).

    Example::

        class MyEnvironment(KwrlEnvironment):
            @staticmethod
            def type() -> str:
                return "my-env"

            async def start(self, force_build: bool) -> None:
                ...  # the world at WORLD_ROOTS, the gateway up, then self.mcp_url = "http://..."

            async def enter_verifier_phase(self) -> None:
                ...  # kill the agent phase, copy its outputs, empty VERIFIER_DIR

            async def upload_dir(self, source_dir, target_dir) -> None:
                if under(target_dir, TESTS_DIR):
                    await self.enter_verifier_phase()
                ...

            async def stop(self, delete: bool) -> None:
                ...  # every process and mount gone, then
                LimitsReport(limits={...}).write(self.trial_paths.trial_dir)
    """

    world: World = World(None, None)
    """The task's world seed and overlay (set when harbor builds the environment)."""
    mcp_url: str | None = None
    """The gateway's MCP endpoint on the host (after start; None without a gateway)."""

    def _validate_definition(self) -> None:
        check_limits(self.task_env_config, self.environment_dir.parent / "task.toml")
        self.world = resolve_world(self.environment_dir.parent)

    def initial_layers(self, empty: Path) -> dict[str, Path]:
        """Host dir -> mount point of the initial copy in the verifier phase: the world seed at
        `INITIAL_WORLD` (none for a task without a world), the overlay at `INITIAL_OVERLAY`, `empty`
        (an empty dir the environment made) for a task without one."""
        out: dict[str, Path] = {}
        if self.world.world_dir is not None:
            out[INITIAL_WORLD] = self.world.world_dir
        out[INITIAL_OVERLAY] = self.world.overlay_dir or empty
        return out

    def close_trial_dirs(self) -> None:
        """Take back the write bits harbor's Trial gave everyone on the trial dir and the dirs
        under it (0777, `TrialPaths.chmod_dir`, for a container user writing a bind mount): a
        kwrl environment copies the agent's outputs out and writes the verifier's as the host's
        user or root, so they keep the mode the umask gives (0755 under 022). Called first in
        `start()`."""
        mode = 0o777 & ~umask()
        top = self.trial_paths.trial_dir
        for d in [top, *(p for p in top.rglob("*") if p.is_dir() and not p.is_symlink())]:
            if d.stat().st_mode & 0o002:
                d.chmod(mode)

    def gateway_fate(self) -> str | None:
        """Why the world gateway stopped serving in the agent phase because of the agent's own
        commands, or None (serving, not started, ended by the environment, or cannot tell)."""
        return None

    @abc.abstractmethod
    async def enter_verifier_phase(self) -> None:
        """End the agent phase (point 4 of the module docstring); idempotent. Called by the upload
        of `TESTS_DIR`, before the files land."""

    @classmethod
    async def drain(cls) -> None:
        """End what this process keeps between trials (pre-started spares); none by default.
        `leftovers()` after `drain()` counts everything the environment started."""
        return None

    @classmethod
    def leftovers(cls) -> list[str]:
        """What trials of this process still hold on the host (processes, mounts, cgroups, dirs,
        containers), one line each; empty when every trial has stopped."""
        return []
