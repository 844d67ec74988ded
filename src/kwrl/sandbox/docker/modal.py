"""The modal preset on the docker preset's images and start-up (RECIPE's cluster path).

harbor's Modal environment builds a task's `environment/Dockerfile` with `environment/` as
context and starts the sandbox with its `keepalive` kwarg as the command. kwrl writes that
Dockerfile with `kwrl.tasks.taskdir.task_dockerfile`, the text the docker preset builds its task
image from (`images.task_spec`), on the world image `images.world_spec` builds (pushed to a
registry Modal pulls from: `docker tag` / `docker push` of `kwrl-world-<world_id>:latest`, its
name in archipelago.json `ecr_image`), and `MODAL_KEEPALIVE` is the docker preset's entry point
followed by the command harbor's docker environment runs (`START_COMMAND`), so the gateway
starts the same way in both. (The docker preset also mounts size-limited file systems at the
world's roots and sets `KWRL_POPULATE_WORLD`, so the same entry point first fills them from the
initial copy at /kwrl/initial; on Modal the world is the image's own.) `TaskImage` is what either
preset runs for a task dir; `docker_task_image` and `modal_task_image` give it for each, and a
CPU test holds them equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kwrl.sandbox.docker.images import DockerImageConfig, specs_for_task
from kwrl.sandbox.docker.init import START_ARGV

HARBOR_DOCKER_COMMAND: tuple[str, ...] = ("sh", "-c", "sleep infinity")
"""The command harbor's docker compose file gives the main service (after the entry point)."""
START_COMMAND: tuple[str, ...] = (*START_ARGV, *HARBOR_DOCKER_COMMAND)
"""What runs as the container's first process in both presets."""
MODAL_KEEPALIVE: list[str] = list(START_COMMAND)


def modal_kwargs(kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """harbor's Modal environment kwargs for kwrl: app `kwrl`, 4 h sandboxes, kwrl's start-up."""
    return {
        "app_name": "kwrl",
        "sandbox_timeout_secs": 4 * 3600,
        "keepalive": MODAL_KEEPALIVE,
        **(kwargs or {}),
    }


@dataclass(frozen=True)
class TaskImage:
    """What a preset runs for one task: the task image's Dockerfile, the files of its build
    context (paths inside it), and the container's first process."""

    dockerfile: str
    context: tuple[str, ...]
    command: tuple[str, ...]


def docker_task_image(task_dir: Path, config: DockerImageConfig | None = None) -> TaskImage:
    """The docker preset's task image (`images.task_spec`) and command (entry point, then
    harbor's docker command)."""
    _, runtime, _, task = specs_for_task(Path(task_dir), config)
    entrypoint = _directive(runtime.dockerfile, "ENTRYPOINT")
    assert entrypoint == list(START_ARGV), entrypoint
    return TaskImage(
        task.dockerfile, tuple(sorted(task.context)), (*entrypoint, *HARBOR_DOCKER_COMMAND)
    )


def modal_task_image(task_dir: Path, kwargs: dict[str, Any] | None = None) -> TaskImage:
    """What harbor's Modal environment builds and starts for a task dir with `modal_kwargs`:
    environment/Dockerfile over environment/'s files, `keepalive` as the command."""
    env_dir = Path(task_dir) / "environment"
    context = tuple(
        sorted(
            p.relative_to(env_dir).as_posix()
            for p in env_dir.rglob("*")
            if p.relative_to(env_dir).parts[0] == "overlay" and p != env_dir / "overlay"
        )
    )
    keepalive = modal_kwargs(kwargs)["keepalive"]
    return TaskImage((env_dir / "Dockerfile").read_text(), context, tuple(keepalive))


def _directive(dockerfile: str, name: str) -> list[str]:
    import json

    for line in dockerfile.splitlines():
        if line.startswith(name + " "):
            return json.loads(line[len(name) + 1 :])
    raise ValueError(f"no {name} in the Dockerfile")
