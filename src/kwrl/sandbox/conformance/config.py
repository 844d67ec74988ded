"""`ConformConfig`: what `kwrl sandbox conform` checks and how, its flags (`kwrl.cli_config`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from kwrl.config import OutputConfig
from kwrl.sandbox.base import SandboxSettings


class ConformConfig(OutputConfig):
    """`kwrl sandbox conform`'s config: the environment under test, named and set as every verb
    that runs trials names and sets it (`--sandbox.environment docker`, `--sandbox.kwargs k=v`),
    and the suite's own choices."""

    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    """The environment under test (`sandbox.environment`: a preset or an import path
    module:Class) and its settings."""
    full: bool = False
    """One generated task per family and every attack (default: a fast few)."""
    work: Path | None = None
    """Dir for tasks, trial dirs and conformance.json (default: a temp dir, removed); an earlier
    run's is reused, any other non-empty dir needs --overwrite."""
    concurrency: int = Field(default=4, ge=1)
    """Trials at once."""
    only: list[str] = Field(default_factory=list)
    """Run only the checks named so or starting so (repeatable; the first oracle trial and
    `leftovers` always run)."""
