"""Training task dirs: read one (`load_task`), write one (`write_task_dir`).

A task dir (docs/architecture.md) is a harbor task plus Archipelago's grading inputs:

    instruction.md  task.toml  archipelago.json
    environment/Dockerfile                         docker preset: FROM the world's image
    environment/overlay/{filesystem,.apps_data}/   task files applied over the world (optional)
    tests/test.sh  tests/verifiers.json  tests/golden_responses.json
    solution/solve.sh                              gold tool calls (generated tasks, optional)

The world seed is never inside the task dir: it lives once per world at
`archipelago.json:world_dir` (relative to the task dir), by default `../../worlds/<world_id>`.

Contract (docs/contracts.md "Data"): `load_task(task_dir) -> TaskDir` raises `TaskFormatError`
naming the file and the field. The per-file readers (`read_meta`, `read_verifiers`, ...) are public
so `kwrl data validate` can run every check and report all faults instead of the first.
`write_task_dir` is the one writer used by both the APEX converter and the world/task generator;
it builds the dir beside its destination and renames it into place (nothing half-written).
"""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from kwrl.config import KwrlConfig, to_toml
from kwrl.errors import TaskFormatError
from kwrl.io import atomic_dir
from kwrl.tasks.models import ArchipelagoMeta, GoldenResponse, Verifier

if TYPE_CHECKING:
    from harbor.models.task.config import TaskConfig

INSTRUCTION = "instruction.md"
TASK_TOML = "task.toml"
META_JSON = "archipelago.json"
VERIFIERS_JSON = "tests/verifiers.json"
GOLDEN_JSON = "tests/golden_responses.json"
TEST_SH = "tests/test.sh"
DOCKERFILE = "environment/Dockerfile"
OVERLAY_DIR = "environment/overlay"
SOLVE_SH = "solution/solve.sh"

# docs/contracts.md "tests/test.sh runs ...": the verifier entry point, verbatim. It starts in /
# (never the agent-writable world) and runs Python isolated (-I: no cwd or script dir on sys.path,
# no PYTHON* variables, no user site), so nothing the agent wrote can stand in for the grader.
TEST_SH_TEXT = """#!/usr/bin/env bash
# kwrl verifier: grade the trial's final state and answer against tests/verifiers.json.
set -euo pipefail
cd /
exec "${KWRL_PYTHON:-python3}" -I -m kwrl.grading.verify --tests /tests \\
  --initial /kwrl/initial/world --initial /kwrl/initial/overlay --final / \\
  --answer /logs/agent/final_answer.txt --out /logs/verifier
"""


GRADER_DEADLINE_ENV = "KWRL_GRADER_DEADLINE_S"
"""The verifier env variable (e.g. task.toml `[verifier].env`) setting the grader's deadline."""
GRADER_DEADLINE_S = 180.0
"""The grader's default deadline, seconds, for reading the agent's outputs
(`kwrl.grading.budget.GraderBudget.deadline_s`; here so `kwrl data validate` can check it)."""
GRADER_WATCHDOG_GRACE_S = 20.0
"""Seconds past the grader's deadline before its watchdog ends a grading stuck in C code."""


def outdated_test_sh(text: str) -> bool:
    """A kwrl test.sh written before TEST_SH_TEXT ran the grader isolated (from a safe cwd, `-I`)."""
    return "kwrl.grading.verify" in text and text != TEST_SH_TEXT


def limit_problems(env: Any) -> list[tuple[str, str]]:
    """(field, message) for each [environment] limit of a harbor `EnvironmentConfig` that no
    sandbox can apply: cpus, memory_mb and storage_mb must be positive when set."""
    out = []
    for key in ("cpus", "memory_mb", "storage_mb"):
        value = getattr(env, key, None)
        if value is not None and not value > 0:
            out.append((f"environment.{key}", f"{value!r}: must be a positive number (or unset)"))
    return out


_VERIFIERS = TypeAdapter(list[Verifier])
_GOLDEN = TypeAdapter(list[GoldenResponse])


