"""Check every task of a dataset and report each fault with its file and field.

`validate_dataset(root)` runs, per task dir, each check independently (so one broken file does not
hide another): instruction.md present and non-empty; archipelago.json against `ArchipelagoMeta`
(expected_output among the known values, task_slug equal to the dir name); world seed resolvable
(and its world.json, when present, names the same world); tests/verifiers.json against `Verifier`
(non-empty, unique ids, a primary objective, task_id/world_id agreeing with archipelago.json);
golden_responses.json; tests/test.sh present and, when it runs kwrl's grader, current;
environment/overlay holding only the two world subsystems; no symlink in the task dir or its world
resolving outside it (a chain of links included); task.toml through harbor's own `TaskConfig` plus
kwrl's unknown-key check and positive [environment] limits; for a task graded by kwrl's grader,
`[verifier] timeout_sec` long enough for the grader's deadline (`grader_time_problems`). Across
the dataset: duplicate task ids. With `control=True`, the no-op control (`run_control`): every
criterion a machine can grade must fail on the task's untouched world with an empty answer.

A `Problem` is data, not an exception, so the CLI can print them all in one table.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from kwrl.config import KwrlConfig
from kwrl.errors import KwrlError, TaskFormatError
from kwrl.tasks.archive import escaping_links
from kwrl.tasks.layout import SUBSYSTEMS
from kwrl.tasks.models import ArchipelagoMeta, MachineCheck, SlotCheck
from kwrl.tasks.taskdir import (
    GRADER_DEADLINE_ENV,
    GRADER_DEADLINE_S,
    GRADER_WATCHDOG_GRACE_S,
    INSTRUCTION,
    META_JSON,
    OVERLAY_DIR,
    TASK_TOML,
    TEST_SH,
    VERIFIERS_JSON,
    limit_problems,
    outdated_test_sh,
    read_golden,
    read_instruction,
    read_meta,
    read_task_toml,
    read_verifiers,
    resolve_world,
    task_dirs,
)

if TYPE_CHECKING:
    from harbor.models.task.config import VerifierConfig


@dataclass(frozen=True)
class Problem:
    task: str
    """The task dir's name."""
    file: str
    """The file at fault, relative to the dataset root."""
    field: str | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ControlSummary:
    """What the no-op control covered (`run_control`)."""

    graded: int
    """Criteria graded without a judge (machine checks, the expected-file-type rule): each must
    fail."""
    unjudged: int
    """Criteria only the judge grades: not run by the control."""
    seconds: float


@dataclass
class ValidationReport:
    root: Path
    tasks: int
    problems: list[Problem]
    control: ControlSummary | None = None
    """The no-op control's coverage, when it ran."""

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def bad_tasks(self) -> list[str]:
        return sorted({p.task for p in self.problems})


def _rel(root: Path, path: str | Path) -> str:
    p = Path(path)
    try:
        return str((p.parent.resolve() / p.name).relative_to(root.resolve()))  # a link as itself
    except ValueError:
        return str(p)


SYNTH_SOURCE = "kwrl-synth"
"""task.toml `[metadata] source` of a task `kwrl data synth` wrote: its criteria follow the answer
contract (docs/contracts.md)."""
NO_VALUE_CHECKS = ("file_exists", "event_exists", "xlsx_cell", "doc_contains")
"""Check kinds of a generated task that read no value from prose: their own slots."""


def contract_problem(check: MachineCheck | None, instruction: str) -> str | None:
    """Why a generated criterion has no contract slot (None: it has one, or only a judge grades
    it): its check must be a `slot` whose line the instruction names, or read no value."""
    if check is None or check.kind in NO_VALUE_CHECKS:
        return None
    if not isinstance(check, SlotCheck):
        return (
            f"no contract slot: a generated criterion's check must be a slot or one of "
            f"{', '.join(NO_VALUE_CHECKS)} (got {check.kind!r}), or the criterion judge-only"
        )
    if f"`{check.label}: <" not in instruction:
        return f"slot {check.label!r} is not named in instruction.md (`{check.label}: <form>`)"
    return None


