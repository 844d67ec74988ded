"""Counts over a dataset: tasks per domain and per world, criteria per task, output types, tiers.

Reads only archipelago.json and tests/verifiers.json of each task (and world.json for world names);
a task whose files do not parse is counted under `unreadable` and otherwise skipped, so stats work
on a dataset that `validate` would reject.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel, Field

from kwrl.config import KwrlConfig
from kwrl.errors import TaskFormatError
from kwrl.tasks.taskdir import read_json, read_meta, read_verifiers, task_dirs, world_dir_of


class CriteriaStats(BaseModel):
    min: int = 0
    mean: float = 0.0
    max: int = 0
    total: int = 0


class WorldStats(BaseModel):
    world_id: str
    name: str | None = None
    tasks: int = 0


class DatasetStats(BaseModel):
    root: str
    tasks: int
    unreadable: int
    domains: dict[str, int]
    worlds: list[WorldStats]
    criteria: CriteriaStats
    expected_outputs: dict[str, int]
    """Tasks per expected_output; `none` when a task does not say."""
    difficulty: dict[str, int]
    """Tasks per difficulty tier; empty when no task has one."""


class StatsConfig(KwrlConfig):
    """`kwrl data stats`'s config (its flags)."""

    as_json: bool = Field(default=False, alias="json")
    """Print the counts as JSON."""


def dataset_stats(root: Path) -> DatasetStats:
    root = Path(root)
    if not root.is_dir():
        raise TaskFormatError(root, None, "dataset dir not found")
    domains: Counter[str] = Counter()
    worlds: Counter[str] = Counter()
    world_names: dict[str, str | None] = {}
    outputs: Counter[str] = Counter()
    tiers: Counter[str] = Counter()
    counts: list[int] = []
    unreadable = 0
    for d in task_dirs(root):
        try:
            meta = read_meta(d)
            verifiers = read_verifiers(d)
        except TaskFormatError:
            unreadable += 1
            continue
        counts.append(len(verifiers))
        domains[meta.domain or "unknown"] += 1
        worlds[meta.world_id] += 1
        outputs[meta.expected_output or "none"] += 1
        if meta.difficulty:
            tiers[meta.difficulty] += 1
        if meta.world_id not in world_names:
            world_names[meta.world_id] = _world_name(world_dir_of(d, meta) / "world.json")
    return DatasetStats(
        root=str(root),
        tasks=len(counts),
        unreadable=unreadable,
        domains=dict(sorted(domains.items())),
        worlds=[
            WorldStats(world_id=w, name=world_names.get(w), tasks=n)
            for w, n in sorted(worlds.items())
        ],
        criteria=CriteriaStats(
            min=min(counts, default=0),
            mean=round(sum(counts) / len(counts), 3) if counts else 0.0,
            max=max(counts, default=0),
            total=sum(counts),
        ),
        expected_outputs=dict(sorted(outputs.items())),
        difficulty=dict(sorted(tiers.items())),
    )


def _world_name(path: Path) -> str | None:
    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except TaskFormatError:
        return None
    name = data.get("world_name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None
