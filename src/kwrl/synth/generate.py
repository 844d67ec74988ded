"""Generate a dataset: N worlds x M tasks, in parallel worker processes, deterministic per seed.

World `i` gets domain `domains[i % len(domains)]` and its own seeded streams, so a world's bytes
depend only on (seed, i, domain, tasks per world), never on the worker that built it or the order
workers finish in. Workers write their world's files into a stage dir inside the output dir; the
parent writes the apex-hf index files in world order, then the stage's entries are renamed into
the output dir (`kwrl.io.OutputDir.staged`: an overwrite replaces only what kwrl wrote there).

Then the parent runs the no-op control on every task dir (`kwrl.tasks.validate.run_control`): a
criterion that passes on its task's untouched world with an empty answer would pay a policy for
doing nothing, and generation stops with an error naming each such task and criterion (the
dataset is left on disk to inspect). It is a bug in a family, not bad luck: regenerating would
hide it and break the seed's bytes, so nothing is retried. The apex-hf layout carries no machine
checks, so there is nothing to run it on.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from kwrl.config import OutputConfig
from kwrl.tasks.models import DOMAINS

Layout = Literal["task-dirs", "apex-hf"]


class SynthConfig(OutputConfig):
    """Settings of `kwrl data synth` (its flags: `kwrl.cli_config`)."""

    out: Path
    """Output dataset dir (created; must be empty or absent unless overwrite)."""
    worlds: int = Field(default=3, ge=1)
    """Number of worlds to generate."""
    tasks_per_world: int = Field(default=10, ge=1, le=60)
    """Tasks per world."""
    seed: int = 0
    """Root seed: same seed, same bytes."""
    domains: list[str] = Field(default_factory=lambda: list(DOMAINS))
    """APEX domains, assigned to worlds round-robin: Investment Banking, Law, Management Consulting."""
    layout: Layout = "task-dirs"
    """'task-dirs' (kwrl training layout) or 'apex-hf' (APEX-Agents HF layout)."""
    workers: int = Field(default=2, ge=1)
    """Worker processes."""
    control: bool = True
    """Run the no-op control on every task dir written: fail when a criterion passes on its
    untouched world with an empty answer."""

    @field_validator("domains", mode="before")
    @classmethod
    def _comma_joined(cls, v: Any) -> Any:
        """`--domains 'Law,Tax'` (one item naming several) is those domains."""
        if isinstance(v, str):
            v = [v]
        if isinstance(v, list):
            return [d.strip() for item in v for d in str(item).split(",") if d.strip()]
        return v

    @field_validator("domains")
    @classmethod
    def _domains(cls, v: list[str]) -> list[str]:
        bad = [d for d in v if d not in DOMAINS]
        if bad or not v:
            raise ValueError(f"unknown domain(s) {bad}; choose from {list(DOMAINS)}")
        return v


def _one(
    args: tuple[int, int, str, int, str, str],
) -> tuple[int, dict[str, Any] | None, list[dict[str, Any]]]:
    seed, index, domain, n_tasks, layout, out = args
    from kwrl.synth.layout import build_world, write_apex_world, write_task_dirs

    wf = build_world(seed, index, domain, n_tasks)
    if layout == "task-dirs":
        write_task_dirs(Path(out), wf)
        return index, None, []
    world, rows = write_apex_world(Path(out), wf)
    return index, world, rows


def generate(cfg: SynthConfig, *, progress: bool = True) -> dict[str, Any]:
    """Write the dataset; returns a summary (worlds, tasks, seconds)."""
    from kwrl.io import claim_output
    from kwrl.synth.layout import write_apex_index

    out = Path(cfg.out)
    output = claim_output(out, "kwrl data synth", overwrite=cfg.overwrite)
    t0 = time.perf_counter()
    results: dict[int, tuple[dict[str, Any] | None, list[dict[str, Any]]]] = {}
    from rich.progress import Progress

    with output.staged() as stage, Progress(disable=not progress, transient=True) as bar:
        jobs = [
            (cfg.seed, i, cfg.domains[i % len(cfg.domains)], cfg.tasks_per_world, cfg.layout,
             str(stage))
            for i in range(cfg.worlds)
        ]  # fmt: skip
        task = bar.add_task("worlds", total=len(jobs))
        if cfg.workers == 1 or len(jobs) == 1:
            for j in jobs:
                i, w, rows = _one(j)
                results[i] = (w, rows)
                bar.advance(task)
        else:
            with ProcessPoolExecutor(max_workers=cfg.workers) as pool:
                for i, w, rows in pool.map(_one, jobs):
                    results[i] = (w, rows)
                    bar.advance(task)
        if cfg.layout == "apex-hf":
            worlds = [results[i][0] for i in sorted(results)]
            rows = [r for i in sorted(results) for r in results[i][1]]
            write_apex_index(stage, [w for w in worlds if w is not None], rows)
    if cfg.layout == "apex-hf":
        n_tasks = sum(len(results[i][1]) for i in results)
    else:
        n_tasks = sum(1 for _ in (out / "tasks").iterdir()) if (out / "tasks").exists() else 0
    written = time.perf_counter()
    control = None
    if cfg.control and cfg.layout == "task-dirs" and n_tasks:
        control = _control(out)
    return {
        "worlds": cfg.worlds,
        "tasks": n_tasks,
        "seconds": round(time.perf_counter() - t0, 2),
        "control_seconds": round(time.perf_counter() - written, 2) if control else None,
        "control": control,
        "out": str(out),
    }


def _control(out: Path) -> dict[str, Any]:
    """The no-op control on the written task dirs; raises `TaskFormatError` naming each task and
    criterion that passes it."""
    from dataclasses import asdict

    from kwrl.errors import TaskFormatError
    from kwrl.tasks.validate import run_control

    problems, summary = run_control(out)
    if problems:
        first = problems[0]
        every = "; ".join(f"{p.file}: {p.field or '-'}" for p in problems[:10])
        more = f" and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise TaskFormatError(
            out / first.file, first.field,
            f"{first.message}. {len(problems)} criteria fail the no-op control ({every}{more}); "
            f"the family that wrote them is at fault. The dataset is left in {out} to inspect",
        )  # fmt: skip
    return asdict(summary)
