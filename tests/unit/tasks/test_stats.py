"""stats counts tasks per domain/world, criteria, output types and tiers; broken tasks are counted apart."""

from __future__ import annotations

from pathlib import Path

from tasks_builders import make_spec, make_world

from kwrl.tasks.stats import dataset_stats
from kwrl.tasks.taskdir import write_task_dir

OTHER_WORLD = "world_" + "b" * 32


def test_counts_over_a_mixed_dataset(tmp_path: Path) -> None:
    make_world(tmp_path)
    make_world(tmp_path, OTHER_WORLD)
    specs = [
        make_spec(1, criteria=1, difficulty="easy"),
        make_spec(
            2,
            criteria=4,
            difficulty="hard",
            domain="Management Consulting",
            expected_output="make_new_doc",
        ),
        make_spec(
            3, criteria=7, world_id=OTHER_WORLD, domain="Investment Banking", expected_output=None
        ),
    ]
    for s in specs:
        write_task_dir(tmp_path / "tasks" / s.meta.task_slug, s)
    (tmp_path / "tasks" / "task-003" / "archipelago.json").write_text("{broken")
    spec = make_spec(4, world_id=OTHER_WORLD, expected_output=None, criteria=2)
    write_task_dir(tmp_path / "tasks" / spec.meta.task_slug, spec)

    s = dataset_stats(tmp_path)
    assert (s.tasks, s.unreadable) == (3, 1)
    assert s.domains == {"Law": 2, "Management Consulting": 1}
    assert [(w.world_id, w.tasks) for w in s.worlds] == [("world_" + "a" * 32, 2), (OTHER_WORLD, 1)]
    assert (s.criteria.min, s.criteria.mean, s.criteria.max, s.criteria.total) == (1, 2.333, 4, 7)
    assert s.expected_outputs == {"make_new_doc": 1, "message_in_console": 1, "none": 1}
    assert s.difficulty == {"easy": 1, "hard": 1}


def test_empty_dataset(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    s = dataset_stats(tmp_path)
    assert s.tasks == 0 and s.criteria.mean == 0.0 and s.worlds == []
