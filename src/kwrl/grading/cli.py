"""`kwrl grade TRIAL_DIR`: regrade a finished harbor trial without its sandbox.

The trial dir holds `verifier/changes.tar.gz` (written by `kwrl.grading.verify`) and
`agent/final_answer.txt`; the task dir comes from `--task` or the trial's `config.json`
(`task.path`). The final state is rebuilt as layers: world seed, task overlay, extracted changes,
minus the deletions the archive lists; then every criterion is graded again, with `--judge` or env
`KWRL_JUDGE` as the judge, and a table is printed. `--write` stores the new reward.json and
grades.json in `--out` (default: the trial's verifier dir, where the verifier wrote them; another
`--out` is claimed as any verb's output, `kwrl.io.claim_output`: a non-empty dir kwrl did not
write needs `--overwrite`, which keeps what is there but the two files).

Everything in the trial dir was written by the agent or its sandbox: the answer is read without
following links (a link or a FIFO is no answer, `kwrl.grading.files`), the archive is
extracted with the same checks as any archive plus a size cap (`--max_bytes`), and the agent's
workbooks are recalculated by LibreOffice in the verifier's own network-less sandbox, never as
host root in the host's namespaces (`kwrl.grading.recalc`). The regrade runs
under the verifier's grading budget (`kwrl.grading.budget`, env `KWRL_GRADER_*`), so it fails the
same criteria the verifier failed for an over-budget trial.

A trial whose outputs the verifier refused before archiving them (over the grading budget, or
unreadable: grades.json `error`, no changes.tar.gz) has no final state to regrade: `kwrl grade` says
so, with the verifier's reason and the recorded reward, writes nothing and exits 1
(`EXIT_NOT_REGRADABLE`). Exit 0 is a regrade, 2 bad input (a kwrl error, `kwrl.cli.main`; a
missing archive the verifier does not explain too).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kwrl.cli_config import build_config, config_flags
from kwrl.config import ByteSize, OutputConfig
from kwrl.errors import TaskFormatError

if TYPE_CHECKING:
    from kwrl.tasks.taskdir import TaskDir

ENV_SANDBOX = "KWRL_GRADE_SANDBOX"
"""`off`: regrade in this process instead of `kwrl.sandbox.regrade`'s sandbox (no bubblewrap here)."""
GRADE_FILES = ("grades.json", "reward.json")
"""What `--write` writes into `--out`."""
EXIT_NOT_REGRADABLE = 1
"""The trial's final state was never archived (the verifier refused its outputs): no regrade."""


def _read_json(path: Path) -> object:
    """`path`'s JSON, or None when absent, a link or unreadable (the caller falls back)."""
    if path.is_symlink() or not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def not_regradable(trial_dir: Path) -> str | None:
    """Why a trial without verifier/changes.tar.gz cannot be regraded, when its verifier recorded
    it (module doc); None when the archive is there or nothing explains its absence."""
    verifier = trial_dir / "verifier"
    archive = verifier / "changes.tar.gz"
    if archive.exists() or archive.is_symlink():
        return None
    grades = _read_json(verifier / "grades.json")
    error = grades.get("error") if isinstance(grades, dict) else None
    if not isinstance(error, str) or not error or error.startswith("JudgeError"):
        return None  # a judge failure comes after the archive: a lost archive is bad input
    rewards = _read_json(verifier / "reward.json")
    reward = rewards.get("reward") if isinstance(rewards, dict) else None
    recorded = (
        f"the recorded reward is {reward:g} (verifier/reward.json)"
        if isinstance(reward, int | float)
        else "no reward was recorded"
    )
    return (
        f"{trial_dir}: cannot be regraded: the verifier refused the trial's outputs ({error}); "
        f"its final state was not archived (no verifier/changes.tar.gz); {recorded}"
    )


def _made(path: Path) -> Path:
    path = path.resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _sandboxed(args: list[str], td: TaskDir, trial_dir: Path, judge: str | None) -> int:
    """This command again, inside `kwrl.sandbox.regrade`'s sandbox (run by module name: grading
    imports no sandbox code); its exit status. The trial, the task and its world are read-only
    there; `--out` and `--cache` (in `args`) are the only writable paths."""
    ro = [p for p in (trial_dir, td.path, td.world_dir, td.overlay_dir) if p.exists()]
    rw = [Path(args[i + 1]) for i, a in enumerate(args) if a in ("--cache", "--out")]
    argv = [sys.executable, "-I", "-m", "kwrl.sandbox.regrade"]
    for p in dict.fromkeys(p.resolve() for p in ro):
        argv += ["--ro", str(p)]
    for p in rw:
        argv += ["--rw", str(p)]
    env = dict(os.environ)
    if judge:
        env["KWRL_JUDGE"] = judge
    done = subprocess.run([*argv, "--", *args], env=env, check=False, capture_output=True)
    # Through this process's streams: what prints the table decides where it goes.
    sys.stdout.write(done.stdout.decode(errors="replace"))
    sys.stderr.write(done.stderr.decode(errors="replace"))
    return done.returncode


def _task_dir_of(trial_dir: Path) -> Path:
    cfg = trial_dir / "config.json"
    try:
        path = json.loads(cfg.read_text(encoding="utf-8"))["task"]["path"]
    except FileNotFoundError:
        raise TaskFormatError(
            cfg, None, "no config.json in the trial dir; pass --task TASK_DIR"
        ) from None
    except (KeyError, TypeError, json.JSONDecodeError) as e:
        raise TaskFormatError(
            cfg, "task.path", f"cannot read the task path ({e}); pass --task TASK_DIR"
        ) from e
    return Path(path)


