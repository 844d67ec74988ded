"""Builders shared by the tasks tests: a minimal valid task spec, world and dataset; a generated
dataset, and a generated task that rewards doing nothing."""

from __future__ import annotations

import json
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


# --------------------------------------------------------------------------- generated datasets


def synth_dataset(root: Path, *, worlds: int = 1, tasks: int = 4, seed: int = 3) -> Path:
    """A generated dataset (task-dirs layout), written without the no-op control."""
    from kwrl.synth.generate import SynthConfig, generate

    cfg = SynthConfig(out=root, worlds=worlds, tasks_per_world=tasks, seed=seed, workers=1,
                      control=False)  # fmt: skip
    generate(cfg, progress=False)
    return root


def reward_doing_nothing(dataset: Path) -> tuple[str, str]:
    """Edit the first task's tests/verifiers.json so its primary criterion passes on the untouched
    world: a `file_exists` check on a document the world already holds. Returns (task dir name,
    verifier_id)."""
    task = sorted((dataset / "tasks").iterdir())[0]
    meta = json.loads((task / "archipelago.json").read_text())
    world = dataset / "worlds" / meta["world_id"] / "filesystem"
    doc = min(world.rglob("*.docx")).relative_to(world)
    path = task / "tests" / "verifiers.json"
    verifiers = json.loads(path.read_text())
    values = verifiers[0]["verifier_values"]
    values["kwrl_check"] = {"kind": "file_exists", "path": str(doc)}
    values["expected_file_type"] = None
    path.write_text(json.dumps(verifiers, indent=2))
    return task.name, verifiers[0]["verifier_id"]


# --------------------------------------------------------------------------- APEX HF layout

OFFICE = Path(__file__).resolve().parents[2] / "fixtures" / "office"
WORLD_IB = "world_" + "1" * 32
WORLD_LAW = "world_" + "2" * 32
OVERLAY_TASK = "task_" + "c" * 32


def _mbox(path: Path, n: int) -> None:
    import mailbox
    from email.message import EmailMessage

    path.parent.mkdir(parents=True, exist_ok=True)
    box = mailbox.mbox(str(path))
    for i in range(n):
        msg = EmailMessage()
        msg["From"] = f"analyst{i}@example.com"
        msg["To"] = "vp@example.com"
        msg["Subject"] = f"Deal update {i}"
        msg.set_content(f"Numbers for deal {i} attached.")
        box.add(msg)
    box.flush()
    box.close()


def _world_zip(zip_path: Path, files: dict[str, Path | bytes]) -> None:
    import zipfile

    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, src in sorted(files.items()):
            zf.writestr(name, src if isinstance(src, bytes) else src.read_bytes())


def make_apex_layout(root: Path) -> Path:
    """An APEX-Agents HF layout: 2 worlds of real office files, mail and calendar; 6 tasks, 1 overlay."""
    import json
    import shutil
    import tempfile

    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        mbox_ib, mbox_law = Path(tmp) / "ib.mbox", Path(tmp) / "law.mbox"
        _mbox(mbox_ib, 3)
        _mbox(mbox_law, 2)
        _world_zip(
            root / "world_files_zipped" / f"{WORLD_IB}.zip",
            {
                "filesystem/models/book1.xlsx": OFFICE / "xlsx" / "openpyxl__book1.xlsx",
                "filesystem/models/formulae.xlsx": OFFICE / "xlsx" / "openpyxl__formulae.xlsx",
                "filesystem/decks/charts.pptx": OFFICE / "pptx" / "python-pptx__cht-charts.pptx",
                "filesystem/memo.docx": OFFICE / "docx" / "python-docx__blk-paras-and-tables.docx",
                ".apps_data/mail/inbox.mbox": mbox_ib.read_bytes(),
                ".apps_data/calendar/deals.ics": OFFICE
                / "ics"
                / "icalendar__calendars_example.ics",
            },
        )
        _world_zip(
            root / "world_files_zipped" / f"{WORLD_LAW}.zip",
            {
                "filesystem/contracts/original.docx": OFFICE / "docx" / "redlines__original.docx",
                "filesystem/contracts/modified.docx": OFFICE / "docx" / "redlines__modified.docx",
                "filesystem/filings/transcript.pdf": OFFICE
                / "pdf"
                / "pdfplumber__scotus-transcript-p1.pdf",
                ".apps_data/mail/inbox.mbox": mbox_law.read_bytes(),
                ".apps_data/calendar/court.ics": OFFICE
                / "ics"
                / "icalendar__events_event_with_recurrence.ics",
                ".apps_data/chat/state.json": b'{"channels": [{"name": "general"}]}',
            },
        )
    worlds = [
        {
            "world_id": WORLD_IB,
            "world_name": "World 221",
            "world_description": "A mid-market investment bank.",
            "domain": "Investment Banking",
            "apps": [
                {"service_id": "excel", "service_name": "Excel"},
                {"service_id": "mail", "service_name": "Mail"},
            ],
        },
        {
            "world_id": WORLD_LAW,
            "world_name": "World 433",
            "world_description": "A litigation firm.",
            "domain": "Law",
            "apps": [{"service_id": "word", "service_name": "Word"}],
        },
    ]
    outputs = [
        "make_new_sheet",
        "edit_existing_sheet",
        "message_in_console",
        None,
        "edit_existing_doc",
        "make_new_slide_deck",
    ]
    tasks = []
    for i, expected in enumerate(outputs):
        world = WORLD_IB if i < 3 else WORLD_LAW
        task_id = OVERLAY_TASK if i == 1 else f"task_{i + 1:032x}"
        tasks.append(
            {
                "task_id": task_id,
                "task_name": f"Task {i + 1}: {'DCF' if world == WORLD_IB else 'Redline'} work",
                "domain": "Investment Banking" if world == WORLD_IB else "Law",
                "world_id": world,
                "prompt": f"Please do piece of work number {i + 1}.",
                "rubric": [
                    {"verifier_id": f"ver_{i}_{k}", "criteria": f"States fact {k}"}
                    for k in range(i % 3 + 1)
                ],
                "expected_output": expected,
                "gold_response": f"Gold {i + 1}",
                "gold_response_type": "text"
                if expected in ("message_in_console", None)
                else "file",
                "task_input_files": "filesystem/inputs/extra.xlsx" if i == 1 else None,
            }
        )
    (root / "tasks_and_rubrics.json").write_text(json.dumps(tasks, indent=2))
    (root / "world_descriptions.json").write_text(json.dumps(worlds, indent=2))
    overlay = root / "task_files" / OVERLAY_TASK
    (overlay / "filesystem" / "inputs").mkdir(parents=True)
    shutil.copy(
        OFFICE / "xlsx" / "openpyxl__merge_range.xlsx",
        overlay / "filesystem" / "inputs" / "extra.xlsx",
    )
    _mbox(overlay / ".apps_data" / "mail" / "task.mbox", 1)
    return root