class TaskDirConfig(KwrlConfig):
    """Settings of the task dirs kwrl writes (harbor task.toml values and the docker preset)."""

    agent_timeout_sec: float = 3600.0
    """Agent phase time limit written to task.toml [agent].timeout_sec."""
    verifier_timeout_sec: float = 900.0
    """Verifier phase time limit written to task.toml [verifier].timeout_sec (judge calls included)."""
    cpus: int = 2
    """CPUs per trial sandbox ([environment].cpus)."""
    memory_mb: int = 4096
    """Memory per trial sandbox in MiB ([environment].memory_mb)."""
    storage_mb: int = 10240
    """Disk per trial sandbox in MiB ([environment].storage_mb)."""
    world_image: str = "kwrl-world-{world_id}:latest"
    """Docker preset: image per world, `{world_id}` and `{world_short_name}` are filled in."""


class TaskSpec(BaseModel):
    """Everything that makes one task dir; `write_task_dir` turns it into files."""

    model_config = ConfigDict(extra="forbid")

    meta: ArchipelagoMeta
    """archipelago.json content (task_slug names the dir)."""
    instruction: str
    """The prompt shown to the agent (instruction.md)."""
    verifiers: list[Verifier] = Field(min_length=1)
    """The rubric as Archipelago verifiers; the first is the primary objective."""
    golden: list[GoldenResponse] = Field(default_factory=list)
    """Reference answers (tests/golden_responses.json)."""
    overlay: Path | None = None
    """A dir holding `filesystem/` and/or `.apps_data/` copied to environment/overlay/."""
    solution: str | None = None
    """solution/solve.sh text: gold tool calls (`kwrl world call ...`) replayed by the oracle agent."""
    extra_files: dict[str, bytes] = Field(default_factory=dict)
    """More files by relative path (e.g. gold files under tests/); never outside the task dir."""
    metadata: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """Extra task.toml [metadata] entries (source, generator seed, ...)."""


@dataclass(frozen=True)
class TaskDir:
    """A loaded task dir (docs/contracts.md)."""

    path: Path
    instruction: str
    meta: ArchipelagoMeta
    verifiers: list[Verifier]
    golden: list[dict[str, Any]] | None
    """golden_responses.json content, or None when the file is absent."""
    world_dir: Path
    """The resolved world seed dir (holds filesystem/ and .apps_data/)."""
    overlay_dir: Path
    """environment/overlay of this task; may not exist."""
    config: TaskConfig
    """task.toml as harbor's own model."""
    config_raw: dict[str, Any]
    """task.toml as parsed TOML."""

    @property
    def task_id(self) -> str:
        return self.meta.task_id

    @property
    def slug(self) -> str:
        return self.meta.task_slug


# --------------------------------------------------------------------------- readers


def _read_text(path: Path, field: str | None = None) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskFormatError(path, field, "missing file") from None
    except UnicodeDecodeError as e:
        raise TaskFormatError(
            path, field, f"not UTF-8 text ({e.reason} at byte {e.start})"
        ) from None
    except IsADirectoryError:
        raise TaskFormatError(path, field, "is a directory, expected a file") from None


def read_json(path: Path) -> Any:
    """Parse a JSON file; a syntax error names the file, line and column."""
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise TaskFormatError(
            path, None, f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}"
        ) from None


def validation_error(path: Path, err: ValidationError, prefix: str = "") -> TaskFormatError:
    """A pydantic error as a TaskFormatError whose field is the dotted location of the first fault."""
    first = err.errors()[0]
    loc = ".".join(str(x) for x in first["loc"])
    field = f"{prefix}{loc}" if loc else (prefix.rstrip(".") or None)
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
    elif first["type"] == "missing":
        msg = "required field is missing"
    return TaskFormatError(path, field, f"{msg}{more}")


def read_instruction(task_dir: Path) -> str:
    path = task_dir / INSTRUCTION
    text = _read_text(path)
    if not text.strip():
        raise TaskFormatError(path, None, "instruction is empty")
    return text


def read_meta(task_dir: Path) -> ArchipelagoMeta:
    path = task_dir / META_JSON
    data = read_json(path)
    try:
        return ArchipelagoMeta.model_validate(data)
    except ValidationError as e:
        raise validation_error(path, e) from None


def read_verifiers(task_dir: Path) -> list[Verifier]:
    path = task_dir / VERIFIERS_JSON
    return parse_verifiers(read_json(path), path)


