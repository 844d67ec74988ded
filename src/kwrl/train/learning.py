"""Building blocks of the held-out learning benchmarks (`benchmarks/learning.py` on CPU,
`benchmarks/learning_gpu.py` on one GPU): does RL after the SFT warm start beat the warm start on
tasks of worlds it never trained on?

- `make_splits`: training worlds from one synth seed, held-out worlds from another, each a
  task-dirs dataset under the run dir, generated once (a rerun keeps them); refuses a world that
  both hold (task names repeat across seeds; world ids must not).
- `Stages`: each stage's seconds when it ran, kept in RUN/stages.json across reruns, so a resumed
  run reports what the whole benchmark cost, not what this invocation redid.
- `breakdown`, `answer_checks`: what an evaluation's eval.json says per tier and family, and how
  its trials ended (answers the grader failed for naming several candidates, trials cut by a
  timeout or a limit).
- `curve_svg`: the learning curve (held-out mean score and training reward against RL step).
"""

from __future__ import annotations

import json
import re
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from kwrl.io import write_json


def make_splits(
    out: Path,
    sets: dict[str, tuple[int, int]],
    tasks_per_world: int,
    keep: Callable[[Path], object] | None = None,
) -> tuple[dict[str, list[str]], bool]:
    """OUT/data-NAME for each NAME: (worlds, seed) in `sets`, generated unless present, then
    filtered by `keep(dataset)` (e.g. `kwrl.train.smoke.easy_only`). Returns each set's task
    names and whether anything was generated; SystemExit when two sets share a world."""
    from kwrl.synth.generate import SynthConfig, generate

    generated = False
    tasks: dict[str, list[str]] = {}
    worlds_of: dict[str, set[str]] = {}
    for name, (worlds, seed) in sets.items():
        ds = out / f"data-{name}"
        if not (ds / "tasks").is_dir():
            generated = True
            generate(
                SynthConfig(
                    out=ds, worlds=worlds, tasks_per_world=tasks_per_world, seed=seed,
                    overwrite=True,
                ),
                progress=True,
            )  # fmt: skip
            if keep is not None:
                keep(ds)
        tasks[name] = sorted(p.name for p in (ds / "tasks").iterdir())
        worlds_of[name] = {
            tomllib.loads((ds / "tasks" / t / "task.toml").read_text())["metadata"]["world_id"]
            for t in tasks[name]
        }
    names = list(sets)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if overlap := worlds_of[a] & worlds_of[b]:
                raise SystemExit(f"data-{a} and data-{b} share worlds: {sorted(overlap)}")
    return tasks, generated


class Stages:
    """Seconds per stage, kept in OUT/stages.json across reruns (module doc)."""

    def __init__(self, out: Path, console: Console) -> None:
        self.path = out / "stages.json"
        self.console = console
        self.recorded: dict[str, float] = (
            json.loads(self.path.read_text()) if self.path.is_file() else {}
        )
        self.times: dict[str, float] = {}
        self.resumed: list[str] = []

    def done(self, name: str, key: str, t: float, ran: bool, add: bool = False) -> None:
        """Stage `key` (shown as `name`), begun at perf_counter `t`, ended; `ran`: it did work
        (else it was kept from an earlier run); `add`: it resumed, its earlier seconds count."""
        took = round(time.perf_counter() - t, 1)
        if ran:
            self.recorded[key] = round((self.recorded.get(key, 0.0) if add else 0.0) + took, 1)
            write_json(self.path, self.recorded)
        else:
            self.resumed.append(key)
        if key in self.recorded:
            self.times[key] = self.recorded[key]
        kept = (
            f"kept from an earlier run, {self.recorded[key]} s then"
            if key in self.recorded
            else "kept"
        )
        self.console.print(
            f"[green]✓[/green] {name} ({took} s" + ("" if ran else f"; {kept}") + ")"
        )

    @property
    def seconds(self) -> float:
        return round(sum(self.times.values()), 1)


def interval(x: dict[str, Any] | None) -> str:
    """A bootstrap interval {value, lo, hi} as `0.123 [0.100, 0.150]`."""
    if not x or x.get("value") is None:
        return "-"
    return f"{x['value']:.3f} [{x['lo']:.3f}, {x['hi']:.3f}]"


# ---------------------------------------------------------------- reading an evaluation

TIMEOUT_OR_LIMIT_CAUSES = frozenset(
    {
        "context_overflow", "max_tokens", "agent_timeout", "policy_timeout", "resource_limit",
        "verifier_limit", "verifier_timeout", "grader_budget",
    }
)  # fmt: skip
"""Trial causes (`kwrl.rollout.failures.FailureCause`) that are a timeout or a limit."""
LIMIT_STOPS = frozenset({"max_steps", "length", "context_overflow"})
"""Agent stop reasons (`kwrl.agent.loop.StopReason`) that are a limit."""
CANDIDATES = re.compile(
    r"other candidates|hedges between|a list of candidates|bare list|is hedged with"
    r"|sits in a table beside",
    re.IGNORECASE,
)
"""What the grader's machine checks write (`kwrl.grading.statements`) when an answer names more
than one candidate for a criterion: rivals past the limit, a hedge between two, a bare list, a
table of candidates. A heuristic over the rationales: judge-graded criteria say it in their own
words and are not counted."""


def family_of(task: str) -> str:
    """A generated task's family from its name (`ib-w0000-001-reconcile-deck` -> `reconcile-deck`)."""
    parts = task.split("-", 3)
    return parts[3] if len(parts) == 4 else task


