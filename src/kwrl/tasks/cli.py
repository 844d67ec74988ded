"""`kwrl data ...`: convert, extract, pack, validate and count task datasets.

Each verb's flags are its config's fields (`kwrl.cli_config`): `ConvertRun` (`kwrl.tasks.apex`),
`ExtractConfig` and `PackConfig` (`kwrl.tasks.bundles`), `ValidateConfig`, `StatsConfig`; the
dataset or source is the one positional argument.
Heavy imports (pyarrow, harbor, huggingface_hub) happen inside the commands. Errors are kwrl's
own (`TaskFormatError`, `UnsafeArchiveError`) and reach `kwrl.cli.main`, which prints them as one
line naming file and field and exits 2; `validate` exits 1 when the dataset has problems.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kwrl.cli_config import build_config, config_flags
from kwrl.tasks.apex import ConvertRun
from kwrl.tasks.bundles import ExtractConfig, PackConfig
from kwrl.tasks.stats import StatsConfig
from kwrl.tasks.validate import ValidateConfig

app = typer.Typer(
    name="data",
    help="Task datasets: convert APEX-Agents, extract/pack parquet bundles, validate, stats.",
    no_args_is_help=True,
)


SHORT = {"out": "-o", "quiet": "-q"}
"""Short spellings of the data verbs' flags."""
SWITCHES = {"overwrite", "quiet"}
"""Their switches (`--overwrite`, `--quiet`): bool fields whose flag takes no value."""


@app.command()
@config_flags(ConvertRun, short=SHORT, switches=SWITCHES)
def convert(
    src: Annotated[str, typer.Argument(help="APEX HF layout: a local folder or a HF dataset id.")],
    *,
    overrides: dict[str, Any],
) -> None:
    """Convert APEX-Agents (tasks_and_rubrics.json, world zips, task_files) into a kwrl dataset."""
    from rich.console import Console

    from kwrl.tasks.apex import convert_apex

    cfg = build_config(ConvertRun, overrides, "kwrl data convert")
    report = convert_apex(src, cfg.out, cfg, progress=not cfg.quiet)
    console = Console()
    for w in report.warnings:
        console.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
    console.print(
        f"converted {report.tasks} tasks, {report.worlds} worlds, {report.overlays} overlays "
        f"({report.bytes_unpacked} bytes unpacked) into {cfg.out}",
        highlight=False,
    )


@app.command()
@config_flags(ExtractConfig, short=SHORT, switches=SWITCHES)
def extract(
    src: Annotated[
        str, typer.Argument(help="A .parquet file, a folder of shards, or a HF dataset id.")
    ],
    *,
    overrides: dict[str, Any],
) -> None:
    """Extract parquet bundles (columns path, task_binary) into --out.

    A dataset bundle (`kwrl data pack D`: task shards plus worlds-*.parquet) is restored as a
    dataset: <out>/tasks/<path> and <out>/worlds/<path>. Task bundles without world shards (the
    recipe's) give <out>/<path>: extract them into DATASET/tasks so the tasks find their worlds
    at DATASET/worlds.
    """
    from rich.console import Console

    from kwrl.tasks.bundles import extract_bundles, resolve_source

    cfg = build_config(ExtractConfig, overrides, "kwrl data extract")
    out = cfg.out
    shards = resolve_source(src, revision=cfg.revision)
    local = Path(src) if Path(src).exists() else None
    names = extract_bundles(
        shards, out, max_bytes=cfg.max_bytes, overwrite=cfg.overwrite, source=local,
        progress=not cfg.quiet,
    )  # fmt: skip
    worlds = sum(n.startswith("worlds/") for n in names)
    what = f"{len(names) - worlds} tasks and {worlds} worlds" if worlds else f"{len(names)} dirs"
    Console().print(f"extracted {what} from {len(shards)} shards into {out}", highlight=False)