def validate_task(
    task_dir: Path, root: Path | None = None
) -> tuple[list[Problem], ArchipelagoMeta | None]:
    """All problems of one task dir, and its metadata when archipelago.json is readable."""
    root = root or task_dir.parent
    problems: list[Problem] = []

    def check[T](fn: Callable[[], T]) -> T | None:
        try:
            return fn()
        except TaskFormatError as e:
            problems.append(Problem(task_dir.name, _rel(root, e.path), e.field, e.message))
            return None

    def fault(rel: str, field: str | None, message: str) -> None:
        problems.append(Problem(task_dir.name, _rel(root, task_dir / rel), field, message))

    if not (task_dir / INSTRUCTION).is_file():
        fault(INSTRUCTION, None, "missing file: a task dir must hold instruction.md")
    else:
        check(lambda: read_instruction(task_dir))
    meta = check(lambda: read_meta(task_dir))
    verifiers = check(lambda: read_verifiers(task_dir))
    check(lambda: read_golden(task_dir))
    parsed = check(lambda: read_task_toml(task_dir))
    if not (task_dir / TEST_SH).is_file():
        fault(TEST_SH, None, "missing file: the verifier entry point")
    else:
        test_sh = (task_dir / TEST_SH).read_text(errors="replace")
        if outdated_test_sh(test_sh):
            fault(TEST_SH, None, "outdated kwrl verifier (runs the grader from an agent-writable "
                                 "cwd); rewrite the task dir with this kwrl")  # fmt: skip
        if GRADER_MODULE in test_sh and parsed is not None:
            for field, message in grader_time_problems(parsed[1].verifier):
                fault(TASK_TOML, field, message)
    for field, message in limit_problems(parsed[1].environment) if parsed is not None else []:
        fault(TASK_TOML, field, message)
    overlay = task_dir / OVERLAY_DIR
    if overlay.is_dir():
        for entry in sorted(p.name for p in overlay.iterdir() if p.name not in SUBSYSTEMS):
            fault(
                OVERLAY_DIR,
                entry,
                f"unexpected entry; an overlay holds only {' and '.join(SUBSYSTEMS)}",
            )
    for rel, link in escaping_links(task_dir):
        fault(str(rel), None, f"symlink -> {link!r} resolves outside the task dir")
    if meta is not None:
        if meta.task_slug != task_dir.name:
            fault(
                META_JSON,
                "task_slug",
                f"{meta.task_slug!r} differs from the dir name {task_dir.name!r}",
            )
        world = check(lambda: resolve_world(task_dir, meta))
        if world is not None:
            for rel, link in escaping_links(world):
                problems.append(Problem(task_dir.name, _rel(root, world / rel), None,
                                        f"symlink -> {link!r} resolves outside the world dir"))  # fmt: skip
        if world is not None and (world / "world.json").is_file():
            world_json = check(lambda: _world_id_of(world / "world.json"))
            if world_json is not None and world_json != meta.world_id:
                fault(
                    META_JSON,
                    "world_id",
                    f"{meta.world_id!r} but the world's world.json says {world_json!r}",
                )
        for i, v in enumerate(verifiers or []):
            if v.task_id is not None and v.task_id != meta.task_id:
                fault(
                    VERIFIERS_JSON,
                    f"{i}.task_id",
                    f"{v.task_id!r} differs from archipelago.json {meta.task_id!r}",
                )
            if v.world_id is not None and v.world_id != meta.world_id:
                fault(
                    VERIFIERS_JSON,
                    f"{i}.world_id",
                    f"{v.world_id!r} differs from archipelago.json {meta.world_id!r}",
                )
        if parsed is not None and parsed[0].get("metadata", {}).get("source") == SYNTH_SOURCE:
            instruction = (task_dir / INSTRUCTION).read_text(errors="replace")
            for i, v in enumerate(verifiers or []):
                why = contract_problem(v.verifier_values.kwrl_check, instruction)
                if why:
                    fault(VERIFIERS_JSON, f"{i}.verifier_values.kwrl_check", why)
        if parsed is not None:
            toml_id = parsed[0].get("metadata", {}).get("task_id")
            if toml_id is not None and toml_id != meta.task_id:
                fault(
                    TASK_TOML,
                    "metadata.task_id",
                    f"{toml_id!r} differs from archipelago.json {meta.task_id!r}",
                )
    return problems, meta


