"""`kwrl trial run` (one trial, rewards per criterion) and `kwrl rollout` (a batch with a summary).

Both run harbor trials in the chosen environment (default: the local bubblewrap sandbox) and
leave harbor's trial dirs under `--out`; `kwrl rollout` also writes `<out>/summary.json`.
`kwrl trial run` exits 1 when the trial failed (an error, or no reward), `kwrl rollout` when no
trial was graded (it says how many failed on infrastructure when some did); both exit 2 before any
trial when a task's task.toml sets limits no sandbox can apply (the file and field named).
`kwrl rollout`'s flags are `kwrl.rollout.runner.RolloutRun`'s fields (`kwrl.cli_config`), trial
settings included: `--model oracle|nop|SPEC`, `--harbor_agent module:Class`, `-n 4`,
`--agent.max_steps 20`, `--sandbox.gateway false`, `--judge SPEC` (default env `KWRL_JUDGE`: it
reaches the verifier with its settings and key variable through harbor's verifier env,
`kwrl.grading.judges.judge_env`). Its old flags (`--agent`, `--ak`, `--ek`, `--env`,
`--agent-timeout`) still work for one release and print their new spelling. `kwrl trial run`
keeps `--agent`, `--ak key=value` (agent kwargs) and `--ek key=value` (environment kwargs).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from kwrl.cli_config import Legacy, build_config, config_flags
from kwrl.rollout.runner import HARBOR_AGENTS, KWRL_AGENT, RolloutRun
from kwrl.rollout.settings import TRIAL_LEGACY, trial_panel

trial_app = typer.Typer(help="Run single trials.", no_args_is_help=True)

AgentOpt = Annotated[str, typer.Option("--agent", "-a", help="oracle, nop, or module:Class.")]
ModelOpt = Annotated[str | None, typer.Option("--model", "-m", help="Model name for the agent.")]
EnvOpt = Annotated[
    str, typer.Option("--env", "-e", help="local, docker, modal, or an environment import path.")
]
EkOpt = Annotated[
    list[str] | None, typer.Option("--ek", help="Environment kwarg key=value (repeatable).")
]
AkOpt = Annotated[
    list[str] | None,
    typer.Option("--ak", help="Agent kwarg key=value (repeatable): AgentConfig fields for kwrl's."),
]
TimeoutOpt = Annotated[
    float | None, typer.Option("--agent-timeout", help="Override task.toml's agent timeout (s).")
]
JudgeOpt = Annotated[
    str | None,
    typer.Option(
        "--judge",
        envvar="KWRL_JUDGE",
        help="Judge of criteria without a machine check: http(s)://HOST:PORT/v1#NAME or "
        "litellm:PROVIDER/MODEL. KWRL_JUDGE_* settings and the judge's key variable go to the "
        "verifier.",
    ),
]


def _old_agent(agent: str) -> dict[str, str]:
    """Where an old `--agent NAME` goes now: oracle and nop are models, KwrlAgent the default."""
    if agent in HARBOR_AGENTS:
        return {"model": agent}
    return {} if agent == KWRL_AGENT else {"harbor_agent": agent}


ROLLOUT_SHORT = {"model": "-m", "n_samples": "-n", "concurrency": "-c"}
ROLLOUT_LEGACY = (*TRIAL_LEGACY, Legacy(("--agent", "-a"), _old_agent))
"""`kwrl rollout`'s flags of the release before its config's flags, kept one release."""


def _verifier_env(judge: str | None) -> dict[str, str]:
    """The judge's verifier environment (`kwrl.grading.judges.judge_env`), else none."""
    from kwrl.grading.judges import judge_env

    return judge_env(judge) if judge else {}


def _kwargs(items: list[str] | None) -> dict[str, Any]:
    from kwrl.config import parse_override

    out: dict[str, Any] = {}
    for item in items or []:
        parts, value = parse_override(item)
        out[".".join(parts)] = value
    return out


def _agent_kwargs(agent: str, items: list[str] | None) -> dict[str, Any]:
    """--ak as kwargs; KwrlAgent's are checked against AgentConfig before any trial starts."""
    from kwrl.agent.config import check_agent_kwargs

    out = _kwargs(items)
    if agent == "kwrl.agent:KwrlAgent":
        check_agent_kwargs(out, "--ak")
    return out


