"""The run manifest: what a score needs to be reproduced, carried by each trial and each score row.

`RunManifest` names the code (kwrl's version, and the git commit of the checkout kwrl runs from),
the settings (`config_hash`: sha256 of the canonical JSON of the run's config), the seeds that
config sets, the judge (its spec, which names its model, and the hash of its prompt template) and,
for one trial, the world it ran in (`world_digest`) and its own sampling seed.

`run_manifest(settings)` builds it once per run (`kwrl.rollout.runner.build_rollout_config`, which
every verb goes through, puts it on the `RolloutConfig`). `run_trial` writes the trial's own
(`for_trial`) to `<trial dir>/manifest.json` and puts it on the `TrialRecord`, so rollout's
summary rows and eval's outcome rows (trials.jsonl, eval.json) carry it; `read_manifest` (and so
`kwrl.rollout.trial.read_trial`) reads it back, and `kwrl report` shows it.

Non-obvious choices: the config hash leaves out where the run's outputs go and where its dataset
lies (`LOCATIONS`: `out`, `dataset`, `overwrite`), so the same settings hash the same from any directory; the
dataset's content is in each trial's `world_digest` and task name. The world digest covers the
world seed the task names and the task's own overlay (every file's path and bytes), so it changes
when any file the agent starts from changes. The git commit is that of the checkout holding
kwrl's source (None when kwrl is installed, not run from a checkout), with `git_dirty` when that
tree has uncommitted changes (the commit alone would then not reproduce the run); it is read once
per process, as the code a process runs is the code it imported.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

import kwrl
from kwrl.errors import TaskFormatError, TrialFormatError
from kwrl.io import write_json

MANIFEST_JSON = "manifest.json"
"""The trial dir's manifest file."""
LOCATIONS = frozenset({"out", "dataset", "overwrite"})
"""Config fields that say where things are (and whether an output dir may be written into), not
how the run goes: left out of the config hash."""
TRIAL_SEED = "trial"
"""The seeds key of a trial's own sampling seed: the agent's `seed` kwarg (eval's `trial_seed`, or
the config's `agent.seed`)."""


class RunManifest(BaseModel):
    """What reproduces a score: code, settings, seeds, judge, and (for one trial) the world."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    kwrl_version: str = ""
    """`kwrl.__version__`."""
    git_commit: str | None = None
    """Commit of the checkout kwrl runs from; None when not run from a git checkout."""
    git_dirty: bool | None = None
    """That checkout had uncommitted changes to tracked files; None without a checkout."""
    config_hash: str = ""
    """sha256 (16 hex digits) of the run's config as canonical JSON, `LOCATIONS` left out."""
    seeds: dict[str, int] = Field(default_factory=dict)
    """Every seed the config sets ({dotted key: value}); a trial's own sampling seed as `trial`."""
    judge: str | None = None
    """The judge's spec (it names the judge's model); None: machine-checked criteria only."""
    judge_prompt_hash: str | None = None
    """sha256 (16 hex digits) of the judge's prompt template; None without a judge."""
    world_digest: str | None = None
    """sha256 (16 hex digits) of the trial's world seed and task overlay files; None on the run's
    own manifest, and for a task that names no world."""

    def for_trial(self, task_dir: Path, seed: int | None = None) -> RunManifest:
        """This run's manifest for one trial of `task_dir`, sampled with `seed` (if any)."""
        seeds = self.seeds if seed is None else {**self.seeds, TRIAL_SEED: seed}
        return self.model_copy(update={"world_digest": world_digest(task_dir), "seeds": seeds})

    def run_part(self) -> RunManifest:
        """The run-level part: what every trial of the run shares (no world, no trial seed)."""
        seeds = {k: v for k, v in self.seeds.items() if k != TRIAL_SEED}
        return self.model_copy(update={"world_digest": None, "seeds": seeds})

    def line(self) -> str:
        """One line for a terminal: version, commit, config hash, judge."""
        commit = (self.git_commit or "-")[:12] + ("+dirty" if self.git_dirty else "")
        judge = f"{self.judge} (prompt {self.judge_prompt_hash})" if self.judge else "none"
        seeds = " ".join(f"{k}={v}" for k, v in sorted(self.seeds.items())) or "none"
        return (
            f"kwrl {self.kwrl_version} commit {commit} config {self.config_hash} "
            f"seeds {seeds} judge {judge}"
        )