def parse_verifiers(data: Any, path: Path) -> list[Verifier]:
    """verifiers.json content -> Verifier entries; non-empty, unique ids, a primary objective."""
    try:
        verifiers = _VERIFIERS.validate_python(data)
    except ValidationError as e:
        raise validation_error(path, e) from None
    if not verifiers:
        raise TaskFormatError(path, None, "no verifiers: a task needs at least one criterion")
    seen: set[str] = set()
    for i, v in enumerate(verifiers):
        if v.verifier_id in seen:
            raise TaskFormatError(
                path, f"{i}.verifier_id", f"duplicate verifier_id {v.verifier_id!r}"
            )
        seen.add(v.verifier_id)
    if not any(v.verifier_values.is_primary_objective for v in verifiers):
        raise TaskFormatError(
            path, "0.verifier_values.is_primary_objective", "no criterion is the primary objective"
        )
    return verifiers


def read_golden(task_dir: Path) -> list[dict[str, Any]] | None:
    path = task_dir / GOLDEN_JSON
    if not path.exists():
        return None
    data = read_json(path)
    try:
        _GOLDEN.validate_python(data)
    except ValidationError as e:
        raise validation_error(path, e) from None
    return data


NO_FAMILY = "(no family)"
"""The group of tasks that carry no family (imported ones) in per-family counts."""