GRADER_MODULE = "kwrl.grading.verify"
"""A tests/test.sh naming this runs kwrl's grader (current or outdated)."""
GRADER_MARGIN_S = 30.0
"""Seconds `[verifier] timeout_sec` must hold beyond the grader's deadline and its watchdog's grace:
harbor uploading tests/, Python and kwrl starting, listing the world's files (before the deadline
starts), C code finishing a changes.tar.gz member past the alarm, the watchdog writing the zero
reward. A small task's grader runs start to reward in ~0.4 s on a loaded 2-core host; 30 s leaves
room for a cold start, a large world and a slow sandbox."""
_SECONDS = TypeAdapter(Annotated[float, Field(gt=0, allow_inf_nan=False)])
"""A deadline as the grader parses it (`GraderBudget`, pydantic's float), finite here."""
_ENV_TEMPLATE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")
"""harbor's `${VAR}` / `${VAR:-default}` env value, resolved from the host at verifier start."""


def grader_time_problems(verifier: VerifierConfig) -> list[tuple[str, str]]:
    """(field, message) for a harbor `VerifierConfig` whose grader would be cut off while reading.

    `KWRL_GRADER_DEADLINE_S` in `[verifier].env`, when set, must be a positive, finite number of
    seconds; then `timeout_sec` must be at least that deadline (else the grader's default) +
    `GRADER_WATCHDOG_GRACE_S` + `GRADER_MARGIN_S`: harbor cutting the grader off while it reads
    the agent's outputs classifies the trial `grader_budget`, a 0 that trains, so a verifier limit
    below the grader's own blames honest agents for a slow grader. A `${VAR}` value is checked
    through its `:-default` (without one, it is the host's at run time and is not checked). A
    trial's own overrides (the rollout's verifier env, harbor's timeout multiplier) are not in the
    task dir and not checked."""
    raw = verifier.env.get(GRADER_DEADLINE_ENV, "")
    template = _ENV_TEMPLATE.fullmatch(raw)
    value = raw if template is None else template.group(2)
    if value is None:  # `${VAR}`: the host's value at verifier start, unknown here
        return []
    deadline, where = GRADER_DEADLINE_S, "the grader's default"
    if value:  # empty: the grader's default (`GraderBudget.from_env`)
        try:
            deadline, where = _SECONDS.validate_python(value), "[verifier].env"
        except ValidationError as e:
            why = e.errors()[0]["msg"]
            return [(f"verifier.env.{GRADER_DEADLINE_ENV}",
                     f"{raw!r}: {why}; the grader's deadline is a positive number of seconds")]  # fmt: skip
    grace = GRADER_WATCHDOG_GRACE_S
    need = deadline + grace + GRADER_MARGIN_S
    timeout = float(verifier.timeout_sec)
    if timeout >= need:
        return []
    room = grace + GRADER_MARGIN_S
    lower = (
        f"to at most {timeout - room:g}" if timeout > room else f"({room:g} s under timeout_sec)"
    )
    return [(
        "verifier.timeout_sec",
        f"{timeout:g} s is under the grader's deadline ({deadline:g} s, {GRADER_DEADLINE_ENV} from "
        f"{where}) + {grace:g} s for its watchdog + {GRADER_MARGIN_S:g} s for its start-up and "
        f"changes archive = {need:g} s: harbor would cut a slow grader off while it reads the "
        "agent's outputs, a 0 that trains (grader_budget) blaming the agent; raise timeout_sec "
        f"to at least {need:g}, or lower {GRADER_DEADLINE_ENV} in [verifier].env {lower}",
    )]  # fmt: skip


