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
        typer.Option(
            "--work",
            help="Dir for tasks, trial dirs and conformance.json (default: a temp dir, removed); "
            "an earlier run's is reused, any other non-empty dir needs --overwrite.",
        ),
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            help="Write into a non-empty --work: replaces only what kwrl wrote there, keeps the "
            "rest."
        ),
    ] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Trials at once.")] = 4,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="Run only checks named so or starting so (repeatable)."),
    ] = None,
) -> None:
    """Run the conformance suite (`kwrl.sandbox.conformance.suite`): real trials of generated tasks in
    ENV; one line per check; exit 1 when any fails, naming it."""
    from rich.console import Console
    from rich.markup import escape

    from kwrl.config import parse_override
    from kwrl.io import claim_output, write_json
    from kwrl.sandbox.conformance.suite import conform as run_suite

    kwargs: dict[str, Any] = {}
    for item in ek or []:
        parts, value = parse_override(item)
        kwargs[".".join(parts)] = value
    console = Console(soft_wrap=True)
    with tempfile.TemporaryDirectory(prefix="kwrl-conform-") as tmp:
        output = claim_output(
            work or Path(tmp), "kwrl sandbox conform", flag="--work", overwrite=overwrite,
            resume=True,
        )  # fmt: skip
        root = output.root
        with output.writing():
            suite = run_suite(
                env, root, env_kwargs=kwargs, full=full, concurrency=concurrency, only=only or ()
            )
            report = asyncio.run(suite)
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
