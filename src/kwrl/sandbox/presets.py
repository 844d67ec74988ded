"""Environment presets: which harbor environment a trial runs in, as harbor's own config model.

- `local`: `kwrl.sandbox.local:LocalEnvironment` (bubblewrap; this machine, no Docker).
- `docker`: harbor's docker environment. Each task dir's `environment/Dockerfile` (written by
  `kwrl.tasks.taskdir`) is `FROM` its world's image (`archipelago.json:ecr_image`), which carries
  the world seed at /filesystem and /.apps_data and kwrl's gateway; harbor builds it per task.
- `modal`: harbor's Modal environment over the same per-world images (RECIPE's cluster path:
  images pushed to a registry; `registry_secret` names the Modal secret holding its credentials).

Anything else with a ':' is taken as an environment import path. Presets return
`harbor.models.trial.config.EnvironmentConfig`, so harbor validates them; docker and modal cannot
run on this machine (no Docker engine, no Modal credentials) but their configs are tested.
"""

from __future__ import annotations

from typing import Any

from harbor.models.environment_type import EnvironmentType
from harbor.models.trial.config import EnvironmentConfig

from kwrl.errors import ConfigError

LOCAL_IMPORT_PATH = "kwrl.sandbox.local:LocalEnvironment"
PRESETS: tuple[str, ...] = ("local", "docker", "modal")


def environment_config(name: str, kwargs: dict[str, Any] | None = None) -> EnvironmentConfig:
    """harbor's EnvironmentConfig for a preset name or an import path."""
    kwargs = dict(kwargs or {})
    if name == "local":
        return EnvironmentConfig(import_path=LOCAL_IMPORT_PATH, kwargs=kwargs)
    if name == "docker":
        return EnvironmentConfig(
            type=EnvironmentType.DOCKER, force_build=False, delete=True, kwargs=kwargs
        )
    if name == "modal":
        modal_kwargs = {"app_name": "kwrl", "sandbox_timeout_secs": 4 * 3600, **kwargs}
        return EnvironmentConfig(type=EnvironmentType.MODAL, delete=True, kwargs=modal_kwargs)
    if ":" in name:
        return EnvironmentConfig(import_path=name, kwargs=kwargs)
    raise ConfigError(
        f"environment {name!r}: expected one of {', '.join(PRESETS)} or an import path module:Class"
    )
