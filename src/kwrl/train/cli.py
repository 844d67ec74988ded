"""`kwrl train CONFIG.toml [key=value ...]` (RL), `kwrl train sft CONFIG.toml [key=value ...]` (the
SFT warm start, a subcommand of `train`) and `kwrl smoke`.

`kwrl train`'s flags are the trial settings every verb shares, generated from
`kwrl.rollout.settings.TrialSettings` (`--agent.max_steps 4`, `--sandbox.allow_missing_limits true`,
`--judge SPEC`; `kwrl.cli_config`); `kwrl train sft`'s are `SFTConfig`'s fields (`--epochs 3`,
`--agent.max_steps 6`); both apply after the config file and its `key=value` overrides.
`kwrl smoke`'s flags are `SmokeConfig`'s fields (`--rl_steps 3 --worlds 1`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from kwrl.cli_config import config_flags
from kwrl.rollout.settings import TrialSettings, trial_panel
from kwrl.train.local.config import SFTConfig
from kwrl.train.smoke import SmokeConfig


def _claim(out: Path, verb: str, overwrite: bool, dataset: Path, *, resume: bool = False) -> Any:
    """The run dir `out` claimed for `verb` (`kwrl.io.claim_output`; config keys, not flags)."""
    from kwrl.io import claim_output

    return claim_output(
        out, verb, flag="out", overwrite=overwrite, overwrite_flag="overwrite=true",
        inputs=[dataset], resume=resume, signature="config.toml",
    )  # fmt: skip


class _TrainGroup(TyperGroup):
    """`kwrl train`: a group whose own verb is RL (`kwrl train CONFIG.toml ...`, `default`) and
    whose one subcommand is `sft`; anything but a subcommand's name goes to RL, so its help is RL's
    (the subcommand named in it)."""

    default: TyperCommand
    """The group's own verb (RL), run for anything that is not a subcommand."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # pyright: ignore[reportIncompatibleMethodOverride]
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            ctx._protected_args, ctx.args = [], list(args)  # pyright: ignore[reportAttributeAccessIssue]
            return ctx.args
        return super().parse_args(ctx, args)

    def invoke(self, ctx: typer.Context) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
        if ctx._protected_args:  # pyright: ignore[reportAttributeAccessIssue]
            return super().invoke(ctx)
        # In the group's place (its name, its parent), so usage lines read `kwrl train ...`.
        with self.default.make_context(ctx.info_name, list(ctx.args), parent=ctx.parent) as sub:
            return self.default.invoke(sub)

    def format_help(self, ctx: typer.Context, formatter: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        self.default.format_help(ctx, formatter)


train = typer.Typer(
    cls=_TrainGroup,
    help="Train a policy with RL through real trials (or warm-start it with SFT: kwrl train sft).",
    no_args_is_help=True,
)


_CONFIG_HELP = (
    "CONFIG.toml then key=value overrides (e.g. {}); CONFIG may be '-' for defaults + overrides."
)
RLArgs = Annotated[
    list[str], typer.Argument(help=_CONFIG_HELP.format("rl.steps=4 learner.lr=1e-5"))
]
SFTArgs = Annotated[list[str], typer.Argument(help=_CONFIG_HELP.format("epochs=3"))]


@config_flags(TrialSettings, panel=trial_panel)
def rl(
    args: RLArgs,
    overrides: dict[str, Any],
) -> None:
    """Train a policy with RL through real trials: kwrl train CONFIG.toml \\[key=value ...]
    (the SFT warm start is `kwrl train sft`).

    Resume: rerun the same command. A run dir (`out`) that holds checkpoints resumes from the
    newest one (weights, optimizer, step, policy version, prompt sampler), so a killed run goes on
    with the prompts it had not trained yet: no step lost or repeated. Steps after that checkpoint
    run again; their metrics lines from the killed run are dropped. Trial settings given as flags
    apply after CONFIG and its key=value overrides. A config without an \\[agent] table trains with
    TrainConfig's agent: max_steps 6, max_tokens_per_turn 256, context_window 6144.
    """
    from rich.console import Console

    from kwrl.config import load_config
    from kwrl.rollout.faults import refuse
    from kwrl.train.local.config import TrainConfig

    refuse("kwrl train")
    path, kv = _config_args(args)
    cfg = load_config(TrainConfig, path, kv, overrides)  # a bad config fails before torch loads
    output = _claim(cfg.out, "kwrl train", cfg.overwrite, cfg.dataset, resume=True)  # so does out
    from kwrl.train.local import train as run_train

    with output.writing():
        state = run_train(cfg)
    Console().print(f"trained {state.step} steps; checkpoints under {cfg.out / 'checkpoints'}")


@train.command("sft")
@config_flags(SFTConfig)
def sft(
    args: SFTArgs,
    overrides: dict[str, Any],
) -> None:
    """Warm-start a policy with SFT on gold solutions: kwrl train sft CONFIG.toml \\[key=value ...].

    Flags (`SFTConfig`'s fields: `--epochs 3`, `--agent.max_steps 6`) apply after CONFIG and its
    key=value overrides.
    """
    from rich.console import Console

    from kwrl.config import load_config
    from kwrl.rollout.faults import refuse

    refuse("kwrl train sft")
    path, kv = _config_args(args)
    cfg = load_config(SFTConfig, path, kv, overrides)
    from kwrl.train.local.sft import sft as run_sft

    console = Console()
    with _claim(cfg.out, "kwrl train sft", cfg.overwrite, cfg.dataset).writing():
        out = run_sft(cfg, console=console)
    console.print(f"SFT model: {out}")


def _config_args(args: list[str]) -> tuple[Path | None, list[str]]:
    """CONFIG ('-': none) and its key=value overrides."""
    if not args:
        raise typer.BadParameter("give a CONFIG.toml (or '-') and optional key=value overrides")
    return (None if args[0] == "-" else Path(args[0])), args[1:]


_rl_app = typer.Typer(add_completion=False)
_rl_app.command("train")(rl)
_TrainGroup.default = typer.main.get_command(_rl_app)  # type: ignore[assignment]


@config_flags(SmokeConfig, panel=trial_panel, switches={"overwrite"})
def smoke(overrides: dict[str, Any]) -> None:
    """The main job: generate worlds, SFT-warm-start SmolLM2-135M, RL through real trials,
    evaluate before/after.

    Trial settings left unset take the smoke's sizes (kwrl.train.smoke.SMOKE_TRIALS: 8 trials at
    once; 3 agent turns of at most 128 tokens in a 4,096-token window, compact tool prompt, 8 read
    tools, tool results cut to 2,000 characters).
    """
    from kwrl.cli_config import build_config
    from kwrl.io import claim_output
    from kwrl.rollout.faults import refuse
    from kwrl.train.smoke import smoke as run_smoke

    refuse("kwrl smoke")
    cfg = build_config(SmokeConfig, overrides, "kwrl smoke")
    output = claim_output(
        cfg.out, "kwrl smoke", overwrite=cfg.overwrite, resume=True, signature="smoke.toml"
    )
    with output.writing():
        run_smoke(cfg)
