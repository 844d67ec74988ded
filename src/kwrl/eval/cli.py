"""`kwrl eval DATASET --model M` (a resumable evaluation run) and `kwrl report RUN_DIR`.

`kwrl eval` runs `--n-samples` trials per task through kwrl's rollout runner, records each
finished trial in RUN_DIR/trials.jsonl, and writes eval.json and report.html; rerunning the same
command after an interruption runs only what is missing. `kwrl report` re-renders a run's report
from its trials, or with `--compare OTHER` writes compare.json/compare.html (run - other, paired
on shared tasks). Agent settings: `--max-steps`, `--max-tokens`, `--tools`, or any
`kwrl.agent.AgentConfig` field with `--ak key=value`.

Both exit 1 when no trial of the run was graded (the run has no score: the table shows "-" and the
causes say why), and say how many trials failed on infrastructure when some did.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer


def _kv(items: list[str] | None) -> dict[str, Any]:
    from kwrl.config import parse_override

    out: dict[str, Any] = {}
    for item in items or []:
        parts, value = parse_override(item)
        out[".".join(parts)] = value
    return out


def _print_summary(run_dir: Path) -> None:
    import json

    from rich.console import Console
    from rich.table import Table

    data = json.loads((run_dir / "eval.json").read_text())
    m = data["metrics"]

    def pct(iv: dict[str, Any]) -> str:
        if iv["value"] is None:
            return "-"
        return f"{100 * iv['value']:.1f}% [{100 * iv['lo']:.1f}, {100 * iv['hi']:.1f}]"

    table = Table(title=f"eval {data['config']['model']}: {m['overall']['n_trials']} trials")
    for col in ("group", "tasks", "mean score (95% CI)", "Pass@1 (95% CI)"):
        table.add_column(col)
    rows = [("all", m["overall"])] + [(f"domain {k}", v) for k, v in m["by_domain"].items()]
    for label, s in rows:
        table.add_row(label, str(s["n_tasks"]), pct(s["mean_score"]), pct(s["pass_at_1"]))
    console = Console()
    console.print(table)
    overall, causes = m["overall"], m["trials"]["causes"]
    console.print(f"causes {causes}  report {run_dir / 'report.html'}", highlight=False)
    if not overall.get("n_graded"):
        console.print(
            f"[red]no trial graded[/red]: {overall['n_trials']} trials, causes {causes}; this run "
            "has no score (each trial dir's result.json and sandbox.log say why)",
            highlight=False,
        )
        raise typer.Exit(1)
    if overall.get("n_infra"):
        console.print(
            f"[yellow]{overall['n_infra']} of {overall['n_trials']} trials failed on "
            "infrastructure[/yellow] (no reward; they score 0 in the table above)",
            highlight=False,
        )


def eval_(
    dataset: Annotated[
        Path, typer.Argument(help="A dataset dir (tasks/*), a dir of task dirs, or one task dir.")
    ],
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="oracle, nop, or a policy spec (http://HOST:PORT/v1#NAME, litellm:..., engine:...).",
        ),
    ],
    n_samples: Annotated[int, typer.Option("--n-samples", "-k", help="Trials per task.")] = 1,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", help="Trials at once.")] = 4,
    judge: Annotated[
        str | None,
        typer.Option(
            envvar="KWRL_JUDGE",
            help="Judge spec: http(s)://HOST:PORT/v1#NAME or litellm:PROVIDER/MODEL; its KWRL_JUDGE_* "
            "settings and key variable go to the verifier.",
        ),
    ] = None,
    out: Annotated[Path, typer.Option(help="Run dir (reused to resume).")] = Path("runs/eval"),
    max_steps: Annotated[int, typer.Option(help="Policy turns per trial (KwrlAgent).")] = 250,
    max_tokens: Annotated[
        int | None, typer.Option(help="Most tokens per turn (KwrlAgent).")
    ] = None,
    tools: Annotated[
        list[str] | None, typer.Option("--tools", help="Tool name or pattern offered (repeatable).")
    ] = None,
    ak: Annotated[
        list[str] | None, typer.Option("--ak", help="Agent kwarg key=value (repeatable).")
    ] = None,
    env: Annotated[
        str, typer.Option("--env", "-e", help="local, docker, modal, or an import path.")
    ] = "local",
    ek: Annotated[
        list[str] | None, typer.Option("--ek", help="Environment kwarg key=value (repeatable).")
    ] = None,
    retries: Annotated[int, typer.Option(help="Retries on infrastructure failures.")] = 2,
    agent_timeout: Annotated[
        float | None, typer.Option(help="Override task.toml's agent timeout (s).")
    ] = None,
    sample_seed: Annotated[
        int | None,
        typer.Option(
            help="Seeded sampling: each trial draws from a seed made of this, its task and sample "
            "index, so two models evaluated with the same seed are compared on common random numbers."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    n_boot: Annotated[int, typer.Option(help="Bootstrap resamples.")] = 2000,
) -> None:
    """Evaluate a model on a dataset: Pass@1, mean score, pass@k/pass^k, per group, report.html."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kwrl.agent.config import check_agent_kwargs
    from kwrl.eval.metrics import Bootstrap, TrialOutcome
    from kwrl.eval.report import write_report
    from kwrl.eval.run import EvalConfig, run_eval
    from kwrl.rollout.runner import HARBOR_AGENTS

    agent_kwargs = _kv(ak)
    if max_tokens is not None:
        agent_kwargs["max_tokens_per_turn"] = max_tokens
    if tools:
        agent_kwargs["tools"] = list(tools)
    if model not in HARBOR_AGENTS:
        check_agent_kwargs(
            {"max_steps": max_steps, **agent_kwargs}, "--ak/--max-steps/--max-tokens/--tools"
        )
    cfg = EvalConfig(
        dataset=dataset, model=model, out=out, n_samples=n_samples, concurrency=concurrency,
        judge=judge, retries=retries, environment=env, environment_kwargs=_kv(ek),
        agent_kwargs=agent_kwargs, max_steps=max_steps, agent_timeout_sec=agent_timeout,
        sample_seed=sample_seed, bootstrap=Bootstrap(seed=seed, n_boot=n_boot),
    )  # fmt: skip
    progress = Progress(
        TextColumn("eval"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[last]}"),
    )  # fmt: skip
    with progress:
        bar = progress.add_task("trials", total=None, last="")

        def start(total: int, done: int) -> None:
            last = f"resuming: {done} done" if done else ""
            progress.update(bar, total=total, completed=done, last=last)

        def done(o: TrialOutcome) -> None:
            score = "-" if o.reward is None else f"{o.reward:.2f}"
            progress.update(bar, advance=1, last=f"{o.task}#{o.sample}: {score} {o.cause}")

        asyncio.run(run_eval(cfg, on_start=start, on_done=done))
    write_report(out)
    _print_summary(out)


