"""kwrl's docker preset (docs/docker.md).

- `images`: the runtime, world and task images as data (`ImageSpec`), built only when changed.
- `init`: the images' entry point (the world gateway on /kwrl/run/gateway.sock, then the command).
- `environment`: `DockerEnvironment`, harbor's docker environment running those images; use it as
  `kwrl.sandbox.docker:DockerEnvironment` (`--sandbox.environment docker`).
- `modal`: the modal preset on the same images and entry point.

`DockerEnvironment` is imported on first use: the images run `kwrl.sandbox.docker.init` without
harbor installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kwrl.sandbox.docker.environment import DockerEnvironment

__all__ = ["DockerEnvironment"]


def __getattr__(name: str) -> Any:
    if name == "DockerEnvironment":
        from kwrl.sandbox.docker.environment import DockerEnvironment

        return DockerEnvironment
    raise AttributeError(name)
