"""`kwrl data synth`: generate open worlds and tasks (added to the `data` group in kwrl.cli)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def synth(
    out: Annotated[Path, typer.Option("--out", help="Output dataset dir.")],
    worlds: Annotated[int, typer.Option("--worlds", help="Number of worlds.")] = 3,
    tasks_per_world: Annotated[
        int, typer.Option("--tasks-per-world", help="Tasks per world.")
    ] = 10,
    seed: Annotated[int, typer.Option("--seed", help="Root seed: same seed, same bytes.")] = 0,
    domains: Annotated[
        list[str] | None,
        typer.Option(
            "--domains",
            help="Domain(s), repeatable: 'Investment Banking', 'Law', 'Management Consulting'.",
        ),
    ] = None,
    layout: Annotated[str, typer.Option("--layout", help="task-dirs | apex-hf")] = "task-dirs",
    workers: Annotated[int, typer.Option("--workers", help="Worker processes.")] = 2,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Write into a non-empty dir.")
    ] = False,
    control: Annotated[
        bool,
        typer.Option(
            "--control/--no-control",
            help="Run the no-op control on every task made: fail when a criterion passes on the "
            "untouched world with an empty answer.",
        ),
    ] = True,
) -> None:
    """Generate simulated companies (worlds) and tasks with rubrics, machine checks and gold solutions.

    Every task made must pass the no-op control: each criterion fails on the untouched world with
    an empty answer; one that passes stops generation with an error naming task and criterion.
    """
    from pydantic import ValidationError
    from rich.console import Console

    from kwrl.config import format_validation_error
    from kwrl.errors import ConfigError
    from kwrl.synth.generate import SynthConfig, generate

    raw = {"out": out, "worlds": worlds, "tasks_per_world": tasks_per_world, "seed": seed, "layout": layout,
           "workers": workers, "overwrite": overwrite, "control": control}  # fmt: skip
    if domains:
        raw["domains"] = [d for item in domains for d in item.split(",") if d.strip()]
    try:
        cfg = SynthConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_validation_error("kwrl data synth", e)) from None
    summary = generate(cfg)
    console = Console()
    console.print(
        f"wrote {summary['worlds']} worlds, {summary['tasks']} tasks to {summary['out']} "
        f"({cfg.layout}) in {summary['seconds']:.1f} s"
    )
    if (c := summary["control"]) is not None:
        console.print(
            f"no-op control: all {c['graded']} criteria fail on the untouched worlds with an "
            f"empty answer ({summary['control_seconds']:.1f} s)",
            highlight=False,
        )
