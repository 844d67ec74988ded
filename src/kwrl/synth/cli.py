"""`kwrl data synth`: generate open worlds and tasks (added to the `data` group in kwrl.cli).

Its flags are `kwrl.synth.generate.SynthConfig`'s fields (`kwrl.cli_config`): `--out D`,
`--worlds 3`, `--tasks_per_world 10`, `--seed 0`, `--domains Law` (repeated, or comma-joined),
`--layout apex-hf`, `--workers 2`, and the switches `--overwrite` and `--control/--no-control`.
"""

from __future__ import annotations

from typing import Any

from kwrl.cli_config import build_config, config_flags
from kwrl.synth.generate import SynthConfig


@config_flags(SynthConfig, switches={"overwrite", "control"})
def synth(overrides: dict[str, Any]) -> None:
    """Generate simulated companies (worlds) and tasks with rubrics, machine checks and gold solutions.

    Every task made must pass the no-op control: each criterion fails on the untouched world with
    an empty answer; one that passes stops generation with an error naming task and criterion.
    """
    from rich.console import Console

    from kwrl.synth.generate import generate

    cfg = build_config(SynthConfig, overrides, "kwrl data synth")
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