def task_family(task_dir: Path) -> str | None:
    """A generated task's family (task.toml `[metadata] family`); None without one or when
    task.toml is unreadable."""
    try:
        raw = tomllib.loads((Path(task_dir) / TASK_TOML).read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    fam = raw.get("metadata", {}).get("family") if isinstance(raw.get("metadata"), dict) else None
    return fam if isinstance(fam, str) else None


def read_task_toml(task_dir: Path) -> tuple[dict[str, Any], TaskConfig]:
    """task.toml -> (raw dict, harbor TaskConfig); unknown keys are errors (harbor ignores them)."""
    from harbor.models.task.config import TaskConfig

    path = task_dir / TASK_TOML
    text = _read_text(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TaskFormatError(path, None, f"invalid TOML: {e}") from None
    unknown = unknown_keys(TaskConfig, raw)
    if unknown:
        raise TaskFormatError(path, unknown[0], "unknown field (not in harbor's task.toml schema)")
    try:
        cfg = TaskConfig.model_validate(raw)
    except ValidationError as e:
        raise validation_error(path, e) from None
    expected = raw.get("metadata", {}).get("expected_output")
    if expected is not None:
        from kwrl.tasks.models import EXPECTED_OUTPUTS

        if expected not in EXPECTED_OUTPUTS:
            raise TaskFormatError(
                path,
                "metadata.expected_output",
                f"{expected!r} is not one of {', '.join(EXPECTED_OUTPUTS)}",
            )
    return raw, cfg


# Keys harbor still accepts and migrates before validation (its old names, not model fields).
_LEGACY_KEYS: dict[str, set[str]] = {
    "TaskConfig": {"version"},
    "EnvironmentConfig": {"memory", "storage"},
}


def unknown_keys(model: type[BaseModel], data: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys of `data` that `model` (recursively, through nested models) does not declare."""
    out: list[str] = []
    fields = model.model_fields
    known = set(fields) | {f.alias for f in fields.values() if f.alias}
    known |= _LEGACY_KEYS.get(model.__name__, set())
    for key, value in data.items():
        if key not in known:
            out.append(f"{prefix}{key}")
            continue
        if key not in fields or not isinstance(value, Mapping):
            continue
        sub = _model_of(fields[key].annotation)
        if sub is not None:
            out.extend(unknown_keys(sub, value, f"{prefix}{key}."))
    return out


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def world_dir_of(task_dir: Path, meta: ArchipelagoMeta) -> Path:
    """Where a task's world seed is: `meta.world_dir` relative to the task dir, else ../../worlds/<id>."""
    rel = meta.world_dir if meta.world_dir else f"../../worlds/{meta.world_id}"
    return (task_dir / rel).resolve()


def resolve_world(task_dir: Path, meta: ArchipelagoMeta) -> Path:
    world = world_dir_of(task_dir, meta)
    field = "world_dir" if meta.world_dir else "world_id"
    if not world.is_dir():
        raise TaskFormatError(task_dir / META_JSON, field, f"world seed dir not found at {world}")
    if not (world / "filesystem").is_dir():
        raise TaskFormatError(
            task_dir / META_JSON, field, f"world seed {world} has no filesystem/ dir"
        )
    return world


def load_task(task_dir: Path | str, *, require_world: bool = True) -> TaskDir:
    """Load and check one task dir. `require_world=False` skips the world lookup (e.g. bundles)."""
    task_dir = Path(task_dir).resolve()
    if not task_dir.is_dir():
        raise TaskFormatError(task_dir, None, "task dir not found")
    instruction = read_instruction(task_dir)
    meta = read_meta(task_dir)
    verifiers = read_verifiers(task_dir)
    golden = read_golden(task_dir)
    raw, cfg = read_task_toml(task_dir)
    world = resolve_world(task_dir, meta) if require_world else world_dir_of(task_dir, meta)
    return TaskDir(
        path=task_dir,
        instruction=instruction,
        meta=meta,
        verifiers=verifiers,
        golden=golden,
        world_dir=world,
        overlay_dir=task_dir / OVERLAY_DIR,
        config=cfg,
        config_raw=raw,
    )


# --------------------------------------------------------------------------- writer


def task_toml_text(spec: TaskSpec, config: TaskDirConfig) -> str:
    """task.toml for a task: harbor timeouts and resources plus kwrl metadata, checked by harbor's model."""
    from harbor.models.task.config import TaskConfig

    meta = spec.meta
    metadata: dict[str, Any] = {
        "task_id": meta.task_id,
        "task_name": meta.task_name,
        "task_slug": meta.task_slug,
        "world_id": meta.world_id,
        "domain": meta.domain,
        "expected_output": meta.expected_output,
        "difficulty": meta.difficulty,
        "criteria": len(spec.verifiers),
        **spec.metadata,
    }
    data: dict[str, Any] = {
        "schema_version": "1.4",
        "metadata": {k: v for k, v in metadata.items() if v is not None},
        "verifier": {"timeout_sec": config.verifier_timeout_sec},
        "agent": {"timeout_sec": config.agent_timeout_sec},
        "environment": {
            "cpus": config.cpus,
            "memory_mb": config.memory_mb,
            "storage_mb": config.storage_mb,
        },
    }
    text = to_toml(data)
    TaskConfig.model_validate(tomllib.loads(text))
    return text


def world_image(meta: ArchipelagoMeta, config: TaskDirConfig) -> str:
    return config.world_image.format(world_id=meta.world_id, world_short_name=meta.world_short_name)


SANDBOX_UID = 1000
"""Docker and modal presets: the uid the world gateway and the agent's commands run as inside a
task image (the world is theirs; kwrl, the initial copy and the gateway's socket dir are root's)."""


def task_dockerfile(image: str, overlay: bool) -> str:
    """The Dockerfile of a task image (build context: the task's environment/ dir): the world's
    image (`kwrl.sandbox.docker.images`), then the task overlay applied over the world, owned by
    `SANDBOX_UID`, and kept read-only at /kwrl/initial/overlay for the grader."""
    lines = [
        "# Docker and modal presets (kwrl.sandbox.docker): the world's image carries the world seed",
        "# at /filesystem and /.apps_data, the same read-only at /kwrl/initial/world, kwrl and the",
        "# gateway's start-up; the task overlay goes over the world and to /kwrl/initial/overlay.",
        f"FROM {image}",
    ]
    if overlay:
        lines += [
            "COPY --chown=0:0 overlay/ /kwrl/initial/overlay/",
            f"COPY --chown={SANDBOX_UID}:{SANDBOX_UID} overlay/ /",
        ]
    return "\n".join(lines) + "\n"


def dockerfile_text(meta: ArchipelagoMeta, config: TaskDirConfig, overlay: bool = False) -> str:
    """environment/Dockerfile of a task dir: `task_dockerfile` on the world's image."""
    return task_dockerfile(meta.ecr_image or world_image(meta, config), overlay)


def has_overlay(overlay: Path | None) -> bool:
    """`overlay` holds a world subsystem to copy (`copy_overlay`)."""
    from kwrl.tasks.layout import SUBSYSTEMS

    return overlay is not None and any((Path(overlay) / name).is_dir() for name in SUBSYSTEMS)


def _safe_rel(rel: str, where: str) -> PurePosixPath:
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts or "\\" in rel:
        raise TaskFormatError(where, rel, "must be a relative path inside the task dir")
    return p


def copy_overlay(src: Path, dest: Path) -> int:
    """Copy `filesystem/` and `.apps_data/` of `src` into `dest`; symlinks are copied as their files.

    Returns the bytes copied. Anything else at the top of `src` is an error: only the two world
    subsystems can be overlaid.
    """
    from kwrl.tasks.layout import SUBSYSTEMS

    extra = sorted(
        p.name for p in src.iterdir() if p.name not in SUBSYSTEMS and p.name != ".DS_Store"
    )
    if extra:
        raise TaskFormatError(
            src, extra[0], f"unexpected entry in a task overlay; only {SUBSYSTEMS} are allowed"
        )
    total = 0
    for name in SUBSYSTEMS:
        if (src / name).is_dir():
            shutil.copytree(src / name, dest / name, symlinks=False, dirs_exist_ok=True)
            total += sum(f.stat().st_size for f in (dest / name).rglob("*") if f.is_file())
    return total


def write_task_dir(task_dir: Path, spec: TaskSpec, config: TaskDirConfig | None = None) -> Path:
    """Write `spec` as the task dir `task_dir` (replacing it whole); returns the path.

    The dir name should equal `spec.meta.task_slug`; `world_dir` defaults to ../../worlds/<world_id>,
    so write into `DATASET/tasks/<slug>` beside `DATASET/worlds/`.
    """
    config = config or TaskDirConfig()
    task_dir = Path(task_dir)
    if task_dir.name != spec.meta.task_slug:
        raise TaskFormatError(
            task_dir, "task_slug", f"dir name must equal task_slug {spec.meta.task_slug!r}"
        )
    verifiers_json = [verifier_json(v) for v in spec.verifiers]
    parse_verifiers(verifiers_json, task_dir / VERIFIERS_JSON)
    toml_text = task_toml_text(spec, config)
    meta = spec.meta
    if meta.ecr_image is None:
        meta = meta.model_copy(update={"ecr_image": world_image(meta, config)})
    instruction = spec.instruction if spec.instruction.endswith("\n") else spec.instruction + "\n"
    if not instruction.strip():
        raise TaskFormatError(task_dir / INSTRUCTION, None, "instruction is empty")

    files: dict[str, bytes] = {
        INSTRUCTION: instruction.encode(),
        # The verifier sees only /tests: the judge needs the task text there (docs/contracts.md).
        "tests/instruction.md": instruction.encode(),
        TASK_TOML: toml_text.encode(),
        META_JSON: _json_bytes(meta.model_dump(mode="json")),
        VERIFIERS_JSON: _json_bytes(verifiers_json),
        GOLDEN_JSON: _json_bytes(
            [g.model_dump(mode="json", exclude_none=True) for g in spec.golden]
        ),
        TEST_SH: TEST_SH_TEXT.encode(),
        DOCKERFILE: dockerfile_text(meta, config, has_overlay(spec.overlay)).encode(),
    }
    executable = {TEST_SH}
    if spec.solution is not None:
        files[SOLVE_SH] = spec.solution.encode()
        executable.add(SOLVE_SH)
    for rel, data in spec.extra_files.items():
        key = str(_safe_rel(rel, str(task_dir)))
        if key in files:
            raise TaskFormatError(task_dir, rel, "extra file would overwrite a file kwrl writes")
        files[key] = data

    with atomic_dir(task_dir) as tmp:
        for rel, data in sorted(files.items()):
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(0o755 if rel in executable else 0o644)
        if spec.overlay is not None:
            copy_overlay(Path(spec.overlay), tmp / OVERLAY_DIR)
        tmp.chmod(0o755)
    return task_dir


def verifier_json(v: Verifier) -> dict[str, Any]:
    """A verifiers.json entry as Archipelago writes it: every top-level key, unset optional values dropped."""
    data = v.model_dump(mode="json")
    data["verifier_values"] = v.verifier_values.model_dump(mode="json", exclude_none=True)
    return data


def _json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode()


def task_dirs(root: Path, only: Sequence[str] | None = None) -> list[Path]:
    """Task dirs under a dataset, sorted: `root` itself when it holds instruction.md, else the
    folders of `root/tasks` (or of `root`) but hidden ones. With `only`, the task dirs of those
    names in that order. A missing dataset and a name of `only` that is not there are errors naming
    the folder."""
    root = Path(root)
    base = root
    if (root / INSTRUCTION).is_file():
        found = [root]
    else:
        base = root / "tasks" if (root / "tasks").is_dir() else root
        if not base.is_dir():
            raise TaskFormatError(root, None, "dataset dir not found")
        found = sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
    if only is None:
        return found
    by_name = {p.name: p for p in found}
    missing = [n for n in only if n not in by_name]
    if missing:
        raise TaskFormatError(base, "tasks", f"not found: {', '.join(missing)}")
    return [by_name[n] for n in only]
