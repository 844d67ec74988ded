"""`kwrl train CONFIG.toml [key=value ...]` (RL) and `kwrl train sft CONFIG.toml [key=value ...]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def train(
    args: Annotated[
        list[str],
        typer.Argument(
            help="CONFIG.toml then key=value overrides (e.g. rl.steps=4 learner.lr=1e-5); "
            "start with 'sft' for the warm start: kwrl train sft CONFIG.toml \\[key=value ...]. "
            "CONFIG may be '-' for defaults + overrides."
        ),
    ],
) -> None:
    """Train a policy with RL through real trials (or warm-start it with SFT on gold solutions).

    Resume (RL): rerun the same command. A run dir (`out`) that holds checkpoints resumes from the
    newest one (weights, optimizer, step, policy version, prompt sampler), so a killed run goes on
    with the prompts it had not trained yet: no step lost or repeated. Steps after that checkpoint
    run again; their metrics lines from the killed run are dropped.
    """
    from rich.console import Console

    from kwrl.config import load_config

    console = Console()
    mode = "rl"
    if args and args[0] == "sft":
        mode, args = "sft", args[1:]
    if not args:
        raise typer.BadParameter("give a CONFIG.toml (or '-') and optional key=value overrides")
    path = None if args[0] == "-" else Path(args[0])
    overrides = args[1:]
    if mode == "sft":
        from kwrl.train.local.sft import SFTConfig, sft

        out = sft(load_config(SFTConfig, path, overrides), console=console)
        console.print(f"SFT model: {out}")
        return
    from kwrl.train.local.config import TrainConfig

    cfg = load_config(TrainConfig, path, overrides)  # a bad config fails before torch loads
    from kwrl.train.local import train as run_train

    state = run_train(cfg)
    console.print(f"trained {state.step} steps; checkpoints under {cfg.out / 'checkpoints'}")


def smoke(
    out: Annotated[Path, typer.Option(help="Run dir.")] = Path("runs/smoke"),
    overrides: Annotated[
        list[str] | None,
        typer.Argument(help="SmokeConfig overrides key=value, e.g. rl_steps=3 worlds=1."),
    ] = None,
) -> None:
    """The main job: generate worlds, SFT-warm-start SmolLM2-135M, RL through real trials, evaluate before/after."""
    from kwrl.config import load_config
    from kwrl.train.smoke import SmokeConfig
    from kwrl.train.smoke import smoke as run_smoke

    cfg = load_config(SmokeConfig, None, [f"out={out}", *(overrides or [])])
    run_smoke(cfg)
