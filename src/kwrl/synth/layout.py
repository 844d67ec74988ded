"""Write generated worlds and tasks in either layout.

- `task-dirs` (docs/architecture.md): `worlds/<world_id>/{world.json, filesystem/, .apps_data/}`
  once per world, `tasks/<slug>/` per task through `kwrl.tasks.taskdir.write_task_dir`, with the
  overlay in `environment/overlay/`, `solution/solve.sh` and `solution/gold_calls.json`.
- `apex-hf` (APEX-Agents' Hugging Face layout): `tasks_and_rubrics.json`, `world_descriptions.json`,
  `world_files_zipped/<world_id>.zip`, `task_files/<task_id>/` overlays. Machine checks and gold
  calls have no place in that format; rubric text and gold answers do.

Each world is rendered once into memory (`WorldFiles`), then written; zips are deterministic
(sorted members, fixed dates), JSON has sorted keys.
"""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kwrl.io import write_bytes
from kwrl.synth.gold import gold_calls_json, solve_sh
from kwrl.synth.render import apps_files, plan_files
from kwrl.synth.rng import ZIP_DATE_TIME
from kwrl.synth.tasks import Task, plan_tasks
from kwrl.synth.world import World, plan_world
from kwrl.tasks.apps import APPS as APP_TABLE
from kwrl.tasks.models import (
    ApexApp,
    ApexRubricItem,
    ApexTask,
    ApexWorld,
    ArchipelagoMeta,
    GoldenResponse,
)
from kwrl.tasks.validate import SYNTH_SOURCE

APPS = [(name, app.title) for name, app in sorted(APP_TABLE.items())]
"""(server name, title) of every app a generated world lists, sorted by name (from the one app
table, `kwrl.tasks.apps.APPS`)."""

OUTPUTS_README = b"Put new deliverables (memos, workbooks, decks) in this folder.\n"


@dataclass
class WorldFiles:
    world: World
    tasks: list[Task]
    files: dict[str, bytes]
    """Paths relative to the world root ('filesystem/...', '.apps_data/...') -> bytes."""


def build_world(seed: int, index: int, domain: str, n_tasks: int) -> WorldFiles:
    w = plan_world(seed, index, domain)
    builders = plan_files(w)
    tasks = plan_tasks(w, n_tasks)
    files = {"filesystem" + path: b() for path, b in sorted(builders.items())}
    files["filesystem/Outputs/README.txt"] = OUTPUTS_README
    files.update({f".apps_data/{k}": v for k, v in sorted(apps_files(w).items())})
    return WorldFiles(w, tasks, files)


def apex_world(w: World) -> ApexWorld:
    return ApexWorld(
        world_id=w.world_id, world_name=w.name, world_description=w.description, domain=w.domain,  # type: ignore[arg-type]
        apps=[ApexApp(service_id=a, service_name=b) for a, b in APPS],
    )  # fmt: skip


def json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        dirs = sorted(
            {"/".join(p.split("/")[:i]) + "/" for p in files for i in range(1, p.count("/") + 1)}
        )
        for d in dirs:
            info = zipfile.ZipInfo(d, ZIP_DATE_TIME)
            info.external_attr = (0o40755 << 16) | 0x10
            z.writestr(info, b"")
        for name in sorted(files):
            info = zipfile.ZipInfo(name, ZIP_DATE_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, files[name])
    return buf.getvalue()


def overlay_files(t: Task) -> dict[str, bytes]:
    return {k: (v() if callable(v) else v) for k, v in sorted(t.draft.overlay.items())}


def write_files(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        write_bytes(root / rel, data)


def golden(t: Task) -> list[GoldenResponse]:
    d = t.draft
    if d.outputs:
        return [
            GoldenResponse(golden_text_response=d.answer, golden_file_responses=list(d.outputs))
        ]
    return [GoldenResponse(golden_text_response=d.answer)]


def write_task_dirs(out: Path, wf: WorldFiles) -> None:
    from kwrl.tasks.taskdir import TaskSpec, write_task_dir

    w = wf.world
    wroot = out / "worlds" / w.world_id
    write_files(wroot, wf.files)
    write_bytes(wroot / "world.json", json_bytes(apex_world(w).model_dump(mode="json")))
    for t in wf.tasks:
        d = t.draft
        meta = ArchipelagoMeta(
            task_id=t.task_id, task_name=t.name, task_slug=t.slug, world_id=w.world_id,
            world_short_name=w.short_name, domain=w.domain, expected_output=d.expected_output,  # type: ignore[arg-type]
            difficulty=d.difficulty, needs_snapshot=True,
        )  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="kwrl-overlay-") as tmp:
            overlay = None
            if d.overlay:
                write_files(Path(tmp), overlay_files(t))
                overlay = Path(tmp)
            spec = TaskSpec(
                meta=meta, instruction=d.prompt, verifiers=t.verifiers(w.world_id), golden=golden(t),
                overlay=overlay, solution=solve_sh(d), extra_files={"solution/gold_calls.json": gold_calls_json(d)},
                metadata={"source": SYNTH_SOURCE, "seed": w.seed, "world_index": w.index, "family": d.family},
            )  # fmt: skip
            write_task_dir(out / "tasks" / t.slug, spec)


def apex_task(t: Task, w: World) -> ApexTask:
    d = t.draft
    return ApexTask(
        task_id=t.task_id, task_name=t.name, domain=w.domain, world_id=w.world_id, prompt=d.prompt,  # type: ignore[arg-type]
        rubric=[ApexRubricItem(verifier_id=v.verifier_id, criteria=v.verifier_values.criteria) for v in t.verifiers(w.world_id)],
        expected_output=d.expected_output,  # type: ignore[arg-type]
        gold_response=d.answer, gold_response_type="file" if d.outputs else "text",
        task_input_files=[k.removeprefix("filesystem") for k in sorted(d.overlay)] or None,
    )  # fmt: skip


def write_apex_world(out: Path, wf: WorldFiles) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Write the world's zip and task overlays; return its description and task rows (for the JSON files)."""
    w = wf.world
    write_bytes(out / "world_files_zipped" / f"{w.world_id}.zip", zip_bytes(wf.files))
    rows = []
    for t in wf.tasks:
        if t.draft.overlay:
            write_files(out / "task_files" / t.task_id, overlay_files(t))
        rows.append(apex_task(t, w).model_dump(mode="json"))
    return apex_world(w).model_dump(mode="json"), rows


def write_apex_index(out: Path, worlds: list[dict[str, Any]], tasks: list[dict[str, Any]]) -> None:
    write_bytes(out / "world_descriptions.json", json_bytes(worlds))
    write_bytes(out / "tasks_and_rubrics.json", json_bytes(tasks))
