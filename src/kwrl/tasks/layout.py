"""The on-disk layout of a world (ARCH environment).

A world seed dir (and a running sandbox's root) holds two subsystems:

    filesystem/            office files the agent works on   (served at /filesystem)
    .apps_data/<app>/      an app's own state, for each app of the app table that keeps one
                           (`kwrl.tasks.apps.APPS`: which apps, in what files)
    world.json             optional: the ApexWorld description (seed dirs only)

`WorldRoots` names the two data roots; inside a sandbox they are `/filesystem` and `/.apps_data`,
in tests and on the host they are any two directories.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kwrl.tasks.apps import APPS

SUBSYSTEMS: tuple[str, ...] = ("filesystem", ".apps_data")


def app_prefix(app: str) -> str:
    """Where app `app` keeps its state, as a path relative to the world's root, with a trailing
    slash (how a snapshot names the files under it: `.apps_data/mail/inbox.mbox`)."""
    return f".apps_data/{app}/"


@dataclass(frozen=True)
class WorldRoots:
    filesystem: Path
    apps_data: Path

    @classmethod
    def of_dir(cls, world_dir: Path) -> WorldRoots:
        """Roots of a world seed dir or a sandbox root holding filesystem/ and .apps_data/."""
        world_dir = Path(world_dir)
        return cls(filesystem=world_dir / "filesystem", apps_data=world_dir / ".apps_data")

    @classmethod
    def sandbox_default(cls) -> WorldRoots:
        return cls(filesystem=Path("/filesystem"), apps_data=Path("/.apps_data"))

    def app_dir(self, app: str) -> Path:
        """The dir app `app` keeps its state in: `.apps_data/<app>/`."""
        return self.apps_data / app

    def subsystem(self, name: str) -> Path:
        if name == "filesystem":
            return self.filesystem
        if name == ".apps_data":
            return self.apps_data
        raise ValueError(f"unknown subsystem {name!r}; expected one of {SUBSYSTEMS}")

    def ensure(self) -> None:
        """Make the filesystem root and the state dir of every app of the table that keeps one."""
        for p in (self.filesystem, *(self.app_dir(n) for n, a in APPS.items() if a.state)):
            p.mkdir(parents=True, exist_ok=True)
