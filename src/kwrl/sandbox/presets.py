"""Environment presets: which harbor environment a trial runs in, as harbor's own config model.

`PRESETS` is the table of names (`--sandbox.environment NAME`, a train config's `[sandbox]`):

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

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from harbor.models.environment_type import EnvironmentType
from harbor.models.trial.config import EnvironmentConfig

from kwrl.errors import ConfigError

LOCAL_IMPORT_PATH = "kwrl.sandbox.local:LocalEnvironment"
DOCKER_IMPORT_PATH = "kwrl.sandbox.docker:DockerEnvironment"


@dataclass(frozen=True)
class Preset:
    """One named environment: harbor `EnvironmentConfig` fields, and how the user's kwargs
    become the environment's."""

    config: dict[str, Any]
    """Fields of harbor's EnvironmentConfig (`import_path` or `type`, `delete`, `force_build`...)."""
    kwargs: str | None = None
    """`module:function` taking the user's kwargs to the environment's (imported when the preset
    is used, so a preset's module loads only for its trials); None: passed as given."""

    def build(self, kwargs: dict[str, Any]) -> EnvironmentConfig:
        if self.kwargs is not None:
            module, fn = self.kwargs.split(":", 1)
            transform = getattr(importlib.import_module(module), fn)
            kwargs = cast(Callable[[dict[str, Any]], dict[str, Any]], transform)(kwargs)
        return EnvironmentConfig(**self.config, kwargs=kwargs)


PRESETS: dict[str, Preset] = {
    "local": Preset({"import_path": LOCAL_IMPORT_PATH}),
    "docker": Preset({"import_path": DOCKER_IMPORT_PATH, "force_build": False, "delete": True}),
    "modal": Preset(
        {"type": EnvironmentType.MODAL, "delete": True},
        kwargs="kwrl.sandbox.docker.modal:modal_kwargs",
    ),
}
"""Environment presets by name (`--sandbox.environment NAME`).

To add one: a `Preset` here (harbor's EnvironmentConfig fields; `kwargs`, a function turning the
user's `--sandbox.kwargs` into the environment's, where it needs defaults) and its line in the
module docstring; an environment class of kwrl's own lives in `kwrl.sandbox.<name>` and follows
`kwrl.sandbox.contract` (docs/extending.md, "A sandbox environment"). Tests:
tests/unit/sandbox/test_base.py (`test_presets_validate_as_harbor_trial_configs` runs every
preset) and the conformance suite (tests/integration/test_sandbox_conformance.py)."""


def environment_config(name: str, kwargs: dict[str, Any] | None = None) -> EnvironmentConfig:
    """harbor's EnvironmentConfig for a preset name or an import path."""
    kwargs = dict(kwargs or {})
    if name in PRESETS:
        return PRESETS[name].build(kwargs)
    if ":" in name:
        return EnvironmentConfig(import_path=name, kwargs=kwargs)
    raise ConfigError(
        f"environment {name!r}: expected one of {', '.join(PRESETS)} or an import path module:Class"
    )