def _score(t: dict[str, Any]) -> float:
    return float(t.get("reward") or 0.0)


def breakdown(ev: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """Mean score and trials per tier (`difficulty`) and per family of an eval.json's trials."""
    out: dict[str, dict[str, list[float]]] = {"tier": {}, "family": {}}
    for t in ev["trials"]:
        out["tier"].setdefault(str(t.get("difficulty")), []).append(_score(t))
        out["family"].setdefault(family_of(t["task"]), []).append(_score(t))
    return {
        kind: {k: {"mean": sum(v) / len(v), "n": len(v)} for k, v in sorted(groups.items())}
        for kind, groups in out.items()
    }


def answer_checks(ev: dict[str, Any], sample: int = 5) -> dict[str, Any]:
    """How an evaluation's trials ended: the share naming several candidates for a criterion
    (`CANDIDATES`), the share cut by a timeout or a limit (`TIMEOUT_OR_LIMIT_CAUSES`,
    `LIMIT_STOPS`), stop reasons and causes, and up to `sample` answers that passed."""
    trials = ev["trials"]
    n = max(len(trials), 1)
    multi = [
        t for t in trials if any(CANDIDATES.search(c.get("rationale") or "") for c in t["criteria"])
    ]
    limited = [
        t
        for t in trials
        if t.get("cause") in TIMEOUT_OR_LIMIT_CAUSES or t.get("stop_reason") in LIMIT_STOPS
    ]
    stops: dict[str, int] = {}
    for t in trials:
        stops[str(t.get("stop_reason"))] = stops.get(str(t.get("stop_reason")), 0) + 1
    passed = [t for t in trials if t.get("passed")]
    return {
        "trials": len(trials),
        "multi_candidate_share": len(multi) / n,
        "timeout_or_limit_share": len(limited) / n,
        "stop_reasons": dict(sorted(stops.items())),
        "causes": ev["metrics"]["trials"]["causes"],
        "passed_sample": [
            {"task": t["task"], "answer": (t.get("final_answer") or "")[:600]}
            for t in passed[:sample]
        ],
    }


def family_curves(evals: dict[int, dict[str, Any]]) -> dict[str, list[list[float]]]:
    """Each family's held-out mean score at each evaluated step: {family: [[step, mean], ...]}
    from {step: eval.json}."""
    out: dict[str, list[list[float]]] = {}
    for step in sorted(evals):
        for fam, v in breakdown(evals[step])["family"].items():
            out.setdefault(fam, []).append([step, round(v["mean"], 4)])
    return dict(sorted(out.items()))


def paired_subset(per_task: dict[str, dict[str, Any]], family: str) -> dict[str, Any]:
    """The paired difference (run minus other, `kwrl report --compare`'s per-task means) over one
    family's tasks, with a seeded 95% bootstrap interval, and tasks up / down / same."""
    from kwrl.eval.metrics import bootstrap_mean

    rows = {t: v for t, v in per_task.items() if family_of(t) == family}
    diffs = [float(v["diff"]) for v in rows.values()]
    ci = bootstrap_mean(diffs)
    mean = lambda k: sum(float(v[k]) for v in rows.values()) / len(rows) if rows else None  # noqa: E731
    return {
        "family": family,
        "tasks": len(rows),
        "run": mean("run"),
        "other": mean("other"),
        "diff": {"value": ci.value, "lo": ci.lo, "hi": ci.hi},
        "up_down_same": [sum(d > 0 for d in diffs), sum(d < 0 for d in diffs),
                         sum(d == 0 for d in diffs)],
    }  # fmt: skip


def noop_control(dataset: Path) -> dict[str, Any]:
    """The no-op control on a task-dirs dataset (`kwrl.tasks.validate.run_control`: each
    criterion graded on the untouched world with an empty answer): criteria graded, and how many
    passed (the share a policy that does nothing would score)."""
    from kwrl.tasks.validate import run_control

    problems, summary = run_control(dataset)
    graded = int(getattr(summary, "graded", 0) or 0)
    return {
        "criteria_graded": graded,
        "criteria_passed": len(problems),
        "pass_rate": len(problems) / graded if graded else None,
    }


# ---------------------------------------------------------------- the curve


def curve_svg(heldout: list[dict[str, Any]], train: list[dict[str, Any]], title: str) -> str:
    """Held-out mean score (with its 95% interval) and training reward against RL step, as SVG.

    `heldout`: {"step", "mean_score": {value, lo, hi}}; `train`: {"step", "reward_mean"}."""
    from kwrl.eval.report import _figure, _svg

    fig, ax = _figure(7.0, 3.6)
    if heldout:
        xs = [h["step"] for h in heldout]
        ys = [h["mean_score"]["value"] or 0.0 for h in heldout]
        lo = [h["mean_score"]["lo"] or 0.0 for h in heldout]
        hi = [h["mean_score"]["hi"] or 0.0 for h in heldout]
        ax.fill_between(xs, lo, hi, color="#3b6ea8", alpha=0.15, linewidth=0)
        ax.plot(xs, ys, "o-", color="#3b6ea8", label="held-out mean score (95% CI)")
    pts = [(m["step"], m["reward_mean"]) for m in train if m.get("reward_mean") is not None]
    if pts:
        ax.plot(
            *zip(*pts, strict=True), ".-", color="#e08a2c", label="training reward (batch mean)"
        )
    ax.set_xlabel("RL step")
    ax.set_ylabel("score")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title)
    return _svg(fig)
