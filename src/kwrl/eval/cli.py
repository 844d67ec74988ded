"""`kwrl eval DATASET --model M` (a resumable evaluation run) and `kwrl report RUN_DIR`.

`kwrl eval` runs `--n_samples` trials per task through kwrl's rollout runner, records each
finished trial in RUN_DIR/trials.jsonl, and writes eval.json and report.html; rerunning the same
command after an interruption runs only what is missing (RUN_DIR is claimed by
`kwrl.io.claim_output`: a run dir of an earlier `kwrl eval` goes on, any other non-empty dir needs
`--overwrite`, and a task that cannot run is refused in one line before any trial). Its flags are `EvalConfig`'s fields
(`kwrl.cli_config`), trial settings included: `--agent.max_steps 20`, `--agent.tools 'mail_*'`,
`--sandbox.gateway false`, `--judge SPEC` (env KWRL_JUDGE). `kwrl report` re-renders a run's report from its
trials and prints the run's manifest (`kwrl.rollout.manifest`: kwrl version and commit, config
hash, seeds, judge and prompt hash; each trial's world digest is in its row), or with `--compare OTHER` writes compare.json/compare.html (run - other, paired on shared
tasks).

Both exit 1 when no trial of the run was graded (the run has no score: the table shows "-" and the
causes say why), and say how many trials failed on infrastructure when some did.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from kwrl.cli_config import build_config, config_flags
from kwrl.eval.config import EvalConfig, ReportConfig
from kwrl.rollout.settings import trial_panel

EVAL_SHORT = {"model": "-m", "n_samples": "-k", "concurrency": "-c"}


def _print_summary(run_dir: Path) -> None:
    import json

    from rich.console import Console
    from rich.table import Table

    from kwrl.rollout.manifest import RunManifest

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
    if len(overall["pass_at_k"]) > 1:  # -k K: pass@k and pass^k for k = 1..K
        ks = Table(title="pass@k and pass^k (95% CI)")
        for col in ("k", "pass@k", "pass^k"):
            ks.add_column(col)
        for k, iv in overall["pass_at_k"].items():
            ks.add_row(str(k), pct(iv), pct(overall["pass_hat_k"][k]))
        console.print(ks)
    console.print(f"causes {causes}  report {run_dir / 'report.html'}", highlight=False)
    undecided = m.get("undecided_by_family") or {}
    if undecided:
        shown = "  ".join(f"{k} {v['undecided']}/{v['criteria']}" for k, v in undecided.items())
        console.print(f"undecided criteria by family: {shown}", highlight=False)
    for manifest in data.get("manifests", []):
        console.print(f"manifest {RunManifest.model_validate(manifest).line()}", highlight=False)
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
            "infrastructure[/yellow] (no reward; they have no score and count in no mean above)",
            highlight=False,
        )


@config_flags(
    EvalConfig, exclude={"dataset"}, short=EVAL_SHORT, panel=trial_panel,
    envvar={"judge": "KWRL_JUDGE"},
)  # fmt: skip
def eval_(
    dataset: Annotated[
        Path, typer.Argument(help="A dataset dir (tasks/*), a dir of task dirs, or one task dir.")
    ],
    overrides: dict[str, Any],
) -> None:
    """Evaluate a model on a dataset: Pass@1, mean score, pass@k/pass^k, per group, report.html.

    Every flag is a field of the run's config (kwrl.eval.config.EvalConfig), written as its key in
    RUN_DIR/eval.toml; trial settings are the same in kwrl rollout, train and smoke.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kwrl.eval.metrics import TrialOutcome
    from kwrl.eval.report import write_report
    from kwrl.eval.run import RUN_FILES, rollout_config, run_eval
    from kwrl.io import claim_output
    from kwrl.rollout.preflight import preflight
    from kwrl.rollout.runner import check_task_config
    from kwrl.tasks.taskdir import task_dirs

    cfg = build_config(EvalConfig, {**overrides, "dataset": dataset}, "kwrl eval")
    out = cfg.out
    for t in task_dirs(dataset):  # a task that cannot run: one line, exit 2, before any trial
        check_task_config(t)
    preflight(rollout_config(cfg))  # a model, tokenizer or endpoint that cannot be had: exit 2
    output = claim_output(
        out, "kwrl eval", overwrite=cfg.overwrite, inputs=[dataset], resume=True,
        signature="eval.toml",
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

        with output.writing(RUN_FILES):
            asyncio.run(run_eval(cfg, on_start=start, on_done=done))
            write_report(out)
    _print_summary(out)


@config_flags(ReportConfig)
def report(
    run_dir: Annotated[Path, typer.Argument(help="A `kwrl eval` run dir.")],
    *,
    overrides: dict[str, Any],
) -> None:
    """Re-render RUN_DIR/report.html (and eval.json), or compare it with another run."""
    from rich.console import Console

    from kwrl.errors import OutputError
    from kwrl.eval.report import write_compare, write_report
    from kwrl.eval.run import RUN_FILES
    from kwrl.io import claim_output

    compare = build_config(ReportConfig, overrides, "kwrl report").compare
    console = Console()
    if not (run_dir / "eval.toml").is_file():
        raise OutputError(f"RUN_DIR {run_dir}: not a `kwrl eval` run dir (no eval.toml)")
    output = claim_output(run_dir, "kwrl eval", flag="RUN_DIR", resume=True, signature="eval.toml")
    if compare is None:
        with output.writing(RUN_FILES):
            path = write_report(run_dir)
        _print_summary(run_dir)
        console.print(f"wrote {path}", highlight=False)
        return
    with output.writing(RUN_FILES):
        path, data = write_compare(run_dir, compare)
    p = data["paired"]

    def fmt(iv: dict[str, Any]) -> str:
        if iv["value"] is None:
            return "-"
        return f"{100 * iv['value']:+.1f} pts [{100 * iv['lo']:+.1f}, {100 * iv['hi']:+.1f}]"

    console.print(
        f"{data['run']['label']} - {data['other']['label']} on {p['n_shared_tasks']} shared tasks: "
        f"mean score {fmt(p['mean_score'])}, Pass@1 {fmt(p['pass_at_1'])}; tasks up / down / "
        f"same: {p['up']} / {p['down']} / {p['same']}",
        highlight=False,
    )
    console.print(f"wrote {path}", highlight=False)


eval = eval_
