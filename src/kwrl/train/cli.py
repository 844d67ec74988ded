"""`kwrl train CONFIG.toml [key=value ...]` (RL), `kwrl train sft CONFIG.toml [key=value ...]` and
`kwrl smoke`.

Both verbs take the trial settings every verb shares as flags generated from
`kwrl.rollout.settings.TrialSettings` (`--agent.max_steps 4`, `--sandbox.allow_missing_limits true`,
`--judge SPEC`; `kwrl.cli_config`), applied after the config file and its `key=value` overrides.
`kwrl smoke`'s other flags are `SmokeConfig`'s fields (`--rl_steps 3 --worlds 1`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kwrl.cli_config import config_flags
from kwrl.rollout.settings import TrialSettings, trial_panel
from kwrl.train.smoke import SmokeConfig


def _claim(out: Path, verb: str, overwrite: bool, dataset: Path, *, resume: bool = False) -> Any:
    """The run dir `out` claimed for `verb` (`kwrl.io.claim_output`; config keys, not flags)."""
    from kwrl.io import claim_output

    return claim_output(
        out, verb, flag="out", overwrite=overwrite, overwrite_flag="overwrite=true",
        inputs=[dataset], resume=resume, signature="config.toml",
    )  # fmt: skip


@config_flags(TrialSettings, panel=trial_panel)
def train(
    args: Annotated[
        list[str],
        typer.Argument(
            help="CONFIG.toml then key=value overrides (e.g. rl.steps=4 learner.lr=1e-5); "
            "start with 'sft' for the warm start: kwrl train sft CONFIG.toml \\[key=value ...]. "
            "CONFIG may be '-' for defaults + overrides."
        ),
    ],
    overrides: dict[str, Any],
) -> None:
    """Train a policy with RL through real trials (or warm-start it with SFT on gold solutions).

    Resume (RL): rerun the same command. A run dir (`out`) that holds checkpoints resumes from the
    newest one (weights, optimizer, step, policy version, prompt sampler), so a killed run goes on
    with the prompts it had not trained yet: no step lost or repeated. Steps after that checkpoint
    run again; their metrics lines from the killed run are dropped. Trial settings given as flags
    apply after CONFIG and its key=value overrides (SFT takes only --agent.*). A config without
    an [agent] table trains with TrainConfig's agent: max_steps 6, max_tokens_per_turn 256,
    context_window 6144.
    """
    from rich.console import Console

    from kwrl.config import load_config
    from kwrl.rollout.faults import refuse

    refuse("kwrl train")
    console = Console()
    mode = "rl"
    if args and args[0] == "sft":
        mode, args = "sft", args[1:]
    if not args:
        raise typer.BadParameter("give a CONFIG.toml (or '-') and optional key=value overrides")
    path = None if args[0] == "-" else Path(args[0])
    kv = args[1:]
    if mode == "sft":
        from kwrl.train.local.sft import SFTConfig, sft

        sft_cfg = load_config(SFTConfig, path, kv, overrides)
        with _claim(sft_cfg.out, "kwrl train sft", sft_cfg.overwrite, sft_cfg.dataset).writing():
            out = sft(sft_cfg, console=console)
        console.print(f"SFT model: {out}")
        return
    from kwrl.train.local.config import TrainConfig

    cfg = load_config(TrainConfig, path, kv, overrides)  # a bad config fails before torch loads
    output = _claim(cfg.out, "kwrl train", cfg.overwrite, cfg.dataset, resume=True)  # so does out
    from kwrl.train.local import train as run_train

    with output.writing():
        state = run_train(cfg)
    console.print(f"trained {state.step} steps; checkpoints under {cfg.out / 'checkpoints'}")


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
