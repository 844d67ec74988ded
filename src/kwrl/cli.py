"""The `kwrl` command: one verb (or verb group) per stage.

Each stage keeps its commands in its own `cli.py` and is registered here, so this file stays a
table of contents. Heavy imports happen inside the commands, so `kwrl --help` is fast.
"""

from __future__ import annotations

import importlib
import os

import typer

# Idle OpenMP workers sleep instead of spinning. Trials, rollouts and evaluations run the torch
# engine beside sandbox, MCP and grader processes on the same cores, where spinning workers take
# their CPU: sleeping ones made the in-process engine's evaluations ~8% faster on 2 cores
# (benchmarks/engine_batching.py) and cost the learner nothing measurable (benchmarks/sft_step.py).
# libgomp reads it once, so it must be set before torch is imported; an explicit value wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

app = typer.Typer(
    name="kwrl",
    help="Train knowledge-work agents with RL: worlds, sandboxes, agent, grader, trainer.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# (module, attribute, name): a typer.Typer is added as a group, a function as a single verb;
# "GROUP VERB" adds a verb to a group listed above it (synth/ sits above tasks/, so `kwrl data
# synth` joins the `data` group here rather than tasks/ importing it).
_STAGES: list[tuple[str, str, str]] = [
    ("kwrl.worlds.cli", "app", "world"),
    ("kwrl.grading.cli", "grade", "grade"),
    ("kwrl.tasks.cli", "app", "data"),
    ("kwrl.synth.cli", "synth", "data synth"),
    ("kwrl.rollout.cli", "trial_app", "trial"),
    ("kwrl.rollout.cli", "rollout", "rollout"),
    ("kwrl.sandbox.cli", "app", "sandbox"),
    ("kwrl.llm.cli", "serve", "serve"),
    ("kwrl.train.cli", "train", "train"),
    ("kwrl.train.cli", "smoke", "smoke"),
    ("kwrl.eval.cli", "eval", "eval"),
    ("kwrl.eval.cli", "report", "report"),
]

DEBUG_ENV = "KWRL_DEBUG"
"""Set (to anything but 0 or empty) to see the traceback of an error kwrl would print as one line."""


def _version(value: bool) -> None:
    if value:
        from kwrl import __version__

        print(f"kwrl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_version, help="Print kwrl's version and exit."
    ),
    debug: bool = typer.Option(
        False,
        "--debug",
        help=f"Show the traceback of an error otherwise printed as one line (also {DEBUG_ENV}=1; "
        "--debug may come anywhere on the line).",
    ),
) -> None:
    """Train knowledge-work agents with RL: worlds, sandboxes, agent, grader, trainer."""
    if debug:
        os.environ[DEBUG_ENV] = "1"


_groups: dict[str, typer.Typer] = {}
for _module, _attr, _name in _STAGES:
    _obj = getattr(importlib.import_module(_module), _attr)
    _group, _, _verb = _name.rpartition(" ")
    if isinstance(_obj, typer.Typer):
        app.add_typer(_obj, name=_name)
        _groups[_name] = _obj
    else:
        (_groups[_group] if _group else app).command(_verb)(_obj)


def _take_debug(argv: list[str]) -> bool:
    """Remove every `--debug` before a `--` from `argv` (so it may follow a verb's own flags);
    whether one was there."""
    end = argv.index("--") if "--" in argv else len(argv)
    found = "--debug" in argv[1:end]
    argv[1:end] = [a for a in argv[1:end] if a != "--debug"]
    return found


def main() -> None:
    """Console entry: kwrl's own errors (a mistake in the user's input among them) print as one
    clear line and exit 2, without a traceback, unless `--debug` or KWRL_DEBUG asks for it."""
    import sys

    from rich.console import Console

    from kwrl.errors import KwrlError

    if _take_debug(sys.argv):
        os.environ[DEBUG_ENV] = "1"
    try:
        app()
    except KwrlError as e:
        if os.environ.get(DEBUG_ENV, "0") not in ("", "0"):
            raise
        Console(stderr=True, soft_wrap=True).print(
            f"[red]error:[/red] {e}", highlight=False, markup=True
        )
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
