"""`kwrl trial run` (one trial, rewards per criterion) and `kwrl rollout` (a batch with a summary).

Both run harbor trials in the chosen environment (default: the local bubblewrap sandbox) and
leave harbor's trial dirs under `--out`, each with its run manifest (`manifest.json`,
`kwrl.rollout.manifest`); `kwrl rollout` also writes `<out>/summary.json` (the manifest in each row).
`kwrl trial run` exits 1 when the trial failed (an error, or no reward), `kwrl rollout` when no
trial was graded (it says how many failed on infrastructure when some did); both exit 2 before any
trial when a task cannot run (not a task dir, its world seed missing, task.toml limits no sandbox
can apply: the file and field named). `--out` follows `kwrl.io`'s rule: `kwrl rollout` claims its
run dir (`claim_output`: a non-empty one needs `--overwrite`), `kwrl trial run` adds a new trial
dir to its `--out` and replaces nothing.
Their flags are `kwrl.rollout.config.RolloutRun`'s fields (`kwrl.cli_config`; `kwrl trial run`
has neither `-n`, `--concurrency` nor retries), trial settings included: `--model oracle|nop|SPEC`,
`--harbor_agent module:Class --agent_kwargs key=value`, `-n 4`, `--agent.max_steps 20`,
`--sandbox.gateway false`, `--judge SPEC` (default env `KWRL_JUDGE`: it reaches the verifier with
its settings and key variable through harbor's verifier env, `kwrl.grading.judges.judge_env`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from kwrl.cli_config import build_config, config_flags
from kwrl.rollout.config import RolloutRun, TrialRunConfig
from kwrl.rollout.settings import KWRL_AGENT, trial_panel

trial_app = typer.Typer(help="Run single trials.", no_args_is_help=True)


ROLLOUT_SHORT = {"model": "-m", "n_samples": "-n", "concurrency": "-c"}


def _criteria_table(trial_dir: Path, criteria: dict[str, float]) -> Any:
    """The trial's criteria ({verifier_id: score}, `TrialRecord.criteria`) with grades.json's
    method, text and rationale."""
    from rich.markup import escape
    from rich.table import Table

    from kwrl.rollout.trial import read_trial

    by_id = {g.verifier_id: g for g in read_trial(trial_dir).grades}
    table = Table(title=f"criteria ({trial_dir.name})")
    for col in ("criterion", "score", "method", "criteria / rationale"):
        table.add_column(col)
    for vid, value in criteria.items():
        g = by_id.get(vid)
        # The text quotes the agent's output (a rationale, a criterion on its answer): never markup.
        text = escape(g.criteria) if g is not None else ""
        if g is not None and g.rationale:
            text += f"\n[dim]{escape(g.rationale)}[/dim]"
        table.add_row(escape(vid), f"{value:g}", escape(g.method) if g is not None else "", text)
    return table


TRIAL_RUN_EXCLUDE = {"dataset", "n_samples", "concurrency", "retries"}
"""TrialRunConfig's fields that are not `kwrl trial run`'s flags: one task, one trial, no retry."""


@trial_app.command("run")
@config_flags(
    TrialRunConfig, exclude=TRIAL_RUN_EXCLUDE, short={"model": "-m"},
    panel=trial_panel, envvar={"judge": "KWRL_JUDGE"},
)  # fmt: skip
def trial_run(
    task_dir: Annotated[Path, typer.Argument(help="A task dir (holds instruction.md).")],
    *,
    overrides: dict[str, Any],
) -> None:
    """Run one harbor trial and print its reward per criterion; exit 1 if it failed (no reward)."""
    from rich.console import Console

    from kwrl import progress
    from kwrl.io import check_output_path
    from kwrl.rollout.masking import trial_decision
    from kwrl.rollout.preflight import preflight
    from kwrl.rollout.runner import check_task_config, run_trial

    given = {**overrides, "dataset": task_dir, "retries": 0}
    run = build_config(TrialRunConfig, given, "kwrl trial run")
    cfg, out = run.rollout_config(), run.out  # bad: exit 2
    check_task_config(task_dir)  # no or bad task.toml (limits included): exit 2
    preflight(cfg)  # a model, tokenizer or endpoint that cannot be had: one line, exit 2
    check_output_path(out, "kwrl trial run", inputs=[task_dir])  # each run adds a new dir
    out.mkdir(parents=True, exist_ok=True)
    name = f"{task_dir.resolve().name}__{cfg.agent.split(':')[-1].lower()}"
    n = 0
    while (out / (name + (f"-{n}" if n else ""))).exists():
        n += 1
    name += f"-{n}" if n else ""
    if cfg.agent == KWRL_AGENT and cfg.agent_settings is not None:  # a line per turn (stderr)
        progress.show_turns()
        steps = cfg.agent_settings.agent.max_steps
        progress.note(f"trial {name}: {cfg.model}, up to {steps} turns")
    rec = asyncio.run(run_trial(task_dir, cfg, out, name))
    console = Console()
    console.print(_criteria_table(Path(rec.trial_dir), rec.criteria))
    reward = "-" if rec.reward is None else f"{rec.reward:g}"
    decision = trial_decision(rec.cause, rec.reward)  # as a group of one
    train = f"trained with {decision.reward:g}" if decision.trained else "masked"
    console.print(
        f"reward [bold]{reward}[/bold]  cause {rec.cause}  {train}  {rec.seconds:.1f}s  "
        f"dir {rec.trial_dir}"
    )
    if rec.error:
        console.print(f"[red]{rec.error[:500]}[/red]", markup=True, highlight=False)
    if rec.error or rec.reward is None:
        raise typer.Exit(1)  # a failed trial (an error, or no reward) is a failed command


@config_flags(
    RolloutRun, exclude={"dataset"}, short=ROLLOUT_SHORT,
    panel=trial_panel, envvar={"judge": "KWRL_JUDGE"},
)  # fmt: skip
def rollout(
    dataset: Annotated[
        Path, typer.Argument(help="A dataset dir (tasks/*), a dir of task dirs, or one task dir.")
    ],
    overrides: dict[str, Any],
) -> None:
    """Run many trials through harbor; print a summary table and write summary.json."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from kwrl.io import claim_output
    from kwrl.rollout.preflight import preflight
    from kwrl.rollout.runner import ROLLOUT_FILES, TrialRecord, check_task_config, run_rollout
    from kwrl.tasks.taskdir import task_dirs

    run = build_config(RolloutRun, {**overrides, "dataset": dataset}, "kwrl rollout")
    cfg, out, n = run.rollout_config(), run.out, run.n_samples
    output = claim_output(out, "kwrl rollout", overwrite=run.overwrite, inputs=[dataset])
    tasks = task_dirs(dataset)
    for t in tasks:  # a bad task.toml limit: ConfigError, exit 2, before any trial
        check_task_config(t)
    preflight(cfg)  # a model, tokenizer or endpoint that cannot be had: one line, exit 2
    output.open(ROLLOUT_FILES)
    console = Console()
    progress = Progress(
        TextColumn("rollout"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=console,
    )  # fmt: skip
    with progress:
        bar = progress.add_task("trials", total=len(tasks) * n, last="")

        def done(rec: TrialRecord) -> None:
            progress.update(bar, advance=1, last=f"{rec.task}: {rec.cause}")

        result = asyncio.run(run_rollout(tasks, cfg, out, on_done=done))
    summary = result.summary
    table = Table(title=f"rollout: {len(result.records)} trials, agent {cfg.agent}")
    for col in ("task", "rewards", "causes", "trained", "train rewards"):
        table.add_column(col)

    def shown(values: list[float | None]) -> str:
        return " ".join("-" if r is None else f"{r:g}" for r in values)

    for task, t in summary.tasks.items():
        table.add_row(
            task, shown(t.rewards), ", ".join(sorted(set(t.causes))), str(t.trained),
            shown(t.train_rewards),
        )  # fmt: skip
    console.print(table)
    mean = summary.mean_reward
    console.print(
        f"mean reward {'-' if mean is None else f'{mean:.3f}'}  graded {summary.graded}/{summary.trials}"
        f"  retries {summary.retries}  causes {summary.causes}  summary {out / ROLLOUT_FILES[1]}"
    )
    undecided = summary.undecided_by_family
    if undecided:
        shown_u = "  ".join(f"{k} {v.undecided}/{v.criteria}" for k, v in undecided.items())
        console.print(f"undecided criteria by family: {shown_u}", highlight=False)
    if cfg.manifest is not None:
        console.print(f"manifest {cfg.manifest.line()}", highlight=False)
    infra = summary.infra_failures
    if not summary.graded:
        console.print(
            f"[red]no trial graded[/red]: causes {summary.causes}; no mean reward "
            "(each trial dir's result.json and sandbox.log say why)",
            highlight=False,
        )
        raise typer.Exit(1)
    if infra:
        console.print(
            f"[yellow]{infra} of {summary.trials} trials failed on infrastructure[/yellow] "
            "(after retries; not in the mean)",
            highlight=False,
        )
