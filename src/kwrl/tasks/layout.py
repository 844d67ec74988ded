"""The on-disk layout of a world (ARCH environment).

A world seed dir (and a running sandbox's root) holds two subsystems:

    filesystem/            office files the agent works on   (served at /filesystem)
    .apps_data/mail/       *.mbox                            (one mailbox per file)
    .apps_data/calendar/   *.ics
    .apps_data/chat/       JSON state (channels, users, messages)
    world.json             optional: the ApexWorld description (seed dirs only)

`WorldRoots` names the two data roots; inside a sandbox they are `/filesystem` and `/.apps_data`,
in tests and on the host they are any two directories.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SUBSYSTEMS: tuple[str, ...] = ("filesystem", ".apps_data")


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

    @property
    def mail(self) -> Path:
        return self.apps_data / "mail"

    @property
    def calendar(self) -> Path:
        return self.apps_data / "calendar"

    @property
    def chat(self) -> Path:
        return self.apps_data / "chat"

    def subsystem(self, name: str) -> Path:
        if name == "filesystem":
            return self.filesystem
        if name == ".apps_data":
            return self.apps_data
        raise ValueError(f"unknown subsystem {name!r}; expected one of {SUBSYSTEMS}")

    def ensure(self) -> None:
        for p in (self.filesystem, self.mail, self.calendar, self.chat):
            p.mkdir(parents=True, exist_ok=True)