def report(
    run_dir: Annotated[Path, typer.Argument(help="A `kwrl eval` run dir.")],
    compare: Annotated[
        Path | None, typer.Option("--compare", help="Another run dir: paired differences.")
    ] = None,
) -> None:
    """Re-render RUN_DIR/report.html (and eval.json), or compare it with another run."""
    from rich.console import Console

    from kwrl.eval.report import write_compare, write_report

    console = Console()
    if compare is None:
        path = write_report(run_dir)
        _print_summary(run_dir)
        console.print(f"wrote {path}", highlight=False)
        return
    path, data = write_compare(run_dir, compare)
    p = data["paired"]

    def fmt(iv: dict[str, Any]) -> str:
        if iv["value"] is None:
            return "-"
        return f"{100 * iv['value']:+.1f} pts [{100 * iv['lo']:+.1f}, {100 * iv['hi']:+.1f}]"

    console.print(
        f"{data['run']['model']} - {data['other']['model']} on {p['n_shared_tasks']} shared tasks: "
        f"mean score {fmt(p['mean_score'])}, Pass@1 {fmt(p['pass_at_1'])}; tasks up / down / "
        f"same: {p['up']} / {p['down']} / {p['same']}",
        highlight=False,
    )
    console.print(f"wrote {path}", highlight=False)


eval = eval_
