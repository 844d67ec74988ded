"""`kwrl sandbox`: check a trial environment against kwrl's contract (`kwrl.sandbox.contract`)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(
    help="Trial environments: check one against kwrl's contract.", no_args_is_help=True
)


@app.command("conform")
def conform(
    env: Annotated[
        str,
        typer.Option("--env", "-e", help="Environment import path module:Class, or a preset."),
    ] = "local",
    ek: Annotated[
        list[str] | None, typer.Option("--ek", help="Environment kwarg key=value (repeatable).")
    ] = None,
    full: Annotated[
        bool, typer.Option("--full", help="One generated task per family and every attack.")
    ] = False,
    work: Annotated[
        Path | None,
        typer.Option("--work", help="Scratch dir for tasks and trial dirs (default: a temp dir)."),
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Trials at once.")] = 4,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="Run only checks named so or starting so (repeatable)."),
    ] = None,
) -> None:
    """Run the conformance suite (`kwrl.sandbox.conformance`): real trials of generated tasks in
    ENV; one line per check; exit 1 when any fails, naming it."""
    from rich.console import Console
    from rich.markup import escape

    from kwrl.config import parse_override
    from kwrl.io import write_json
    from kwrl.sandbox.conformance import conform as run_suite

    kwargs: dict[str, Any] = {}
    for item in ek or []:
        parts, value = parse_override(item)
        kwargs[".".join(parts)] = value
    console = Console(soft_wrap=True)
    with tempfile.TemporaryDirectory(prefix="kwrl-conform-") as tmp:
        root = (work or Path(tmp)).resolve()
        root.mkdir(parents=True, exist_ok=True)
        report = asyncio.run(
            run_suite(
                env, root, env_kwargs=kwargs, full=full, concurrency=concurrency, only=only or ()
            )
        )
        write_json(root / "conformance.json", report.as_json())
        for c in report.checks:
            mark = "[green]pass[/green]" if c.passed else "[red]FAIL[/red]"
            console.print(f"{mark} {escape(f'{c.name} ({c.seconds:.1f} s): {c.detail}')}",
                          highlight=False)  # fmt: skip
    failed = [c.name for c in report.failed()]
    summary = f"{env}: {len(report.checks) - len(failed)}/{len(report.checks)} checks passed"
    console.print(escape(summary + (f"; failed: {', '.join(failed)}" if failed else "")),
                  highlight=False)  # fmt: skip
    if failed:
        raise typer.Exit(1)
