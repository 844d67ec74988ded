"""Seeded randomness, stable ids and fixed dates: the roots of the generator's determinism.

Every random choice goes through an `Rng` seeded from a string (`random.Random` hashes str seeds
with SHA-512, so they are stable across processes and Python runs; `hash()` is never used). Ids
are hashes of their seed path, so a world's id does not depend on how many worlds came before it.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from datetime import UTC, date, datetime

FIXED_TIMESTAMP = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)
"""The creation/modification date written into every generated file's metadata."""

ZIP_DATE_TIME = (2026, 1, 5, 9, 0, 0)
"""The `ZipInfo.date_time` of every member of every generated zip (OOXML files, world zips)."""

TODAY = date(2026, 3, 2)
"""The simulated 'today' of every world (a Monday); mail, calendar and deadlines hang off it."""


def stable_hex(*parts: object, n: int = 32) -> str:
    """A hex digest of the parts, stable across runs (no `hash()`)."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()
    return h[:n]


def world_id(seed: int, index: int) -> str:
    return "world_" + stable_hex("world", seed, index)


def task_id(world: str, n: int) -> str:
    return "task_" + stable_hex("task", world, n)


class Rng(random.Random):
    """`random.Random` seeded from a path of parts, with a few helpers the generator needs."""

    def __init__(self, *parts: object) -> None:
        super().__init__("/".join(str(p) for p in parts))

    def child(self, *parts: object) -> Rng:
        """An independent stream: adding a draw in one place never shifts another's values."""
        return Rng(self.getrandbits(64), *parts)

    def pick[T](self, seq: Sequence[T]) -> T:
        return seq[self.randrange(len(seq))]

    def money(self, lo: float, hi: float, step: float = 0.1) -> float:
        """A value in [lo, hi] on a grid of `step`, rounded so it prints exactly."""
        n = self.randint(round(lo / step), round(hi / step))
        return round(n * step, 6)
