"""`kwrl sandbox`: check a trial environment against kwrl's contract (`kwrl.sandbox.contract`).

`kwrl sandbox conform`'s flags are `kwrl.sandbox.conformance.config.ConformConfig`'s fields
(`kwrl.cli_config`): the environment as every verb that runs trials names it
(`--sandbox.environment docker`, `--sandbox.kwargs key=value`, `--sandbox.allow_missing_limits
true`), then `--full`, `--work DIR`, `--overwrite`, `--concurrency N`, `--only NAME`.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import typer

from kwrl.cli_config import build_config, config_flags
from kwrl.sandbox.conformance.config import ConformConfig

app = typer.Typer(
    help="Trial environments: check one against kwrl's contract.", no_args_is_help=True
)


@app.command("conform")
@config_flags(ConformConfig, switches={"full", "overwrite"})
def conform(overrides: dict[str, Any]) -> None:
    """Run the conformance suite (`kwrl.sandbox.conformance.suite`): real trials of generated tasks in
    the environment `--sandbox.environment` names; one line per check; exit 1 when any fails,
    naming it."""
    from rich.console import Console
    from rich.markup import escape

    from kwrl.io import claim_output, write_json
    from kwrl.sandbox.conformance.suite import conform as run_suite

    cfg = build_config(ConformConfig, overrides, "kwrl sandbox conform")
    env, kwargs = cfg.sandbox.environment, cfg.sandbox.environment_kwargs()  # bad: exit 2
    console = Console(soft_wrap=True)
    with tempfile.TemporaryDirectory(prefix="kwrl-conform-") as tmp:
        output = claim_output(
            cfg.work or Path(tmp), "kwrl sandbox conform", flag="--work", overwrite=cfg.overwrite,
            resume=True,
        )  # fmt: skip
        root = output.root
        with output.writing():
            suite = run_suite(
                env, root, env_kwargs=kwargs, full=cfg.full, concurrency=cfg.concurrency,
                only=cfg.only,
            )  # fmt: skip
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
