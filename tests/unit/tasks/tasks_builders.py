"""Builders shared by the tasks tests: a minimal valid task spec, world and dataset."""

from __future__ import annotations

from pathlib import Path

from kwrl.tasks.models import ArchipelagoMeta, GoldenResponse, Verifier, VerifierValues
from kwrl.tasks.taskdir import TaskSpec, write_task_dir

WORLD_ID = "world_" + "a" * 32


def make_spec(
    n: int = 1, *, world_id: str = WORLD_ID, criteria: int = 2, **meta: object
) -> TaskSpec:
    task_id = f"task_{n:032x}"
    fields: dict[str, object] = {
        "task_id": task_id,
        "task_name": f"Task {n}",
        "task_slug": f"task-{n:03d}",
        "world_id": world_id,
        "domain": "Law",
        "expected_output": "message_in_console",
    }
    fields.update(meta)
    return TaskSpec(
        meta=ArchipelagoMeta.model_validate(fields),
        instruction=f"Answer question {n}.",
        verifiers=[
            Verifier(
                verifier_id=f"ver_{n}_{i}",
                task_id=task_id,
                world_id=world_id,
                verifier_index=i,
                verifier_values=VerifierValues(
                    criteria=f"criterion {i}", is_primary_objective=i == 0
                ),
            )
            for i in range(criteria)
        ],
        golden=[GoldenResponse(golden_text_response=f"answer {n}")],
    )


def make_world(dataset: Path, world_id: str = WORLD_ID) -> Path:
    world = dataset / "worlds" / world_id
    (world / "filesystem").mkdir(parents=True, exist_ok=True)
    (world / ".apps_data" / "mail").mkdir(parents=True, exist_ok=True)
    (world / "filesystem" / "notes.txt").write_text("hello\n")
    return world


def make_dataset(root: Path, n_tasks: int = 3) -> Path:
    """A dataset with one world and `n_tasks` tasks."""
    make_world(root)
    for n in range(1, n_tasks + 1):
        spec = make_spec(n)
        write_task_dir(root / "tasks" / spec.meta.task_slug, spec)
    return root