def _world_id_of(path: Path) -> str:
    from kwrl.tasks.taskdir import read_json

    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("world_id"), str):
        raise TaskFormatError(path, "world_id", "missing or not a string")
    return data["world_id"]


CONTROL_MODULE = "kwrl.grading.control"
"""The no-op control, run as `python -m kwrl.grading.control ROOT`: grading sits above the data
layer, which names it (as a task's test.sh names the verifier) rather than importing it."""


def run_control(root: Path) -> tuple[list[Problem], ControlSummary]:
    """The no-op control on every task dir under `root`, in a child process
    (`kwrl.grading.control`): a problem on tests/verifiers.json for each criterion that passes on
    the task's untouched world with an empty answer, or whose world could not be graded. Raises
    `KwrlError` when the control itself fails."""
    root = Path(root)
    dirs = task_dirs(root)
    base = root if dirs and dirs[0] != root else root.parent
    by_name = {d.name: d for d in dirs}
    # -P: the dataset's folder (the cwd) never shadows kwrl's modules.
    proc = subprocess.run(
        [sys.executable, "-P", "-m", CONTROL_MODULE, str(root)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    try:
        out = json.loads(proc.stdout) if proc.returncode in (0, 1) else None
    except json.JSONDecodeError:
        out = None
    if not isinstance(out, dict):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise KwrlError(
            f"{root}: the no-op control (python -m {CONTROL_MODULE}) failed with exit code "
            f"{proc.returncode}: {' / '.join(tail) or 'no output'}"
        )
    problems = [
        Problem(p["task"], _rel(base, by_name[p["task"]] / VERIFIERS_JSON), p["field"],
                p["message"])
        for p in out["passes"]
    ]  # fmt: skip
    problems += [
        Problem(task, _rel(base, by_name[task] / VERIFIERS_JSON), None,
                f"the no-op control could not grade the task's untouched world: {why}")
        for task, why in out["errors"].items()
    ]  # fmt: skip
    return problems, ControlSummary(out["graded"], out["unjudged"], out["seconds"])


class ValidateConfig(KwrlConfig):
    """`kwrl data validate`'s config (its flags)."""

    as_json: bool = Field(default=False, alias="json")
    """Print the problems as JSON."""
    control: bool = True
    """Run the no-op control: every machine-graded criterion must fail on the task's untouched
    world with an empty answer."""


def validate_dataset(root: Path, *, control: bool = False) -> ValidationReport:
    """Validate every task dir under `root` (a dataset, a folder of task dirs, or one task dir);
    with `control`, run the no-op control (`run_control`) too."""
    root = Path(root)
    if not root.is_dir():
        raise TaskFormatError(root, None, "dataset dir not found")
    dirs = task_dirs(root)
    if not dirs:
        raise TaskFormatError(
            root, None, "no task dirs here: a dataset holds tasks/<slug>/, each with instruction.md"
        )
    base = root if dirs[0] != root else root.parent
    problems: list[Problem] = []
    owners: dict[str, str] = {}
    for d in dirs:
        found, meta = validate_task(d, base)
        problems.extend(found)
        if meta is None:
            continue
        if meta.task_id in owners:
            problems.append(
                Problem(
                    d.name,
                    _rel(base, d / META_JSON),
                    "task_id",
                    f"duplicate task id {meta.task_id!r} (also in {owners[meta.task_id]})",
                )
            )
        else:
            owners[meta.task_id] = d.name
    report = ValidationReport(root=root, tasks=len(dirs), problems=problems)
    if control and dirs:
        found, report.control = run_control(root)
        problems.extend(found)
    return report


def report_json(report: ValidationReport) -> str:
    return json.dumps(
        {
            "root": str(report.root),
            "tasks": report.tasks,
            "problems": [p.as_dict() for p in report.problems],
            "control": asdict(report.control) if report.control else None,
        },
        indent=2,
    )
