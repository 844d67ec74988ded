"""Convert the APEX-Agents Hugging Face layout into a kwrl dataset of task dirs.

Input (a local folder, or a HF dataset id fetched with `snapshot_download`):

    tasks_and_rubrics.json          list of ApexTask
    world_descriptions.json         list of ApexWorld
    world_files_zipped/<world_id>.zip   top dirs filesystem/ and .apps_data/
    task_files/<task_id>/           optional overlay, same two top dirs

Output (docs/architecture.md "Dataset layout"): each world unpacked once as
`worlds/<world_id>/` with `world.json`; each task a task dir `tasks/<slug>/` written by
`taskdir.write_task_dir`, its overlay copied to `environment/overlay/`. Tasks reference their world,
never copy it.

Verifiers follow Archipelago's own conversion (examples/hugging_face_task): one per rubric item in
order, the first one primary, `verifier_index` = position, plus `expected_file_type` derived from
`expected_output` with the grader's labels (`models.EXPECTED_FILE_TYPES`).

The whole dataset is built in a stage dir inside `out` (`kwrl.io.OutputDir.staged`), validated,
then renamed into place: an error anywhere (bad JSON, unknown field, duplicate id, unsafe zip
member, size cap) leaves `out` as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from kwrl.config import ByteSize, OutputConfig
from kwrl.errors import TaskFormatError, UnsafeArchiveError
from kwrl.io import claim_output, write_json
from kwrl.tasks.archive import DEFAULT_MAX_BYTES, ByteBudget, extract_zip
from kwrl.tasks.hub import fetch_dataset, looks_like_repo_id
from kwrl.tasks.models import (
    ApexTask,
    ApexWorld,
    ArchipelagoMeta,
    GoldenResponse,
    Verifier,
    VerifierValues,
    expected_file_type_for,
)
from kwrl.tasks.progress import progress_bar
from kwrl.tasks.taskdir import TaskDirConfig, TaskSpec, read_json, validation_error, write_task_dir

TASKS_JSON = "tasks_and_rubrics.json"
WORLDS_JSON = "world_descriptions.json"
WORLD_ZIPS = "world_files_zipped"
TASK_FILES = "task_files"
HF_PATTERNS = [TASKS_JSON, WORLDS_JSON, f"{WORLD_ZIPS}/*.zip", f"{TASK_FILES}/**"]

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_TASKS = TypeAdapter(list[ApexTask])
_WORLDS = TypeAdapter(list[ApexWorld])


class ConvertConfig(OutputConfig):
    """Settings of a conversion (`convert_apex`)."""

    max_bytes: ByteSize = DEFAULT_MAX_BYTES
    """Cap on the bytes unpacked from all world zips and overlays together (e.g. 20GiB, 500MB)."""
    task_dir: TaskDirConfig = TaskDirConfig()
    """task.toml values and the docker preset of the written task dirs."""


class ConvertRun(ConvertConfig):
    """`kwrl data convert`'s config (its flags): a conversion, where it writes and how it shows."""

    out: Path
    """Dataset dir to write (worlds/, tasks/)."""
    source_format: Literal["apex-hf"] = Field(default="apex-hf", alias="from")
    """Input format; only apex-hf (APEX-Agents' Hugging Face layout)."""
    quiet: bool = False
    """No progress bar."""


@dataclass
class ConvertReport:
    worlds: int = 0
    tasks: int = 0
    overlays: int = 0
    bytes_unpacked: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ApexSource:
    root: Path
    tasks: list[ApexTask]
    worlds: dict[str, ApexWorld]


def slugify(text: str, max_len: int = 48) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:max_len].rstrip("-") or "task"


def task_slug(task: ApexTask) -> str:
    """A readable, unique dir name: the task name's slug plus the last 8 chars of the task id."""
    return f"{slugify(task.task_name)}-{task.task_id[-8:]}"


def world_short_name(world: ApexWorld) -> str:
    """`<domain>-<world name>` slug, the shape RECIPE's dataset maps to ib/law/consulting."""
    domain = slugify(world.domain)
    name = slugify(world.world_name)
    return name if name.startswith(domain) else f"{domain}-{name}"


def rubric_to_verifiers(task: ApexTask) -> list[Verifier]:
    file_type = expected_file_type_for(task.expected_output)
    return [
        Verifier(
            verifier_id=item.verifier_id,
            verifier_version=1,
            world_id=task.world_id,
            task_id=task.task_id,
            eval_config_id="ec_output_llm",
            verifier_values=VerifierValues(
                criteria=item.criteria, is_primary_objective=i == 0, expected_file_type=file_type
            ),
            verifier_index=i,
            verifier_dependencies=None,
        )
        for i, item in enumerate(task.rubric)
    ]


def golden_of(task: ApexTask) -> list[GoldenResponse]:
    if not task.gold_response:
        return []
    if task.gold_response_type == "file":
        return [GoldenResponse(golden_file_responses=[task.gold_response])]
    return [GoldenResponse(golden_text_response=task.gold_response)]


def _check_id(value: str, path: Path, field_name: str) -> None:
    if not _SAFE_ID.match(value) or ".." in value:
        raise TaskFormatError(
            path, field_name, f"{value!r} is not a safe id (letters, digits, _ . -)"
        )