def _criteria_table(trial_dir: Path, rewards: dict[str, float]) -> Any:
    from rich.table import Table

    from kwrl.rollout.trial import read_trial

    by_id = {str(g.get("verifier_id")): g for g in read_trial(trial_dir).grades}
    table = Table(title=f"criteria ({trial_dir.name})")
    for col in ("criterion", "score", "method", "criteria / rationale"):
        table.add_column(col)
    for key, value in rewards.items():
        if not key.startswith("criterion/"):
            continue
        vid = key.removeprefix("criterion/")
        g = by_id.get(vid, {})
        text = str(g.get("criteria", ""))
        if g.get("rationale"):
            text += f"\n[dim]{g['rationale']}[/dim]"
        table.add_row(vid, f"{value:g}", str(g.get("method", "")), text)
    return table


@trial_app.command("run")
def trial_run(
    task_dir: Annotated[Path, typer.Argument(help="A task dir (holds instruction.md).")],
    agent: AgentOpt = "oracle",
    model: ModelOpt = None,
    out: Annotated[Path, typer.Option(help="Where the trial dir goes.")] = Path("runs/trials"),
    env: EnvOpt = "local",
    ek: EkOpt = None,
    ak: AkOpt = None,
    agent_timeout: TimeoutOpt = None,
    judge: JudgeOpt = None,
) -> None:
    """Run one harbor trial and print its reward per criterion; exit 1 if it failed (no reward)."""
    from rich.console import Console

    from kwrl.rollout.masking import trial_decision
    from kwrl.rollout.runner import RolloutConfig, check_task_config, run_trial

    agent_kwargs = _agent_kwargs(agent, ak)  # bad --ak: ConfigError, exit 2
    check_task_config(task_dir)  # no or bad task.toml (limits included): exit 2
    cfg = RolloutConfig(
        agent=agent, model=model, environment=env, environment_kwargs=_kwargs(ek),
        agent_kwargs=agent_kwargs, agent_timeout_sec=agent_timeout, retries=0,
        verifier_env=_verifier_env(judge),
    )  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    name = f"{task_dir.resolve().name}__{agent.split(':')[-1].lower()}"
    n = 0
    while (out / (name + (f"-{n}" if n else ""))).exists():
        n += 1
    name += f"-{n}" if n else ""
    rec = asyncio.run(run_trial(task_dir, cfg, out, name))
    console = Console()
    console.print(_criteria_table(Path(rec.trial_dir), rec.rewards))
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
    RolloutRun, exclude={"dataset"}, short=ROLLOUT_SHORT, legacy=ROLLOUT_LEGACY,
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

    from kwrl.rollout.failures import INFRA, FailureCause
    from kwrl.rollout.runner import TrialRecord, check_task_config, run_rollout
    from kwrl.tasks.taskdir import task_dirs

    run = build_config(RolloutRun, {**overrides, "dataset": dataset}, "kwrl rollout")
    cfg, out, n = run.rollout_config(), run.out, run.n_samples
    tasks = task_dirs(dataset)
    for t in tasks:  # a bad task.toml limit: ConfigError, exit 2, before any trial
        check_task_config(t)
    console = Console()
    progress = Progress(
        TextColumn("rollout"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"), console=console,
    )  # fmt: skip
    with progress:
        bar = progress.add_task("trials", total=len(tasks) * n, last="")

        def done(rec: TrialRecord) -> None:
            progress.update(bar, advance=1, last=f"{rec.task}: {rec.cause}")

        records = asyncio.run(run_rollout(tasks, cfg, out, on_done=done))
    summary = json.loads((out / "summary.json").read_text())
    table = Table(title=f"rollout: {len(records)} trials, agent {cfg.agent}")
    for col in ("task", "rewards", "causes", "trained", "train rewards"):
        table.add_column(col)

    def shown(values: list[float | None]) -> str:
        return " ".join("-" if r is None else f"{r:g}" for r in values)

    for task, t in summary["tasks"].items():
        table.add_row(
            task, shown(t["rewards"]), ", ".join(sorted(set(t["causes"]))), str(t["trained"]),
            shown(t["train_rewards"]),
        )  # fmt: skip
    console.print(table)
    mean = summary["mean_reward"]
    console.print(
        f"mean reward {'-' if mean is None else f'{mean:.3f}'}  graded {summary['graded']}/{summary['trials']}"
        f"  retries {summary['retries']}  causes {summary['causes']}  summary {out / 'summary.json'}"
    )
    infra = sum(n for c, n in summary["causes"].items() if FailureCause(c) in INFRA)
    if not summary["graded"]:
        console.print(
            f"[red]no trial graded[/red]: causes {summary['causes']}; no mean reward "
            "(each trial dir's result.json and sandbox.log say why)",
            highlight=False,
        )
        raise typer.Exit(1)
    if infra:
        console.print(
            f"[yellow]{infra} of {summary['trials']} trials failed on infrastructure[/yellow] "
            "(after retries; not in the mean)",
            highlight=False,
        )