def short_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def config_hash(config: BaseModel) -> str:
    """sha256 of `config` as canonical JSON (sorted keys, no spaces), `LOCATIONS` left out."""
    data = config.model_dump(mode="json", exclude=set(LOCATIONS & type(config).model_fields.keys()))
    return short_hash(json.dumps(data, sort_keys=True, separators=(",", ":")).encode())


def _seeds(data: Any, prefix: str = "") -> Iterator[tuple[str, int]]:
    if not isinstance(data, Mapping):
        return
    for key, value in data.items():  # pyright: ignore[reportUnknownVariableType]
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _seeds(value, f"{name}.")
        elif (key == "seed" or str(key).endswith("_seed")) and type(value) is int:
            yield name, value


def config_seeds(config: BaseModel) -> dict[str, int]:
    """{dotted key: value} of every field named `seed` or `*_seed` that `config` sets to an int."""
    return dict(_seeds(config.model_dump(mode="json")))


def checkout_state(root: Path) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the git checkout whose top is `root`; (None, None) when `root` is not the
    top of one (or git is missing)."""

    def git(*args: str) -> str | None:
        try:
            r = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30,
                check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != Path(root).resolve():
        return None, None
    commit = git("rev-parse", "--verify", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return commit, (None if status is None or commit is None else bool(status))


@functools.cache
def git_state() -> tuple[str | None, bool | None]:
    """`checkout_state` of the checkout holding kwrl's source (its `src/kwrl`), once per process."""
    return checkout_state(Path(kwrl.__file__).resolve().parents[2])


@functools.cache
def judge_prompt_hash() -> str:
    """sha256 (16 hex digits) of the judge's prompt template (`kwrl.grading.judges.prompt`)."""
    from kwrl.grading.judges.prompt import PROMPT_FILE

    return short_hash(PROMPT_FILE.read_bytes())


def run_manifest(settings: BaseModel, judge: str | None) -> RunManifest:
    """The manifest of a run of `settings` (a verb's config) judged by `judge`."""
    commit, dirty = git_state()
    return RunManifest(
        kwrl_version=kwrl.__version__, git_commit=commit, git_dirty=dirty,
        config_hash=config_hash(settings), seeds=config_seeds(settings), judge=judge,
        judge_prompt_hash=judge_prompt_hash() if judge else None,
    )  # fmt: skip


@functools.lru_cache(maxsize=1024)
def tree_digest(root: Path) -> str:
    """sha256 of every file under `root`: its path relative to `root` and its bytes (a symlink:
    its target). Once per dir and process: a world seed many tasks share is read once."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            data = f"link:{path.readlink()}".encode()
        elif path.is_file():
            data = path.read_bytes()
        else:
            continue
        rel = path.relative_to(root).as_posix()
        h.update(f"{rel}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=4096)
def _world_digest(task_dir: Path) -> str | None:
    from kwrl.tasks.taskdir import META_JSON, OVERLAY_DIR, read_meta, world_dir_of

    roots: list[tuple[str, Path]] = []
    if (task_dir / META_JSON).is_file():
        with contextlib.suppress(TaskFormatError):  # the trial itself reports the task's fault
            roots.append(("world", world_dir_of(task_dir, read_meta(task_dir))))
    roots.append(("overlay", task_dir / OVERLAY_DIR))
    parts = [f"{label}:{tree_digest(root)}" for label, root in roots if root.is_dir()]
    return short_hash("\n".join(parts).encode()) if parts else None


def world_digest(task_dir: Path) -> str | None:
    """sha256 (16 hex digits) of `task_dir`'s world seed (`archipelago.json`'s world) and its
    overlay (`environment/overlay`): every file's path and bytes. None when it has neither.
    Computed once per task dir and process (world seeds are written once, never edited)."""
    return _world_digest(Path(task_dir).resolve())


def write_manifest(trial_dir: Path, manifest: RunManifest) -> None:
    """`<trial_dir>/manifest.json`, written atomically."""
    write_json(trial_dir / MANIFEST_JSON, manifest.model_dump(mode="json"))


def read_manifest(trial_dir: Path) -> RunManifest | None:
    """`<trial_dir>/manifest.json`, or None where a trial has none (written by an older kwrl, or a
    trial that never started). A file that is not a manifest is a TrialFormatError naming it."""
    path = Path(trial_dir) / MANIFEST_JSON
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return RunManifest.model_validate_json(text)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "<root>"
        raise TrialFormatError(f"{path}: {loc}: {first['msg']}") from e