def load_apex(root: Path) -> ApexSource:
    """Read and check the two JSON files of an APEX HF layout (ids unique, worlds known)."""
    tasks_path, worlds_path = root / TASKS_JSON, root / WORLDS_JSON
    try:
        tasks = _TASKS.validate_python(read_json(tasks_path))
    except ValidationError as e:
        raise validation_error(tasks_path, e) from None
    try:
        worlds_list = _WORLDS.validate_python(read_json(worlds_path))
    except ValidationError as e:
        raise validation_error(worlds_path, e) from None
    worlds: dict[str, ApexWorld] = {}
    for i, w in enumerate(worlds_list):
        _check_id(w.world_id, worlds_path, f"{i}.world_id")
        if w.world_id in worlds:
            raise TaskFormatError(
                worlds_path, f"{i}.world_id", f"duplicate world id {w.world_id!r}"
            )
        worlds[w.world_id] = w
    seen: dict[str, int] = {}
    slugs: dict[str, int] = {}
    for i, t in enumerate(tasks):
        _check_id(t.task_id, tasks_path, f"{i}.task_id")
        if t.task_id in seen:
            raise TaskFormatError(
                tasks_path,
                f"{i}.task_id",
                f"duplicate task id {t.task_id!r} (first at index {seen[t.task_id]})",
            )
        seen[t.task_id] = i
        if t.world_id not in worlds:
            raise TaskFormatError(
                tasks_path, f"{i}.world_id", f"world {t.world_id!r} is not in {WORLDS_JSON}"
            )
        slug = task_slug(t)
        if slug in slugs:
            raise TaskFormatError(
                tasks_path, f"{i}.task_id", f"task slug {slug!r} collides with index {slugs[slug]}"
            )
        slugs[slug] = i
    return ApexSource(root=root, tasks=tasks, worlds=worlds)


def fetch_source(src: str | Path, *, revision: str | None = None) -> Path:
    """A local APEX folder as is; a HF dataset id (org/name) downloaded with snapshot_download."""
    p = Path(src)
    if p.is_dir():
        return p
    if looks_like_repo_id(src):
        return fetch_dataset(str(src), HF_PATTERNS, revision=revision)
    raise TaskFormatError(src, None, "not a folder in the APEX HF layout nor a HF dataset id")


def unpack_world(zip_path: Path, dest: Path, world: ApexWorld, budget: ByteBudget) -> None:
    """Unpack one world zip into `dest` (filesystem/, .apps_data/{mail,calendar,chat}/, world.json)."""
    from kwrl.tasks.layout import SUBSYSTEMS, WorldRoots

    members = extract_zip(zip_path, dest, budget)
    for rel in members:
        if rel.parts[0] not in SUBSYSTEMS:
            raise UnsafeArchiveError(
                zip_path, str(rel), f"member outside the world's top dirs {SUBSYSTEMS}"
            )
    WorldRoots.of_dir(dest).ensure()
    write_json(dest / "world.json", world.model_dump(mode="json"))


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def convert_apex(
    src: str | Path, out: Path, config: ConvertConfig | None = None, *, progress: bool = False
) -> ConvertReport:
    """Convert an APEX HF layout at `src` into the dataset `out`, all or nothing (`out` claimed by
    `kwrl.io.claim_output`: an overwrite replaces only what kwrl wrote there)."""
    from kwrl.tasks.validate import validate_dataset

    config = config or ConvertConfig()
    local = [Path(src)] if Path(src).exists() else []
    output = claim_output(Path(out), "kwrl data convert", overwrite=config.overwrite, inputs=local)
    source = load_apex(fetch_source(src))
    budget = ByteBudget(config.max_bytes)
    report = ConvertReport()
    used = sorted({t.world_id for t in source.tasks})
    for world_id in sorted(set(source.worlds) - set(used)):
        report.warnings.append(f"world {world_id} has no task; not unpacked")

    with (
        output.staged() as tmp,
        progress_bar(progress, "convert", len(used) + len(source.tasks)) as advance,
    ):
        for world_id in used:
            zip_path = source.root / WORLD_ZIPS / f"{world_id}.zip"
            if not zip_path.is_file():
                raise TaskFormatError(zip_path, "world_id", "world zip is missing")
            unpack_world(zip_path, tmp / "worlds" / world_id, source.worlds[world_id], budget)
            report.worlds += 1
            advance(1)
        for task in source.tasks:
            spec = _task_spec(task, source)
            if spec.overlay is not None:
                budget.take(_dir_bytes(spec.overlay), str(spec.overlay), "task_files")
                report.overlays += 1
            elif task.task_input_files:
                report.warnings.append(
                    f"{task.task_id}: task_input_files set but no {TASK_FILES}/{task.task_id}/"
                )
            write_task_dir(tmp / "tasks" / spec.meta.task_slug, spec, config.task_dir)
            report.tasks += 1
            advance(1)
        problems = validate_dataset(tmp).problems
        if problems:
            p = problems[0]
            raise TaskFormatError(
                Path(out) / p.file, p.field, f"converted task fails validation: {p.message}"
            )
    report.bytes_unpacked = budget.used
    return report


def _task_spec(task: ApexTask, source: ApexSource) -> TaskSpec:
    world = source.worlds[task.world_id]
    meta = ArchipelagoMeta(
        task_id=task.task_id,
        task_name=task.task_name,
        task_slug=task_slug(task),
        world_id=task.world_id,
        world_short_name=world_short_name(world),
        domain=task.domain,
        expected_output=task.expected_output,
    )
    overlay = source.root / TASK_FILES / task.task_id
    extra: dict[str, Any] = {"source": "apex-hf"}
    if task.gold_response_type:
        extra["gold_response_type"] = task.gold_response_type
    return TaskSpec(
        meta=meta,
        instruction=task.prompt,
        verifiers=rubric_to_verifiers(task),
        golden=golden_of(task),
        overlay=overlay if overlay.is_dir() else None,
        metadata=extra,
    )