class GradeConfig(OutputConfig):
    """`kwrl grade`'s config (its flags)."""

    judge: str | None = None
    """Judge spec: http(s)://HOST:PORT/v1#NAME or litellm:PROVIDER/MODEL (default env KWRL_JUDGE)."""
    task: Path | None = None
    """The task dir (default: from the trial's config.json)."""
    cache: Path | None = None
    """Judge verdict cache dir (default env KWRL_JUDGE_CACHE)."""
    scoring: str = "apex_v1_grade_score"
    """apex_v1_grade_score | mean | all_pass"""
    write: bool = False
    """Write reward.json and grades.json to --out."""
    out: Path | None = None
    """Output dir for --write (default TRIAL_DIR/verifier, where the verifier wrote them); another
    dir must be new or empty, else --overwrite."""
    max_bytes: ByteSize = 1024**3
    """Cap on the bytes extracted from changes.tar.gz (e.g. 1GiB)."""


@config_flags(GradeConfig, switches={"write", "overwrite"})
def grade(
    trial_dir: Annotated[
        Path, typer.Argument(help="A finished harbor trial dir (verifier/changes.tar.gz).")
    ],
    # Not a user's flag: how kwrl reruns this command inside the regrade sandbox
    # (`kwrl.sandbox.regrade`); the verb's flags are GradeConfig's.
    in_sandbox: Annotated[bool, typer.Option(hidden=True)] = False,
    *,
    overrides: dict[str, Any],
) -> None:
    """Regrade a finished trial from its changes archive, the task's world and the final answer.

    Exit 0 regraded; 1 not regradable (verifier refused its outputs; nothing written); 2 bad input.
    """
    from rich.console import Console
    from rich.table import Table

    from kwrl.grading.budget import GraderBudget
    from kwrl.grading.diff import StateView, read_changes_archive, task_layers
    from kwrl.grading.files import read_answer
    from kwrl.grading.judges import JudgeConfig
    from kwrl.grading.verify import grade_within_budget
    from kwrl.io import claim_output, write_json
    from kwrl.tasks.taskdir import load_task

    cfg = build_config(GradeConfig, overrides, "kwrl grade")
    judge, task, cache, scoring, write, out = (
        cfg.judge, cfg.task, cfg.cache, cfg.scoring, cfg.write, cfg.out
    )  # fmt: skip
    trial_dir = trial_dir.resolve()
    refused = not_regradable(trial_dir)
    if refused is not None:
        Console(soft_wrap=True).print(refused, highlight=False, markup=False)
        raise typer.Exit(EXIT_NOT_REGRADABLE)
    td = load_task(task or _task_dir_of(trial_dir))
    archive = trial_dir / "verifier" / "changes.tar.gz"
    if archive.is_symlink() or archive.parent.is_symlink() or not archive.is_file():  # bad input
        raise TaskFormatError(archive, None, "missing or not a regular file")
    if write and out is not None and not in_sandbox and out.resolve() != archive.parent:
        claim_output(
            out, "kwrl grade", overwrite=cfg.overwrite, inputs=[trial_dir, td.path, td.world_dir]
        ).open(GRADE_FILES)
    if not in_sandbox and os.environ.get(ENV_SANDBOX, "").lower() != "off":
        args = [str(trial_dir), "--task", str(td.path.resolve()), "--scoring", scoring]
        args += ["--max_bytes", str(cfg.max_bytes)]
        if cache:
            args += ["--cache", str(_made(cache))]
        if write:
            args += ["--write", "--out", str(_made(out or trial_dir / "verifier"))]
        raise typer.Exit(_sandboxed(args, td, trial_dir, judge))
    answer_file = trial_dir / "agent" / "final_answer.txt"
    # Written by the agent: a link (to the tests, to a host file) or a FIFO is no answer.
    answer = "" if answer_file.parent.is_symlink() else read_answer(answer_file)
    overrides = {"cache_dir": cache} if cache else {}
    judge_config = JudgeConfig.from_env(judge, **overrides)

    with tempfile.TemporaryDirectory(prefix="kwrl-grade-") as tmp:
        listing = read_changes_archive(archive, Path(tmp), max_bytes=cfg.max_bytes)
        layers = task_layers(td.world_dir, td.overlay_dir)
        initial = StateView.of(layers)
        final = StateView.of([*layers, Path(tmp)], deleted=listing["deleted"])
        grades, ev = grade_within_budget(
            verifiers=td.verifiers, task=td.instruction, answer=answer, initial=initial,
            final=final, judge_config=judge_config, budget=GraderBudget.from_env(),
            scoring=scoring,
        )  # fmt: skip
        changed = "-" if ev is None else len(ev.changes)

    table = Table(title=f"{td.slug}: {trial_dir.name}")
    for col in ("criterion", "method", "score", "rationale"):
        table.add_column(col, overflow="fold")
    for g in grades.grades:
        mark = "[green]1[/green]" if g.passed else "[red]0[/red]"
        table.add_row(
            f"{g.verifier_id}\n{g.criteria}",
            g.method + (" (cached)" if g.cached else ""),
            mark,
            g.rationale,
        )
    console = Console()
    console.print(table)
    console.print(
        f"reward {grades.score:.3f}  pass {int(grades.passed)}  scoring {grades.scoring}  "
        f"changed files {changed}  judge calls {grades.judge_calls}  cache hits {grades.cache_hits}",
        highlight=False,
        soft_wrap=True,
    )
    if write:
        dest = out or trial_dir / "verifier"
        if dest.is_symlink():
            raise TaskFormatError(dest, None, "is a symbolic link; refusing to write through it")
        write_json(dest / GRADE_FILES[0], grades.grades_json())
        write_json(dest / GRADE_FILES[1], grades.reward_json())