@app.command()
@config_flags(PackConfig, short=SHORT, switches=SWITCHES)
def pack(
    src: Annotated[
        Path,
        typer.Argument(
            help="A dataset dir (tasks/, worlds/), or a folder of self-contained task dirs."
        ),
    ],
    *,
    overrides: dict[str, Any],
) -> None:
    """Pack a dataset into deterministic parquet bundles, the recipe's layout (extract inverts it).

    One row per task dir (columns path = its name, task_binary = gzip tar of the dir) in
    <prefix>-NNNNN-of-MMMMM.parquet, and one row per world seed of DATASET/worlds in
    worlds-NNNNN-of-MMMMM.parquet: worlds travel once, shared by their tasks. DATASET/tasks alone
    is refused (its tasks' worlds are outside it); so is a dir that is not a dataset.
    """
    from rich.console import Console

    from kwrl.tasks.bundles import is_world_shard, pack_bundles

    cfg = build_config(PackConfig, overrides, "kwrl data pack")
    out = cfg.out
    shards = pack_bundles(
        src, out, rows_per_shard=cfg.rows_per_shard, prefix=cfg.prefix, overwrite=cfg.overwrite,
        progress=not cfg.quiet,
    )  # fmt: skip
    worlds = sum(is_world_shard(s) for s in shards)
    Console().print(
        f"packed {src} into {len(shards) - worlds} task shards and {worlds} world shards in {out}",
        highlight=False,
    )


@app.command()
@config_flags(ValidateConfig, switches={"json", "control"})
def validate(
    dataset: Annotated[
        Path, typer.Argument(help="Dataset dir, folder of task dirs, or one task dir.")
    ],
    *,
    overrides: dict[str, Any],
) -> None:
    """Check every task (files, schemas, world, harbor task.toml, the grader's time, duplicate ids)
    and run the no-op control.

    kwrl's grader needs verifier.timeout_sec >= KWRL_GRADER_DEADLINE_S (default 180) + 50 s.
    The no-op control grades each task's untouched world with an empty final answer without a
    judge: a criterion that passes rewards doing nothing; criteria only a judge grades are
    counted, not run. A generated task's criteria (task.toml source "kwrl-synth") must each
    read a slot its instruction names (`Label: <form>`), read no value (a file, an event, a
    cell) or be judge-only (docs/contracts.md). Exit 1 on problems.
    """
    from rich.console import Console
    from rich.table import Table

    from kwrl.tasks.validate import report_json, validate_dataset

    cfg = build_config(ValidateConfig, overrides, "kwrl data validate")
    as_json = cfg.as_json
    report = validate_dataset(dataset, control=cfg.control)
    console = Console()
    if as_json:
        typer.echo(report_json(report))
    elif report.ok:
        console.print(
            f"[green]ok[/green]: {report.tasks} tasks valid in {dataset}", highlight=False
        )
    else:
        table = Table(title=f"{len(report.bad_tasks)} of {report.tasks} tasks invalid")
        for col in ("task", "file", "field", "problem"):
            table.add_column(col, overflow="fold")
        for p in report.problems:
            table.add_row(p.task, p.file, p.field or "", p.message)
        console.print(table)
    if report.control is not None and not as_json:
        c = report.control
        console.print(
            f"no-op control: {c.graded} criteria graded without a judge on the untouched worlds "
            f"with an empty answer, {c.unjudged} skipped (only a judge grades them; "
            f"{c.seconds:.1f} s)",
            highlight=False,
        )
    if not report.ok:
        raise typer.Exit(1)


@app.command()
@config_flags(StatsConfig, switches={"json"})
def stats(
    dataset: Annotated[Path, typer.Argument(help="Dataset dir or folder of task dirs.")],
    *,
    overrides: dict[str, Any],
) -> None:
    """Tasks per domain and world, criteria per task, expected output types, difficulty tiers."""
    from rich.console import Console
    from rich.table import Table

    from kwrl.tasks.stats import dataset_stats

    s = dataset_stats(dataset)
    if build_config(StatsConfig, overrides, "kwrl data stats").as_json:
        typer.echo(s.model_dump_json(indent=2))
        return
    console = Console()
    c = s.criteria
    console.print(
        f"{s.tasks} tasks ({s.unreadable} unreadable), {len(s.worlds)} worlds; criteria per task "
        f"min {c.min} / mean {c.mean:.2f} / max {c.max} ({c.total} in all)",
        highlight=False,
    )
    for title, counts in (
        ("tasks per domain", s.domains),
        ("expected output", s.expected_outputs),
        ("difficulty", s.difficulty),
    ):
        if counts:
            table = Table(title=title)
            table.add_column(title.split()[-1])
            table.add_column("tasks", justify="right")
            for k, n in counts.items():
                table.add_row(k, str(n))
            console.print(table)
    table = Table(title="tasks per world")
    for col in ("world", "name", "tasks"):
        table.add_column(col, justify="right" if col == "tasks" else "left", overflow="fold")
    for w in s.worlds:
        table.add_row(w.world_id, w.name or "", str(w.tasks))
    console.print(table)
