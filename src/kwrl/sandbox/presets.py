"""Environment presets: which harbor environment a trial runs in, as harbor's own config model.

- `local`: `kwrl.sandbox.local:LocalEnvironment` (bubblewrap; this machine, no Docker).
- `docker`: `kwrl.sandbox.docker:DockerEnvironment`, harbor's docker environment on kwrl's images
  (`kwrl.sandbox.docker.images`: built from the task dir where changed, the world gateway started
  by the image's entry point, no network for the agent; set-up: scripts/docker/setup.sh,
  docs/docker.md).
- `modal`: harbor's Modal environment on the same task Dockerfile (environment/Dockerfile, `FROM`
  the world image, pushed to a registry Modal pulls from; `registry_secret` names the Modal secret
  holding its credentials) and the same start-up (`kwrl.sandbox.docker.modal.modal_kwargs`).

Anything else with a ':' is taken as an environment import path. Presets return
`harbor.models.trial.config.EnvironmentConfig`, so harbor validates them.
"""

from __future__ import annotations

from typing import Any

from harbor.models.environment_type import EnvironmentType
from harbor.models.trial.config import EnvironmentConfig

from kwrl.errors import ConfigError

LOCAL_IMPORT_PATH = "kwrl.sandbox.local:LocalEnvironment"
DOCKER_IMPORT_PATH = "kwrl.sandbox.docker:DockerEnvironment"
PRESETS: tuple[str, ...] = ("local", "docker", "modal")


def environment_config(name: str, kwargs: dict[str, Any] | None = None) -> EnvironmentConfig:
    """harbor's EnvironmentConfig for a preset name or an import path."""
    kwargs = dict(kwargs or {})
    if name == "local":
        return EnvironmentConfig(import_path=LOCAL_IMPORT_PATH, kwargs=kwargs)
    if name == "docker":
        return EnvironmentConfig(
            import_path=DOCKER_IMPORT_PATH, force_build=False, delete=True, kwargs=kwargs
        )
    if name == "modal":
        from kwrl.sandbox.docker.modal import modal_kwargs

        return EnvironmentConfig(
            type=EnvironmentType.MODAL, delete=True, kwargs=modal_kwargs(kwargs)
        )
    if ":" in name:
        return EnvironmentConfig(import_path=name, kwargs=kwargs)
    raise ConfigError(
        f"environment {name!r}: expected one of {', '.join(PRESETS)} or an import path module:Class"
    )
